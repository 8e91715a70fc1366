// zklock/mutex.hpp — a fair exclusive lock on a ZooKeeper path.
//
// The recipe: each acquire creates an ephemeral sequential node "x-<attempt id>-<seq>" under the
// lock path and holds the lock when its node is first in sequence order. A waiter watches only the
// node just before its own (a data watch, so nothing is left behind if that node is already gone),
// and looks again when it fires: no herd effect, and locks are granted strictly in queue order.
#pragma once

#include <zklock/config.hpp>
#include <zklock/detail/acquire_fwd.hpp>
#include <zklock/lease.hpp>
#include <zklock/session.hpp>

#include <chrono>
#include <string>

namespace zklock {

/// An exclusive lock bound to a session and a path. Cheap: it holds no ZooKeeper state itself;
/// every acquire is independent (one mutex object may be acquired by many coroutines at once,
/// each queueing its own node).
class mutex {
public:
    using executor_type = asio::any_io_executor;

    /// `options` applies to every acquire made through this object.
    /// (Two constructors, not a defaulted argument: see the GCC 12 note at session's constructors.)
    mutex(session& s, std::string path) : s_(s.impl()), path_(std::move(path)) {}
    mutex(session& s, std::string path, lock_options options)
        : s_(s.impl()), path_(std::move(path)), options_(std::move(options))
    {
    }

    executor_type get_executor() const noexcept;
    const std::string& path() const noexcept { return path_; }

    /// Acquires the lock, waiting at most `timeout` (measured from the call, exact across any
    /// number of predecessor changes). A zero timeout behaves like async_try_acquire.
    ///
    /// Completion signature: void(error_code, lease). On success the lease holds the lock.
    ///
    /// Executor: the handler's associated executor (default: the session's).
    ///
    /// Per-operation cancellation (terminal, partial and total are all honoured as total):
    ///   | state                       | on cancel                                                |
    ///   |-----------------------------|----------------------------------------------------------|
    ///   | before the create is sent   | completes with operation_aborted, nothing was created     |
    ///   | create in flight            | waits for the reply (or finds the node by its attempt id |
    ///   |                             | if the reply was lost), deletes it, then completes        |
    ///   | waiting for the predecessor | deletes our node, then completes                          |
    ///   | re-checking the queue       | deletes our node once the reply is in, then completes     |
    ///   | connection lost             | deletes our node after reconnecting (or learns that the   |
    ///   |                             | session expired and the node went with it)                |
    /// So a cancelled acquire leaves no node behind. The timeout takes the same path and completes
    /// with errc::timeout.
    ///
    /// Errors: errc::timeout, errc::would_block (try), asio::error::operation_aborted,
    /// errc::invalid_path, errc::not_connected, errc::session_expired, errc::session_closed,
    /// errc::lock_lost (our queue node was deleted by someone else while we waited),
    /// errc::recipe_mismatch (a semaphore uses this path), errc::request_too_large (the path and
    /// lock_options::owner_info exceed session_config::max_request_bytes: nothing was sent),
    /// errc::request_dropped (the server dropped the connection at each of 5 creates),
    /// zk_errc::no_auth (the lock path's ACL forbids us).
    ///
    /// Lifetimes: the mutex object may be destroyed while the operation runs; the session's state
    /// is kept alive by the operation.
    /// Thread safety: call from the session's executor.
    template <asio::completion_token_for<void(error_code, lease)> Token = asio::deferred_t>
    auto async_acquire(std::chrono::steady_clock::duration timeout, Token&& token = {})
    {
        return detail::async_acquire(s_, path_, policy, options_, false, timeout, std::forward<Token>(token));
    }

    /// Acquires the lock, waiting until granted or cancelled. As above, without a deadline.
    template <asio::completion_token_for<void(error_code, lease)> Token = asio::deferred_t>
    auto async_acquire(Token&& token = {})
    {
        return detail::async_acquire(s_, path_, policy, options_, false, std::nullopt, std::forward<Token>(token));
    }

    /// Acquires the lock only if it is free now: one round trip; errc::would_block if it is held
    /// (our node is deleted again before completing).
    template <asio::completion_token_for<void(error_code, lease)> Token = asio::deferred_t>
    auto async_try_acquire(Token&& token = {})
    {
        return detail::async_acquire(s_, path_, policy, options_, true, std::nullopt, std::forward<Token>(token));
    }

private:
    static constexpr detail::queue_policy policy{detail::node_kind::exclusive, 1};

    detail::session_ptr s_;
    std::string path_;
    lock_options options_;
};

}  // namespace zklock
