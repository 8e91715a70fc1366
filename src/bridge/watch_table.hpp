// The session's table of the watches ZooKeeper has registered for us, by kind and path (the state
// each watch shares with its holder is port/watch_state.hpp).
#pragma once

#include "core/graveyard.hpp"
#include "port/watch_state.hpp"

#include <zklock/detail/unique_function.hpp>
#include <zklock/types.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/unordered/unordered_flat_set.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
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
    /// The key is the watch's own path (watch_state::path) when it has one: one copy for both.
    void add(watch_kind kind, std::string_view path, const std::shared_ptr<watch_state>& w);
    /// A watcher event from the server (ZOO_*_EVENT, never a session event).
    void deliver(int zk_event_type, const std::string& path);
    /// The session is gone: every watch fires with `ec`.
    void fail_all(error_code ec);
    /// The execution context shuts down: every waiter is buried, the table emptied.
    void abandon(graveyard& g);

private:
    // Flat (no allocation per path), 32 bytes a path: its name, which a watch of that path
    // usually shares (watch_state::path), its first watch, and any others (rare) apart. Bench
    // W10000 holds some 20 000 watches at once.
    struct entry {
        shared_path path;                                              // the key
        mutable std::weak_ptr<watch_state> first;                      // (a set's elements are const)
        mutable std::unique_ptr<std::vector<std::weak_ptr<watch_state>>> more;
        void collect(std::vector<std::weak_ptr<watch_state>>& out) const;  // first, then more
    };
    struct entry_hash {
        using is_transparent = void;
        std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>()(s); }
        std::size_t operator()(const entry& e) const noexcept { return (*this)(e.path.view()); }
    };
    struct entry_eq {
        using is_transparent = void;
        static std::string_view key(std::string_view s) noexcept { return s; }
        static std::string_view key(const entry& e) noexcept { return e.path.view(); }
        template <class A, class B> bool operator()(const A& a, const B& b) const noexcept { return key(a) == key(b); }
    };
    using table = boost::unordered_flat_set<entry, entry_hash, entry_eq>;
    static void fire(table& t, std::string_view path, watch_event ev);

    table data_, exist_, child_;
};

}  // namespace zklock::detail
