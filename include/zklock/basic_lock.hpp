// zklock/basic_lock.hpp — what every lock recipe shares: a session, a path, options, and the
// three ways to acquire. mutex, shared_mutex (its write side) and semaphore derive from it.
#pragma once

#include <zklock/config.hpp>
#include <zklock/detail/acquire_fwd.hpp>
#include <zklock/lease.hpp>
#include <zklock/session.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace zklock {

/// A lock recipe bound to a session and a path. Cheap: it holds no ZooKeeper state itself; every
/// acquire is independent (one object may be acquired by many coroutines at once, each queueing
/// its own node).
///
/// Misuse: a moved-from lock (or one made from a moved-from session) has no session: each acquire
/// completes with errc::session_closed and an empty lease, posted through asio::system_executor
/// on to the handler's associated executor (as an empty lease's); path() is empty, options() the
/// defaults, get_executor() a system_executor. A lock of a closed (or destroyed) session
/// completes each acquire with errc::session_closed on the session's executor.
class basic_lock {
public:
    using executor_type = asio::any_io_executor;            ///< the executor type of the session
    using duration = std::chrono::steady_clock::duration;  ///< the type of a timeout

    /// The session's executor (asio::system_executor for a moved-from lock).
    executor_type get_executor() const noexcept;
    /// The lock path (empty for a moved-from lock).
    const std::string& path() const noexcept
    {
        static const std::string none;  // a moved-from lock
        return path_ ? *path_ : none;
    }
    /// The options every acquire through this object uses (defaults for a moved-from lock).
    const lock_options& options() const noexcept
    {
        static const lock_options none;  // a moved-from lock
        return options_ ? *options_ : none;
    }

    /// Acquires the lock, waiting at most `timeout`.
    ///
    /// Completion signature: void(error_code, lease). On success the lease holds the lock.
    /// Started while the session is not connected (connecting, suspended after a lost
    /// connection, expired and starting anew), it sends nothing until it is.
    ///
    /// Executor: the handler's associated executor (default: the session's). Never completes
    /// inside this call.
    ///
    /// Cancellation: per-operation; terminal, partial and total are all honoured, in these steps:
    ///   | state                       | on cancel                                                |
    ///   |-----------------------------|----------------------------------------------------------|
    ///   | before the create is sent   | completes with operation_aborted, nothing was created     |
    ///   | (a semaphore: reading or    | (also while waiting for a lost connection to come back)   |
    ///   | storing its permit count)   |                                                          |
    ///   | create in flight            | waits for the reply (or finds the node by its attempt id |
    ///   |                             | if the reply was lost), deletes it, then completes        |
    ///   | waiting for the predecessor | deletes our node, then completes                          |
    ///   | re-checking the queue       | deletes our node once the reply is in, then completes     |
    ///   | connection lost             | deletes our node after reconnecting (or learns that the   |
    ///   |                             | session expired and the node went with it)                |
    /// So a cancelled acquire leaves no node behind. The timeout (measured from the call, exact
    /// across any number of predecessor changes; a timeout <= 0 behaves like async_try_acquire)
    /// takes the same path and completes with errc::timeout.
    ///
    /// The deadline holds whatever the server or the network does: if the server has not
    /// confirmed within 250 ms of the cancellation or the timeout that our node is gone (a frozen
    /// server, a cut-off link, an outage), the operation completes then all the same, and the
    /// deletion goes on in the background: retried across reconnects until the node is gone, or
    /// ended by the session's expiry (the node goes with it). It survives the lock object and
    /// ends with the session object (a closed session's ephemeral nodes are gone). Counted in
    /// metrics_snapshot::background_cleanups (and _pending while it runs). That grace is for
    /// terminal and partial cancellation (and the timeout). A total cancellation alone promises no
    /// side effect (Asio's definition), so it has no grace: it completes with operation_aborted
    /// only once our node is known gone (or the session ended), however long the server takes.
    ///
    /// Errors: errc::timeout, errc::would_block (try), asio::error::operation_aborted,
    /// errc::invalid_path, errc::not_connected, errc::session_expired, errc::session_closed,
    /// errc::lock_lost (our queue node was deleted by someone else while we waited),
    /// errc::recipe_mismatch (a semaphore and a mutex/shared_mutex on one path), errc::request_too_large
    /// (the path and lock_options::owner_info exceed session_config::max_request_bytes: nothing was
    /// sent), errc::request_dropped (the server dropped the connection at each of 5 creates),
    /// zk_errc::no_auth (the lock path's ACL forbids us), errc::chroot_missing (the server list's
    /// chroot, "h:2181/app", does not exist: zklock creates the lock path's parents, never the
    /// chroot); a semaphore also errc::permit_mismatch
    /// and errc::invalid_argument (zero permits).
    ///
    /// Lifetimes: the lock object may be destroyed while the operation runs; the session's state
    /// is kept alive by the operation.
    ///
    /// Thread safety: call from the session's executor (or its strand).
    template <asio::completion_token_for<void(error_code, lease)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_acquire(duration timeout, Token&& token = {})
    {
        return initiate(policy_, false, timeout, std::forward<Token>(token));
    }

