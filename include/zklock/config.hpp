// zklock/config.hpp — configuration aggregates with documented defaults.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace zklock {

/// TLS to the servers (session_config::tls). zklock carries the C client's connection over TLS
/// itself: Debian's ZooKeeper C client has no TLS. Every host of the server list is reached over
/// TLS 1.2 or later; the server's certificate must chain to `ca_file` / `ca_dir` and name the
/// host as written in the list (a DNS name, also sent as SNI, or an IP address). The files are
/// PEM, read when the session starts its first connection attempt (a file that cannot be read
/// fails async_connect with errc::tls_bad_config) and read again at every later connection to a
/// server if one of them changed since (rotated certificates are taken without a restart; a
/// changed file that does not load is logged and the previous ones are kept).
struct tls_options {
    /// Use TLS. The other fields are ignored without it.
    bool enabled = false;
    /// Trusted CA certificates: a PEM file, a directory prepared with `openssl rehash`, or both.
    /// Both empty: OpenSSL's default trust store (/etc/ssl/certs on Debian).
    std::string ca_file;
    std::string ca_dir;  ///< the directory of trusted CA certificates (see ca_file)
    /// The client certificate (PEM; a chain, leaf first) and its private key, for servers that
    /// ask for one (ssl.clientAuth). With one, the server's x509 provider knows the session as
    /// `x509:<subject>`, and the nodes zklock creates are writable only by that identity and
    /// readable by anyone (docs/security.md, "TLS: what it protects"). Both or neither.
    std::string cert_file;
    std::string key_file;  ///< the client certificate's private key (PEM; see cert_file)
    /// Check that the server's certificate names the host (on by default). Turning it off leaves
    /// the chain checked, not who the server is.
    bool verify_host = true;
};

/// How much a log line matters (session_config::logger).
enum class log_level : std::uint8_t { debug, info, warning, error };
const char* to_string(log_level l) noexcept;

/// What a log line is about.
struct log_fields {
    /// "zookeeper": a line of the ZooKeeper C client's own log, about this session; "zklock": an
    /// event of zklock's: the session connected, suspended, reconnected, expired, presumed
    /// expired or closed; a lock granted, lost, or asked to be given up (a revocation request);
    /// a create retried after its reply was lost; an acquire's cleanup left to the background.
    std::string_view source;
    std::int64_t session_id = 0;  ///< the ZooKeeper session's id (0 before the first connection)
    std::string_view path;        ///< the lock path, for a lock's events
    std::string_view node;        ///< our queue node, for a lock's events once it has one
};

/// Receives a session's log: the level, one line of text (no newline) and its fields.
using log_function = std::function<void(log_level level, std::string_view message, const log_fields& fields)>;

/// How a session connects. Every field has a usable default except `servers`.
struct session_config {
    /// Comma-separated "host:port" list, optionally followed by a chroot ("h1:2181,h2:2181/app").
    /// session::set_servers (and follow_ensemble) replace the host list of a session's config().
    /// A host is a name, an IPv4 address or an IPv6 address in brackets ("[::1]:2181"). The
    /// chroot must exist: zklock never creates it (a typo would silently start a second tree),
    /// and acquires and async_list_queue fail with errc::chroot_missing while it is absent.
    std::string servers = "127.0.0.1:2181";

