#include "world.hpp"

#include "sim_port.hpp"
#include "sim_random.hpp"
#include "splitmix.hpp"
#include "virtual_clock.hpp"

#include "core/deadline.hpp"

#include <zklock/detail/acquire_fsm.hpp>
#include <zklock/detail/acquire_fwd.hpp>
#include <zklock/detail/recipe.hpp>
#include <zklock/election.hpp>
#include <zklock/lease.hpp>
#include <zklock/multi_lock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <sstream>

namespace zklock::sim {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using duration = sim_clock::duration;
using time_point = sim_clock::time_point;

// A line of the trace, made only when the run keeps one.
#define SIM_NOTE(...)                        \
    do {                                     \
        if (cfg_.trace) note_line(__VA_ARGS__); \
    } while (0)

namespace {

/// The scheduler's choices.
struct rng : splitmix {
    bool chance(unsigned percent) { return below(100) < percent; }
    duration between(duration lo, duration hi)
    {
        const auto span = static_cast<std::uint64_t>((hi - lo).count());
        return lo + duration(static_cast<duration::rep>(below(span + 1)));
    }
};

std::string ms(duration d) { return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms"; }

// The locks a run uses. Every actor of a run works on one of them, picked per acquisition.
// `leader`: an election's candidate; `multi`: a multi_lock over the mutex and the shared lock's
// write side, whose leases are checked with those paths' own.
enum class lock_type { mutex, cohort, reader, writer, permit, leader, multi };

const char* name_of(lock_type t)
{
    switch (t) {
    case lock_type::mutex: return "mutex";
    case lock_type::cohort: return "cohort";
    case lock_type::reader: return "reader";
    case lock_type::writer: return "writer";
    case lock_type::permit: return "permit";
    case lock_type::leader: return "leader";
    case lock_type::multi: return "multi";
    }
    return "?";
}

constexpr std::uint32_t permits = 2;

std::string path_of(lock_type t)
{
    switch (t) {
    case lock_type::mutex: return "/lk/m";
    case lock_type::cohort: return "/lk/c";
    case lock_type::reader:
    case lock_type::writer: return "/lk/rw";
    case lock_type::permit: return "/lk/p";
    case lock_type::leader: return "/lk/e";
    case lock_type::multi: return "/lk/m";
    }
    return "/";
}

/// One lease an actor holds, with the lock it is of.
struct held_lease {
    std::string path;
    lock_type type;
    lease l;
};

bool exclusive(lock_type t) { return t == lock_type::mutex || t == lock_type::cohort || t == lock_type::writer || t == lock_type::leader; }

struct actor {
    int client = 0;
    int index = 0;
    enum class phase { idle, waiting, holding, releasing, done } ph = phase::idle;
    int round = 0;
    lock_type type = lock_type::mutex;
    std::optional<duration> timeout;
    bool try_only = false;
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
};

struct client {
    int index = 0;
    std::unique_ptr<asio::io_context> io = std::make_unique<asio::io_context>(1);
    std::shared_ptr<sim_port> port;
    bool dead = false;
    std::optional<time_point> stalled_until;
    time_point stall_began{};
    duration stalled_total{};
    bool eof = false;  ///< the server closed the connection: the client sees it when it next runs
    bool closed = false;
    /// The election's observer, in runs with an election: what it delivered last ("": no leader).
    std::shared_ptr<detail::observer_state> observer;
    std::optional<std::string> observed;
    bool observer_ended = false;
};

struct timed_event {
    time_point at;
    std::uint64_t order;
    std::function<void()> fn;
};

class world {
public:
    explicit world(const run_config& cfg)
        : cfg_(cfg), rng_{cfg.seed}, clock_(time_point{} + 1000s), model_(cfg.servers)
    {
        shared_opts_ = std::make_shared<lock_options>();
        cohort_opts_ = std::make_shared<lock_options>();
        cohort_opts_->cohort = true;
        count_known_ = std::make_shared<bool>(false);
        // The locks of this run: one or two of the five kinds.
        const lock_type all[] = {lock_type::mutex, lock_type::cohort, lock_type::writer, lock_type::permit, lock_type::leader, lock_type::multi};
        types_.push_back(all[rng_.below(6)]);
        if (rng_.chance(40)) types_.push_back(all[rng_.below(6)]);
        revocations_ = rng_.chance(30);
        // ACLs an administrator set on lock paths made beforehand: in some runs no client may
        // write a lock path's data (the releases' handoff marks are refused), or create in one of
        // them (its acquires fail).
        const auto acl = rng_.below(100);
        if (acl < 30) {
            seeded_ = {"/lk"};
            for (auto t : {lock_type::mutex, lock_type::cohort, lock_type::writer, lock_type::permit, lock_type::leader})
                seeded_.insert(path_of(t));
            // The semaphore's path holds its count already: its acquires need not write it.
            for (const auto& p : seeded_)
                model_.seed_persistent(p, p == path_of(lock_type::permit) ? detail::permit_count_data(permits) : std::string());
            if (acl < 20) {
                for (const auto& p : seeded_)
                    if (p != "/lk") model_.deny_write(p);
                SIM_NOTE("ACL: nobody may write the lock paths' data");
            } else {
                denied_ = path_of(types_[rng_.below(types_.size())]);
                model_.deny_create(denied_);
                SIM_NOTE("ACL: nobody may create in " + denied_);
            }
        }
        port_env env;
        env.model = &model_;
        env.clock = &clock_;
        env.shuffle = [this](std::vector<std::string>& v) {
            for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng_.below(i)]);
        };
        if (cfg.trace) env.trace = [this](std::string s) { note_line(std::move(s)); };
        env.marked_releases = &result_.marked_releases;
        env.marks_refused = &result_.marks_refused;
        for (int c = 0; c < cfg.clients; ++c) {
            auto cl = std::make_unique<client>();
            cl->index = c;
            cl->port = std::make_shared<sim_port>(env, c, *cl->io, cfg.session_timeout);
            clients_.push_back(std::move(cl));
            for (int a = 0; a < cfg.actors_per_client; ++a) {
                auto ac = std::make_unique<actor>();
                ac->client = c;
                ac->index = static_cast<int>(actors_.size());
                actors_.push_back(std::move(ac));
            }
        }
        for (auto& cl : clients_) cl->port->start();
        if (std::find(types_.begin(), types_.end(), lock_type::leader) != types_.end())
            for (auto& cl : clients_) {
                cl->observer = detail::start_observer(cl->port, path_of(lock_type::leader));
                observe(*cl);
            }
        fault_budget_ = cfg.faults ? static_cast<int>(rng_.below(6)) : 0;
        fault_end_ = clock_.now() + cfg.session_timeout * (4 + static_cast<int>(rng_.below(8)));
    }

