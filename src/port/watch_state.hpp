// One-shot watches: the state a watch shares between the session, which fires it, and whoever
// waits on it (an operation, or a zklock::watch).
#pragma once

#include "core/graveyard.hpp"
#include "core/handler_util.hpp"

#include <zklock/detail/shared_path.hpp>
#include <zklock/detail/unique_function.hpp>
#include <zklock/types.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <utility>

namespace zklock::detail {

/// Shared state of a one-shot watch.
class watch_state {
public:
    /// `path`: the node watched, if the holder knows it now (it then shares its copy with the
    /// session's table of watches, and the read that sets the watch keeps none of its own).
    explicit watch_state(asio::any_io_executor ex, shared_path path = {})
        : ex_(std::make_shared<const asio::any_io_executor>(std::move(ex))), path_(std::move(path))
    {
    }
    /// `ex`: shared by the watches of one session (zk_port::make_watch), not a copy in each.
    explicit watch_state(std::shared_ptr<const asio::any_io_executor> ex, shared_path path = {})
        : ex_(std::move(ex)), path_(std::move(path))
    {
    }
    void fire(error_code ec, watch_event ev);
    /// Internal waiter (runs on the session executor); one at a time.
    void wait(unique_function<void(error_code, watch_event)> cb);
    void cancel_wait();
    /// The execution context shuts down: the waiter is buried, never called.
    void abandon(graveyard& g);
    bool fired() const noexcept { return result_ != nullptr; }
    bool has_waiter() const noexcept { return static_cast<bool>(waiter_); }
    const asio::any_io_executor& executor() const noexcept { return *ex_; }
    const shared_path& path() const noexcept { return path_; }

private:
    std::shared_ptr<const asio::any_io_executor> ex_;  // never null
    // Allocated when it fires: a watch that has not fired yet (a waiter's, the common case) holds a pointer, not 72 bytes.
    std::unique_ptr<std::pair<error_code, watch_event>> result_;
    unique_function<void(error_code, watch_event)> waiter_;
    shared_path path_;
};

}  // namespace zklock::detail
