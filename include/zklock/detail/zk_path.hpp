// ZooKeeper's path rules as zklock applies them to lock paths and chroots, and server lists. Pure
// functions, no I/O: unit-tested and fuzzed.
#pragma once

#include <zklock/error.hpp>

#include <cstddef>
#include <string_view>

namespace zklock::detail {

/// Longest lock path we accept (bytes). Queue nodes add up to 38 bytes below it.
inline constexpr std::size_t max_lock_path = 1024;

/// Empty error when `path` is an absolute, canonical path usable as a lock directory: valid UTF-8,
/// starts with '/', is not "/", no trailing '/', no empty, "." or ".." component, no control
/// character (C0 or C1, NUL included) nor any other character the server refuses (U+D800..U+F8FF,
/// U+FFF0..U+FFFF, anything outside the BMP), not under the reserved "/zookeeper", at most
/// max_lock_path bytes. errc::invalid_path otherwise, never a server round trip.
error_code validate_lock_path(std::string_view path) noexcept;

/// The rule `path` breaks, as a phrase ("a component is '..'"), or empty when validate_lock_path
/// accepts it. The first rule broken, checked in this order: empty, not absolute, "/", too long,
/// trailing '/', then component by component: empty, ".", "..", invalid UTF-8, a control
/// character, another character the server refuses, the reserved "/zookeeper".
std::string_view lock_path_problem(std::string_view path) noexcept;

/// Empty error when `servers` is "host:port[,host:port...][/chroot]" with non-empty hosts and ports
/// in 1..65535: a host is a name, an IPv4 address or an IPv6 address in brackets ("[::1]:2181",
/// "[fe80::1%eth0]:2181"); a chroot is a valid lock path, or "/".
error_code validate_servers(std::string_view servers) noexcept;

}  // namespace zklock::detail
