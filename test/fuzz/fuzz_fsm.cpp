// Fuzz target: the acquire state machine fed random event sequences by a model of ZooKeeper.
//
// The bytes choose, step by step: the reply to the request in flight (as the simulated server
// computes it, or lost: applied or not, the connection gone), other clients adding and deleting
// their queue nodes, anyone writing data into any node (a forged "holder mark": data must never
// grant), another session creating a node that carries our attempt id (a forked process, a
// forgery: an id must never make a node ours), someone deleting our node, the session expiring, a
// cancel or a timeout, the lock directory being reclaimed; an exclusive head releasing with a
// handoff mark (multi: the lock path's data and mzxid, and its pzxid, in one transaction), and
// anyone writing a mark naming any node into the lock path with a set_data alone. When the bytes run out, the world calms down: every
// request succeeds and the node we wait on goes away, with a cancel first if the first byte says so.
//
// Invariants:
//  * it completes exactly once, and does nothing after completing (every later event: no action);
//  * it never stalls: every reply gets an action, and in the calm it completes in bounded steps
//    (so after a cancel it reaches done);
//  * it only ever asks to remove nodes it created (its own, after ZooKeeper confirmed our session
//    owns it; duplicates under its attempt id go through the driver's ownership check);
//  * it never creates a node while one of its own exists (a lost create reply is resolved by
//    looking for its id, not by creating again);
//  * granted means: our node exists, it is the one the token belongs to, the queue grants it by the
//    policy, and no duplicate of ours is left;
//  * failed means: no node of ours is left behind (unless the session died, which took them).
#include "fuzz_check.hpp"

#include <zklock/detail/acquire_fsm.hpp>

#include <boost/asio/error.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace zklock;
using namespace zklock::detail;
using ak = acquire_fsm::action_kind;

namespace {

struct bytes {
    const std::uint8_t* p;
    std::size_t n;
    std::size_t i = 0;
    bool empty() const { return i >= n; }
    unsigned pick(unsigned k) { return i < n ? p[i++] % k : 0; }
};

const error_code ok{};
const error_code loss = zk_errc::connection_loss;
const error_code zk_expired = zk_errc::session_expired;

// ZKLOCK_FUZZ_TRACE=1: print every action and event (to understand a saved crash with the replay driver).
const bool trace = std::getenv("ZKLOCK_FUZZ_TRACE") != nullptr;

const char* kind_name(ak k)
{
    static const char* names[] = {"none", "create", "create_parents", "list", "stat_node", "watch",
                                  "wait_event", "wait_connected", "remove", "read_count", "claim_count",
                                  "read_mark", "arm", "done"};
    return names[static_cast<int>(k)];
}

std::string seq10(std::int64_t seq)
{
    char buf[16];
    std::snprintf(buf, sizeof buf, "%010lld", static_cast<long long>(seq));
    return buf;
}

struct znode {
    bool ours = false;  // created by our session (ephemeralOwner is us)
    std::int64_t czxid = 0;
    std::int32_t version = 0;  // its data version (anyone may write into any node)
};

class world {
public:
    explicit world(bytes& in)
        : in_(in), policy_(make_policy(in.pick(256))), try_only_(in.pick(4) == 0), dir_exists_(in.pick(4) != 0),
          cancel_in_calm_(in.pick(2) == 0), queue_hint_(in.pick(4) == 0 ? 0 : acquire_fsm::min_queue_for_mark),
          fsm_(dir_, policy_, me_, try_only_),
          prefix_(node_prefix(*policy_.what, me_, policy_.marker))
    {
        if (dir_exists_) {
            // The lock path's data: empty, our permit count, or another count.
            const unsigned d = in_.pick(4);
            dir_data_ = d == 0 ? "" : d == 3 ? permit_count_data(policy_.permits + 1) : permit_count_data(policy_.permits);
            const unsigned others = in_.pick(6);
            for (unsigned k = 0; k < others; ++k) add_other();
        }
    }

