// support/checker.hpp — a safety checker for lock tests: records every grant and release with one
// monotonic clock and checks the history afterwards.
//
//   checker c;
//   c.granted(path, holder, lease.fencing_token(), seq);   // right after the acquire completed
//   auto v = c.read_counter(path); co_await ...; c.write_counter(path, v + 1);  // the critical section
//   c.released(path, holder);                              // right before async_release (or when told lost)
//   CHECK_MESSAGE(c.ok(), c.report());
//
// What check() finds, per lock path:
//  * overlap: a grant while another holder has not released (two holders at once);
//  * a release by someone who does not hold the lock, a holder granted twice;
//  * fencing tokens that do not strictly increase from one grant to the next;
//  * grants out of queue order (sequence numbers not increasing), where the test asked for
//    queue order with expect_queue_order() (a lock directory that is reclaimed and created
//    again restarts its sequence numbers, and a test that deletes nodes breaks the order);
//  * lost updates of the shared counter: a write that is not "the value before plus one", which
//    is what happens when two critical sections interleave read -> suspend -> write;
//  * holders still holding at the end, when check(require_all_released = true);
//  * bounded unfairness, where the test asked for it with expect_bounded_runs(lock, B, grace):
//    a run of consecutive grants to one group (requested(lock, holder, group): e.g. the session
//    a holder belongs to) that grants more than B times while a holder of another group has been
//    waiting for longer than `grace` (cohort mode's rule: lock_options::max_local_handoffs).
//
// Independent of zklock (plain strings and integers), thread-safe (one mutex), so the same object
// can be fed from several threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace zklock::test {

class checker {
public:
    using clock = std::chrono::steady_clock;

    enum class kind { grant, release, request };

    struct event {
        kind what;
        std::string lock;
        std::string holder;
        std::int64_t token = 0;
        std::int64_t seq = -1;  ///< queue sequence number, -1 if unknown
        clock::time_point at;
        std::uint64_t order = 0;  ///< position in the history (ties on the clock are broken by it)
        std::string note;         ///< e.g. why a lease ended ("released", "lost: ...")
        std::uint64_t local = 0;  ///< second half of a pair token (zklock::fence_token::local)
        std::string group;        ///< requests: the holder's group
    };

    /// `holder` must be unique per acquisition (e.g. "s3/w17#4"): one holder is granted once.
    void granted(const std::string& lock, const std::string& holder, std::int64_t token, std::int64_t seq = -1);
    /// With a pair token (zklock::lease::fence(): {zxid, local}), compared lexicographically.
    void granted(const std::string& lock, const std::string& holder, std::int64_t zxid, std::uint64_t local,
                 std::int64_t seq);
    /// `holder` asks for the lock now (before its acquire is initiated), as one of `group`.
    void requested(const std::string& lock, const std::string& holder, const std::string& group);
    /// The holder stops acting on the lock: before async_release, or when told the lock is lost.
    void released(const std::string& lock, const std::string& holder, const std::string& note = "released");

    /// Ask for the grants of `lock` to follow queue order (increasing sequence numbers).
    void expect_queue_order(const std::string& lock);
    /// Ask for bounded unfairness between the groups of `lock` (see the rules above).
    void expect_bounded_runs(const std::string& lock, std::size_t max_run, clock::duration grace);

    /// The shared counter of `lock`, read and written inside the critical section.
    std::int64_t read_counter(const std::string& lock);
    void write_counter(const std::string& lock, std::int64_t value);
    std::int64_t counter(const std::string& lock) const;
    std::size_t counter_writes(const std::string& lock) const;

    /// Violations found in the history so far (empty: clean).
    std::vector<std::string> check(bool require_all_released = true) const;
    bool ok(bool require_all_released = true) const { return check(require_all_released).empty(); }
    /// The violations, one per line, and a count of the events (for CHECK_MESSAGE).
    std::string report(bool require_all_released = true) const;

    std::size_t grants(const std::string& lock = {}) const;
    std::size_t releases(const std::string& lock = {}) const;
    std::vector<event> history() const;

    /// For the checker's own tests: adds an event with an explicit time.
    void record(event e);

private:
    struct counter_state {
        std::int64_t value = 0;
        std::size_t writes = 0;
        std::vector<std::string> lost;  // lost updates seen at write time
    };

    mutable std::mutex m_;
    std::vector<event> events_;
    std::uint64_t next_order_ = 0;
    std::set<std::string> ordered_locks_;
    std::map<std::string, std::pair<std::size_t, clock::duration>> bounded_locks_;
    void check_runs(const std::string& lock, const std::vector<const event*>& evs, std::size_t max_run,
                    clock::duration grace, std::vector<std::string>& out) const;
    std::map<std::string, counter_state> counters_;
};

}  // namespace zklock::test
