// zklock/multi_lock.hpp — several locks, all or nothing, under one deadline.
//
// The locks (any mix of exclusive, shared and semaphore permits) are acquired one after another in
// a canonical order (by path, then kind), so two multi-locks over overlapping sets can never
// deadlock each other, whatever order their users listed the paths in. One deadline covers the
// whole set (Curator's InterProcessMultiLock gives each lock the full timeout). If any acquire
// fails, times out or is cancelled, what was already taken is released before completing.
#pragma once

#include <zklock/config.hpp>
#include <zklock/detail/session_fwd.hpp>
#include <zklock/lease.hpp>
#include <zklock/session.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zklock {

/// One lock of a multi_lock.
struct lock_spec {
    lock_kind kind = lock_kind::exclusive;  ///< how this lock is taken
    std::string path;                       ///< the lock path
    std::uint32_t permits = 1;              ///< for lock_kind::permit: the semaphore's permit count
    /// For lock_kind::exclusive: taken as a shared_mutex's write side instead of as a mutex. Either
    /// excludes every other holder of the path; their nodes are named apart so that Apache Curator
    /// tells its InterProcessMutex and InterProcessReadWriteLock apart (docs/guide.md, "Mixed fleets").
    bool as_writer = false;

    /// An exclusive lock on `path`, as a mutex takes it.
    static lock_spec exclusive(std::string path) { return {lock_kind::exclusive, std::move(path), 1, false}; }
    /// The write side of a shared_mutex on `path`.
    static lock_spec writer(std::string path) { return {lock_kind::exclusive, std::move(path), 1, true}; }
    /// The read side of a shared_mutex on `path`.
    static lock_spec shared(std::string path) { return {lock_kind::shared, std::move(path), 1, false}; }
    /// One permit of a semaphore of `permits` permits on `path`.
    static lock_spec semaphore(std::string path, std::uint32_t permits)
    {
        return {lock_kind::permit, std::move(path), permits, false};
    }
};

namespace detail {
void initiate_multi_acquire(session_ptr s, std::vector<lock_spec> specs, lock_options options,
                            std::optional<std::chrono::steady_clock::duration> timeout,
                            handler<error_code, std::vector<lease>> h);
}

/// Several locks bound to a session, acquired all or nothing under one deadline. Cheap, like a
/// lock object: every acquire is independent.
///
/// Misuse: as basic_lock's. A moved-from multi_lock (or one made from a moved-from session)
/// completes each acquire with errc::session_closed and no lease, posted through
/// asio::system_executor on to the handler's associated executor; specs() is empty. One of a
/// closed session completes with errc::session_closed on the session's executor.
class multi_lock {
public:
    using executor_type = asio::any_io_executor;  ///< the executor type of the session
    using duration = std::chrono::steady_clock::duration;  ///< the type of a timeout

    /// `options` applies to every lock of the set.
    multi_lock(session& s, std::vector<lock_spec> specs) : s_(s.impl()), specs_(std::move(specs)) {}
    /// As above, with `options` for every lock of the set.
    multi_lock(session& s, std::vector<lock_spec> specs, lock_options options)
        : s_(s.impl()), specs_(std::move(specs)), options_(std::move(options))
    {
    }

    /// The locks, in the order given (the order of the leases an acquire completes with).
    const std::vector<lock_spec>& specs() const noexcept { return specs_; }

    /// Acquires every lock within `timeout` in total, one after another in canonical order.
    ///
    /// Completion signature: void(error_code, std::vector<lease>) with the leases in the order of
    /// specs() (not the acquisition order); empty on error.
    /// A timeout <= 0 tries each lock once, as basic_lock::async_try_acquire does
    /// (errc::would_block if one is held; what was taken is released); duration::max() waits
    /// without a practical limit.
    ///
    /// Executor: the handler's associated executor (default: the session's); never completes
    /// inside this call.
    ///
    /// Cancellation: terminal, partial and total. The acquire in flight is cancelled with the same
    /// type (it deletes its node, as basic_lock::async_acquire documents per state), then every
    /// lease taken so far is released, then the operation completes with operation_aborted: for
    /// terminal and partial within two cleanup graces (the acquire's, the releases'), the rest going
    /// on in the background; for total alone once every node is known gone.
    /// Deadline: as a single acquire's, the operation completes within the cleanup grace (250 ms)
    /// of its deadline or cancellation whatever the server does, plus one more grace for the
    /// releases of what was taken: a release the server has not confirmed by then goes on in the
    /// background (counted in metrics_snapshot::background_cleanups).
    ///
    /// Errors: those of the single acquires (the first one that failed; what was taken is
    /// released first); errc::timeout when the deadline passes between two acquires;
    /// errc::invalid_argument for an empty set or the same path listed twice (nothing sent); the
    /// loss of a lock taken earlier (its lease's lost_reason(): errc::session_expired,
    /// errc::lock_lost) when it was lost while a later one was awaited: the set completes only
    /// with every lock held.
    ///
    /// Lifetimes: the multi_lock object may be destroyed while the operation runs.
    ///
    /// Thread safety: call from the session's executor.
    template <asio::completion_token_for<void(error_code, std::vector<lease>)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_acquire(duration timeout, Token&& token = {})
    {
        return initiate(timeout, std::forward<Token>(token));
    }
    /// Acquires every lock, one after another in canonical order, without a deadline.
    ///
    /// Completion signature: void(error_code, std::vector<lease>), as
    /// async_acquire(duration, Token&&).
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
    template <asio::completion_token_for<void(error_code, std::vector<lease>)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_acquire(Token&& token = {})
    {
        return initiate(std::nullopt, std::forward<Token>(token));
    }

private:
    template <class Token> auto initiate(std::optional<duration> timeout, Token&& token)
    {
        return asio::async_initiate<Token, void(error_code, std::vector<lease>)>(
            detail::initiation<&detail::initiate_multi_acquire, detail::session_ptr>{s_}, token, specs_, options_, timeout);
    }

    detail::session_ptr s_;
    std::vector<lock_spec> specs_;
    lock_options options_;
};

}  // namespace zklock