    void run()
    {
        feed(fsm_.start());
        for (int step = 0; step < 400 && !in_.empty() && done_ == 0; ++step) event(in_.pick(16));
        calm();
        after_done();
    }

private:
    static queue_policy make_policy(unsigned b)
    {
        switch (b % 3) {
        case 0: {
            // The exclusive recipes differ only in their names: each with each of its markers.
            static const std::vector<const recipe*> exclusive = [] {
                std::vector<const recipe*> v;
                for (const recipe* r : recipes())
                    if (r->kind == node_kind::exclusive) v.push_back(r);
                return v;
            }();
            const recipe& r = *exclusive[(b / 3) % exclusive.size()];
            return {r, 1, static_cast<std::uint8_t>((b / 9) % r.markers.size())};
        }
        case 1: return {node_kind::shared, 1};
        default: {
            queue_policy p{node_kind::permit, 1 + (b / 3) % 3};
            p.count_known = (b / 9) % 2 == 0;  // count known or not
            return p;
        }
        }
    }

    std::string path(const std::string& name) const { return dir_ + "/" + name; }
    std::vector<std::string> names() const
    {
        std::vector<std::string> v;
        for (const auto& [name, n] : kids_) v.push_back(name);
        return v;
    }
    std::size_t ours_count() const
    {
        std::size_t k = 0;
        for (const auto& [name, n] : kids_) k += n.ours;
        return k;
    }
    bool exists(const std::string& p) const { return p.starts_with(dir_ + "/") && kids_.count(p.substr(dir_.size() + 1)); }
    znode* find(const std::string& p) { return exists(p) ? &kids_[p.substr(dir_.size() + 1)] : nullptr; }

    void add_other()
    {
        if (!dir_exists_ || kids_.size() >= 64) return;  // a queue the calm can drain in its 1000 steps
        node_kind kind = policy_.kind() == node_kind::permit ? node_kind::permit
                         : in_.pick(2)                     ? node_kind::exclusive
                                                           : node_kind::shared;
        pzxid_ = zxid_;
        kids_[node_prefix(kind, 0x5000 + next_seq_) + seq10(next_seq_)] = {false, zxid_++};
        ++next_seq_;
    }

    // Another session's node named with our attempt id and kind (a process that forked with us
    // and shares our id generator's state, or a forgery).
    void add_impostor()
    {
        if (!dir_exists_ || kids_.size() >= 64) return;
        pzxid_ = zxid_;
        kids_[prefix_ + seq10(next_seq_++)] = {false, zxid_++};
    }

    // The watched node changed (deleted, or data written into it): the one-shot watch fires.
    void watched_changed(const std::string& p, bool deleted)
    {
        if (!watch_armed_ || watched_ != p) return;
        watch_armed_ = false;
        check_own_watch_order();
        // While a look-ahead's reply is in flight (arm) the machine hears it too, and answers
        // nothing: the reply decides.
        if (pending_.kind == ak::wait_event || pending_.kind == ak::arm) feed(fsm_.on_watch_fired(deleted, queue_hint_));
    }

    // The look-ahead's node was deleted (its watch fires: the driver calls on_ahead_fired in any
    // state, and the machine acts only while it waits).
    void ahead_changed(const std::string& p)
    {
        if (!ahead_armed_ || ahead_ != p) return;
        ahead_armed_ = false;
        feed(fsm_.on_ahead_fired(queue_hint_));
    }

    // `marked`: the multi of an exclusive head's release, which writes its handoff mark into the
    // lock path in the transaction of its delete.
    void remove_node(const std::string& p, bool marked = false)
    {
        const std::string name = p.substr(dir_.size() + 1);
        kids_.erase(name);
        pzxid_ = zxid_++;
        if (marked) {
            dir_data_ = handoff_mark(name);
            mzxid_ = pzxid_;
            ++dir_version_;
        }
        watched_changed(p, true);
        ahead_changed(p);
        if (also_.erase(p)) {
            also_.clear();  // the driver drops the others: asked for again, all are watched again
            feed(fsm_.on_also_fired());
        }
    }

    // Whether `name` is an exclusive node with nothing older: a holder that may release with a mark.
    bool exclusive_head(const std::string& name) const
    {
        const auto q = make_queue(names());
        return !q.empty() && q.front().name == name && q.front().kind == node_kind::exclusive;
    }

