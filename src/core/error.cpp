#include <zklock/error.hpp>

#include <boost/system/errc.hpp>

#include <string>

namespace zklock {
namespace {

class zklock_category_impl final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "zklock"; }
    std::string message(int ev) const override
    {
        switch (static_cast<errc>(ev)) {
        case errc::timeout: return "The operation did not complete before its deadline.";
        case errc::would_block: return "The lock is held by another owner and the attempt was a try.";
        case errc::lock_lost: return "The lock was lost: its queue node no longer exists.";
        case errc::session_expired:
            return "The ZooKeeper session expired (or was presumed expired); its ephemeral nodes are gone.";
        case errc::session_closed: return "The ZooKeeper session is closed, or the object has none (moved from).";
        case errc::not_connected: return "The session is not connected; call async_connect first.";
        case errc::connect_timeout: return "No ZooKeeper server accepted the session within the connect timeout.";
        case errc::invalid_path:
            return "The path is not a valid lock path (absolute, canonical, no control characters, "
                   "not under /zookeeper, at most 1024 bytes).";
        case errc::invalid_servers:
            return "The server list is empty or malformed (expected host:port[,host:port...][/chroot]).";
        case errc::invalid_argument: return "An argument is out of range.";
        case errc::permit_mismatch:
            return "The semaphore exists with a different permit count than the one given.";
        case errc::already_released: return "The lease does not hold a lock (released, moved from or empty).";
        case errc::recipe_mismatch:
            return "The lock path is used by a different kind of lock: a semaphore's permits cannot share a path "
                   "with mutex or shared_mutex nodes.";
        case errc::request_too_large:
            return "The request is larger than session_config::max_request_bytes (default 1048575 bytes, the "
                   "server's default jute.maxbuffer): it was not sent.";
        case errc::not_zookeeper:
            return "The server answered with something that is not the ZooKeeper protocol (wrong port, or "
                   "another service): no session was established.";
        case errc::operation_in_progress:
            return "Another wait on this object is already pending; wait again once it has completed.";
        case errc::unresolvable_host:
            return "Cannot resolve host name: no host of the server list resolves to an address.";
        case errc::chroot_missing:
            return "The chroot of the server list (the path after host:port) does not exist on the server.";
        case errc::request_dropped:
            return "The server closed the connection each time the request was sent (5 tries): it refuses the "
                   "request (larger than its jute.maxbuffer?).";
        case errc::chroot_mismatch:
            return "The server list names another chroot than the session's: a session keeps its chroot "
                   "(give the same one, or none).";
        case errc::tls_bad_config:
            return "A TLS file (CA, certificate or key) cannot be read, or the key does not match the certificate.";
        case errc::tls_handshake_failed: return "The TLS handshake with the server failed.";
        case errc::tls_untrusted_certificate:
            return "The server's TLS certificate is not signed by a trusted CA (check session_config::tls.ca_file).";
        case errc::tls_certificate_expired: return "The server's TLS certificate has expired or is not yet valid.";
        case errc::tls_host_mismatch:
            return "The server's TLS certificate does not name the host it was reached by.";
        case errc::tls_server_not_tls:
            return "The server does not speak TLS on this port (a plaintext port?).";
        case errc::tls_client_certificate_refused:
            return "The server refused the client's TLS certificate (missing, or not signed by a CA it trusts).";
        case errc::no_leader: return "The election has no leader: nobody is campaigning.";
        case errc::not_supported:
            return "Not supported in this configuration (an election named for Curator's LeaderLatch cannot "
                   "proclaim: LeaderLatch stops watching a candidate whose data changes).";
        case errc::tls_required:
            return "The server accepts only TLS on this port: configure session_config::tls (or use its plaintext "
                   "port).";
        }
        return "Unknown zklock error " + std::to_string(ev) + ".";
    }

    // The codes with a portable meaning compare equal to std::errc's (and boost::system::errc's).
    boost::system::error_condition default_error_condition(int ev) const noexcept override
    {
        namespace generic = boost::system::errc;
        switch (static_cast<errc>(ev)) {
        case errc::timeout:
        case errc::connect_timeout: return generic::make_error_condition(generic::timed_out);
        case errc::would_block: return generic::make_error_condition(generic::operation_would_block);
        case errc::not_connected: return generic::make_error_condition(generic::not_connected);
        case errc::invalid_path:
        case errc::invalid_servers:
        case errc::invalid_argument: return generic::make_error_condition(generic::invalid_argument);
        case errc::not_supported: return generic::make_error_condition(generic::not_supported);
        default: return {ev, *this};
        }
    }
};