    ~world()
    {
        // As when the execution contexts shut down: every client's observers bury what they hold
        // and its session lets go of every callback (and of any made from now on), then the
        // io_contexts destroy the handlers queued, none of them run. What those destructions let
        // go of is let go of again after them.
        for (auto& a : actors_) a->hold_timer.reset();
        for (auto& cl : clients_)
            if (cl->observer) detail::stop_observer(*cl->observer);
        for (auto& cl : clients_) cl->port->shut_down();
        clock_.drop_all();
        for (auto& a : actors_) a->held.clear();
        for (auto& cl : clients_) cl->port->shut_down();
        clock_.drop_all();
        for (auto& cl : clients_) cl->io.reset();
        for (auto& cl : clients_) cl->port->shut_down();
        clock_.drop_all();
        actors_.clear();
    }

    run_result run();

private:
    // ---- the trace ----
    void note_line(std::string s)
    {
        if (!cfg_.trace) return;
        auto t = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now() - (time_point{} + 1000s)).count();
        result_.trace.push_back("[" + std::to_string(steps_) + " t=" + std::to_string(t) + "ms] " + std::move(s));
    }
    void violate(std::string what)
    {
        if (!result_.ok) return;
        result_.ok = false;
        result_.violation = std::move(what);
        note_line("VIOLATION: " + result_.violation);
        if (cfg_.trace)
            for (const auto& p : model_.nodes()) {
                const auto st = model_.stat_of(p);
                note_line("  node " + p + (st && st->ephemeral_owner > 0 ? " of session " + std::to_string(st->ephemeral_owner) : "") +
                          (st ? " cversion " + std::to_string(st->cversion) + " children " + std::to_string(st->num_children) : ""));
            }
    }

    // ---- the clients ----
    bool runnable(const client& c) const { return !c.dead && !c.stalled_until; }
    void run_clients()
    {
        for (int round = 0; round < 10'000; ++round) {
            std::size_t ran = 0;
            for (auto& c : clients_) {
                if (!runnable(*c)) continue;
                if (c->eof) {
                    c->eof = false;
                    c->port->connection_lost();
                }
                c->io->restart();
                ran += c->io->poll();
            }
            if (ran == 0) return;
        }
        violate("a client's handlers never stop running (10000 rounds)");
    }

    // ---- the workload ----
    void start_acquire(actor& a);
    void on_acquired(actor& a, std::uint64_t attempt, error_code ec, std::vector<held_lease> leases);
    void hold(actor& a, std::uint64_t attempt);
    void release(actor& a);
    void finish_round(actor& a);
    void request_revocation(actor& a);
    void observe(client& c);

    // ---- faults and time ----
    void at(time_point t, std::function<void()> fn) { events_.push_back({t, next_event_++, std::move(fn)}); }
    std::optional<time_point> next_event() const
    {
        std::optional<time_point> t;
        for (const auto& e : events_)
            if (!t || e.at < *t) t = e.at;
        return t;
    }
    void advance_to(time_point t);
    void server_closed(session_id s);
    void close_pending();
    void inject_fault();

    // ---- the checkers ----
    void check_leases();
    void check_observers();
    void check_end();

    bool workload_done() const
    {
        return std::all_of(actors_.begin(), actors_.end(), [&](const auto& a) {
            return a->ph == actor::phase::done || clients_[static_cast<std::size_t>(a->client)]->dead;
        });
    }
    client& client_of(const actor& a) { return *clients_[static_cast<std::size_t>(a.client)]; }
    /// Nothing left to do but wait: every actor done, every live client connected, running and
    /// answered, every server caught up.
    bool quiescent()
    {
        if (!workload_done()) return false;
        for (auto& c : clients_) {
            if (c->dead) continue;
            if (c->stalled_until || c->eof || c->port->wants_connection() || c->port->in_flight() > 0) return false;
            const auto sid = c->port->model_session();
            if (sid != 0 && (!model_.outbox(sid).empty() || model_.can_step_session(sid))) return false;
        }
        for (int s = 1; s < cfg_.servers; ++s)
            if (model_.can_step_server(s)) return false;
        return true;
    }