    /// Acquires the lock, waiting until granted or cancelled.
    ///
    /// Completion signature: void(error_code, lease), as async_acquire(duration, Token&&).
    ///
    /// Executor: as async_acquire(duration, Token&&).
    ///
    /// Cancellation: as async_acquire(duration, Token&&), without a deadline.
    ///
    /// Errors: as async_acquire(duration, Token&&), without errc::timeout.
    ///
    /// Lifetimes: as async_acquire(duration, Token&&).
    ///
    /// Thread safety: as async_acquire(duration, Token&&).
    template <asio::completion_token_for<void(error_code, lease)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_acquire(Token&& token = {})
    {
        return initiate(policy_, false, std::nullopt, std::forward<Token>(token));
    }

    /// Acquires the lock only if it is free now.
    ///
    /// Completion signature: void(error_code, lease), after one round trip (a semaphore's first
    /// acquire: two).
    ///
    /// Executor: as async_acquire.
    ///
    /// Cancellation: as async_acquire. Its deadline is a third of the session timeout
    /// (negotiated_timeout(), or the configured one before the first connect): a server that has
    /// not answered by then (frozen, cut off, or no connection yet) ends it with errc::timeout,
    /// within the cleanup grace of async_acquire, and a node it may have created is deleted in the
    /// background.
    ///
    /// Errors: errc::would_block if the lock is held (our node is deleted again before
    /// completing); otherwise as async_acquire.
    ///
    /// Lifetimes: as async_acquire.
    ///
    /// Thread safety: as async_acquire.
    template <asio::completion_token_for<void(error_code, lease)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_try_acquire(Token&& token = {})
    {
        return initiate(policy_, true, std::nullopt, std::forward<Token>(token));
    }

protected:
    /// For the recipes: binds the session, the path, the options and the recipe's queue policy.
    basic_lock(session& s, std::string path, lock_options options, detail::queue_policy policy)
        : s_(s.impl()), path_(std::make_shared<const std::string>(std::move(path))),
          options_(std::make_shared<const lock_options>(std::move(options))), policy_(policy),
          count_known_(policy.kind() == detail::node_kind::permit ? std::make_shared<bool>(false) : nullptr)
    {
    }

    /// For the recipes: starts an acquire with `policy` (a timeout <= 0 makes it a try).
    template <class Token>
    auto initiate(const detail::queue_policy& policy, bool try_only, std::optional<duration> timeout, Token&& token)
    {
        if (timeout && *timeout <= duration::zero()) {
            try_only = true;
            timeout.reset();
        }
        detail::acquire_request req{path_, policy, try_only, options_ && options_->cohort && policy.what->cohort,
                                    false, timeout, options_, count_known_};
        return asio::async_initiate<Token, void(error_code, lease)>(
            detail::initiation<&detail::initiate_acquire, detail::session_ptr>{s_}, token, std::move(req));
    }

    /// For the recipes: the queue policy given at construction.
    const detail::queue_policy& policy() const noexcept { return policy_; }
    /// For the recipes: the session's shared state.
    const detail::session_ptr& session_handle() const noexcept { return s_; }
    /// For the recipes: the lock path, shared with every acquire.
    const std::shared_ptr<const std::string>& path_ptr() const noexcept { return path_; }

private:
    detail::session_ptr s_;
    std::shared_ptr<const std::string> path_;  // shared with each acquire (one copy, not one a waiter)
    std::shared_ptr<const lock_options> options_;  // shared with each acquire, as the path
    detail::queue_policy policy_;
    std::shared_ptr<bool> count_known_;  // a semaphore's: its stored permit count was verified
};

}  // namespace zklock