class zookeeper_category_impl final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "zookeeper"; }
    std::string message(int ev) const override
    {
        switch (static_cast<zk_errc>(ev)) {
        case zk_errc::system_error: return "ZooKeeper client system error.";
        case zk_errc::runtime_inconsistency: return "ZooKeeper found a runtime inconsistency.";
        case zk_errc::data_inconsistency: return "ZooKeeper found a data inconsistency.";
        case zk_errc::connection_loss: return "The connection to the ZooKeeper server was lost.";
        case zk_errc::marshalling_error: return "ZooKeeper could not marshal or unmarshal a message.";
        case zk_errc::unimplemented: return "The ZooKeeper operation is not implemented.";
        case zk_errc::operation_timeout: return "The ZooKeeper operation timed out.";
        case zk_errc::bad_arguments: return "ZooKeeper rejected the arguments.";
        case zk_errc::invalid_state: return "The ZooKeeper handle is in an invalid state.";
        case zk_errc::new_config_no_quorum: return "No quorum of the new ZooKeeper configuration is connected.";
        case zk_errc::reconfig_in_progress: return "A ZooKeeper reconfiguration is already in progress.";
        case zk_errc::ssl_connection_error: return "The TLS connection to ZooKeeper failed.";
        case zk_errc::api_error: return "ZooKeeper API error.";
        case zk_errc::no_node: return "The ZooKeeper node does not exist.";
        case zk_errc::no_auth: return "Not authorised: the node's ACL does not allow this operation.";
        case zk_errc::bad_version: return "The ZooKeeper node's version does not match.";
        case zk_errc::no_children_for_ephemerals: return "Ephemeral ZooKeeper nodes may not have children.";
        case zk_errc::node_exists: return "The ZooKeeper node already exists.";
        case zk_errc::not_empty: return "The ZooKeeper node has children.";
        case zk_errc::session_expired: return "The ZooKeeper session has expired.";
        case zk_errc::invalid_callback: return "Invalid ZooKeeper callback.";
        case zk_errc::invalid_acl: return "Invalid ZooKeeper ACL.";
        case zk_errc::auth_failed: return "ZooKeeper authentication failed.";
        case zk_errc::closing: return "The ZooKeeper session is closing.";
        case zk_errc::nothing: return "No ZooKeeper server response to process.";
        case zk_errc::session_moved: return "The ZooKeeper session moved to another server.";
        case zk_errc::not_read_only: return "A write was sent to a read-only ZooKeeper server.";
        case zk_errc::ephemeral_on_local_session: return "Ephemeral nodes cannot be created on a local session.";
        case zk_errc::no_watcher: return "The watch to remove does not exist.";
        case zk_errc::reconfig_disabled: return "ZooKeeper dynamic reconfiguration is disabled.";
        case zk_errc::session_closed_require_sasl_auth: return "The session was closed: SASL authentication is required.";
        case zk_errc::quota_exceeded: return "A ZooKeeper quota was exceeded.";
        case zk_errc::throttled_op: return "The ZooKeeper server throttled the operation.";
        }
        return "ZooKeeper error " + std::to_string(ev) + ".";
    }
};

class condition_category_impl final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "zklock.condition"; }
    std::string message(int ev) const override
    {
        switch (static_cast<condition>(ev)) {
        case condition::session_expired:
            return "The ZooKeeper session expired (or was presumed expired); its ephemeral nodes are gone.";
        case condition::session_closed: return "The ZooKeeper session was closed; its ephemeral nodes are gone.";
        case condition::session_ended:
            return "The ZooKeeper session expired or was closed; its ephemeral nodes are gone.";
        }
        return "Unknown zklock condition " + std::to_string(ev) + ".";
    }

    // Which codes of the "zklock" and "zookeeper" categories match each condition.
    bool equivalent(const error_code& ec, int cv) const noexcept override
    {
        const bool expired = ec == make_error_code(errc::session_expired) ||
                             ec == make_error_code(zk_errc::session_expired);
        const bool closed = ec == make_error_code(errc::session_closed) || ec == make_error_code(zk_errc::closing);
        switch (static_cast<condition>(cv)) {
        case condition::session_expired: return expired;
        case condition::session_closed: return closed;
        case condition::session_ended: return expired || closed;
        }
        return false;
    }
};

}  // namespace

const boost::system::error_category& zklock_category() noexcept
{
    static const zklock_category_impl c;
    return c;
}

const boost::system::error_category& zookeeper_category() noexcept
{
    static const zookeeper_category_impl c;
    return c;
}

const boost::system::error_category& condition_category() noexcept
{
    static const condition_category_impl c;
    return c;
}

bool is_retryable(const error_code& ec) noexcept
{
    return ec == zk_errc::connection_loss || ec == zk_errc::operation_timeout ||
           ec == zk_errc::session_moved || ec == zk_errc::throttled_op;
}

}  // namespace zklock