    run_config cfg_;
    rng rng_;
    virtual_clock clock_;
    zk_model model_;
    std::vector<std::unique_ptr<client>> clients_;
    std::vector<std::unique_ptr<actor>> actors_;
    std::vector<lock_type> types_;
    std::shared_ptr<lock_options> shared_opts_, cohort_opts_;
    std::shared_ptr<bool> count_known_;
    std::vector<timed_event> events_;
    std::vector<session_id> closing_;  // expired at the leader, their server not told yet
    std::uint64_t next_event_ = 0;
    std::uint64_t steps_ = 0;
    int fault_budget_ = 0;
    time_point fault_end_{};
    bool healed_ = false;
    // The largest fence granted per exclusive path (mutex, cohort, writer).
    std::map<std::string, fence_token> last_fence_;
    bool revocations_ = false;                // whether this run's clients ask holders to give up
    std::set<std::string> seeded_;            // persistent paths made by an administrator
    std::string denied_;                      // a lock path nobody may create in ("": none)
    std::set<std::string> revoke_requested_;  // nodes a revocation request was sent to
    run_result result_;
};

void world::start_acquire(actor& a)
{
    auto& c = client_of(a);
    a.type = types_[rng_.below(types_.size())];
    if (a.type == lock_type::writer && rng_.chance(50)) a.type = lock_type::reader;
    a.try_only = rng_.chance(10);
    a.timeout.reset();
    if (!a.try_only && rng_.chance(50)) a.timeout = rng_.between(cfg_.session_timeout / 10, cfg_.session_timeout * 2);
    a.started = clock_.now();
    a.session_at_start = c.port->model_session();
    a.stalled_at_start = c.stalled_total;
    a.cancelled_at.reset();
    a.cancel = std::make_unique<asio::cancellation_signal>();
    a.ph = actor::phase::waiting;
    const std::uint64_t attempt = ++a.attempt;
    detail::acquire_request req;
    req.dir = std::make_shared<const std::string>(path_of(a.type));
    switch (a.type) {
    case lock_type::mutex: req.policy = detail::queue_policy{detail::mutex_recipe}; break;
    case lock_type::cohort:
        req.policy = detail::queue_policy{detail::mutex_recipe};
        req.cohort = true;
        break;
    case lock_type::reader: req.policy = detail::queue_policy{detail::reader_recipe}; break;
    case lock_type::writer: req.policy = detail::queue_policy{detail::writer_recipe}; break;
    case lock_type::permit:
        req.policy = detail::queue_policy{detail::semaphore_recipe, permits};
        req.count_known = count_known_;
        break;
    case lock_type::leader: req.policy = detail::queue_policy{detail::election_recipe}; break;
    case lock_type::multi: break;
    }
    req.options = a.type == lock_type::cohort ? cohort_opts_ : shared_opts_;
    req.try_only = a.try_only;
    req.timeout = a.timeout;
    SIM_NOTE("a" + std::to_string(a.index) + " (c" + std::to_string(a.client) + ") acquires " + name_of(a.type) + " " +
         *req.dir + (a.try_only ? " (try)" : a.timeout ? " within " + ms(*a.timeout) : std::string()));
    if (a.type == lock_type::multi) {
        // A zero timeout tries once, as for every recipe.
        std::optional<sim_clock::duration> timeout = a.timeout;
        if (a.try_only) timeout = sim_clock::duration::zero();
        std::vector<lock_spec> specs{lock_spec::exclusive(path_of(lock_type::mutex)), lock_spec::writer(path_of(lock_type::writer))};
        detail::initiate_multi_acquire(
            c.port, std::move(specs), lock_options{}, timeout,
            asio::bind_cancellation_slot(a.cancel->slot(), [this, &a, attempt](error_code ec, std::vector<lease> ls) {
                std::vector<held_lease> held;
                if (!ec && ls.size() == 2) {
                    held.push_back({path_of(lock_type::mutex), lock_type::mutex, std::move(ls[0])});
                    held.push_back({path_of(lock_type::writer), lock_type::writer, std::move(ls[1])});
                }
                on_acquired(a, attempt, ec, std::move(held));
            }));
        return;
    }
    detail::initiate_acquire(c.port, std::move(req),
                             asio::bind_cancellation_slot(a.cancel->slot(), [this, &a, attempt](error_code ec, lease l) {
                                 std::vector<held_lease> held;
                                 held.push_back({path_of(a.type), a.type, std::move(l)});
                                 on_acquired(a, attempt, ec, std::move(held));
                             }));
}

