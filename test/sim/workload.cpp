// The workload: what the clients' code does, through zklock's public API alone (the recipes'
// objects, lease, election_observer, session): acquire (wait, with a deadline, or try once; maybe
// cancelled), hold (a guarded write, a downgrade, a wait for loss or for revocation), release or
// drop; write revocation requests into holders' nodes; follow the election. And misuse: a
// semaphore's path asked with two permit counts, every operation of a moved-from or released
// lease, the queries and a try-acquire of a moved-from lock. See world_impl.hpp.
#include "world_impl.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>

namespace zklock::sim {

void world::start_acquire(actor& a)
{
    auto& c = client_of(a);
    a.type = types_[rng_.below(types_.size())];
    if (a.type == lock_type::writer && rng_.chance(50)) a.type = lock_type::reader;
    a.multi_order = static_cast<int>(rng_.below(2));
    a.try_only = rng_.chance(10);
    a.wide = a.type == lock_type::permit && wide_permits_ && rng_.chance(25);
    if (rng_.chance(2)) probe_moved_lock(c);
    a.timeout.reset();
    if (!a.try_only && rng_.chance(50)) a.timeout = rng_.between(cfg_.session_timeout / 10, cfg_.session_timeout * 2);
    a.started = clock_.now();
    a.session_at_start = c.port->model_session();
    a.stalled_at_start = c.stalled_total;
    a.cancelled_at.reset();
    a.cancel = std::make_unique<asio::cancellation_signal>();
    a.ph = actor::phase::waiting;
    const std::uint64_t attempt = ++a.attempt;
    SIM_NOTE("a" + std::to_string(a.index) + " (c" + std::to_string(a.client) + ") acquires " + name_of(a.type) + " " +
             path_of(a.type) + (a.type == lock_type::multi && a.multi_order ? " (paths in the other order)" : "") +
             (a.wide ? " asking for " + std::to_string(wide_permits) + " permits" : std::string()) +
             (a.try_only ? " (try)" : a.timeout ? " within " + ms(*a.timeout) : std::string()));
    const auto slot = a.cancel->slot();
    const auto one = [this, &a, attempt](error_code ec, lease l) {
        std::vector<held_lease> held;
        held.push_back({path_of(a.type), a.type, std::move(l)});
        on_acquired(a, attempt, ec, std::move(held));
    };
    // The three ways every recipe acquires: try once, within a deadline, or until granted.
    const auto acquire = [&](auto& lock, auto&& handler) {
        auto h = asio::bind_cancellation_slot(slot, std::move(handler));
        if (a.try_only) lock.async_try_acquire(std::move(h));
        else if (a.timeout) lock.async_acquire(*a.timeout, std::move(h));
        else lock.async_acquire(std::move(h));
    };
    switch (a.type) {
    case lock_type::mutex: return acquire(*c.m, one);
    case lock_type::cohort: return acquire(*c.cohort, one);
    case lock_type::writer: return acquire(*c.rw, one);
    case lock_type::permit: return acquire(a.wide ? *c.sem_wide : *c.sem, one);
    case lock_type::reader: {
        auto h = asio::bind_cancellation_slot(slot, one);
        if (a.try_only) c.rw->async_try_acquire_shared(std::move(h));
        else if (a.timeout) c.rw->async_acquire_shared(*a.timeout, std::move(h));
        else c.rw->async_acquire_shared(std::move(h));
        return;
    }
    case lock_type::leader: {
        auto h = asio::bind_cancellation_slot(slot, [one](error_code ec, leadership l) mutable { one(ec, std::move(l)); });
        std::string value = "a" + std::to_string(a.index);
        if (a.try_only) c.el->async_try_campaign(std::move(value), std::move(h));
        else if (a.timeout) c.el->async_campaign(std::move(value), *a.timeout, std::move(h));
        else c.el->async_campaign(std::move(value), std::move(h));
        return;
    }
    case lock_type::multi: {
        // A zero timeout tries once, as for every recipe. The leases come in the order of the
        // paths as given.
        const int order = a.multi_order;
        auto h = asio::bind_cancellation_slot(slot, [this, &a, attempt, order](error_code ec, std::vector<lease> ls) {
            std::vector<held_lease> held;
            if (!ec && ls.size() == 2) {
                auto& m = ls[order == 0 ? 0 : 1];
                auto& w = ls[order == 0 ? 1 : 0];
                held.push_back({path_of(lock_type::mutex), lock_type::mutex, std::move(m)});
                held.push_back({path_of(lock_type::writer), lock_type::writer, std::move(w)});
            }
            on_acquired(a, attempt, ec, std::move(held));
        });
        auto& ml = *c.multi[order];
        if (a.try_only) ml.async_acquire(duration::zero(), std::move(h));
        else if (a.timeout) ml.async_acquire(*a.timeout, std::move(h));
        else ml.async_acquire(std::move(h));
        return;
    }
    }
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
    const auto slack = cleanup_grace * (a.type == lock_type::multi ? 2 : 1) + 1ms;
    if (a.timeout && now - a.started > *a.timeout + slack + stalled)
        violate("a" + std::to_string(a.index) + "'s acquire with timeout " + ms(*a.timeout) + " completed after " +
                ms(now - a.started));
    if (a.cancelled_at && now - *a.cancelled_at > slack + (c.stalled_total - a.stalled_at_cancel))
        violate("a" + std::to_string(a.index) + "'s acquire completed " + ms(now - *a.cancelled_at) + " after its cancellation");
    if (ec) {
        SIM_NOTE("a" + std::to_string(a.index) + " acquire failed: " + ec.message());
        if (ec == errc::permit_mismatch) ++result_.permit_mismatches;
        // lock_lost: our node went although our session lives, which only the session's own end
        // may do here (nobody deletes another's node).
        const bool session_ended = a.session_at_start == 0 || !model_.alive(a.session_at_start) ||
                                   c.port->model_session() != a.session_at_start;
        const bool allowed = ec == errc::session_expired || (ec == errc::lock_lost && session_ended) || ec == errc::not_connected ||
                             ec == errc::request_dropped || (ec == errc::timeout && (a.timeout || a.try_only)) ||
                             (ec == errc::would_block && a.try_only) ||
                             // The path stores another count than this acquire asked for.
                             (ec == errc::permit_mismatch && a.type == lock_type::permit && stored_permits() != 0 &&
                              stored_permits() != count_of(a)) ||
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
    if (cfg_.trace)
        for (const auto& h : leases) {
            const auto f = h.l.fence();
            SIM_NOTE("a" + std::to_string(a.index) + " granted " + h.l.node() + " fence " + std::to_string(f.zxid) + "." +
                     std::to_string(f.local) + " status " + to_string(h.l.status()));
        }
    check_grant(a, leases);
    for (auto& h : leases) {
        h.sid = c.port->model_session();
        h.granted_at = now;
    }
    a.held = std::move(leases);
    a.ph = actor::phase::holding;
    a.downgraded = a.revoke_asked = a.waits_revocation = false;
    a.hold_timer = c.port->make_timer();
    // The holder waits for the loss of its lock (and gives it up when told), on some leases.
    for (std::size_t i = 0; i < a.held.size(); ++i)
        if (rng_.chance(30)) wait_lost(a, attempt, i);
    // The holder gives the lock up when asked to (another client writes the request into its node).
    if (a.held.size() == 1 && rng_.chance(40)) wait_revocation(a, attempt);
    hold(a, attempt);
}

void world::wait_lost(actor& a, std::uint64_t attempt, std::size_t i)
{
    a.held[i].waits_lost = true;
    a.held[i].l.async_wait_lost([this, &a, attempt, i](error_code ec) {
        if (attempt != a.attempt || i >= a.held.size()) return;
        a.held[i].waits_lost = false;
        if (a.ph != actor::phase::holding) return;
        SIM_NOTE("a" + std::to_string(a.index) + " told its lease of " + a.held[i].path + " is lost: " + ec.message());
        // Told of a loss: the lease reads lost at this instant, for the reason told.
        const auto r = a.held[i].l.read();
        if (ec == asio::error::operation_aborted) return violate("a" + std::to_string(a.index) + "'s async_wait_lost was aborted while it held");
        if (r.status != lease_status::lost || r.lost_reason != ec)
            return violate("a" + std::to_string(a.index) + "'s async_wait_lost told " + ec.message() + " while the lease reads " +
                           to_string(r.status) + (r.lost_reason ? " (" + r.lost_reason.message() + ")" : std::string()));
        release(a);
    });
}

void world::wait_revocation(actor& a, std::uint64_t attempt)
{
    a.waits_revocation = true;
    const auto node = a.held.front().l.node();
    a.held.front().l.async_wait_revocation([this, &a, attempt, node](error_code ec) {
        if (attempt != a.attempt) return;
        a.waits_revocation = false;
        if (a.ph != actor::phase::holding) return;
        SIM_NOTE("a" + std::to_string(a.index) + " revocation wait: " + (ec ? ec.message() : std::string("requested")));
        if (ec) return release(a);  // lost first: the holder lets the lease go
        // A request written into the node (in cohort mode, to whichever local holder had it then:
        // it reaches the node's holders).
        bool requested = false;
        for (auto& r : revocations_sent_)
            if (r.node == node) requested = r.delivered = true;
        if (!requested) return violate("a" + std::to_string(a.index) + " was told of a revocation nobody requested");
        if (!a.held.front().l.revocation_requested()) return violate("a" + std::to_string(a.index) + "'s lease does not know it was revoked");
        release(a);
    });
}

void world::hold(actor& a, std::uint64_t attempt)
{
    const bool write = exclusive(a.type) && !a.downgraded && rng_.chance(50);
    const bool downgrade = a.type == lock_type::writer && !a.downgraded && !write && rng_.chance(50);
    // A holder that waits for revocation in a run whose clients request it holds until told (or
    // until it loses the lock): so that every request to it is either delivered or met by a loss.
    const auto let_go = [this, &a] {
        if (!(revocations_ && a.waits_revocation)) release(a);
    };
    a.hold_timer->start(rng_.between(0ms, cfg_.session_timeout), [this, &a, attempt, write, downgrade, let_go] {
        if (attempt != a.attempt || a.ph != actor::phase::holding) return;
        if (downgrade) {
            // From the call on, readers may share the lock: the actor is checked as one.
            SIM_NOTE("a" + std::to_string(a.index) + " downgrades");
            a.downgraded = true;
            return a.held.front().l.async_downgrade([this, &a, attempt](error_code ec) {
                SIM_NOTE("a" + std::to_string(a.index) + " downgraded: " + (ec ? ec.message() : std::string("ok")));
                const bool allowed = !ec || ec == errc::lock_lost || ec == condition::session_expired ||
                                     ec == errc::not_connected || ec == errc::request_dropped ||
                                     ec == zk_errc::connection_loss || ec == zk_errc::operation_timeout;
                // Released meanwhile (a revocation request came): nothing left to downgrade.
                const bool released = attempt != a.attempt || a.ph != actor::phase::holding;
                if (!allowed && !(released && ec == errc::already_released))
                    violate("a" + std::to_string(a.index) + "'s downgrade failed with " + ec.message());
                if (attempt == a.attempt && a.ph == actor::phase::holding) hold(a, attempt);
            });
        }
        if (!write) return let_go();
        // A guarded write: a node under /lk whose data is the writer's fence, created only while
        // the writer's queue node exists. Their order (on_commit) must be the fences' order.
        auto& h = a.held.front();
        const auto f = h.l.fence();
        std::vector<multi_op> ops{multi_op::create("/lk/w-", h.path + " " + std::to_string(f.zxid) + " " + std::to_string(f.local),
                                                   create_mode::ephemeral_sequential)};
        h.l.async_guarded_multi(std::move(ops), [this, &a, attempt, let_go](error_code ec, std::vector<multi_result>) {
            SIM_NOTE("a" + std::to_string(a.index) + " guarded write: " + (ec ? ec.message() : std::string("ok")));
            if (attempt == a.attempt && a.ph == actor::phase::holding) let_go();
        });
    });
}

void world::release(actor& a)
{
    const std::uint64_t attempt = a.attempt;
    // Misuse, now and then: every operation on the lease moved from (then moved back), and on
    // the lease just released.
    const bool probe = rng_.chance(4);
    if (probe) {
        auto& h = a.held.front();
        lease taken = std::move(h.l);
        probe_lease(a, h.l, true);
        h.l = std::move(taken);
    }
    if (rng_.chance(25)) {
        // Dropped: the lease's destructor releases in the background.
        SIM_NOTE("a" + std::to_string(a.index) + " drops its lease");
        a.ph = actor::phase::releasing;  // the waits its leases end may complete inline
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
    if (probe) probe_lease(a, a.held.front().l, false);
}

void world::probe_lease(actor& a, lease& l, bool empty)
{
    // status() is released from the release's call on (lease.hpp), and an empty lease reads
    // released with nothing in it.
    auto& c = client_of(a);
    const std::string who = "a" + std::to_string(a.index) + "'s " + (empty ? "moved-from" : "released") + " lease";
    SIM_NOTE(who + ": every operation");
    ++result_.misuse_probes;
    const auto r = l.read();
    if (l.status() != lease_status::released || l.owns_lock() || static_cast<bool>(l) || r.status != lease_status::released ||
        r.lost_reason || r.valid_until != time_point::min() || l.lost_reason() || l.valid_until() != time_point::min())
        return violate(who + ": status() " + to_string(l.status()) + ", owns_lock() " + std::to_string(l.owns_lock()) + ", read() " +
                       to_string(r.status) + (r.lost_reason ? " (" + r.lost_reason.message() + ")" : std::string()) +
                       (r.valid_until != time_point::min() ? " with a valid_until" : "") + ", lost_reason() " +
                       (l.lost_reason() ? l.lost_reason().message() : std::string("none")) +
                       (l.valid_until() != time_point::min() ? ", valid_until() set" : ""));
    if (empty && (!l.node().empty() || l.fencing_token() != 0 || l.fence() != fence_token{} || l.revocation_requested()))
        return violate(who + " still has a node, a fence or a revocation");
    // What each operation completes with (lease.hpp): already_released for all, an empty
    // lease's and a released one's (a wait pending when the lease is released ends with
    // operation_aborted instead, but none is started after it).
    const error_code released = errc::already_released;
    const auto done = std::make_shared<std::size_t>(0);
    const auto expect = [this, who, &c, empty, done](const char* op, error_code want) {
        if (!empty) ++c.misuse_pending;
        return [this, who, &c, empty, done, op, want](error_code ec) {
            if (misuse_calling_) violate(who + "'s " + op + " completed inside its initiating function");
            if (ec != want) violate(who + "'s " + op + " completed with " + (ec ? ec.message() : std::string("success")) +
                                    ", not " + (want ? want.message() : std::string("success")));
            if (empty) ++*done;
            else --c.misuse_pending;
        };
    };
    // An empty lease has no session: its completions come through asio::system_executor on to
    // the handler's executor, here misuse_io_, which this step then runs until they are in.
    // A released lease completes on its session's executor, when the client runs.
    const auto call = [&](auto&& initiate, auto handler) {
        misuse_calling_ = true;
        if (empty) initiate(asio::bind_executor(misuse_io_.get_executor(), std::move(handler)));
        else initiate(std::move(handler));
        misuse_calling_ = false;
    };
    call([&](auto h) { l.async_release(std::move(h)); }, expect("async_release", released));
    call([&](auto h) { l.async_wait_lost(std::move(h)); }, expect("async_wait_lost", released));
    call([&](auto h) { l.async_wait_revocation(std::move(h)); }, expect("async_wait_revocation", released));
    call([&](auto h) { l.async_downgrade(std::move(h)); }, expect("async_downgrade", released));
    {
        auto e = expect("async_guarded_multi", released);
        call(
            [&](auto h) {
                l.async_guarded_multi({multi_op::create("/lk/w-", "misuse", create_mode::ephemeral_sequential)}, std::move(h));
            },
            [e, this, who](error_code ec, std::vector<multi_result> rs) mutable {
                if (rs.size() != 1 || rs.front().ec != ec) violate(who + "'s async_guarded_multi gave no result per op with its error");
                e(ec);
            });
    }
    {
        auto e = expect("async_wait_status_change", released);
        call([&](auto h) { l.async_wait_status_change(std::move(h)); },
             [e, this, who](error_code ec, lease_status st) mutable {
                 if (st != lease_status::released) violate(who + "'s async_wait_status_change told " + to_string(st));
                 e(ec);
             });
    }
    if (empty) {
        if (const auto missing = run_misuse_io(*done, 6))  // the six calls above
            violate(who + ": " + std::to_string(missing) + " operation(s) never completed (10 s)");
    }
}

std::size_t world::run_misuse_io(const std::size_t& done, std::size_t want)
{
    // The system executor's thread lets go of its work on misuse_io_ after the handler ran,
    // which may stop misuse_io_ after the last wait: restarted while this one holds work.
    auto work = asio::make_work_guard(misuse_io_);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (done < want && std::chrono::steady_clock::now() < until) {
        if (misuse_io_.stopped()) misuse_io_.restart();
        misuse_io_.run_one_for(std::chrono::milliseconds(100));
    }
    // A completion that came through asio::system_executor: its thread still holds work on
    // misuse_io_ for a moment after the handler ran (the tracked executor it dispatched through).
    // Run until that is let go too, so that no thread touches misuse_io_ once the world is gone.
    work.reset();
    if (misuse_io_.stopped()) misuse_io_.restart();
    misuse_io_.run_for(std::chrono::seconds(10));
    if (!misuse_io_.stopped()) violate("a system executor thread held work on misuse_io_ for 10 s");
    return done < want ? want - done : 0;
}

void world::probe_moved_lock(client& c)
{
    // A moved-from lock answers as documented (basic_lock.hpp): an empty path, the default
    // options, asio::system_executor, and an acquire that completes with session_closed, never
    // inside its initiating function, through the system executor on to the handler's (here
    // misuse_io_, which this step runs until the completions are in).
    SIM_NOTE("c" + std::to_string(c.index) + "'s locks moved from: their queries and a try-acquire");
    ++result_.misuse_probes;
    const auto who = "c" + std::to_string(c.index);
    auto done = std::make_shared<std::size_t>(0);
    std::size_t want = 0;
    const auto check = [&](auto& lock, const char* what) {
        auto moved = std::move(lock);
        if (!lock.path().empty() || lock.options().cohort || !lock.options().owner_info.empty())
            violate(who + "'s moved-from " + what + " has a path or options");
        if (lock.get_executor() != asio::any_io_executor(asio::system_executor()))
            violate(who + "'s moved-from " + what + "'s executor is not the system executor");
        ++want;
        misuse_calling_ = true;
        lock.async_try_acquire(asio::bind_executor(misuse_io_.get_executor(), [this, who, what, done](error_code ec, lease l) {
            if (misuse_calling_) violate(who + "'s moved-from " + what + "'s try-acquire completed inside its initiating function");
            if (ec != errc::session_closed || l.owns_lock())
                violate(who + "'s moved-from " + what + "'s try-acquire completed with " +
                        (ec ? ec.message() : std::string("success")) + ", not session_closed");
            ++*done;
        }));
        misuse_calling_ = false;
        if (moved.path().empty()) violate(who + "'s " + what + " lost its path in a move");
        lock = std::move(moved);
    };
    check(*c.m, "mutex");
    check(*c.cohort, "cohort mutex");
    check(*c.rw, "shared_mutex");
    check(*c.sem, "semaphore");
    if (const auto missing = run_misuse_io(*done, want))
        violate(who + ": " + std::to_string(missing) + " moved-from try-acquire(s) never completed (10 s)");
}

void world::request_revocation(actor& a)
{
    // Another client (or the holder's own) writes the request into the holder's node, once a
    // grant, through its session's public async_set_data.
    std::vector<client*> live;
    for (auto& c : clients_)
        if (runnable(*c) && !c->closed) live.push_back(c.get());
    if (live.empty()) return;
    a.revoke_asked = true;
    auto& by = *live[rng_.below(live.size())];
    const auto node = a.held.front().l.node();
    const auto attempt = a.attempt;
    SIM_NOTE("c" + std::to_string(by.index) + " asks a" + std::to_string(a.index) + " to give up " + node);
    revocations_sent_.push_back({a.index, by.index, attempt, node, std::nullopt, false, false});
    const auto id = revocations_sent_.size() - 1;
    by.s->async_set_data(node, std::string(revocation_request), [this, &a, attempt, id, node](error_code ec, zklock::stat) {
        SIM_NOTE("revocation request for " + node + ": " + (ec ? ec.message() : std::string("written")));
        // Not applied (the connection went first): the holder may be asked again.
        if (ec && !revocations_sent_[id].committed && attempt == a.attempt && a.ph == actor::phase::holding) a.revoke_asked = false;
    });
}

// The election's observer of a client: each leader it delivers, until its session closes.
void world::observe(client& c)
{
    c.observer.async_next([this, &c](error_code ec, leader_info info) {
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
    a.waits_revocation = false;
    ++a.round;
    a.ph = a.round >= cfg_.rounds ? actor::phase::done : actor::phase::idle;
}

}  // namespace zklock::sim
