// Where the look-ahead's watches go: a session extension of the acquires (see acquire_op.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace zklock::detail {

/// The look-ahead (acquire_fsm: an exclusive waiter also watches the node before its
/// predecessor) sets its watch at once within `span` queue places of the head, as the waiter's
/// own latest listing or the latest grant on this session says. A waiter further back is deferred
/// here, and promoted when a grant of this session's (its node is then the head) brings it within
/// `span` sequence numbers of the head. A deferred waiter costs a map entry instead of a watch
/// (bench W10000: in a queue of ten thousand, those behind the first `span` hold none until the
/// queue has drained to them); one that is never brought near (no grant on its session before
/// its own) waits as without a look-ahead: its predecessor's deletion, then the handoff mark.
/// `Waiter::promote()` is called once its entry has left the window, and must not run the
/// waiter's requests inside the call (it posts them).
template <class Waiter> class lookahead_window {
public:
    static constexpr std::int64_t span = 1024;

    /// Whether a waiter whose node has sequence number `seq`, with `position` nodes before it in
    /// its latest listing, is within the span of `dir`'s head.
    bool near(const std::string& dir, std::int64_t seq, std::size_t position) const
    {
        if (position <= static_cast<std::size_t>(span)) return true;
        const auto it = dirs_.find(dir);
        return it != dirs_.end() && it->second.head >= 0 && seq - it->second.head <= span;
    }

    void defer(const std::string& dir, std::int64_t seq, Waiter* w) { dirs_[dir].waiting.emplace(seq, w); }

    /// A deferred waiter that no longer waits (finished, or its wait has no look-ahead now).
    void remove(const std::string& dir, std::int64_t seq, const Waiter* w)
    {
        const auto it = dirs_.find(dir);
        if (it == dirs_.end()) return;
        auto& waiting = it->second.waiting;
        for (auto [e, end] = waiting.equal_range(seq); e != end; ++e)
            if (e->second == w) {
                waiting.erase(e);
                break;
            }
        if (waiting.empty()) dirs_.erase(it);
    }

    /// This session's node with sequence number `head` was granted `dir`: every deferred waiter
    /// now within the span leaves the window and is promoted.
    void note_grant(const std::string& dir, std::int64_t head)
    {
        const auto it = dirs_.find(dir);
        if (it == dirs_.end()) return;
        auto& d = it->second;
        d.head = std::max(d.head, head);
        const auto end = d.waiting.upper_bound(d.head + span);
        std::vector<Waiter*> promoted;
        for (auto w = d.waiting.begin(); w != end; ++w) promoted.push_back(w->second);
        d.waiting.erase(d.waiting.begin(), end);
        if (d.waiting.empty()) dirs_.erase(it);
        for (auto* w : promoted) w->promote();
    }

    /// Waiters deferred, over every lock path.
    std::size_t deferred() const noexcept
    {
        std::size_t n = 0;
        for (const auto& d : dirs_) n += d.second.waiting.size();
        return n;
    }

private:
    struct dir_state {
        std::int64_t head = -1;  ///< the highest sequence number granted here (-1: none heard)
        std::multimap<std::int64_t, Waiter*> waiting;
    };
    std::unordered_map<std::string, dir_state> dirs_;
};

}  // namespace zklock::detail