void world::on_acquired(actor& a, std::uint64_t attempt, error_code ec, std::vector<held_lease> leases)
{
    if (attempt != a.attempt || a.ph != actor::phase::waiting) {
        violate("a" + std::to_string(a.index) + "'s acquire completed twice, or after it ended");
        return;
    }
    auto& c = client_of(a);
    const auto now = clock_.now();
    const auto stalled = c.stalled_total - a.stalled_at_start;
    // Deadlines: the timeout and a cancellation each complete within the cleanup grace, plus
    // whatever time the client's executor could not run.
    // (multi_lock: one more grace, for the releases of what it took.)
    const auto slack = detail::cleanup_grace * (a.type == lock_type::multi ? 2 : 1) + 1ms;
    if (a.timeout && now - a.started > *a.timeout + slack + stalled)
        violate("a" + std::to_string(a.index) + "'s acquire with timeout " + ms(*a.timeout) + " completed after " +
                ms(now - a.started));
    if (a.cancelled_at && now - *a.cancelled_at > slack + (c.stalled_total - a.stalled_at_cancel))
        violate("a" + std::to_string(a.index) + "'s acquire completed " + ms(now - *a.cancelled_at) + " after its cancellation");
    if (ec) {
        SIM_NOTE("a" + std::to_string(a.index) + " acquire failed: " + ec.message());
        // lock_lost: our node went although our session lives, which only the session's own end
        // may do here (nobody deletes another's node).
        const bool session_ended = a.session_at_start == 0 || !model_.alive(a.session_at_start) ||
                                   c.port->model_session() != a.session_at_start;
        const bool allowed = ec == errc::session_expired || (ec == errc::lock_lost && session_ended) || ec == errc::not_connected ||
                             ec == errc::request_dropped || (ec == errc::timeout && (a.timeout || a.try_only)) ||
                             (ec == errc::would_block && a.try_only) ||
                             (ec == asio::error::operation_aborted && a.cancelled_at) ||
                             (ec == zk_errc::no_auth && !denied_.empty() &&
                              (denied_ == path_of(a.type) || (a.type == lock_type::multi &&
                                                              (denied_ == path_of(lock_type::mutex) || denied_ == path_of(lock_type::writer)))));
        if (!allowed) violate("a" + std::to_string(a.index) + "'s acquire failed with " + ec.message());
        finish_round(a);
        return;
    }
    if (leases.empty()) return violate("a" + std::to_string(a.index) + "'s acquire succeeded without a lease");
    ++result_.grants;
    for (const auto& h : leases) {
        const auto f = h.l.fence();
        SIM_NOTE("a" + std::to_string(a.index) + " granted " + h.l.node() + " fence " + std::to_string(f.zxid) + "." +
                 std::to_string(f.local) + " status " + to_string(h.l.status()));
        if (!exclusive(h.type)) continue;
        auto it = last_fence_.find(h.path);
        if (it != last_fence_.end() && !(it->second < f))
            violate("fence " + std::to_string(f.zxid) + "." + std::to_string(f.local) + " granted on " + h.path + " after " +
                    std::to_string(it->second.zxid) + "." + std::to_string(it->second.local));
        last_fence_[h.path] = f;
    }
    a.held = std::move(leases);
    a.ph = actor::phase::holding;
    a.downgraded = a.revoke_asked = false;
    a.hold_timer = c.port->make_timer();
    if (a.held.size() == 1 && rng_.chance(40)) {
        // The holder gives the lock up when asked to (another client writes the request into its node).
        const auto node = a.held.front().l.node();
        a.held.front().l.async_wait_revocation([this, &a, attempt, node](error_code ec) {
            if (attempt != a.attempt || a.ph != actor::phase::holding) return;
            SIM_NOTE("a" + std::to_string(a.index) + " revocation wait: " + (ec ? ec.message() : std::string("requested")));
            if (ec) return;
            if (!revoke_requested_.contains(node)) return violate("a" + std::to_string(a.index) + " was told of a revocation nobody requested");
            if (!a.held.front().l.revocation_requested()) return violate("a" + std::to_string(a.index) + "'s lease does not know it was revoked");
            release(a);
        });
    }
    hold(a, attempt);
}

void world::hold(actor& a, std::uint64_t attempt)
{
    const bool write = exclusive(a.type) && !a.downgraded && rng_.chance(50);
    const bool downgrade = a.type == lock_type::writer && !a.downgraded && !write && rng_.chance(50);
    a.hold_timer->start(rng_.between(0ms, cfg_.session_timeout), [this, &a, attempt, write, downgrade] {
        if (attempt != a.attempt || a.ph != actor::phase::holding) return;
        if (downgrade) {
            // From the call on, readers may share the lock: the actor is checked as one.
            SIM_NOTE("a" + std::to_string(a.index) + " downgrades");
            a.downgraded = true;
            return a.held.front().l.async_downgrade([this, &a, attempt](error_code ec) {
                SIM_NOTE("a" + std::to_string(a.index) + " downgraded: " + (ec ? ec.message() : std::string("ok")));
                const bool allowed = !ec || ec == errc::lock_lost || ec == errc::session_expired || ec == errc::not_connected ||
                                     ec == errc::request_dropped || ec == zk_errc::connection_loss ||
                                     ec == zk_errc::session_expired || ec == zk_errc::operation_timeout;
                // Released meanwhile (a revocation request came): nothing left to downgrade.
                const bool released = attempt != a.attempt || a.ph != actor::phase::holding;
                if (!allowed && !(released && ec == errc::already_released))
                    violate("a" + std::to_string(a.index) + "'s downgrade failed with " + ec.message());
                if (attempt == a.attempt && a.ph == actor::phase::holding) hold(a, attempt);
            });
        }
        if (!write) return release(a);
        // A guarded write: a node under /lk whose data is the writer's fence, created only while
        // the writer's queue node exists. Their order (check_end) must be the fences' order.
        auto& h = a.held.front();
        const auto f = h.l.fence();
        std::vector<multi_op> ops{multi_op::create("/lk/w-", h.path + " " + std::to_string(f.zxid) + " " + std::to_string(f.local),
                                                   create_mode::ephemeral_sequential)};
        h.l.async_guarded_multi(std::move(ops), [this, &a, attempt](error_code ec, std::vector<multi_result>) {
            SIM_NOTE("a" + std::to_string(a.index) + " guarded write: " + (ec ? ec.message() : std::string("ok")));
            if (attempt == a.attempt && a.ph == actor::phase::holding) release(a);
        });
    });
}

