// zklock/error.hpp — error codes.
//
// Two categories of codes:
//  * "zklock": conditions zklock itself reports (timeouts, lost locks, bad input), enum zklock::errc.
//  * "zookeeper": ZooKeeper's own return codes, kept with their numeric values (ZNONODE = -101, ...),
//    enum zklock::zk_errc. Compare with them as `ec == zklock::zk_errc::no_node`.
// And one of conditions, enum zklock::condition, which codes of both categories match: an expiry
// reaches a handler as errc::session_expired or as zk_errc::session_expired, and
// `ec == zklock::condition::session_expired` is true for both.
// Codes of the "zklock" category that have a portable meaning also compare equal to std::errc's
// and boost::system::errc's: errc::timeout == std::errc::timed_out (see zklock::errc).
#pragma once

#include <boost/version.hpp>

// An installed libzklock is used with the Boost it was built with (asio::any_io_executor and
// any_completion_handler cross its interface): its CMake target and zklock.pc define
// ZKLOCK_BOOST_VERSION as that Boost's BOOST_VERSION.
#if defined(ZKLOCK_BOOST_VERSION) && ZKLOCK_BOOST_VERSION != BOOST_VERSION
#error "zklock: libzklock was built with another Boost than these Boost headers (ZKLOCK_BOOST_VERSION != BOOST_VERSION); use the Boost it was built with"
#endif

#include <boost/system/error_code.hpp>

#include <type_traits>

