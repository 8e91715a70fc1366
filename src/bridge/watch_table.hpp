// One-shot watches: the state a zklock::watch shares with the session, and the session's table of
// the watches ZooKeeper has registered for us, by kind and path.
#pragma once

#include "bridge/graveyard.hpp"
#include "bridge/handler_util.hpp"

#include <zklock/detail/unique_function.hpp>
#include <zklock/types.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

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

enum class watch_kind { data, exist, child };

/// The watches set by successful reads, until their event (ZooKeeper's watch semantics: a data
/// watch fires on change or deletion, an exists watch also on creation, a child watch on a
/// change of children or the node's deletion). Holds them weakly: a watch nobody holds is gone.
class watch_table {
public:
    void add(watch_kind kind, const std::string& path, const std::shared_ptr<watch_state>& w);
    /// A watcher event from the server (ZOO_*_EVENT, never a session event).
    void deliver(int zk_event_type, const std::string& path);
    /// The session is gone: every watch fires with `ec`.
    void fail_all(error_code ec);
    /// The execution context shuts down: every waiter is buried, the table emptied.
    void abandon(graveyard& g);

private:
    using table = std::unordered_map<std::string, std::vector<std::weak_ptr<watch_state>>>;
    static void fire(table& t, const std::string& path, watch_event ev);

    table data_, exist_, child_;
};

}  // namespace zklock::detail