void world::release(actor& a)
{
    const std::uint64_t attempt = a.attempt;
    if (rng_.chance(25)) {
        // Dropped: the lease's destructor releases in the background.
        SIM_NOTE("a" + std::to_string(a.index) + " drops its lease");
        for (auto& h : a.held) h.l = lease();
        finish_round(a);
        return;
    }
    SIM_NOTE("a" + std::to_string(a.index) + " releases");
    a.ph = actor::phase::releasing;
    a.releasing = a.held.size();
    for (auto& h : a.held)
        h.l.async_release([this, &a, attempt](error_code ec) {
            if (attempt != a.attempt || a.ph != actor::phase::releasing || a.releasing == 0)
                return violate("a release completed twice");
            SIM_NOTE("a" + std::to_string(a.index) + " released: " + (ec ? ec.message() : std::string("ok")));
            if (--a.releasing == 0) finish_round(a);
        });
}

void world::request_revocation(actor& a)
{
    // Another client (or the holder's own) writes the request into the holder's node, once a grant.
    a.revoke_asked = true;
    std::vector<client*> live;
    for (auto& c : clients_)
        if (runnable(*c) && !c->closed) live.push_back(c.get());
    if (live.empty()) return;
    auto& by = *live[rng_.below(live.size())];
    const auto node = a.held.front().l.node();
    SIM_NOTE("c" + std::to_string(by.index) + " asks a" + std::to_string(a.index) + " to give up " + node);
    revoke_requested_.insert(node);
    by.port->set_data(node, revocation_request, -1, [this, node](error_code ec, zklock::stat) {
        SIM_NOTE("revocation request for " + node + ": " + (ec ? ec.message() : std::string("written")));
    });
}

// The election's observer of a client: each leader it delivers, until its session closes.
void world::observe(client& c)
{
    detail::initiate_observe_next(c.observer, [this, &c](error_code ec, leader_info info) {
        if (ec) {
            SIM_NOTE("c" + std::to_string(c.index) + "'s observer ends: " + ec.message());
            c.observer_ended = true;
            if (ec != errc::session_closed && ec != asio::error::operation_aborted)
                violate("c" + std::to_string(c.index) + "'s election observer failed: " + ec.message());
            return;
        }
        SIM_NOTE("c" + std::to_string(c.index) + "'s observer: " + (info.node.empty() ? std::string("no leader") : "leader " + info.node));
        c.observed = info.node;
        observe(c);
    });
}

void world::finish_round(actor& a)
{
    a.hold_timer.reset();
    a.held.clear();
    ++a.round;
    a.ph = a.round >= cfg_.rounds ? actor::phase::done : actor::phase::idle;
}

// ---- faults and time -------------------------------------------------------------------------------

void world::server_closed(session_id s)
{
    // The session's own server closes the connection once it applies the session's end: a
    // server cut off from the leader does so only when it reaches it again.
    for (auto& c : clients_) {
        if (c->dead || c->port->model_session() != s || !c->port->link_up()) continue;
        const int server = model_.server_of(s);
        if (server < 0 || model_.reaches_leader(server)) c->eof = true;
        else closing_.push_back(s);
    }
}

void world::close_pending()
{
    std::erase_if(closing_, [&](session_id s) {
        const int server = model_.server_of(s);
        if (server >= 0 && !model_.reaches_leader(server)) return false;
        for (auto& c : clients_)
            if (!c->dead && c->port->model_session() == s && c->port->link_up()) c->eof = true;
        return true;
    });
}

void world::advance_to(time_point t)
{
    clock_.advance_to(t);
    for (auto s : model_.expire_due(clock_.now())) {
        SIM_NOTE("the leader expires session " + std::to_string(s));
        server_closed(s);
    }
    for (;;) {
        auto it = std::min_element(events_.begin(), events_.end(), [](const auto& x, const auto& y) {
            return x.at < y.at || (x.at == y.at && x.order < y.order);
        });
        if (it == events_.end() || it->at > clock_.now()) break;
        auto fn = std::move(it->fn);
        events_.erase(it);
        fn();
    }
    for (auto& c : clients_)
        if (c->stalled_until && *c->stalled_until <= clock_.now()) {
            c->stalled_total += clock_.now() - c->stall_began;
            c->stalled_until.reset();
            SIM_NOTE("c" + std::to_string(c->index) + " runs again");
        }
}