    /// Session timeout asked of the server (it clamps it to [2, 20] x its tickTime by default;
    /// negotiated_timeout() says what it granted). Must be > 0: async_connect fails with
    /// errc::invalid_argument otherwise. Values above 2^28 ms (3 days, more than any server
    /// grants; the C client overflows from 2^30 ms on) are sent as 2^28 ms, which the server lowers to
    /// its maxSessionTimeout like any other large value: never truncated.
    std::chrono::milliseconds session_timeout{10'000};

    /// async_connect fails with errc::connect_timeout if no server accepted the session by then.
    /// Must be > 0 (errc::invalid_argument otherwise); milliseconds::max() means no limit.
    std::chrono::milliseconds connect_timeout{10'000};

    /// The largest request the session sends (path, data and ZooKeeper's framing). A larger one
    /// fails with errc::request_too_large before it is sent: the server closes the connection on
    /// any packet above its `jute.maxbuffer` (default 0xfffff = 1048575 bytes), which the client
    /// would otherwise take for a connection loss. Set it to the server's jute.maxbuffer if that
    /// was changed.
    std::size_t max_request_bytes = 1048575;

    /// When the server expires the session, start a fresh ZooKeeper session automatically.
    /// Everything that depended on the old one (leases, watches, waiting acquires) is told first.
    bool reconnect_on_expiry = true;

    /// Optional "user:password" for ZooKeeper digest authentication, added at every (re)connect.
    std::string digest_auth;

    /// Verbosity of the ZooKeeper C client's own log on stderr, for a session without a logger:
    /// 0 = silent (default), 1 = errors, 2 = warnings, 3 = info, 4 = debug.
    int client_log_level = 0;

    /// Receives this session's log, from `logger_level` up: the ZooKeeper C client's lines about
    /// this session (never another session's, and nothing goes to stderr for it) and zklock's own
    /// events (see log_fields::source). Empty (the default): silent.
    /// Called on the session's executor, except for the C client's lines of the session's close,
    /// which come from zklock's close thread (session::async_close): it must be safe to call from
    /// there, quick, must not throw (an exception is dropped) and must not call the session.
    /// The C client's verbosity is process-wide: it is raised to the most verbose level any
    /// session asks for (with debug, every request is formatted).
    log_function logger;
    log_level logger_level = log_level::info;  ///< the least level `logger` receives

    /// Follow the ensemble's own configuration, as Curator's EnsembleTracker does: on every
    /// connect the session reads /zookeeper/config (the dynamic configuration, whatever the
    /// chroot) with a watch, and again each time the watch fires; when the client addresses it
    /// lists (server.N=...;[address:]port, participants and observers; a wildcard address stands
    /// for the member's quorum host) differ from `servers`, it calls session::set_servers with
    /// them, keeping the chroot. A configuration that is empty (a standalone server), missing or
    /// that it cannot read leaves the list as it is. Costs one read per connect and per change of
    /// the configuration; it never makes the session engaged and never keeps io_context::run()
    /// busy. For an ensemble changed by dynamic reconfiguration (reconfigEnabled=true). A list
    /// set by hand with set_servers holds until the configuration changes again. Ignored with
    /// `tls`: the configuration names the members' plaintext client ports only, not their
    /// secureClientPort (call set_servers yourself).
    bool follow_ensemble = false;

    /// TLS to every server of the list (off by default). See tls_options.
    tls_options tls;
};

/// Options of the lock recipes.
struct lock_options {
    /// Stored in our queue node; shown by `zklock list`. Empty = "<hostname>:<pid>". An acquire
    /// whose node would exceed session_config::max_request_bytes fails at once with
    /// errc::request_too_large (nothing is sent).
    std::string owner_info;

    /// Optional: told, on the session's executor, each time a waiting acquire has looked at its
    /// queue and must wait: its node's path and how many contenders it saw ahead of it (for a
    /// semaphore: permit nodes ahead, permits included). Called once per listing that leaves it
    /// waiting (at its first, then whenever the node it watched goes and it lists again); a
    /// handoff that needs no listing grants without calling it. To follow a long queue between
    /// those moments, poll async_list_queue (what `zklock --verbose` does). Must not throw.
    std::function<void(std::string_view node, std::size_t ahead)> on_queued;

    /// Cohort mode (a local queue in front of the ZooKeeper lock), for a hot lock many coroutines
    /// of one process want. The acquires of one session that want the same lock in the same role
    /// (a mutex or a shared_mutex's writers: exclusive; a shared_mutex's readers: shared) queue
    /// locally behind ONE ZooKeeper node, queued as soon as the first of them arrives. Once that
    /// node is granted, the lock passes from local holder to local holder in local FIFO order
    /// with no ZooKeeper request (readers of one session are granted together on one shared node).
    ///
    /// Fairness between sessions: while a node of another contender is queued behind ours (as far
    /// as this session has heard: a child watch tells it), at most max_local_handoffs local grants
    /// follow one another on our node; then the node is released
    /// (the next session's turn) and, if local waiters remain, queued again at the back. With
    /// nobody else waiting, local grants go on. Each local acquire keeps the whole contract: its
    /// own timeout and cancellation (the last local waiter to leave deletes the node), a lease with
    /// its loss notice, revocation (a request seen stops the local handoffs), and a strictly
    /// increasing lease::fence() (lease::fencing_token() is shared by the local holders of one
    /// node: compare fence()). A local lease's async_release completes once the lock is handed on
    /// locally, or, when it was the last local holder, once our node is gone. A try-acquire is granted locally only if the lock can be had at
    /// once, else it goes to ZooKeeper like any try-acquire when no local turn runs.
    ///
    /// Ignored by a semaphore. The settings of a session's first acquire of a lock (owner_info,
    /// on_queued, max_local_handoffs) serve that lock's local queue while it has waiters or
    /// holders.
    bool cohort = false;

    /// Cohort mode: how many local holders may follow one another on our node while another
    /// contender waits behind it (0 counts as 1). Larger: more throughput on a hot lock, longer
    /// waits for the other sessions (about max_local_handoffs x the hold time).
    std::uint32_t max_local_handoffs = 32;
};

}  // namespace zklock
