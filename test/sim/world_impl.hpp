// One simulated run, inside: the state the four parts of a run share, each part in its own file.
//   scheduler.cpp  the run: the clients and their sessions, the scheduler's loop, time
//   workload.cpp   what the users' code does, through zklock's public API only: acquire, hold,
//                  read, write, downgrade, wait for loss or revocation, release, observe
//   faults.cpp     what goes wrong: connections, followers, stalls, restarts, deaths, cancels
//   checkers.cpp   the invariants, checked after every step (and the end's, at the end)
// Each client is a zklock::session around its simulated port (sim_port), and its locks are the
// recipes' public objects, as an application holds them.
#pragma once

#include "sim_port.hpp"
#include "splitmix.hpp"
#include "virtual_clock.hpp"
#include "world.hpp"
#include "zk_model.hpp"

#include <zklock/election.hpp>
#include <zklock/lease.hpp>
#include <zklock/multi_lock.hpp>
#include <zklock/mutex.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>

#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace zklock::sim {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using duration = sim_clock::duration;
using time_point = sim_clock::time_point;

// A line of the trace, made only when the run keeps one.
#define SIM_NOTE(...)                              \
    do {                                           \
        if (cfg_.trace) note_line(__VA_ARGS__);    \
    } while (0)

/// The scheduler's choices.
struct rng : splitmix {
    bool chance(unsigned percent) { return below(100) < percent; }
    duration between(duration lo, duration hi)
    {
        const auto span = static_cast<std::uint64_t>((hi - lo).count());
        return lo + duration(static_cast<duration::rep>(below(span + 1)));
    }
};

