// zklock/error.hpp — error codes.
//
// Two categories:
//  * "zklock": conditions zklock itself reports (timeouts, lost locks, bad input), enum zklock::errc.
//  * "zookeeper": ZooKeeper's own return codes, kept with their numeric values (ZNONODE = -101, ...),
//    enum zklock::zk_errc. Compare with them as `ec == zklock::zk_errc::no_node`.
#pragma once

#include <boost/system/error_code.hpp>

#include <type_traits>

namespace zklock {

using boost::system::error_code;

/// Conditions reported by zklock itself.
enum class errc {
    timeout = 1,          ///< The operation's deadline passed before it could complete.
    would_block,          ///< A try-acquire found the lock held by someone else.
    lock_lost,            ///< A held lock (or a queued node) was lost: the node is gone.
    session_expired,      ///< The ZooKeeper session expired; ephemeral nodes of it are gone.
    session_closed,       ///< The session was closed (or destroyed), or the object has none (moved from).
    not_connected,        ///< The session has not been connected (call async_connect first).
    connect_timeout,      ///< No server answered within the connect timeout.
    invalid_path,         ///< The path is not an absolute, canonical ZooKeeper path we accept.
    invalid_servers,      ///< The server list is empty or malformed.
    invalid_argument,     ///< Some other argument is out of range.
    permit_mismatch,      ///< A semaphore was opened with a different permit count than stored.
    already_released,     ///< The lease is empty: released, moved from or never acquired.
    revoked,              ///< Returned by no operation: a revocation request completes
                          ///< lease::async_wait_revocation without error, and the lease holds
                          ///< until released. (Kept so that the values after it stay put.)
    recipe_mismatch,      ///< The lock path holds another recipe's nodes (a semaphore's permits
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

const boost::system::error_category& zklock_category() noexcept;
const boost::system::error_category& zookeeper_category() noexcept;

inline error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), zklock_category()}; }
inline error_code make_error_code(zk_errc e) noexcept { return {static_cast<int>(e), zookeeper_category()}; }

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
}  // namespace boost::system
