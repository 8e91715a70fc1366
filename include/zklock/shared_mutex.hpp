// zklock/shared_mutex.hpp — a fair readers/writer lock on a ZooKeeper path.
//
// Readers share the lock, a writer holds it alone. Grants follow queue order: a reader queued
// behind a waiting writer waits for that writer, so a steady stream of readers never starves
// writers. No herd: a writer watches the node just before its own; a reader watches the nearest
// *writer* node before its own (not the first writer in the queue, which would wake it early).
//
// Writer nodes are the same "x-" nodes as zklock::mutex's, so a mutex and a shared_mutex on one
// path exclude each other as a writer would.
#pragma once

#include <zklock/config.hpp>
#include <zklock/detail/acquire_fwd.hpp>
#include <zklock/lease.hpp>
#include <zklock/session.hpp>

#include <chrono>
#include <string>

namespace zklock {

/// A readers/writer lock bound to a session and a path. Everything said of mutex::async_acquire
/// (completion signature, executor, the per-state cancellation table, errors, lifetimes, thread
/// safety) holds for each acquire here.
class shared_mutex {
public:
    using executor_type = asio::any_io_executor;
    using duration = std::chrono::steady_clock::duration;

    /// `options` applies to every acquire made through this object.
    /// (Two constructors, not a defaulted argument: see the GCC 12 note at session's constructors.)
    shared_mutex(session& s, std::string path) : s_(s.impl()), path_(std::move(path)) {}
    shared_mutex(session& s, std::string path, lock_options options)
        : s_(s.impl()), path_(std::move(path)), options_(std::move(options))
    {
    }

    executor_type get_executor() const noexcept;
    const std::string& path() const noexcept { return path_; }

    /// Exclusive (write) acquire. Completion: void(error_code, lease).
    template <asio::completion_token_for<void(error_code, lease)> Token = asio::deferred_t>
    auto async_acquire(duration timeout, Token&& token = {})
    {
        return detail::async_acquire(s_, path_, writer, options_, false, timeout, std::forward<Token>(token));
    }
    template <asio::completion_token_for<void(error_code, lease)> Token = asio::deferred_t>
    auto async_acquire(Token&& token = {})
    {
        return detail::async_acquire(s_, path_, writer, options_, false, std::nullopt, std::forward<Token>(token));
    }
    template <asio::completion_token_for<void(error_code, lease)> Token = asio::deferred_t>
    auto async_try_acquire(Token&& token = {})
    {
        return detail::async_acquire(s_, path_, writer, options_, true, std::nullopt, std::forward<Token>(token));
    }

    /// Shared (read) acquire. Completion: void(error_code, lease).
    template <asio::completion_token_for<void(error_code, lease)> Token = asio::deferred_t>
    auto async_acquire_shared(duration timeout, Token&& token = {})
    {
        return detail::async_acquire(s_, path_, reader, options_, false, timeout, std::forward<Token>(token));
    }
    template <asio::completion_token_for<void(error_code, lease)> Token = asio::deferred_t>
    auto async_acquire_shared(Token&& token = {})
    {
        return detail::async_acquire(s_, path_, reader, options_, false, std::nullopt, std::forward<Token>(token));
    }
    template <asio::completion_token_for<void(error_code, lease)> Token = asio::deferred_t>
    auto async_try_acquire_shared(Token&& token = {})
    {
        return detail::async_acquire(s_, path_, reader, options_, true, std::nullopt, std::forward<Token>(token));
    }

private:
    static constexpr detail::queue_policy writer{detail::node_kind::exclusive, 1, true};
    static constexpr detail::queue_policy reader{detail::node_kind::shared, 1};

    detail::session_ptr s_;
    std::string path_;
    lock_options options_;
};

}  // namespace zklock
