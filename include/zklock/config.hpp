// zklock/config.hpp — configuration aggregates with documented defaults.
#pragma once

#include <chrono>
#include <string>

namespace zklock {

/// How a session connects. Every field has a usable default except `servers`.
struct session_config {
    /// Comma-separated "host:port" list, optionally followed by a chroot ("h1:2181,h2:2181/app").
    std::string servers = "127.0.0.1:2181";

    /// Session timeout asked of the server (it clamps it to [2, 20] x its tickTime).
    std::chrono::milliseconds session_timeout{10'000};

    /// async_connect fails with errc::connect_timeout if no server accepted the session by then.
    std::chrono::milliseconds connect_timeout{10'000};

    /// When the server expires the session, start a fresh ZooKeeper session automatically.
    /// Everything that depended on the old one (leases, watches, waiting acquires) is told first.
    bool reconnect_on_expiry = true;

    /// Optional "user:password" for ZooKeeper digest authentication, added at every (re)connect.
    std::string digest_auth;

    /// Verbosity of the ZooKeeper C client's own log on stderr: 0 = silent (default),
    /// 1 = errors, 2 = warnings, 3 = info, 4 = debug.
    int client_log_level = 0;
};

/// Options of the lock recipes.
struct lock_options {
    /// Stored in our queue node; shown by `zklock list`. Empty = "<hostname>:<pid>".
    std::string owner_info;
};

}  // namespace zklock
