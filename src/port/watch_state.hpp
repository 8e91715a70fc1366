// One-shot watches: the state a watch shares between the session, which fires it, and whoever
// waits on it (an operation, or a zklock::watch).
#pragma once

#include "core/graveyard.hpp"
#include "core/handler_util.hpp"

#include <zklock/detail/unique_function.hpp>
#include <zklock/types.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <utility>

namespace zklock::detail {

/// Shared state of a one-shot watch.
class watch_state {
public:
    explicit watch_state(asio::any_io_executor ex) : ex_(std::move(ex)) {}
    void fire(error_code ec, watch_event ev);
    /// Internal waiter (runs on the session executor); one at a time.
    void wait(unique_function<void(error_code, watch_event)> cb);
    void cancel_wait();
    /// The execution context shuts down: the waiter is buried, never called.
    void abandon(graveyard& g);
    bool fired() const noexcept { return result_ != nullptr; }
    bool has_waiter() const noexcept { return static_cast<bool>(waiter_); }
    const asio::any_io_executor& executor() const noexcept { return ex_; }

private:
    asio::any_io_executor ex_;
    // Allocated when it fires: a watch that has not fired yet (a waiter's, the common case) holds a pointer, not 72 bytes.
    std::unique_ptr<std::pair<error_code, watch_event>> result_;
    unique_function<void(error_code, watch_event)> waiter_;
};

}  // namespace zklock::detail
