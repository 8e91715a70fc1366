// The run: the clients (each a zklock::session around its simulated port, with its locks), the
// scheduler's loop that picks every next event, and the run's end. See world_impl.hpp.
#include "world_impl.hpp"

#include "sim_random.hpp"

#include <algorithm>
#include <sstream>

namespace zklock::sim {

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

world::world(const run_config& cfg) : cfg_(cfg), rng_{cfg.seed}, clock_(time_point{} + 1000s), model_(cfg.servers)
{
    // The locks of this run: one or two of the six kinds.
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
        // The semaphore's path holds its count already (the data a semaphore writes there, in
        // its own format), so that its acquires need not write it.
        for (const auto& p : seeded_)
            model_.seed_persistent(p, p == path_of(lock_type::permit) ? "zklock-semaphore permits=" + std::to_string(permits) : std::string());
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
    model_.on_commit([this](const std::string& path, const std::string& data, bool created) { on_commit(path, data, created); });
    port_env env;
    env.model = &model_;
    env.clock = &clock_;
    env.shuffle = [this](std::vector<std::string>& v) {
        for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng_.below(i)]);
    };
    if (cfg.trace) env.trace = [this](std::string s) { note_line(std::move(s)); };
    env.marked_releases = &result_.marked_releases;
    env.marks_refused = &result_.marks_refused;
    // A cohort's local waiters: in runs with a cohort, each client has one more actor, so that
    // a cohort node often has several local waiters queued behind its holder.
    const int actors = cfg.actors_per_client + (has(lock_type::cohort) ? 1 : 0);
    for (int c = 0; c < cfg.clients; ++c) {
        make_client(c, env);
        for (int a = 0; a < actors; ++a) {
            auto ac = std::make_unique<actor>();
            ac->client = c;
            ac->index = static_cast<int>(actors_.size());
            actors_.push_back(std::move(ac));
        }
    }
    for (auto& cl : clients_) cl->port->start();
    if (has(lock_type::leader))
        for (auto& cl : clients_) {
            cl->observer = cl->el->observe();
            observe(*cl);
        }
    fault_budget_ = cfg.faults ? static_cast<int>(rng_.below(6)) : 0;
    fault_end_ = clock_.now() + cfg.session_timeout * (4 + static_cast<int>(rng_.below(8)));
    // In some runs with a semaphore, its path is also asked with another permit count.
    wide_permits_ = has(lock_type::permit) && rng_.chance(40);
}

void world::make_client(int index, const port_env& env)
{
    auto cl = std::make_unique<client>();
    cl->index = index;
    cl->port = std::make_shared<sim_port>(env, index, *cl->io, cfg_.session_timeout);
    cl->s.emplace(cl->port, cl->port);
    auto& s = *cl->s;
    cl->m.emplace(s, path_of(lock_type::mutex));
    lock_options cohort;
    cohort.cohort = true;
    cl->cohort.emplace(s, path_of(lock_type::cohort), cohort);
    cl->rw.emplace(s, path_of(lock_type::writer));
    cl->sem.emplace(s, path_of(lock_type::permit), permits);
    cl->sem_wide.emplace(s, path_of(lock_type::permit), wide_permits);
    cl->el.emplace(s, path_of(lock_type::leader));
    const auto m = lock_spec::exclusive(path_of(lock_type::mutex));
    const auto w = lock_spec::writer(path_of(lock_type::writer));
    cl->multi[0].emplace(s, std::vector<lock_spec>{m, w});
    cl->multi[1].emplace(s, std::vector<lock_spec>{w, m});
    clients_.push_back(std::move(cl));
}

world::~world()
{
    // As when the execution contexts shut down: every client's observers bury what they hold
    // and its session lets go of every callback (and of any made from now on), then the
    // io_contexts destroy the handlers queued, none of them run. What those destructions let
    // go of is let go of again after them.
    for (auto& a : actors_) a->hold_timer.reset();
    for (auto& cl : clients_) cl->observer = election_observer();
    for (auto& cl : clients_) cl->port->shut_down();
    clock_.drop_all();
    for (auto& a : actors_) a->held.clear();
    for (auto& cl : clients_) cl->port->shut_down();
    clock_.drop_all();
    for (auto& cl : clients_) cl->io.reset();
    for (auto& cl : clients_) cl->port->shut_down();
    clock_.drop_all();
    actors_.clear();
    // The sessions and their locks go last: their session is closed already, so nothing is sent.
    for (auto& cl : clients_) {
        for (auto& m : cl->multi) m.reset();
        cl->m.reset();
        cl->cohort.reset();
        cl->rw.reset();
        cl->sem.reset();
        cl->sem_wide.reset();
        cl->el.reset();
        cl->s.reset();
    }
}