namespace zklock {

using boost::system::error_code;

/// Conditions reported by zklock itself. Those marked "== std::errc::x" compare equal to that
/// portable condition (std::errc and boost::system::errc alike), as their default_error_condition.
enum class errc {
    timeout = 1,          ///< The operation's deadline passed before it could complete.
                          ///< == std::errc::timed_out
    would_block,          ///< A try-acquire found the lock held by someone else.
                          ///< == std::errc::operation_would_block
    lock_lost,            ///< A held lock (or a queued node) was lost: the node is gone.
    session_expired,      ///< The ZooKeeper session expired; ephemeral nodes of it are gone.
    session_closed,       ///< The session was closed (or destroyed), or the object has none (moved from).
    not_connected,        ///< The session has not been connected (call async_connect first).
                          ///< == std::errc::not_connected
    connect_timeout,      ///< No server answered within the connect timeout.
                          ///< == std::errc::timed_out
    invalid_path,         ///< The path is not an absolute, canonical ZooKeeper path we accept.
                          ///< == std::errc::invalid_argument
    invalid_servers,      ///< The server list is empty or malformed.
                          ///< == std::errc::invalid_argument
    invalid_argument,     ///< Some other argument is out of range. == std::errc::invalid_argument
    permit_mismatch,      ///< A semaphore was opened with a different permit count than stored.
    already_released,     ///< The lease is empty: released, moved from or never acquired.
    // 13 is not used. A value, once given, keeps its meaning: new codes go at the end.
    recipe_mismatch = 14, ///< The lock path holds another recipe's nodes (a semaphore's permits
                          ///< and mutex / shared_mutex nodes never share a path).
    request_too_large,    ///< The request would exceed session_config::max_request_bytes (the
                          ///< server's jute.maxbuffer): refused before it was sent.
    request_dropped,      ///< The server closed the connection every time the request was sent
                          ///< (5 times in a row, an acquire's create): it refuses it (e.g. too large).
    operation_in_progress,  ///< Another wait on this object is already pending (watch::async_wait).
    not_zookeeper,        ///< A server answered the connect with something that is not a
                          ///< ZooKeeper connect response (async_connect, at its connect timeout).
    unresolvable_host,    ///< No host name of the server list resolves to an address
                          ///< (async_connect; a list where some resolve connects to those).
    chroot_missing,       ///< The chroot of the server list ("h:2181/app") does not exist on the
                          ///< server (acquires and async_list_queue; zklock never creates it).
    chroot_mismatch,      ///< A new server list names another chroot than the session's
                          ///< (session::set_servers): a session cannot change its chroot.
    // TLS (session_config::tls). async_connect fails with one of these as soon as every server of
    // the list refused the handshake in a row, else at its connect timeout.
    tls_bad_config,       ///< A CA, certificate or key file of session_config::tls cannot be read
                          ///< or does not match (the client log says which).
    tls_handshake_failed, ///< The TLS handshake failed for another reason (the client log says why).
    tls_untrusted_certificate,  ///< The server's certificate does not chain to a trusted CA.
    tls_certificate_expired,    ///< The server's certificate has expired or is not valid yet.
    tls_host_mismatch,    ///< The server's certificate does not name the host of the server list.
    tls_server_not_tls,   ///< TLS is configured but the server does not speak TLS (a plaintext port).
    tls_client_certificate_refused,  ///< The server refused the client certificate (none given,
                                     ///< or one it does not trust).
    tls_required,         ///< TLS is not configured but the server speaks only TLS (its secure port).
    no_leader,            ///< An election has no candidate now (election::async_leader).
    not_supported,        ///< Not supported in this configuration (the operation's documentation
                          ///< says which: e.g. leadership::async_proclaim with Curator LeaderLatch names).
                          ///< == std::errc::not_supported
};

/// ZooKeeper's return codes, with the C client's numeric values.
enum class zk_errc {
    system_error = -1,
    runtime_inconsistency = -2,
    data_inconsistency = -3,
    connection_loss = -4,
    marshalling_error = -5,
    unimplemented = -6,
    operation_timeout = -7,
    bad_arguments = -8,
    invalid_state = -9,
    new_config_no_quorum = -13,
    reconfig_in_progress = -14,
    ssl_connection_error = -15,
    api_error = -100,
    no_node = -101,
    no_auth = -102,
    bad_version = -103,
    no_children_for_ephemerals = -108,
    node_exists = -110,
    not_empty = -111,
    session_expired = -112,
    invalid_callback = -113,
    invalid_acl = -114,
    auth_failed = -115,
    closing = -116,
    nothing = -117,
    session_moved = -118,
    not_read_only = -119,
    ephemeral_on_local_session = -120,
    no_watcher = -121,
    reconfig_disabled = -123,
    session_closed_require_sasl_auth = -124,
    quota_exceeded = -125,
    throttled_op = -127,
};

/// Conditions that codes of both categories match (category "zklock.condition"). Compare a
/// handler's error with them rather than with each category's code:
///
///     if (ec == zklock::condition::session_expired) ...  // errc:: or zk_errc::session_expired
enum class condition {
    session_expired = 1,  ///< errc::session_expired, zk_errc::session_expired: the session expired
                          ///< (or was presumed expired); its ephemeral nodes are gone.
    session_closed,       ///< errc::session_closed, zk_errc::closing: the session was closed
                          ///< (or destroyed); its ephemeral nodes are gone.
    session_ended,        ///< Either of the two above.
};

const boost::system::error_category& zklock_category() noexcept;
const boost::system::error_category& zookeeper_category() noexcept;
const boost::system::error_category& condition_category() noexcept;

inline error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), zklock_category()}; }
inline error_code make_error_code(zk_errc e) noexcept { return {static_cast<int>(e), zookeeper_category()}; }
inline boost::system::error_condition make_error_condition(condition c) noexcept
{
    return {static_cast<int>(c), condition_category()};
}

/// Translates a ZooKeeper C client return code (ZOK = 0 gives an empty error_code).
inline error_code make_zk_error(int rc) noexcept
{
    return rc == 0 ? error_code{} : error_code{rc, zookeeper_category()};
}

/// True for errors after which the same request may succeed once the connection is back:
/// connection loss, operation timeout, a session moved between servers, server throttling.
/// Session expiry, closing and every semantic error (no node, no auth, ...) are not retryable.
bool is_retryable(const error_code& ec) noexcept;

}  // namespace zklock

namespace boost::system {
template <> struct is_error_code_enum<zklock::errc> : std::true_type {};
template <> struct is_error_code_enum<zklock::zk_errc> : std::true_type {};
template <> struct is_error_condition_enum<zklock::condition> : std::true_type {};
}  // namespace boost::system