    // Check an action of the machine, apply its fire-and-forget part, remember what is in flight.
    void feed(acquire_fsm::action a, bool is_reply = false)
    {
        if (trace)
            std::fprintf(stderr, "  -> %s %s%s%s\n", kind_name(a.kind), a.path.c_str(), a.ec ? " ec=" : "",
                         a.ec ? a.ec.message().c_str() : "");
        if (done_ > 0) {
            FUZZ_CHECK(a.kind == ak::none);  // never completes twice, never acts after completing
            FUZZ_CHECK(a.duplicates.empty());
            return;
        }
        for (const auto& d : a.duplicates) {
            FUZZ_CHECK(d != fsm_.own_node());
            // The driver's check: exists(), and a delete only if ephemeralOwner is our session.
            if (znode* n = find(d); n && n->ours) remove_node(d);
        }
        switch (a.kind) {
        case ak::none:
            FUZZ_CHECK(!is_reply);  // a reply always gets an action: the machine never stalls
            return;
        case ak::create:
            FUZZ_CHECK(a.path == path(prefix_));
            FUZZ_CHECK(session_dead_ || ours_count() == 0);  // never a second node of ours
            FUZZ_CHECK(fsm_.count_verified());  // a semaphore queues only under a verified count
            break;
        case ak::claim_count:
            FUZZ_CHECK(policy_.kind() == node_kind::permit);
            FUZZ_CHECK(a.data == permit_count_data(policy_.permits));
            break;
        case ak::remove:
            FUZZ_CHECK(ours_ever_.count(a.path));  // never removes what it does not own
            FUZZ_CHECK(!find(a.path) || find(a.path)->ours);
            break;
        case ak::done:
            ++done_;
            result_ = a.ec;
            if (!a.ec) {
                const std::string own = fsm_.own_node();
                znode* n = find(own);
                FUZZ_CHECK(n != nullptr && n->ours);  // granted on a node that exists
                FUZZ_CHECK(fsm_.fencing_token() == n->czxid);
                FUZZ_CHECK(ours_count() == 1);  // no duplicate left
                const auto q = make_queue(names());
                std::size_t idx = 0;
                while (idx < q.size() && path(q[idx].name) != own) ++idx;
                FUZZ_CHECK(idx < q.size());
                FUZZ_CHECK(evaluate(q, idx, policy_).acquired);  // the queue grants it
                // A permit is granted only under our count (verified now, or by an earlier acquire).
                if (policy_.kind() == node_kind::permit && !policy_.count_known)
                    FUZZ_CHECK(count_seen_ || dir_data_ == permit_count_data(policy_.permits));
            } else if (!session_dead_) {
                FUZZ_CHECK(ours_count() == 0);  // nothing left behind
            }
            break;
        default: break;
        }
        if (a.kind == ak::watch || a.kind == ak::remove || a.kind == ak::done) also_.clear();  // the driver drops them
        if (a.kind == ak::done) FUZZ_CHECK(!a.touch || (!a.ec && policy_.kind() == node_kind::permit));
        if (a.kind == ak::watch) FUZZ_CHECK(a.also.empty() || policy_.kind() == node_kind::permit);
        pending_ = std::move(a);
        if (pending_.kind == ak::wait_event) {
            // The driver replaces any look-ahead watch by the one asked for (none: dropped).
            ahead_armed_ = false;
            if (!pending_.ahead.empty()) {
                const std::string ahead = pending_.ahead;
                FUZZ_CHECK(policy_.kind() == node_kind::exclusive);
                FUZZ_CHECK(ahead != fsm_.own_node() && ahead != watched_);
                if (exists(ahead)) {
                    ahead_ = ahead;
                    ahead_armed_ = true;
                } else {
                    feed(fsm_.on_ahead_fired(queue_hint_));  // the driver's get_data: no_node
                }
            }
        }
    }