// ---- the trace ---------------------------------------------------------------------------------------

void world::note_line(std::string s)
{
    if (!cfg_.trace) return;
    auto t = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now() - (time_point{} + 1000s)).count();
    result_.trace.push_back("[" + std::to_string(steps_) + " t=" + std::to_string(t) + "ms] " + std::move(s));
}

void world::violate(std::string what)
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

// ---- the clients -------------------------------------------------------------------------------------

void world::run_clients()
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

bool world::healthy(const client& c) const
{
    if (!runnable(c) || c.eof || c.replies_held_until || !c.port->link_up() || c.port->state() != session_state::connected)
        return false;
    const auto sid = c.port->model_session();
    if (sid == 0 || !model_.alive(sid)) return false;
    const int server = model_.server_of(sid);
    return server >= 0 && model_.reaches_leader(server) && !model_.can_step_server(server);
}

bool world::workload_done() const
{
    return std::all_of(actors_.begin(), actors_.end(), [&](const auto& a) {
        return a->ph == actor::phase::done || clients_[static_cast<std::size_t>(a->client)]->dead;
    });
}

bool world::has(lock_type t) const { return std::find(types_.begin(), types_.end(), t) != types_.end(); }

bool world::quiescent()
{
    if (!workload_done()) return false;
    for (auto& c : clients_) {
        if (c->dead) continue;
        if (c->stalled_until || c->replies_held_until || c->eof || c->port->wants_connection() || c->port->in_flight() > 0)
            return false;
        const auto sid = c->port->model_session();
        if (sid != 0 && (!model_.outbox(sid).empty() || model_.can_step_session(sid))) return false;
    }
    for (int s = 1; s < cfg_.servers; ++s)
        if (model_.can_step_server(s)) return false;
    return true;
}

void world::close_sessions()
{
    // Each live client closes its session through the public API (async_close).
    for (auto& c : clients_)
        if (!c->dead)
            c->s->async_close([this, &c = *c](error_code ec) {
                c.closed = true;
                if (ec) violate("c" + std::to_string(c.index) + "'s close failed: " + ec.message());
            });
    run_clients();
}

// ---- the loop ----------------------------------------------------------------------------------------

run_result world::run()
{
    const auto T = duration(cfg_.session_timeout);
    const auto start = clock_.now();
    // The longest a run may take: the fault window, then every acquisition, each within a few
    // session timeouts.
    const auto limit = fault_end_ + T * (6 + 2 * cfg_.rounds * static_cast<int>(actors_.size()));
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
        end_held_replies();
        check_step();
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
            healed_at_ = clock_.now();
            fault_budget_ = 0;
            for (int s = 1; s < cfg_.servers; ++s) model_.set_reaches_leader(s, true);
            SIM_NOTE("faults end: every server reaches the leader");
        }
        if (healed_ && quiescent()) break;
        choices.clear();
        for (auto& c : clients_) {
            if (c->dead) continue;
            const auto sid = c->port->model_session();
            if (runnable(*c) && sid != 0 && c->port->link_up() && !c->eof && !c->replies_held_until && !model_.outbox(sid).empty())
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
        const bool stalled = std::any_of(clients_.begin(), clients_.end(), [](const auto& c) {
            return c->stalled_until.has_value() || c->replies_held_until.has_value();
        });
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
            for (auto& c : clients_) {
                if (c->stalled_until && *c->stalled_until < t) t = *c->stalled_until;
                if (c->replies_held_until && *c->replies_held_until < t) t = *c->replies_held_until;
            }
            if (t < clock_.now()) t = clock_.now();
            // Time moves on: a timer that, when it fires, is started again for an instant already
            // passed fires again at once, and again; a real process would spin on it. Timers due
            // at one instant are a few (one per timer of the run), never a thousand.
            if (t == clock_.now() && ++still_ > 1000)
                violate("busy loop: timers fired 1000 times at t=" + ms(clock_.now() - start) + " without time moving on");
            if (t != clock_.now()) still_ = 0;
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
        close_sessions();
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
        for (auto& c : clients_)
            if (!c->dead && !c->closed) violate("c" + std::to_string(c->index) + "'s async_close never completed");
        for (auto& c : clients_)
            if (!c->dead && c->misuse_pending)
                violate("c" + std::to_string(c->index) + ": " + std::to_string(c->misuse_pending) +
                        " operation(s) on a released lease never completed");
        check_empty_tree();
    }
    result_.steps = steps_;
    result_.virtual_time = std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now() - start);
    return std::move(result_);
}

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
