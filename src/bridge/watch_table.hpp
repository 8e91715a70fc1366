// The session's table of the watches ZooKeeper has registered for us, by kind and path (the state
// each watch shares with its holder is port/watch_state.hpp).
#pragma once

#include "core/graveyard.hpp"
#include "port/watch_state.hpp"

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
