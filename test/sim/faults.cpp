// The faults, and time: a client's connection drops, a follower is cut off from the leader (and
// drops its clients later), a client's executor stalls (also with a reply queued, which it reads
// at resume before its timers' handlers run), a follower restarts, a client's process dies, a client's
// replies are held past a third of the session timeout; a user cancels a waiting acquire. Time moves the virtual clock, the leader's expiries and
// the timed events. See world_impl.hpp.
#include "world_impl.hpp"

#include <algorithm>
#include <utility>

namespace zklock::sim {

std::optional<time_point> world::next_event() const
{
    std::optional<time_point> t;
    for (const auto& e : events_)
        if (!t || e.at < *t) t = e.at;
    return t;
}

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
    end_held_replies();
    for (auto& c : clients_)
        if (c->stalled_until && *c->stalled_until <= clock_.now()) {
            c->stalled_total += clock_.now() - c->stall_began;
            c->stalled_until.reset();
            SIM_NOTE("c" + std::to_string(c->index) + " runs again");
            // The reply that waited through the stall is read first: its callbacks run before the
            // handlers of the timers that came due meanwhile (the presumption's among them).
            if (std::exchange(c->reply_first_at_resume, false) && reply_queued(*c)) {
                auto& box = model_.outbox(c->port->model_session());
                auto m = std::move(box.front());
                box.pop_front();
                SIM_NOTE("c" + std::to_string(c->index) + " <- reply #" + std::to_string(m.r.tag) + " (queued through the stall)");
                c->port->deliver(std::move(m));
            }
        }
}

bool world::reply_queued(client& c)
{
    const auto sid = c.port->model_session();
    if (c.dead || sid == 0 || !c.port->link_up() || c.eof) return false;
    const auto& box = model_.outbox(sid);
    return !box.empty() && !box.front().is_event;
}

void world::stall(client& c, duration d)
{
    c.stalled_until = clock_.now() + d;
    c.stall_began = clock_.now();
}

void world::end_held_replies()
{
    for (auto& c : clients_) {
        if (!c->replies_held_until) continue;
        const bool due = *c->replies_held_until <= clock_.now();
        const bool gone = c->dead || c->eof || !c->port->link_up() || c->port->model_session() != c->replies_held_sid;
        if (!due && !gone) continue;
        c->replies_held_until.reset();
        SIM_NOTE("c" + std::to_string(c->index) + "'s replies flow again" + (due ? "" : " (its connection ended)"));
    }
}

void world::inject_fault()
{
    --fault_budget_;
    ++result_.faults;
    const auto T = duration(cfg_.session_timeout);
    auto& c = *clients_[rng_.below(clients_.size())];
    switch (rng_.below(7)) {
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
        // Half the time, a client with a reply queued, for past T/3: at resume it reads the reply
        // before its timers' handlers run.
        if (rng_.chance(50)) {
            std::vector<client*> queued;
            for (auto& x : clients_)
                if (!x->stalled_until && reply_queued(*x)) queued.push_back(x.get());
            if (!queued.empty()) {
                auto& q = *queued[rng_.below(queued.size())];
                const auto d = rng_.between(T / 3, 2 * T);
                SIM_NOTE("FAULT: c" + std::to_string(q.index) + "'s executor stalls for " + ms(d) + " with a reply queued");
                stall(q, d);
                q.reply_first_at_resume = true;
                ++result_.queued_stalls;
                break;
            }
        }
        if (c.dead || c.stalled_until) break;
        const auto d = rng_.between(T / 10, 2 * T);
        SIM_NOTE("FAULT: c" + std::to_string(c.index) + "'s executor stalls for " + ms(d));
        stall(c, d);
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
        // Its revocation requests not applied yet never will be: their holders may be asked again.
        for (auto& r : revocations_sent_) {
            auto& a = *actors_[static_cast<std::size_t>(r.actor)];
            if (r.by == c.index && !r.committed && a.attempt == r.attempt) a.revoke_asked = false;
        }
        break;
    case 5: {  // the client's replies are held (its server slow to answer) past T/3, while it runs
        if (c.dead || c.eof || !c.port->link_up() || c.replies_held_until) break;
        const auto d = rng_.between(T / 2, T);
        SIM_NOTE("FAULT: c" + std::to_string(c.index) + "'s replies are held for " + ms(d));
        c.replies_held_since = clock_.now();
        c.replies_held_until = clock_.now() + d;
        c.replies_held_sid = c.port->model_session();
        ++result_.held_replies;
        break;
    }
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

}  // namespace zklock::sim
