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

#include <zklock/basic_lock.hpp>

#include <string>

namespace zklock {

/// A readers/writer lock bound to a session and a path.
///
/// The write side is basic_lock's: async_acquire(timeout, token), async_acquire(token),
/// async_try_acquire(token). The read side mirrors it: async_acquire_shared(timeout, token),
/// async_acquire_shared(token), async_try_acquire_shared(token). Everything basic_lock documents
/// (completion signature void(error_code, lease), executor, the per-state cancellation table,
/// errors, lifetimes, thread safety) holds for each of them.
class shared_mutex : public basic_lock {
public:
    /// `options` applies to every acquire made through this object.
    shared_mutex(session& s, std::string path) : shared_mutex(s, std::move(path), lock_options{}) {}
    /// As above, with `options` for every acquire made through this object.
    shared_mutex(session& s, std::string path, lock_options options)
        : basic_lock(s, std::move(path), std::move(options), detail::queue_policy{detail::writer_recipe})
    {
    }

    /// Shared (read) acquire, waiting at most `timeout` (<= 0: try).
    ///
    /// Completion signature: void(error_code, lease), as
    /// basic_lock::async_acquire(duration, Token&&).
    ///
    /// Executor: as basic_lock::async_acquire(duration, Token&&).
    ///
    /// Cancellation: as basic_lock::async_acquire(duration, Token&&): the per-state table,
    /// the timeout, the deadline.
    ///
    /// Errors: as basic_lock::async_acquire(duration, Token&&).
    ///
    /// Lifetimes: as basic_lock::async_acquire(duration, Token&&).
    ///
    /// Thread safety: as basic_lock::async_acquire(duration, Token&&).
    template <asio::completion_token_for<void(error_code, lease)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_acquire_shared(duration timeout, Token&& token = {})
    {
        return initiate(reader, false, timeout, std::forward<Token>(token));
    }
    /// Shared (read) acquire, waiting until granted or cancelled.
    ///
    /// Completion signature: void(error_code, lease), as
    /// basic_lock::async_acquire(duration, Token&&).
    ///
    /// Executor: as basic_lock::async_acquire(duration, Token&&).
    ///
    /// Cancellation: as basic_lock::async_acquire(duration, Token&&), without a deadline.
    ///
    /// Errors: as basic_lock::async_acquire(duration, Token&&), without errc::timeout.
    ///
    /// Lifetimes: as basic_lock::async_acquire(duration, Token&&).
    ///
    /// Thread safety: as basic_lock::async_acquire(duration, Token&&).
    template <asio::completion_token_for<void(error_code, lease)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_acquire_shared(Token&& token = {})
    {
        return initiate(reader, false, std::nullopt, std::forward<Token>(token));
    }
    /// Shared (read) acquire, only if no writer holds or waits ahead now.
    ///
    /// Completion signature: void(error_code, lease), as basic_lock::async_try_acquire.
    ///
    /// Executor: as basic_lock::async_try_acquire.
    ///
    /// Cancellation: as basic_lock::async_try_acquire (its deadline included).
    ///
    /// Errors: errc::would_block if a writer holds the lock or waits ahead; otherwise as
    /// basic_lock::async_try_acquire.
    ///
    /// Lifetimes: as basic_lock::async_try_acquire.
    ///
    /// Thread safety: as basic_lock::async_try_acquire.
    template <asio::completion_token_for<void(error_code, lease)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_try_acquire_shared(Token&& token = {})
    {
        return initiate(reader, true, std::nullopt, std::forward<Token>(token));
    }

private:
    static constexpr detail::queue_policy reader{detail::reader_recipe};
};

}  // namespace zklock