void world::inject_fault()
{
    --fault_budget_;
    ++result_.faults;
    const auto T = duration(cfg_.session_timeout);
    auto& c = *clients_[rng_.below(clients_.size())];
    switch (rng_.below(6)) {
    case 0:  // the client's connection drops
        if (c.dead || !c.port->link_up()) break;
        SIM_NOTE("FAULT: c" + std::to_string(c.index) + "'s connection drops");
        model_.disconnect(c.port->model_session());
        c.eof = true;
        break;
    case 1: {  // a follower is cut off from the leader, and drops its clients some time later
        if (cfg_.servers < 2) break;
        const int s = 1 + static_cast<int>(rng_.below(static_cast<std::uint64_t>(cfg_.servers - 1)));
        if (!model_.reaches_leader(s)) break;
        const auto heal = rng_.between(T / 4, 2 * T);
        SIM_NOTE("FAULT: s" + std::to_string(s) + " is cut off from the leader for " + ms(heal));
        model_.set_reaches_leader(s, false);
        const auto drop = rng_.between(T / 10, 2 * T);
        at(clock_.now() + drop, [this, s] {
            if (model_.reaches_leader(s)) return;
            SIM_NOTE("s" + std::to_string(s) + " drops its clients (no leader)");
            for (auto& x : clients_)
                if (!x->dead && x->port->link_up() && model_.server_of(x->port->model_session()) == s) {
                    model_.disconnect(x->port->model_session());
                    x->eof = true;
                }
        });
        at(clock_.now() + heal, [this, s] {
            SIM_NOTE("s" + std::to_string(s) + " reaches the leader again");
            model_.set_reaches_leader(s, true);
        });
        break;
    }
    case 2: {  // the client's executor is blocked while time runs
        if (c.dead || c.stalled_until) break;
        const auto d = rng_.between(T / 10, 2 * T);
        SIM_NOTE("FAULT: c" + std::to_string(c.index) + "'s executor stalls for " + ms(d));
        c.stalled_until = clock_.now() + d;
        c.stall_began = clock_.now();
        break;
    }
    case 3:  // a follower restarts
        if (cfg_.servers < 2) break;
        {
            const int s = 1 + static_cast<int>(rng_.below(static_cast<std::uint64_t>(cfg_.servers - 1)));
            SIM_NOTE("FAULT: s" + std::to_string(s) + " restarts");
            for (auto& x : clients_)
                if (!x->dead && x->port->link_up() && model_.server_of(x->port->model_session()) == s) x->eof = true;
            model_.restart(s);
        }
        break;
    case 4:  // the client's process dies (one a run, and never the last one alive)
        if (c.dead || cfg_.clients < 3 ||
            std::count_if(clients_.begin(), clients_.end(), [](const auto& x) { return x->dead; }) > 0)
            break;
        SIM_NOTE("FAULT: c" + std::to_string(c.index) + "'s process dies");
        c.dead = true;
        if (c.port->link_up()) model_.disconnect(c.port->model_session());
        break;
    default: {  // a waiting acquire is cancelled (not a fault: a user's choice)
        ++fault_budget_;
        --result_.faults;
        std::vector<actor*> waiting;
        for (auto& a : actors_)
            if (a->ph == actor::phase::waiting && !a->cancelled_at && runnable(client_of(*a))) waiting.push_back(a.get());
        if (waiting.empty()) break;
        auto& a = *waiting[rng_.below(waiting.size())];
        SIM_NOTE("a" + std::to_string(a.index) + "'s acquire is cancelled");
        a.cancelled_at = clock_.now();
        a.stalled_at_cancel = client_of(a).stalled_total;
        a.cancel->emit(asio::cancellation_type::terminal);
        break;
    }
    }
}

// ---- the checkers -----------------------------------------------------------------------------------

void world::check_leases()
{
    // Every lease of a live client, read through its public query now (a stalled client's too:
    // a read is what its code would see if it ran at this instant).
    struct reading {
        const actor* a;
        lock_type type;
        lease_status st;
    };
    std::map<std::string, std::vector<reading>> by_path;
    for (auto& a : actors_) {
        if (client_of(*a).dead) continue;
        if (a->ph != actor::phase::holding) continue;  // a release started: the user let go
        for (const auto& h : a->held) {
            const auto st = h.l.status();
            const auto type = a->downgraded && h.type == lock_type::writer ? lock_type::reader : h.type;
            if (st == lease_status::held || st == lease_status::suspended) by_path[h.path].push_back({a.get(), type, st});
        }
    }
    for (const auto& [path, v] : by_path) {
        std::size_t writers = 0, readers = 0, others = 0;
        for (const auto& r : v) {
            if (r.type == lock_type::reader) ++readers;
            else if (r.type == lock_type::writer) ++writers;
            else ++others;
        }
        const bool permit_path = path == path_of(lock_type::permit);
        const std::size_t limit = permit_path ? permits : 1;
        std::string who;
        for (const auto& r : v) who += " a" + std::to_string(r.a->index) + "(" + name_of(r.type) + "," + to_string(r.st) + ")";
        if (others > limit) violate(std::to_string(others) + " holders of " + path + " at once:" + who);
        if (writers > 1 || (writers == 1 && readers > 0)) violate("a writer and another holder of " + path + " at once:" + who);
    }
}

