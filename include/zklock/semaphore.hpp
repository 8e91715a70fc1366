// zklock/semaphore.hpp — a fair counting semaphore on a ZooKeeper path.
//
// N permits. Each acquire queues an ephemeral sequential "s-" node; it holds a permit while fewer
// than N permit nodes are ahead of it. Permits are granted in queue order, never to more than N
// holders at once, and a release wakes exactly one waiter: each waiter watches the node N places
// ahead of it, so only the waiter whose watched node went is woken (Curator's
// InterProcessSemaphoreV2 instead serialises every acquirer through an internal lock and a
// children watch that wakes all of them).
//
// The permit count is stored in the semaphore node's data ("zklock-semaphore permits=N"), written
// by the first user; an acquire with a different count fails with errc::permit_mismatch.
#pragma once

#include <zklock/config.hpp>
#include <zklock/detail/acquire_fwd.hpp>
#include <zklock/lease.hpp>
#include <zklock/session.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace zklock {

namespace detail {
void initiate_semaphore_acquire(session_ptr s, acquire_request req, handler<error_code, lease> h);
}

/// A counting semaphore bound to a session, a path and a permit count. Each acquire takes one
/// permit and completes with a lease (void(error_code, lease)); the lease's fencing token orders
/// permit holders as it orders lock holders. Everything said of mutex::async_acquire
/// (executor, the per-state cancellation table, timeout, errors, lifetimes, thread safety) holds
/// here too, plus errc::permit_mismatch and errc::invalid_argument (zero permits). A semaphore
/// never shares its path with a mutex or shared_mutex: the younger node's acquire fails with
/// errc::recipe_mismatch. Each acquire
/// first reads the stored count (one extra round trip, pipelined by nothing: correctness first);
/// a cancellation (any type) or the deadline during that read, also while it waits for a lost
/// connection to come back, completes at once with operation_aborted / errc::timeout: nothing has
/// been created yet.
class semaphore {
public:
    using executor_type = asio::any_io_executor;
    using duration = std::chrono::steady_clock::duration;

    /// `options` applies to every acquire made through this object.
    /// (Two constructors, not a defaulted argument: see the GCC 12 note at session's constructors.)
    semaphore(session& s, std::string path, std::uint32_t permits)
        : s_(s.impl()), path_(std::move(path)), permits_(permits)
    {
    }
    semaphore(session& s, std::string path, std::uint32_t permits, lock_options options)
        : s_(s.impl()), path_(std::move(path)), permits_(permits), options_(std::move(options))
    {
    }

    executor_type get_executor() const noexcept;
    const std::string& path() const noexcept { return path_; }
    std::uint32_t permits() const noexcept { return permits_; }

    template <asio::completion_token_for<void(error_code, lease)> Token = asio::deferred_t>
    auto async_acquire(duration timeout, Token&& token = {})
    {
        return initiate(false, timeout, std::forward<Token>(token));
    }
    template <asio::completion_token_for<void(error_code, lease)> Token = asio::deferred_t>
    auto async_acquire(Token&& token = {})
    {
        return initiate(false, std::nullopt, std::forward<Token>(token));
    }
    template <asio::completion_token_for<void(error_code, lease)> Token = asio::deferred_t>
    auto async_try_acquire(Token&& token = {})
    {
        return initiate(true, std::nullopt, std::forward<Token>(token));
    }

private:
    template <class Token> auto initiate(bool try_only, std::optional<duration> timeout, Token&& token)
    {
        if (timeout && *timeout <= duration::zero()) {
            try_only = true;
            timeout.reset();
        }
        detail::acquire_request req{path_, {detail::node_kind::permit, permits_}, try_only, timeout, options_.owner_info};
        return asio::async_initiate<Token, void(error_code, lease)>(
            [](auto h, detail::session_ptr s, detail::acquire_request r) {
                detail::initiate_semaphore_acquire(std::move(s), std::move(r), std::move(h));
            },
            token, s_, std::move(req));
    }

    detail::session_ptr s_;
    std::string path_;
    std::uint32_t permits_;
    lock_options options_;
};

}  // namespace zklock