inline std::string ms(duration d)
{
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

/// The longest an acquire may take past its deadline or its cancellation: the cleanup grace of
/// docs/guarantees.md ("Deadline under outage"), a promise the checkers hold the library to.
inline constexpr duration cleanup_grace = 250ms;

// The locks a run uses. Every actor of a run works on one of them, picked per acquisition.
// `leader`: an election's candidate; `multi`: a multi_lock over the mutex and the shared lock's
// write side (its two paths given in either order), whose leases are checked with those paths' own.
enum class lock_type { mutex, cohort, reader, writer, permit, leader, multi };

const char* name_of(lock_type t);
std::string path_of(lock_type t);
inline bool exclusive(lock_type t)
{
    return t == lock_type::mutex || t == lock_type::cohort || t == lock_type::writer || t == lock_type::leader;
}

inline constexpr std::uint32_t permits = 2;
/// The count of each client's second semaphore object on the same path, in runs that use it (a
/// path asked with two permit counts: whichever stores its count first, the other's acquires
/// fail with errc::permit_mismatch).
inline constexpr std::uint32_t wide_permits = permits + 1;

/// One lease an actor holds, with the lock it is of.
struct held_lease {
    std::string path;
    lock_type type;
    lease l;
    /// The model session it was granted in.
    session_id sid = 0;
    /// The lease's async_wait_lost, while it waits (a holder that waits for loss).
    bool waits_lost = false;
    /// The step at which the checkers first read it lost while that wait was pending (0: not).
    std::uint64_t lost_seen_at = 0;
    /// When it was granted.
    time_point granted_at{};
};

struct actor {
    int client = 0;
    int index = 0;
    enum class phase { idle, waiting, holding, releasing, done } ph = phase::idle;
    int round = 0;
    lock_type type = lock_type::mutex;
    int multi_order = 0;  ///< a multi_lock's: which order its paths were given in
    std::optional<duration> timeout;
    bool try_only = false;
    bool wide = false;  ///< a permit acquire through the client's semaphore of wide_permits
    time_point started{};
    duration stalled_at_start{};
    std::optional<time_point> cancelled_at;
    duration stalled_at_cancel{};
    std::unique_ptr<asio::cancellation_signal> cancel;
    std::vector<held_lease> held;  ///< one, or a multi_lock's
    std::size_t releasing = 0;     ///< releases not completed yet
    std::unique_ptr<detail::port_timer> hold_timer;
    std::uint64_t attempt = 0;
    session_id session_at_start = 0;  ///< the model session the acquire started in (0: none yet)
    bool downgraded = false;  ///< a writer that asked to downgrade: from then on checked as a reader
    bool revoke_asked = false;  ///< a revocation request was sent for the lease held now
    bool waits_revocation = false;  ///< its lease's async_wait_revocation is pending
};

struct client {
    int index = 0;
    std::unique_ptr<asio::io_context> io = std::make_unique<asio::io_context>(1);
    std::shared_ptr<sim_port> port;
    /// The public session around the port, and the locks as the client's code holds them.
    std::optional<zklock::session> s;
    std::optional<zklock::mutex> m, cohort;
    std::optional<zklock::shared_mutex> rw;
    std::optional<zklock::semaphore> sem;
    std::optional<zklock::semaphore> sem_wide;  ///< the semaphore's path, asked with wide_permits
    std::optional<zklock::election> el;
    std::optional<zklock::multi_lock> multi[2];  ///< the same two locks, listed in the two orders
    bool dead = false;
    std::optional<time_point> stalled_until;
    /// The stall began with a reply queued for the client: at resume, the client reads it before
    /// any handler runs (its timers' too, due during the stall).
    bool reply_first_at_resume = false;
    time_point stall_began{};
    duration stalled_total{};
    /// The client's replies are held (not delivered) until then, since replies_held_since, on
    /// its connection to model session replies_held_sid; its process runs meanwhile.
    std::optional<time_point> replies_held_until;
    time_point replies_held_since{};
    session_id replies_held_sid = 0;
    /// Handlers of operations called on a released lease of this client, not run yet.
    std::uint64_t misuse_pending = 0;
    bool eof = false;  ///< the server closed the connection: the client sees it when it next runs
    bool closed = false;
    /// The election's observer, in runs with an election: what it delivered last ("": no leader).
    zklock::election_observer observer;
    std::optional<std::string> observed;
    bool observer_ended = false;
};

struct timed_event {
    time_point at;
    std::uint64_t order;
    std::function<void()> fn;
};

/// A revocation request written into a holder's node (checkers: delivered, or the holder lost).
struct revocation {
    int actor = 0;
    int by = 0;  ///< the client that writes it
    std::uint64_t attempt = 0;
    std::string node;
    std::optional<time_point> committed;  ///< when the leader applied the write
    bool awaited = false;                 ///< the holder waited for revocation when it was applied
    bool delivered = false;
};

class world {
public:
    explicit world(const run_config& cfg);
    ~world();
    run_result run();

private:
    // ---- the trace (scheduler.cpp) ----
    void note_line(std::string s);
    void violate(std::string what);

    // ---- the clients (scheduler.cpp) ----
    bool runnable(const client& c) const { return !c.dead && !c.stalled_until; }
    void run_clients();
    void make_client(int index, const struct port_env& env);
    void close_sessions();
    /// The client runs, is connected, and its server reaches the leader and has applied all
    /// the leader has: what the leader did, it can hear of.
    bool healthy(const client& c) const;

    // ---- the workload (workload.cpp) ----
    void start_acquire(actor& a);
    void on_acquired(actor& a, std::uint64_t attempt, error_code ec, std::vector<held_lease> leases);
    void hold(actor& a, std::uint64_t attempt);
    void wait_lost(actor& a, std::uint64_t attempt, std::size_t i);
    void wait_revocation(actor& a, std::uint64_t attempt);
    void release(actor& a);
    void finish_round(actor& a);
    void request_revocation(actor& a);
    void observe(client& c);
    /// Every operation on a lease that is empty (moved from) or released: each completes with
    /// the error its documentation gives, never inside its initiating function.
    void probe_lease(actor& a, lease& l, bool empty);
    /// The queries and a try-acquire of a moved-from lock object, the object then moved back.
    void probe_moved_lock(client& c);
    /// A probe's completions through asio::system_executor on to misuse_io_: runs misuse_io_
    /// until `done` reaches `want` (at most 10 s), then until no work is left on it (the system
    /// executor's threads have let go of theirs). How many of the `want` never completed.
    std::size_t run_misuse_io(const std::size_t& done, std::size_t want);
    /// The count an acquire of `a` asks for.
    std::uint32_t count_of(const actor& a) const { return a.wide ? wide_permits : permits; }

    // ---- faults and time (faults.cpp) ----
    void at(time_point t, std::function<void()> fn) { events_.push_back({t, next_event_++, std::move(fn)}); }
    std::optional<time_point> next_event() const;
    void advance_to(time_point t);
    void server_closed(session_id s);
    void close_pending();
    void inject_fault();
    void stall(client& c, duration d);
    /// Whether the client's next message is a reply it could be handed now.
    bool reply_queued(client& c);
    /// A client's held replies: released when due, or when their connection ended.
    void end_held_replies();

    // ---- the checkers (checkers.cpp) ----
    /// After every step: every lease's reading, mutual exclusion, loss told, revocations, an idle permit.
    void check_step();
    void check_leases();
    void check_revocations();
    void check_idle_permits();
    /// A lease granted before its client's replies were held reads suspended from T/3 after the
    /// hold began, and lost from T/2 (no answer of the leader can have come since).
    void check_held_replies();
    /// The permit count stored in the semaphore's path (0: none stored).
    std::uint32_t stored_permits() const;
    /// As the leader applies a write (zk_model::on_commit): guarded writes in fence order;
    /// revocation requests as they land.
    void on_commit(const std::string& path, const std::string& data, bool created);
    /// A grant: fences increase per exclusive path.
    void check_grant(const actor& a, const std::vector<held_lease>& leases);
    /// Once nothing moves: every observer delivered the leader as it is.
    void check_observers();
    /// Every actor done: no queue node of a live session is left.
    void check_end();
    /// Every session closed and the containers reaped: nothing left.
    void check_empty_tree();

    bool workload_done() const;
    client& client_of(const actor& a) { return *clients_[static_cast<std::size_t>(a.client)]; }
    const client& client_of(const actor& a) const { return *clients_[static_cast<std::size_t>(a.client)]; }
    /// Nothing left to do but wait: every actor done, every live client connected, running and
    /// answered, every server caught up.
    bool quiescent();
    bool has(lock_type t) const;

    run_config cfg_;
    rng rng_;
    virtual_clock clock_;
    zk_model model_;
    std::vector<std::unique_ptr<client>> clients_;
    std::vector<std::unique_ptr<actor>> actors_;
    std::vector<lock_type> types_;
    std::vector<timed_event> events_;
    std::vector<session_id> closing_;  // expired at the leader, their server not told yet
    std::uint64_t next_event_ = 0;
    std::uint64_t steps_ = 0;
    std::uint64_t still_ = 0;  // time steps in a row that found a timer due at the current instant
    int fault_budget_ = 0;
    time_point fault_end_{};
    bool healed_ = false;
    std::optional<time_point> healed_at_;
    // The largest fence granted per exclusive path (mutex, cohort, writer, leader).
    std::map<std::string, fence_token> last_fence_;
    // The largest fence of a guarded write applied, per lock path.
    std::map<std::string, fence_token> last_write_;
    bool revocations_ = false;                // whether this run's clients ask holders to give up
    std::set<std::string> seeded_;            // persistent paths made by an administrator
    std::string denied_;                      // a lock path nobody may create in ("": none)
    std::vector<revocation> revocations_sent_;
    // The semaphore's waiting nodes that could hold a permit, and since when (check_idle_permits).
    std::map<std::string, time_point> idle_permit_since_;
    bool wide_permits_ = false;  // whether this run's permit acquires also ask for wide_permits
    // Where the completions of an empty lease's operations come (an empty lease has no session:
    // they come from asio::system_executor's thread), waited for in the step that made them.
    asio::io_context misuse_io_;
    bool misuse_calling_ = false;  // inside an initiating function called by probe_lease
    run_result result_;
};

}  // namespace zklock::sim