void world::check_observers()
{
    // Once nothing moves, every live client's observer has delivered the election's leader as it
    // is: the candidate with the lowest sequence number, or none (it never misses the last change).
    std::string leader;
    const std::string dir = path_of(lock_type::leader) + "/";
    for (const auto& p : model_.nodes()) {
        if (!p.starts_with(dir) || p.size() < dir.size() + 10) continue;
        const auto name = p.substr(dir.size());
        if (leader.empty() || name.substr(name.size() - 10) < leader.substr(leader.size() - 10)) leader = name;
    }
    for (auto& c : clients_) {
        if (c->dead || !c->observer) continue;
        if (c->observer_ended || c->observed != leader)
            violate("c" + std::to_string(c->index) + "'s election observer delivered " +
                    (!c->observed ? std::string("nothing") : c->observed->empty() ? std::string("no leader") : *c->observed) +
                    (c->observer_ended ? " (and ended)" : "") + ", the leader is " + (leader.empty() ? std::string("none") : leader));
    }
}

void world::check_end()
{
    // The guarded writes, in the order the server applied them: their fences strictly increase.
    std::vector<std::pair<std::string, std::string>> writes;
    for (const auto& p : model_.nodes())
        if (p.starts_with("/lk/w-")) writes.emplace_back(p.substr(p.size() - 10), p);
    std::sort(writes.begin(), writes.end());
    std::map<std::string, fence_token> last;  // by lock path
    for (const auto& [seq, p] : writes) {
        fence_token f;
        std::string lock;
        std::istringstream in(model_.data_of(p));
        in >> lock >> f.zxid >> f.local;
        auto it = last.find(lock);
        if (it != last.end() && !(it->second < f))
            violate("guarded write " + p + " on " + lock + " with fence " + std::to_string(f.zxid) + "." +
                    std::to_string(f.local) + " applied after one with " + std::to_string(it->second.zxid) + "." +
                    std::to_string(it->second.local));
        last[lock] = f;
    }
    // Every lease released and every acquire ended: no queue node of a live session is left.
    for (const auto& p : model_.nodes()) {
        auto st = model_.stat_of(p);
        if (!st || st->ephemeral_owner == 0 || p.starts_with("/lk/w-")) continue;
        for (auto& c : clients_)
            if (!c->dead && c->port->model_session() == st->ephemeral_owner && model_.alive(st->ephemeral_owner))
                violate("node " + p + " of c" + std::to_string(c->index) + " is left with every lease released");
    }
}