    // The reply to the request in flight. variant 0: as computed; 1: lost after being applied;
    // 2: lost before being applied; 3 (create only): created, but the listing behind it lost.
    void reply(unsigned variant)
    {
        const auto kind = pending_.kind;
        const std::string p = pending_.path;
        const bool watch_own = pending_.watch_own;
        const std::vector<std::string> also = pending_.also;
        pending_version_ = pending_.version;
        pending_mark_ = pending_.mark;
        claim_data_ = pending_.data;
        if (kind == ak::none || kind == ak::done) return;
        if (kind == ak::wait_event) {  // nothing to reply: the look-ahead's node, or the watched node's owner, lets go
            if (session_dead_) return feed(fsm_.on_session_lost(errc::session_expired), true);
            if (ahead_armed_ && exists(ahead_) && variant != 2) {
                remove_node(ahead_, exclusive_head(ahead_.substr(dir_.size() + 1)) && variant == 0);
                return;
            }
            if (watch_armed_ && exists(watched_)) remove_node(watched_, exclusive_head(watched_.substr(dir_.size() + 1)));
            return;
        }
        pending_ = {};
        if (session_dead_) {
            switch (kind) {
            case ak::create: return feed(fsm_.on_create(zk_expired, "", 0, zk_expired, {}), true);
            case ak::create_parents: return feed(fsm_.on_parents_created(zk_expired), true);
            case ak::list: return feed(fsm_.on_children(zk_expired, {}), true);
            case ak::stat_node: return feed(fsm_.on_stat(zk_expired, 0, false), true);
            case ak::watch: return feed(fsm_.on_watch_set(zk_expired), true);
            case ak::wait_connected: return feed(fsm_.on_session_lost(errc::session_expired), true);
            case ak::remove: return feed(fsm_.on_removed(zk_expired), true);
            case ak::read_count: return feed(fsm_.on_count_read(zk_expired, "", 0), true);
            case ak::claim_count: return feed(fsm_.on_count_claimed(zk_expired), true);
            case ak::read_mark: return feed(fsm_.on_mark_read(zk_expired, "", 0, 0, false), true);
            case ak::arm:
                return feed(pending_mark_ ? fsm_.on_mark_read(zk_expired, "", 0, 0, true) : fsm_.on_children(zk_expired, {}), true);
            default: return;
            }
        }
        const bool lost = variant == 1 || variant == 2;
        const bool apply = variant != 2;
        if (lost && own_watch_ == own_watch::confirmed) own_stale_ = true;  // a reconnect follows
        switch (kind) {
        case ak::create: {
            if (!dir_exists_) return feed(fsm_.on_create(lost ? loss : error_code(zk_errc::no_node), "", 0,
                                                         lost ? loss : error_code(zk_errc::no_node), {}), true);
            std::string created;
            std::int64_t czxid = 0;
            if (apply) {
                const std::string name = prefix_ + seq10(next_seq_++);
                czxid = zxid_++;
                pzxid_ = czxid;
                kids_[name] = {true, czxid};
                created = path(name);
                ours_ever_.insert(created);
            }
            if (lost) return feed(fsm_.on_create(loss, "", 0, loss, {}), true);
            if (variant == 3) return feed(fsm_.on_create(ok, created, czxid, loss, {}), true);
            return feed(fsm_.on_create(ok, created, czxid, ok, names()), true);
        }
        case ak::create_parents:
            if (apply && !dir_exists_) {
                dir_exists_ = true;
                dir_data_.clear();
                dir_version_ = 0;
                mzxid_ = pzxid_ = zxid_++;
            }
            return feed(fsm_.on_parents_created(lost ? loss : ok), true);
        case ak::list:
            if (lost) return feed(fsm_.on_children(loss, {}), true);
            if (!dir_exists_) return feed(fsm_.on_children(zk_errc::no_node, {}), true);
            return feed(fsm_.on_children(ok, names()), true);
        case ak::stat_node:
            if (lost) return feed(fsm_.on_stat(loss, 0, false), true);
            if (znode* n = find(p)) return feed(fsm_.on_stat(ok, n->czxid, n->ours), true);
            return feed(fsm_.on_stat(zk_errc::no_node, 0, false), true);
        case ak::watch:
            FUZZ_CHECK(p != fsm_.own_node());  // it waits on others, never on itself
            if (lost) return feed(fsm_.on_watch_set(loss), true);
            if (watch_own) set_own_watch(in_.pick(8) == 0);  // the driver's read of our own node goes first, its reply first
            if (znode* n = find(p)) {
                watched_ = p;
                watch_armed_ = true;
                feed(fsm_.on_watch_set(ok, {}, n->version), true);
            } else {
                feed(fsm_.on_watch_set(zk_errc::no_node), true);
            }
            // The driver reads each of a semaphore's other holders with a watch, right behind; a
            // read that sets no watch (the node gone, the connection lost) drops them all.
            for (const auto& o : also) {
                FUZZ_CHECK(o != fsm_.own_node() && o != p);
                if (exists(o) && (in_.empty() || in_.pick(8) != 0)) {  // in the calm, every read succeeds
                    also_.insert(o);
                    continue;
                }
                also_.clear();
                feed(fsm_.on_also_fired());
                break;
            }
            return;
        case ak::wait_connected: return feed(fsm_.on_connected(), true);
        case ak::read_count:
            if (lost) return feed(fsm_.on_count_read(loss, "", 0), true);
            if (!dir_exists_) return feed(fsm_.on_count_read(zk_errc::no_node, "", 0), true);
            if (dir_data_ == permit_count_data(policy_.permits)) count_seen_ = true;
            return feed(fsm_.on_count_read(ok, dir_data_, dir_version_), true);
        case ak::claim_count: {
            error_code ec;
            if (!dir_exists_) ec = zk_errc::no_node;
            else if (pending_version_ != dir_version_) ec = zk_errc::bad_version;
            else if (apply) {
                dir_data_ = claim_data_;
                ++dir_version_;
                mzxid_ = zxid_++;
                count_seen_ = true;
            }
            return feed(fsm_.on_count_claimed(lost ? loss : ec), true);
        }
        case ak::read_mark:
            FUZZ_CHECK(p == dir_);
            // The driver sends exists(our node) right behind the read: both see the same state.
            if (lost) return feed(fsm_.on_mark_read(loss, "", 0, 0, false), true);
            if (!dir_exists_) return feed(fsm_.on_mark_read(zk_errc::no_node, "", 0, 0, false), true);
            return feed(fsm_.on_mark_read(ok, dir_data_, mzxid_, pzxid_, exists(fsm_.own_node())), true);
        case ak::arm:
            FUZZ_CHECK(p == dir_);
            FUZZ_CHECK(policy_.kind() == node_kind::exclusive);
            // The driver's watch on our own node goes first, and its reply comes first. A lost
            // connection loses both; and the watch alone may fail while the read behind it
            // succeeds (a listing the session deferred behind another one and sent after the
            // reconnect; a re-ACLed node: no_auth).
            if (lost) {
                if (own_watch_ == own_watch::none) feed(fsm_.on_own_watch(false));
            } else {
                set_own_watch(in_.pick(4) == 0);
            }
            if (pending_mark_) {
                if (lost) return feed(fsm_.on_mark_read(loss, "", 0, 0, true), true);
                check_own_watch_order();
                if (!dir_exists_) return feed(fsm_.on_mark_read(zk_errc::no_node, "", 0, 0, true), true);
                return feed(fsm_.on_mark_read(ok, dir_data_, mzxid_, pzxid_, true), true);
            }
            if (lost) return feed(fsm_.on_children(loss, {}), true);
            if (!dir_exists_) return feed(fsm_.on_children(zk_errc::no_node, {}), true);
            return feed(fsm_.on_children(ok, names()), true);
        case ak::remove: {
            FUZZ_CHECK(p.starts_with(path(prefix_)));
            const bool existed = exists(p);
            if (apply && existed) remove_node(p);
            if (lost) return feed(fsm_.on_removed(loss), true);
            return feed(fsm_.on_removed(existed ? ok : error_code(zk_errc::no_node)), true);
        }
        default: return;
        }
    }

