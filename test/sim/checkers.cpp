// The checkers: the invariants of docs/guarantees.md ("The simulation"), checked after every step
// of the scheduler (check_step), as the leader applies each write (on_commit), at each grant and
// completion (workload.cpp), and at the end (check_observers, check_end, check_empty_tree). A
// lease is read only through its public queries, as its holder's code would read it at that
// instant (a stalled client's too). See world_impl.hpp.
#include "world_impl.hpp"

#include <algorithm>
#include <sstream>
#include <cstdlib>

namespace zklock::sim {

void world::check_step()
{
    check_leases();
    if (!revocations_sent_.empty()) check_revocations();
    if (cfg_.check_idle_permits && has(lock_type::permit)) check_idle_permits();
    check_held_replies();
}

std::uint32_t world::stored_permits() const
{
    // The semaphore's own format (semaphore.hpp): "zklock-semaphore permits=N".
    constexpr std::string_view prefix = "zklock-semaphore permits=";
    const auto data = model_.data_of(path_of(lock_type::permit));
    if (!data.starts_with(prefix)) return 0;
    return static_cast<std::uint32_t>(std::strtoul(data.c_str() + prefix.size(), nullptr, 10));
}

void world::check_grant(const actor& a, const std::vector<held_lease>& leases)
{
    // A grant holds its lock at the instant it completes: its lease reads held or suspended
    // (valid past now), never lost, also when the reply that granted it waited on a stalled
    // executor past the session's presumed expiry.
    for (const auto& h : leases) {
        const auto r = h.l.read();
        if ((r.status != lease_status::held && r.status != lease_status::suspended) || r.valid_until <= clock_.now())
            return violate("a" + std::to_string(a.index) + " was granted " + h.l.node() + ", which reads " + to_string(r.status) +
                           (r.lost_reason ? " (" + r.lost_reason.message() + ")" : std::string()) + " at its grant");
    }
    // A semaphore's path asked with two permit counts: only the stored count is granted.
    if (a.type == lock_type::permit && count_of(a) != stored_permits())
        return violate("a" + std::to_string(a.index) + " was granted a permit asking for " + std::to_string(count_of(a)) +
                       " permits on a path that stores " + std::to_string(stored_permits()));
    // Fencing and queue order: each grant on an exclusive path has a greater fence than the last.
    for (const auto& h : leases) {
        if (!exclusive(h.type)) continue;
        const auto f = h.l.fence();
        auto it = last_fence_.find(h.path);
        if (it != last_fence_.end() && !(it->second < f))
            violate("a" + std::to_string(a.index) + ": fence " + std::to_string(f.zxid) + "." + std::to_string(f.local) +
                    " granted on " + h.path + " after " + std::to_string(it->second.zxid) + "." + std::to_string(it->second.local));
        last_fence_[h.path] = f;
    }
}

void world::check_leases()
{
    // Every lease of a live client, read with lease::read() (status, loss reason and valid_until
    // at one instant).
    struct holder {
        const actor* a;
        lock_type type;
        lease_status st;
    };
    holder holders[32];
    std::size_t n = 0;
    const auto now = clock_.now();
    for (auto& ap : actors_) {
        auto& a = *ap;
        auto& c = client_of(a);
        if (c.dead || a.ph != actor::phase::holding) continue;  // a release started: the user let go
        for (auto& h : a.held) {
            const auto r = h.l.read();
            const bool owns = r.status == lease_status::held || r.status == lease_status::suspended;
            const auto who = [&] { return "a" + std::to_string(a.index) + "'s lease of " + h.path + " (" + h.l.node() + ") reads "; };
            // One instant: a lease that owns its lock is valid past now (it reads lost at its
            // valid_until), and no later than the leader could expire its session; one that does
            // not has no valid_until, and a lost one has its reason.
            if (owns) {
                if (r.valid_until <= now)
                    return violate(who() + to_string(r.status) + (r.valid_until == time_point::min()
                                                                      ? std::string(" with no valid_until")
                                                                      : " with valid_until " + ms(now - r.valid_until) + " ago"));
                if (h.sid != 0 && !model_.alive(h.sid))
                    return violate(who() + to_string(r.status) + " while the leader has ended its session");
                const auto expiry = model_.expiry_of(h.sid);
                if (expiry && r.valid_until > *expiry)
                    return violate(who() + to_string(r.status) + " valid until " + ms(r.valid_until - *expiry) +
                                   " after the leader may expire its session");
            } else if (r.valid_until != time_point::min()) {
                return violate(who() + to_string(r.status) + " with a valid_until");
            } else if ((r.status == lease_status::lost) != static_cast<bool>(r.lost_reason)) {
                return violate(who() + to_string(r.status) + (r.lost_reason ? " with the loss reason " + r.lost_reason.message() : " without a loss reason"));
            }
            // Loss told: a lost lease's async_wait_lost completes from a handler posted at the
            // loss; its client, running, has run it by the next step.
            if (h.waits_lost && r.status == lease_status::lost && runnable(c)) {
                if (h.lost_seen_at == 0) h.lost_seen_at = steps_;
                else if (h.lost_seen_at < steps_)
                    return violate(who() + "lost (" + r.lost_reason.message() + ") since step " + std::to_string(h.lost_seen_at) +
                                   ", and its async_wait_lost was not told");
            }
            if (owns && n < std::size(holders)) {
                const auto type = a.downgraded && h.type == lock_type::writer ? lock_type::reader : h.type;
                holders[n++] = {&a, type, r.status};
            }
        }
    }
    // Mutual exclusion, per path: no two holders of an exclusive lock, no writer with anyone, no
    // more holders than permits.
    for (std::size_t i = 0; i < n; ++i) {
        const auto& path = path_of(holders[i].type);
        bool first = true;
        std::size_t writers = 0, readers = 0, others = 0;
        for (std::size_t j = 0; j < n; ++j) {
            if (path_of(holders[j].type) != path) continue;
            if (j < i) {
                first = false;
                break;
            }
            if (holders[j].type == lock_type::reader) ++readers;
            else if (holders[j].type == lock_type::writer) ++writers;
            else ++others;
        }
        if (!first) continue;
        // A semaphore's: the count stored in its path, whatever count its acquires asked for.
        const std::size_t stored = stored_permits();
        const std::size_t limit = path == path_of(lock_type::permit) ? (stored ? stored : permits) : 1;
        if (others > limit || writers > 1 || (writers == 1 && readers > 0)) {
            std::string who;
            for (std::size_t j = 0; j < n; ++j)
                if (path_of(holders[j].type) == path)
                    who += " a" + std::to_string(holders[j].a->index) + "(" + name_of(holders[j].type) + "," + to_string(holders[j].st) + ")";
            return violate(others > limit ? std::to_string(others) + " holders of " + path + " at once:" + who
                                          : "a writer and another holder of " + path + " at once:" + who);
        }
    }
}

void world::check_held_replies()
{
    // A client whose replies are held hears no answer of the leader: the evidence of a lease
    // held since before the hold began (the send time of the latest answered leader request) is
    // no later than the hold's start, so the lease reads suspended from T/3 after it and lost
    // from T/2 (docs/liveness.md), while its client runs and its connection stays up.
    const auto T = duration(cfg_.session_timeout);
    const auto now = clock_.now();
    for (auto& ap : actors_) {
        auto& a = *ap;
        const auto& c = client_of(a);
        if (!c.replies_held_until || c.dead || a.ph != actor::phase::holding) continue;
        const auto since = c.replies_held_since;
        if (now < since + T / 3) continue;
        for (auto& h : a.held) {
            if (h.granted_at >= since) continue;
            const auto r = h.l.read();
            if (r.status == lease_status::held || (now >= since + T / 2 && r.status == lease_status::suspended))
                return violate("a" + std::to_string(a.index) + "'s lease of " + h.path + " (" + h.l.node() + ") reads " +
                               to_string(r.status) + " " + ms(now - since) + " after c" + std::to_string(c.index) +
                               "'s replies were held");
        }
    }
}

void world::on_commit(const std::string& path, const std::string& data, bool created)
{
    if (created && path.starts_with("/lk/w-")) {
        // A guarded write applied: its fence is greater than every earlier one on its lock path
        // (no holder wrote after a later holder had).
        fence_token f;
        std::string lock;
        std::istringstream in(data);
        in >> lock >> f.zxid >> f.local;
        auto it = last_write_.find(lock);
        if (it != last_write_.end() && !(it->second < f))
            violate("guarded write " + path + " on " + lock + " with fence " + std::to_string(f.zxid) + "." + std::to_string(f.local) +
                    " applied after one with " + std::to_string(it->second.zxid) + "." + std::to_string(it->second.local));
        last_write_[lock] = f;
        return;
    }
    if (!created && data == revocation_request)
        for (auto& r : revocations_sent_)
            if (r.node == path && !r.committed) {
                r.committed = clock_.now();
                const auto& a = *actors_[static_cast<std::size_t>(r.actor)];
                r.awaited = a.attempt == r.attempt && a.ph == actor::phase::holding && a.waits_revocation;
            }
}

void world::check_revocations()
{
    // Each revocation request applied to the node of a holder that waits for it is delivered
    // (async_wait_revocation completes), or the holder's lease reads lost (its wait completes
    // with the loss), within 4 T of the request or of the faults' end (a stall may last 2 T
    // past it), while the holder's client lives.
    const auto T = duration(cfg_.session_timeout);
    for (auto& r : revocations_sent_) {
        if (!r.committed || !r.awaited || r.delivered) continue;
        const auto& a = *actors_[static_cast<std::size_t>(r.actor)];
        if (a.attempt != r.attempt || a.ph != actor::phase::holding || client_of(a).dead) {
            r.awaited = false;  // released: told (it releases only when told), or its client died
            continue;
        }
        const auto from = std::max(*r.committed, healed_at_.value_or(time_point::max()));
        if (from != time_point::max() && clock_.now() - from > 4 * T)
            return violate("a" + std::to_string(a.index) + " was asked to give up " + r.node + " " + ms(clock_.now() - *r.committed) +
                           " ago, and neither heard of it nor lost the lock (it reads " + to_string(a.held.front().l.status()) + ")");
    }
}

void world::check_idle_permits()
{
    // The semaphore's liveness: a node of a waiting acquire with fewer than `permits` nodes
    // before it in the queue is owed a permit. While its client is healthy (running, connected,
    // its server caught up with the leader), it must be granted within a round trip; this
    // simulation's messages take no time, but the scheduler lets time run between them, so the
    // bound is a third of the session timeout of virtual time (the ping interval), more than the
    // few messages a grant takes ever wait here. A client that stops being healthy starts the
    // count again, as does one with a request on the path, or an event of a node there, on its
    // way. So does a node behind an unhealthy client's node: only the first waiter watches the
    // holders, and the one behind it learns that it is first from that waiter's grant (its write
    // into its node), which waits for that client to run and reach the leader again, or for its
    // session to end (docs/guarantees.md, "The semaphore's liveness"). An acquire that asks for
    // another count than the path's is owed nothing (it fails with permit_mismatch); with the
    // wider count stored, the check stays the one for `permits`.
    const auto stored = stored_permits();
    bool any = false;
    for (auto& a : actors_)
        if (a->ph == actor::phase::waiting && a->type == lock_type::permit && !a->cancelled_at && count_of(*a) == stored &&
            healthy(client_of(*a)))
            any = true;
    if (!any) {
        idle_permit_since_.clear();
        return;
    }
    const auto dir = path_of(lock_type::permit);
    auto names = model_.children_of(dir);
    const auto seq = [](const std::string& x) { return std::string_view(x).substr(x.size() > 10 ? x.size() - 10 : 0); };
    std::sort(names.begin(), names.end(), [&](const std::string& x, const std::string& y) { return seq(x) < seq(y); });
    const auto now = clock_.now();
    std::map<std::string, time_point> still;
    bool behind_unhealthy = false;  // a node before this one is an unhealthy or busy client's
    for (std::size_t i = 0; i < names.size() && i < permits; ++i) {
        const auto node = dir + "/" + names[i];
        const auto st = model_.stat_of(node);
        if (!st || st->ephemeral_owner == 0) continue;
        client* owner = nullptr;
        for (auto& c : clients_)
            if (!c->dead && c->port->model_session() == st->ephemeral_owner) owner = c.get();
        if (!owner || !healthy(*owner)) {
            behind_unhealthy = true;
            continue;
        }
        // A node held by a lease is not waiting; the owner must have an acquire of a permit waiting.
        bool held = false, waiting = false;
        for (auto& a : actors_) {
            if (a->client != owner->index) continue;
            if (a->ph == actor::phase::waiting && a->type == lock_type::permit && !a->cancelled_at && count_of(*a) == stored)
                waiting = true;
            for (auto& h : a->held)
                if (h.l.node() == node) held = true;
        }
        // A client with a request on the semaphore's path in flight, or a watch event of a node
        // there on its way, is not idle: the scheduler may let time run before either arrives (two
        // of the session's 500 ms timers), and it may be what grants. Nor is a node behind such a
        // client's node: that request may be the grant's write into its node, which the node
        // behind waits to hear of.
        const auto& outbox = model_.outbox(st->ephemeral_owner);
        const bool event_on_way = std::any_of(outbox.begin(), outbox.end(), [&](const message& m) {
            return m.is_event && m.e.path.starts_with(dir + "/");
        });
        const bool busy = owner->port->in_flight_under(dir) || event_on_way;
        if (held || !waiting || behind_unhealthy || busy) {
            behind_unhealthy = behind_unhealthy || busy;
            continue;
        }
        auto it = idle_permit_since_.find(node);
        const auto since = it == idle_permit_since_.end() ? now : it->second;
        if (now - since > duration(cfg_.session_timeout) / 3)
            return violate("a permit idles: " + node + " (c" + std::to_string(owner->index) + ") has " + std::to_string(i) +
                           " node(s) before it, of " + std::to_string(permits) + " permits, and has waited " + ms(now - since) +
                           " with its client healthy");
        still[node] = since;
    }
    idle_permit_since_ = std::move(still);
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
        if (c->dead || !has(lock_type::leader)) continue;
        if (c->observer_ended || c->observed != leader)
            violate("c" + std::to_string(c->index) + "'s election observer delivered " +
                    (!c->observed ? std::string("nothing") : c->observed->empty() ? std::string("no leader") : *c->observed) +
                    (c->observer_ended ? " (and ended)" : "") + ", the leader is " + (leader.empty() ? std::string("none") : leader));
    }
}

void world::check_end()
{
    // Every lease released and every acquire ended: no queue node of a live session is left.
    for (const auto& p : model_.nodes()) {
        auto st = model_.stat_of(p);
        if (!st || st->ephemeral_owner == 0 || p.starts_with("/lk/w-")) continue;
        for (auto& c : clients_)
            if (!c->dead && c->port->model_session() == st->ephemeral_owner && model_.alive(st->ephemeral_owner))
                violate("node " + p + " of c" + std::to_string(c->index) + " is left with every lease released");
    }
}

void world::check_empty_tree()
{
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
        if (p != "/" && !unused.contains(p) && !seeded_.contains(p)) violate("node " + p + " is left after every session closed");
}

}  // namespace zklock::sim