run_result world::run()
{
    const auto T = duration(cfg_.session_timeout);
    const auto start = clock_.now();
    // The longest a run may take: the fault window, then every acquisition, each within a few
    // session timeouts.
    const auto limit = fault_end_ + T * (6 + 2 * cfg_.rounds * cfg_.clients * cfg_.actors_per_client);
    enum kind { deliver, step_session, step_server, connect, act, revoke, fault, time };
    struct choice {
        kind k;
        int a;
        unsigned weight;
    };
    std::vector<choice> choices;
    while (result_.ok) {
        close_pending();
        run_clients();
        check_leases();
        if (!result_.ok) break;
        if (++steps_ > cfg_.max_steps) {
            violate("no end after " + std::to_string(cfg_.max_steps) + " steps");
            break;
        }
        if (clock_.now() > limit) {
            std::string waiting;
            for (auto& a : actors_)
                if (a->ph != actor::phase::done && !client_of(*a).dead)
                    waiting += " a" + std::to_string(a->index) + "(round " + std::to_string(a->round) + ")";
            violate("liveness: not done " + ms(clock_.now() - fault_end_) + " after the faults ended:" + waiting);
            break;
        }
        if (!healed_ && (clock_.now() >= fault_end_ || (workload_done() && fault_budget_ <= 0))) {
            healed_ = true;
            fault_budget_ = 0;
            for (int s = 1; s < cfg_.servers; ++s) model_.set_reaches_leader(s, true);
            SIM_NOTE("faults end: every server reaches the leader");
        }
        if (healed_ && quiescent()) break;
        choices.clear();
        for (auto& c : clients_) {
            if (c->dead) continue;
            const auto sid = c->port->model_session();
            if (runnable(*c) && sid != 0 && c->port->link_up() && !c->eof && !model_.outbox(sid).empty())
                choices.push_back({deliver, c->index, 12});
            if (sid != 0 && c->port->link_up() && model_.can_step_session(sid)) choices.push_back({step_session, c->index, 10});
            if (runnable(*c) && c->port->wants_connection()) choices.push_back({connect, c->index, 3});
        }
        for (int s = 1; s < cfg_.servers; ++s)
            if (model_.can_step_server(s)) choices.push_back({step_server, s, 6});
        for (auto& a : actors_)
            if (a->ph == actor::phase::idle && runnable(client_of(*a))) choices.push_back({act, a->index, 2});
            else if (revocations_ && a->ph == actor::phase::holding && !a->revoke_asked && !client_of(*a).dead && a->held.size() == 1)
                choices.push_back({revoke, a->index, 1});
        if (fault_budget_ > 0 && !healed_) choices.push_back({fault, 0, 1});
        const bool stalled = std::any_of(clients_.begin(), clients_.end(), [](const auto& c) { return c->stalled_until.has_value(); });
        if (model_.next_expiry() || clock_.next_due() || next_event() || stalled || !choices.empty())
            choices.push_back({time, 0, choices.empty() ? 1u : 2u});
        if (choices.empty()) {
            if (workload_done()) break;
            std::string waiting;
            for (auto& a : actors_)
                if (a->ph != actor::phase::done && !client_of(*a).dead) waiting += " a" + std::to_string(a->index);
            violate("deadlock: nothing can happen, and actors wait:" + waiting);
            break;
        }
        unsigned total = 0;
        for (const auto& ch : choices) total += ch.weight;
        auto pick = rng_.below(total);
        const choice* chosen = &choices.front();
        for (const auto& ch : choices) {
            if (pick < ch.weight) {
                chosen = &ch;
                break;
            }
            pick -= ch.weight;
        }
        switch (chosen->k) {
        case deliver: {
            auto& c = *clients_[static_cast<std::size_t>(chosen->a)];
            auto& box = model_.outbox(c.port->model_session());
            auto m = std::move(box.front());
            box.pop_front();
            if (cfg_.trace) {
                SIM_NOTE("c" + std::to_string(c.index) + " <- " +
                     (m.is_event ? "event " + std::to_string(static_cast<int>(m.e.type)) + " " + m.e.path
                                 : "reply #" + std::to_string(m.r.tag) + (m.r.ec ? " " + m.r.ec.message() : std::string(" ok")) +
                                       (m.r.path.empty() ? std::string() : " " + m.r.path)));
            }
            c.port->deliver(std::move(m));
            break;
        }
        case step_session: model_.step_session(clients_[static_cast<std::size_t>(chosen->a)]->port->model_session(), clock_.now()); break;
        case step_server: model_.step_server(chosen->a); break;
        case connect: {
            auto& c = *clients_[static_cast<std::size_t>(chosen->a)];
            c.port->try_connect(static_cast<int>(rng_.below(static_cast<std::uint64_t>(cfg_.servers))));
            break;
        }
        case act: {
            auto& a = *actors_[static_cast<std::size_t>(chosen->a)];
            if (workload_done() || a.ph != actor::phase::idle) break;
            start_acquire(a);
            break;
        }
        case revoke: request_revocation(*actors_[static_cast<std::size_t>(chosen->a)]); break;
        case fault: inject_fault(); break;
        case time: {
            // To the next thing due, or a little way, whichever is first.
            auto t = clock_.now() + rng_.between(1ms, T / 6);
            for (auto x : {model_.next_expiry(), clock_.next_due(), next_event()})
                if (x && *x < t) t = *x;
            for (auto& c : clients_)
                if (c->stalled_until && *c->stalled_until < t) t = *c->stalled_until;
            if (t < clock_.now()) t = clock_.now();
            advance_to(t);
            break;
        }
        }
    }
    if (result_.ok) {
        // Every actor is done: time runs on until the dead client's session has expired, then no
        // node of a live session may be left; then every session closes.
        run_clients();
        check_observers();
        check_end();
        for (auto& c : clients_)
            if (!c->dead) c->port->close();
        for (int i = 0; i < 10'000 && result_.ok; ++i) {
            bool moved = false;
            for (auto& c : clients_) {
                const auto sid = c->port->model_session();
                if (sid != 0 && model_.can_step_session(sid)) {
                    model_.step_session(sid, clock_.now());
                    moved = true;
                }
            }
            for (int s = 1; s < cfg_.servers; ++s)
                if (model_.can_step_server(s)) {
                    model_.step_server(s);
                    moved = true;
                }
            if (!moved) break;
        }
        advance_to(clock_.now() + 2 * T);
        run_clients();
        // A container goes once it is empty: the lock paths first, then their parent.
        for (int pass = 0; pass < 3; ++pass) {
            model_.reap_containers();
            for (int i = 0; i < 100; ++i) {
                bool moved = false;
                for (int s = 1; s < cfg_.servers; ++s)
                    if (model_.can_step_server(s)) {
                        model_.step_server(s);
                        moved = true;
                    }
                if (!moved) break;
            }
        }
        // ZooKeeper reaps a container only once it has had a child: a lock path whose first node
        // was never created (its acquire ended between the two creates) stays, empty, and so
        // does its parent.
        auto nodes = model_.nodes();
        std::set<std::string> unused;  // containers that hold nothing but never-used containers
        for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
            const auto st = model_.stat_of(*it);
            if (!st || !model_.is_container(*it)) continue;
            const auto prefix = *it + "/";
            const bool only_unused = std::all_of(nodes.begin(), nodes.end(), [&](const std::string& q) {
                return !q.starts_with(prefix) || q.find('/', prefix.size()) != std::string::npos || unused.contains(q);
            });
            if ((st->cversion == 0 && st->num_children == 0) || (st->num_children > 0 && only_unused)) unused.insert(*it);
        }
        for (const auto& p : nodes)
            if (p != "/" && !unused.contains(p) && !seeded_.contains(p))
                violate("node " + p + " is left after every session closed");
    }
    result_.steps = steps_;
    result_.virtual_time = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now() - start);
    return std::move(result_);
}

}  // namespace

run_result run_schedule(const run_config& cfg)
{
    const seeded_ids ids(cfg.seed);
    world w(cfg);
    return w.run();
}

std::string report(const run_config& cfg, const run_result& r, std::size_t lines)
{
    std::ostringstream out;
    out << "seed " << cfg.seed << " (replay: ZKLOCK_SIM_SEED=" << cfg.seed << "): " << r.violation << "\n";
    const std::size_t from = r.trace.size() > lines ? r.trace.size() - lines : 0;
    if (from > 0) out << "  ... " << from << " earlier events\n";
    for (std::size_t i = from; i < r.trace.size(); ++i) out << "  " << r.trace[i] << "\n";
    return out.str();
}

}  // namespace zklock::sim