    // The driver's watch_own(): a no-op while a watch is set (or being set again); otherwise a read
    // with a watch whose reply comes before anything sent after it. `fails`: the read fails with
    // an error other than no_node (no_auth on a re-ACLed node): no watch.
    void set_own_watch(bool fails)
    {
        if (own_watch_ != own_watch::none) return;
        if (fails) return (void)feed(fsm_.on_own_watch(false));
        if (exists(fsm_.own_node())) {
            own_watch_ = own_watch::confirmed;
            own_stale_ = false;  // confirmed on this connection
            feed(fsm_.on_own_watch(true));
        } else {
            feed(fsm_.on_own_deleted());
        }
    }

    // The driver's check before the watched node's event (and the look-ahead's mark read): after
    // a reconnect, the server replays missed watch events in its own order, so the own watch's
    // events no longer come first: it counts as unconfirmed.
    void check_own_watch_order()
    {
        if (own_watch_ != own_watch::none && own_stale_) feed(fsm_.on_own_watch(false));
    }

    void own_rewatched()
    {
        if (delayed_own_delete_ && done_ == 0) {  // replayed after the reconnect, in the server's order
            delayed_own_delete_ = false;
            own_watch_ = own_watch::none;
            feed(fsm_.on_own_deleted());
        }
        if (own_watch_ != own_watch::resetting) return;
        own_watch_ = own_watch::none;
        set_own_watch(false);
    }

