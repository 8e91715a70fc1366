// Server lists ("host:port,...[/chroot]") and the ensemble's own configuration (the data of
// /zookeeper/config). Pure functions, no I/O: unit-tested (test/unit/test_server_list.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zklock::detail {

/// A server list cut at its chroot: "h1:1,h2:2/app" -> {"h1:1,h2:2", "/app"}. The chroot is
/// empty when there is none; "/" counts as none (the C client treats it so).
struct split_servers {
    std::string_view hosts;
    std::string_view chroot;
};
split_servers split_chroot(std::string_view servers) noexcept;

/// The "host:port" entries of a host list (no chroot), in order, empty ones left out.
std::vector<std::string_view> server_entries(std::string_view hosts);

/// An entry "host:port" or "[v6]:port" (validated) as a resolver's host and service: the host
/// without brackets.
std::pair<std::string, std::string> host_and_port(std::string_view entry);

/// Whether two host lists (no chroot) hold the same entries, in any order and with any repeats.
bool same_entries(std::string_view a, std::string_view b);

/// The client addresses of an ensemble, from its dynamic configuration as /zookeeper/config holds
/// it, one "key=value" a line:
///
///     server.1=10.0.0.1:2888:3888:participant;10.0.0.1:2181
///     server.2=10.0.0.2:2888:3888:observer;0.0.0.0:2181
///     server.3=[fd00::3]:2888:3888;2181
///     version=100000000
///
/// Every member (participants and observers: clients may use both) that has a client part
/// ("[address:]port" after the ';') gives "address:port"; a wildcard or missing client address
/// (0.0.0.0, ::) gives the member's quorum host instead, as Curator's EnsembleTracker does. IPv6
/// addresses come out in brackets. Members without a client part are left out, and so are
/// repeats; other keys (version, ...) are ignored. Returns "host:port,host:port,..." in the
/// members' order, or nullopt when a server line does not parse or no member has a client part:
/// then the caller keeps the list it has.
std::optional<std::string> ensemble_client_list(std::string_view config);

}  // namespace zklock::detail