    void event(unsigned e)
    {
        if (trace) std::fprintf(stderr, "event %u (pending %s)\n", e, kind_name(pending_.kind));
        switch (e) {
        case 8: add_other(); break;
        case 9: {  // another client releases (or loses) one of its nodes
            std::vector<std::string> others;
            for (const auto& [name, n] : kids_)
                if (!n.ours) others.push_back(name);
            if (others.empty()) break;
            const std::string victim = others[in_.pick(static_cast<unsigned>(others.size()))];
            // A holder at the head releases with its mark, or plainly; anyone else just goes.
            remove_node(path(victim), exclusive_head(victim) && in_.pick(2) == 0);
            break;
        }
        case 10: {  // anyone writes into any node (e.g. a forged holder mark), or a foreign node takes our id
            if (in_.pick(4) == 0) {
                add_impostor();
                break;
            }
            const auto all = names();
            if (all.empty()) break;
            const std::string written = path(all[in_.pick(static_cast<unsigned>(all.size()))]);
            ++find(written)->version;
            watched_changed(written, false);
            if (written == fsm_.own_node() && own_watch_ == own_watch::confirmed && done_ == 0) {
                // Our own node's data (a revocation request): its watch fires, and the driver
                // sets it again; until that reply, a deletion of our node goes unheard.
                own_watch_ = own_watch::resetting;
                feed(fsm_.on_own_watch(false));
            }
            break;
        }
        case 15:  // the reply to the own watch being set again, if it is; or a reconnect while nothing is in flight
            if (in_.pick(2)) {
                own_rewatched();
            } else if (own_watch_ == own_watch::confirmed) {
                own_stale_ = true;  // the watches survive (re-registered), their events' order does not
            }
            break;
        case 11: {  // someone deletes a node of ours; the driver's own-node watch reports it, if set
            std::vector<std::string> mine;
            for (const auto& [name, n] : kids_)
                if (n.ours) mine.push_back(path(name));
            if (mine.empty()) break;
            const std::string victim = mine[in_.pick(static_cast<unsigned>(mine.size()))];
            const bool own = victim == fsm_.own_node();
            remove_node(victim);
            // Without an own watch the machine must find out by listing, never grant meanwhile
            // (the grant check in feed() catches a grant on a node that is gone).
            if (own && own_watch_ == own_watch::confirmed && done_ == 0) {
                // Since a reconnect, its event may be replayed after others (event 15 delivers it).
                if (own_stale_) delayed_own_delete_ = true;
                else feed(fsm_.on_own_deleted());
            }
            break;
        }
        case 12:  // the session expires (rarely): our ephemeral nodes go with it
            if (in_.pick(4) != 0 || session_dead_) break;
            session_dead_ = true;
            for (auto it = kids_.begin(); it != kids_.end();) it = it->second.ours ? kids_.erase(it) : std::next(it);
            pzxid_ = zxid_++;
            watch_armed_ = ahead_armed_ = false;
            also_.clear();
            if (pending_.kind == ak::wait_event) feed(fsm_.on_session_lost(errc::session_expired));
            break;
        case 13:  // cancellation or the deadline
            cancelled_ = true;
            feed(fsm_.on_cancel(in_.pick(2) ? error_code(boost::asio::error::operation_aborted) : error_code(errc::timeout)));
            break;
        case 14:  // the container is reclaimed once empty (its data with it); or someone writes its data
            if (dir_exists_ && kids_.empty() && in_.pick(2)) {
                dir_exists_ = false;
                dir_data_.clear();
                dir_version_ = 0;
            } else if (dir_exists_ && in_.pick(2)) {
                // A count, or a forged handoff mark naming any node (the watched one, often), with
                // a set_data alone: it must grant nothing.
                switch (in_.pick(4)) {
                case 0: dir_data_ = permit_count_data(policy_.permits); break;
                case 1: dir_data_ = permit_count_data(policy_.permits + 1); break;
                case 2:
                    if (!ahead_.empty() && in_.pick(2)) {  // naming the look-ahead's node
                        dir_data_ = handoff_mark(ahead_.substr(dir_.size() + 1));
                        break;
                    }
                    if (!watched_.empty()) {
                        dir_data_ = handoff_mark(watched_.substr(dir_.size() + 1));
                        break;
                    }
                    [[fallthrough]];
                default: {
                    const auto all = names();
                    dir_data_ = handoff_mark(all.empty() ? "x" : all[in_.pick(static_cast<unsigned>(all.size()))]);
                }
                }
                ++dir_version_;
                mzxid_ = zxid_++;
            }
            break;
        default: reply(e < 4 ? in_.pick(pending_.kind == ak::create ? 4 : 3) : 0); break;
        }
    }

    void calm()
    {
        if (done_ == 0 && cancel_in_calm_) {
            cancelled_ = true;
            feed(fsm_.on_cancel(boost::asio::error::operation_aborted));
        }
        own_rewatched();
        for (int step = 0; step < 1000 && done_ == 0; ++step) {
            if (trace) std::fprintf(stderr, "calm (pending %s)\n", kind_name(pending_.kind));
            FUZZ_CHECK(pending_.kind != ak::none);  // something must be in flight, or it stalled
            if (pending_.kind == ak::wait_event) FUZZ_CHECK(watch_armed_ || session_dead_);  // waits on something real
            reply(0);
        }
        FUZZ_CHECK(done_ == 1);  // reaches done (after a cancel too)
        if (cancelled_ && result_ && !session_dead_) FUZZ_CHECK(ours_count() == 0);
    }

    void after_done()
    {
        feed(fsm_.on_cancel(boost::asio::error::operation_aborted));
        feed(fsm_.on_watch_fired(true));
        feed(fsm_.on_ahead_fired(acquire_fsm::min_queue_for_mark));
        feed(fsm_.on_also_fired());
        feed(fsm_.on_own_watch(true));
        feed(fsm_.on_children(ok, names()));
        feed(fsm_.on_connected());
        feed(fsm_.on_own_deleted());
        feed(fsm_.on_removed(ok));
        feed(fsm_.on_count_read(ok, "", 0));
        feed(fsm_.on_count_claimed(ok));
        feed(fsm_.on_mark_read(ok, dir_data_, mzxid_, pzxid_, true));
        feed(fsm_.on_session_lost(errc::session_expired));
        FUZZ_CHECK(fsm_.finished());
        FUZZ_CHECK(done_ == 1);
    }

    bytes& in_;
    const std::string dir_ = "/l";
    const std::uint64_t me_ = 0x1234;
    queue_policy policy_;
    bool try_only_;
    std::string dir_data_;          // the lock path's data (a semaphore's count)
    std::int32_t dir_version_ = 0;
    std::int64_t mzxid_ = 1, pzxid_ = 1;  // the lock path's Stat
    std::int32_t pending_version_ = -1;
    std::string claim_data_;
    bool count_seen_ = false;       // the machine read or wrote our count
    bool dir_exists_;
    bool cancel_in_calm_;
    std::size_t queue_hint_;  // what the driver's session says of the queue's length (long: marks are read)
    acquire_fsm fsm_;
    std::string prefix_;

    std::map<std::string, znode> kids_;
    std::int64_t next_seq_ = 0;
    std::int64_t zxid_ = 100;
    bool session_dead_ = false;
    std::set<std::string> ours_ever_;

    acquire_fsm::action pending_;
    std::string watched_;
    bool watch_armed_ = false;
    std::string ahead_;        // the look-ahead's node (wait_event's ahead)
    bool ahead_armed_ = false;
    std::set<std::string> also_;  // a semaphore's other holders, watched (action::also)
    bool pending_mark_ = false;  // the arm in flight reads the mark
    // The driver's data watch on our own node: none, set and confirmed by the server, or being set
    // again after it fired for a data change (its reply not in yet).
    enum class own_watch { none, confirmed, resetting };
    own_watch own_watch_ = own_watch::none;
    bool own_stale_ = false;          // a reconnect came since the own watch was confirmed
    bool delayed_own_delete_ = false;  // our node's deletion event, replayed late
    int done_ = 0;
    error_code result_;
    bool cancelled_ = false;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    bytes in{data, size};
    world w(in);
    w.run();
    return 0;
}
