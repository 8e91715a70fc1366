// Cohort mode: a local queue in front of the ZooKeeper lock.
//
// One cohort per (session, role, lock path). It runs *turns*: a turn is one ordinary acquire
// (acquire_op, with all its guarantees: a lost create reply, cancellation at any phase, handoff)
// of one ZooKeeper node on behalf of every local waiter, then, once granted, local grants in FIFO
// order with no ZooKeeper request, then the release of that node (acquire_op's lease, with its
// handoff to the next node in the queue).
//
//   idle --first waiter--> acquiring --granted--> held --last holder left, and no waiter
//    ^                        |                    |     or the budget is spent--> release --> idle
//    |                        | the last waiter    |                                  (or acquiring
//    +-------- aborted -------+ left: cancelled    +-- lost: every holder and waiter   again if
//                               (the node deleted)     is told --> idle                 waiters remain)
//
// Bounded unfairness: while a turn is held, one get_children with a child watch (sent only once a
// local handoff is in sight) tells whether any contender is queued behind our node; a child
// change sends it again. At most `budget` local grants happen in a turn unless that listing said
// nobody waits behind us (and no child change came since); once someone waits and the budget is
// spent, no new local grant is made: the node is released when its holders have left, and queued
// again at the back if local waiters remain.
//
// Fencing: every local holder's lease carries the node's czxid and its grant's number in the turn
// (1, 2, ...): lease::fence() orders (czxid, n) lexicographically, and the next turn's node has a
// larger czxid than any before it (sequence order is creation order).
//
// Everything runs on the session's executor; completions of local waiters are always posted.
#include "ops/cohort.hpp"

#include "ops/lease_state.hpp"
#include "bridge/session_impl.hpp"

#include <zklock/detail/acquire_fsm.hpp>
#include <zklock/detail/path.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <deque>
#include <unordered_map>

namespace zklock::detail {

namespace {

std::string cohort_key(const acquire_request& req)
{
    std::string key;
    key.reserve(req.dir->size() + 3);
    key += kind_letter(req.policy.kind());
    key.append(req.policy.what->name);
    key += static_cast<char>('0' + req.policy.marker);
    key += ':';
    key += *req.dir;
    return key;
}

}  // namespace

class cohort;

// A session's cohorts, by role and lock path (a session extension). Held weakly: a cohort lives
// while it has waiters, holders or a ZooKeeper node, and removes its entry as it goes.
struct cohort_table {
    std::unordered_map<std::string, std::weak_ptr<cohort>> map;
};

class cohort final : public session_observer, public std::enable_shared_from_this<cohort> {
public:
    using clock = std::chrono::steady_clock;

    cohort(session_ptr s, std::string key, const acquire_request& first)
        : s_(std::move(s)), key_(std::move(key)), dir_(first.dir), policy_(first.policy),
          options_(first.options),
          budget_(std::max<std::uint32_t>(first.options ? first.options->max_local_handoffs : lock_options{}.max_local_handoffs, 1)), shared_(first.policy.kind() == node_kind::shared)
    {
    }

    ~cohort()
    {
        auto& table = s_->extension<cohort_table>().map;
        if (auto it = table.find(key_); it != table.end() && it->second.expired()) table.erase(it);
    }

    void acquire(acquire_request req, handler<error_code, lease> h)
    {
        auto self = shared_from_this();
        if (req.try_only) return try_acquire(std::move(req), std::move(h));
        auto w = std::make_shared<waiter>(std::move(h), s_->executor());
        w->started = clock::now();
        s_->metrics().acquire_started(policy_.kind(), *dir_);
        on_cancellation(w->h, s_->executor(), [weak = weak_from_this(), ww = std::weak_ptr(w)] {
            auto c = weak.lock();
            auto w2 = ww.lock();
            if (c && w2) c->leave(w2, asio::error::operation_aborted);
        });
        if (req.timeout) {
            w->timer = std::make_unique<asio::steady_timer>(s_->executor());
            w->timer->expires_after(*req.timeout);
            w->timer->async_wait([weak = weak_from_this(), ww = std::weak_ptr(w)](error_code ec) {
                auto c = weak.lock();
                auto w2 = ww.lock();
                if (!ec && c && w2) c->leave(w2, errc::timeout);
            });
        }
        waiters_.push_back(std::move(w));
        keepalive_ = self;
        if (turn_ == turn_state::idle) return start_turn();
        if (turn_ == turn_state::held) pump();
    }

    void on_session_state(session_state, std::uint64_t) override {}

    // A presumed expiry reaches every local waiter at once. Those of a held turn hear of it
    // through our node's lease (on_inner_lost); those of a turn still waiting in ZooKeeper here:
    // the turn's acquire is cancelled (its node goes once the session is back, or with it).
    void on_presumed_expired() override
    {
        if (turn_ != turn_state::acquiring || waiters_.empty()) return;
        auto self = shared_from_this();
        fail_waiters(errc::session_expired);
        if (!cancel_sent_) {
            cancel_sent_ = true;
            cancel_.emit(asio::cancellation_type::terminal);
        }
        maybe_idle();
    }

    void on_shutdown(graveyard& g) override
    {
        for (auto& w : waiters_) g.bury(std::move(w));
        waiters_.clear();
        if (inner_) g.bury(std::move(inner_));
        inner_.reset();
        if (release_cb_) g.bury(std::move(release_cb_));
        release_cb_ = {};
        if (child_watch_) child_watch_->abandon(g);
        if (keepalive_) g.bury(std::move(keepalive_));
        keepalive_.reset();
    }

private:
    enum class turn_state { idle, acquiring, held };
    enum class others_state { unknown, none, waiting };

    struct waiter {
        waiter(handler<error_code, lease> h0, const asio::any_io_executor& ex) : h(std::move(h0), ex) {}
        stored_handler<error_code, lease> h;
        std::unique_ptr<asio::steady_timer> timer;  // only with a timeout
        clock::time_point started;
    };
    using waiter_ptr = std::shared_ptr<waiter>;

    // A try-acquire is granted locally only if it can be at once (a reader joining a held shared
    // turn); with no turn running it is an ordinary try-acquire of its own node (not a turn: a try
    // holds no local queue); else the lock is busy.
    void try_acquire(acquire_request req, handler<error_code, lease> h)
    {
        if (turn_ == turn_state::held && shared_ && waiters_.empty() && may_grant()) {
            auto w = std::make_shared<waiter>(std::move(h), s_->executor());
            w->started = clock::now();
            s_->metrics().acquire_started(policy_.kind(), *dir_);
            return grant(w);
        }
        if (turn_ == turn_state::idle && holders_ == 0) {
            req.cohort = false;
            return initiate_acquire(s_, std::move(req), std::move(h));
        }
        s_->metrics().acquire_started(policy_.kind(), *dir_);
        waiter w(std::move(h), s_->executor());
        s_->metrics().acquire_finished(policy_.kind(), *dir_, errc::would_block, {}, false, false);
        w.h.post(s_->executor(), errc::would_block, lease{});
    }

    void start_turn()
    {
        turn_ = turn_state::acquiring;
        cancel_sent_ = false;
        const auto id = ++turn_id_;
        grants_ = 0;
        others_ = others_state::unknown;
        draining_ = false;
        drop_child_watch();
        acquire_request r{dir_, policy_, false, false, false, std::nullopt, options_, nullptr};
        r.internal = true;
        initiate_acquire(s_, std::move(r),
                         asio::bind_cancellation_slot(cancel_.slot(), [self = shared_from_this(), id](error_code ec, lease l) {
                             self->on_turn_acquired(id, ec, std::move(l));
                         }));
    }

    void on_turn_acquired(std::uint64_t id, error_code ec, lease l)
    {
        if (id != turn_id_ || turn_ != turn_state::acquiring) return;  // cannot happen: one turn at a time
        if (ec) {
            turn_ = turn_state::idle;
            if (cancel_sent_ && ec == asio::error::operation_aborted) {
                // Our last waiter left and the node is gone; someone may have come since.
                if (!waiters_.empty()) return start_turn();
                return maybe_idle();
            }
            fail_waiters(ec);
            return maybe_idle();
        }
        inner_ = lease_access::take(l);
        turn_ = turn_state::held;
        if (inner_->status() == lease_status::lost) return on_inner_lost(inner_->lost_reason());  // (defensive)
        if (waiters_.empty()) {  // granted as the last waiter left
            end_turn();
            return maybe_idle();
        }
        // A revocation request the acquire's watch on our node already read: no local handoffs.
        if (inner_->revocation_requested()) draining_ = true;
        watch_inner_status(id);
        inner_->wait_revocation([weak = weak_from_this(), id](error_code ec2) {
            auto self = weak.lock();
            if (!self || ec2 || id != self->turn_id_ || self->turn_ != turn_state::held) return;
            self->draining_ = true;  // a revocation request: no more local grants on this node
            self->pump();
        });
        pump();
    }

    void watch_inner_status(std::uint64_t id)
    {
        inner_->wait_status([weak = weak_from_this(), id](error_code ec, lease_status st) {
            auto self = weak.lock();
            if (!self || ec || id != self->turn_id_ || self->turn_ != turn_state::held) return;
            if (st == lease_status::lost) return self->on_inner_lost(self->inner_->lost_reason());
            if (st == lease_status::released) return;
            self->watch_inner_status(id);
            self->pump();  // back to held: local grants may go on
        });
    }

    // Our node is lost (session expired, closed, presumed expired, or deleted by someone else):
    // every local holder and waiter is told.
    void on_inner_lost(error_code reason)
    {
        auto self = shared_from_this();
        ++turn_id_;  // local releases of this turn are stale from now on
        turn_ = turn_state::idle;
        drop_child_watch();
        // The waiters of this turn, taken first: telling a holder runs its handlers inline, and a
        // coroutine resumed there may acquire again (a new waiter, a new turn: not failed here).
        auto waiting = std::move(waiters_);
        waiters_.clear();
        auto holders = std::move(holders_list_);
        holders_list_.clear();
        holders_ = 0;
        auto in = std::move(inner_);
        for (auto& wh : holders)
            if (auto h = wh.lock()) h->lose(reason);
        in->release({});  // a lost lease: removes the node if it still exists
        for (auto& w : waiting) finish(*w, reason);
        maybe_idle();
    }

    bool may_grant() const noexcept
    {
        // (A node revoked before its first grant still serves one holder, who sees the request,
        // as a plain acquire's would.)
        return turn_ == turn_state::held && (!draining_ || grants_ == 0) && inner_->status() == lease_status::held &&
               (grants_ < budget_ || others_ == others_state::none);
    }

    // Grants what can be granted, and ends the turn when it is over.
    void pump()
    {
        if (turn_ != turn_state::held) return;
        if (!waiters_.empty()) check_others();
        while (!waiters_.empty() && (shared_ || holders_ == 0) && may_grant()) {
            auto w = std::move(waiters_.front());
            waiters_.pop_front();
            grant(w);
        }
        if (others_ == others_state::waiting && grants_ >= budget_) draining_ = true;
        if (holders_ != 0) return;
        if (inner_->status() == lease_status::suspended && !waiters_.empty() && !draining_) return;  // wait
        if (waiters_.empty() || draining_) {
            end_turn();
            if (!waiters_.empty()) start_turn();
        }
        // else: the budget is spent and the listing that says whether anyone waits is in flight.
        maybe_idle();  // every caller holds a reference to us
    }

    void grant(const waiter_ptr& w)
    {
        ++grants_;
        ++holders_;
        if (w->timer) w->timer->cancel();
        const auto now = clock::now();
        auto ls = std::make_shared<lease_state>(s_, inner_->node(), inner_->token(), inner_->generation(), std::string(), now);
        ls->make_local(grants_, [self = shared_from_this(), id = turn_id_](unique_function<void(error_code)> cb) {
            auto ex = self->s_->executor();
            asio::post(ex, [self = std::move(self), id, cb = std::move(cb)]() mutable {
                self->on_local_release(id, std::move(cb));
            });
        }, inner_);  // a request already seen on our node, or one to come, reaches it through inner_
        s_->subscribe(ls);
        if (s_->state() != session_state::connected) ls->on_session_state(s_->state(), s_->generation());
        holders_list_.push_back(ls);
        s_->metrics().acquire_finished(policy_.kind(), *dir_, {}, now - w->started, false, false);
        s_->metrics().cohort_grant(grants_ == 1);
        w->h.post(s_->executor(), {}, lease(std::move(ls)));
    }

    // A local holder released. If that ends the turn, its release completes when our node is gone
    // (as a plain release does: the lock is free in ZooKeeper then); else at once (posted).
    void on_local_release(std::uint64_t id, unique_function<void(error_code)> cb)
    {
        if (id != turn_id_) {  // a holder of a turn that was lost
            if (cb) cb({});
            return;
        }
        --holders_;
        std::erase_if(holders_list_, [](const std::weak_ptr<lease_state>& h) {
            auto p = h.lock();
            return !p || p->status() == lease_status::released;
        });
        release_cb_ = std::move(cb);
        pump();
        if (auto rest = std::move(release_cb_)) rest({});
        maybe_idle();
    }

    // A local waiter leaves (cancelled, timed out). The last one to leave while our node waits in
    // ZooKeeper cancels the turn's acquire, which deletes the node.
    void leave(const waiter_ptr& w, error_code reason)
    {
        auto self = shared_from_this();
        auto it = std::find(waiters_.begin(), waiters_.end(), w);
        if (it == waiters_.end()) return;  // granted or failed already
        waiters_.erase(it);
        finish(*w, reason);
        if (waiters_.empty() && turn_ == turn_state::acquiring && !cancel_sent_) {
            cancel_sent_ = true;
            cancel_.emit(asio::cancellation_type::terminal);
        }
        pump();
        maybe_idle();
    }

    void finish(waiter& w, error_code ec)
    {
        if (w.timer) w.timer->cancel();
        s_->metrics().acquire_finished(policy_.kind(), *dir_, ec, clock::now() - w.started, false, false);
        w.h.post(s_->executor(), ec, lease{});
    }

    void fail_waiters(error_code ec)
    {
        auto ws = std::move(waiters_);
        waiters_.clear();
        for (auto& w : ws) finish(*w, ec);
    }

    // The turn is over: our node goes (acquire_op's release, with its handoff to the next node).
    void end_turn()
    {
        ++turn_id_;
        turn_ = turn_state::idle;
        drop_child_watch();
        holders_list_.clear();
        auto in = std::move(inner_);
        in->release(std::move(release_cb_));  // the release that ended the turn, if any, completes with it
    }

    // Whether a contender waits behind our node: one get_children with a child watch per turn,
    // again after each change of children, only while local waiters want a handoff.
    void check_others()
    {
        if (others_ != others_state::unknown || listing_) return;
        listing_ = true;
        auto w = child_watch_ = s_->make_watch();
        const auto id = turn_id_;
        s_->get_children(*dir_, w, [weak = weak_from_this(), id, w](error_code ec, std::vector<std::string> children) {
            auto self = weak.lock();
            // A listing of an earlier turn (ended or lost meanwhile: its watch was dropped) is stale.
            if (!self || self->child_watch_ != w || id != self->turn_id_ || self->turn_ != turn_state::held) return;
            self->listing_ = false;
            self->on_children(ec, children, w);
        });
    }

    void on_children(error_code ec, const std::vector<std::string>& children, const std::shared_ptr<watch_state>& w)
    {
        if (ec) {
            others_ = others_state::waiting;  // not known: assume someone waits (the budget applies)
            return pump();
        }
        const auto own = parse_queue_view(base_name(inner_->node()));
        bool behind = false;
        for (const auto& c : children) {
            const auto v = parse_queue_view(c);
            // Behind us: a later node that our node blocks, one whose grant rule counts our kind
            // (behind a shared turn a writer, or a reader behind a writer: then the writer is
            // there too).
            if (v && own && v->seq > own->seq && (rule_of(v->kind).counts & kind_bit(own->kind))) {
                behind = true;
                break;
            }
        }
        others_ = behind ? others_state::waiting : others_state::none;
        if (!behind) {
            const auto id = turn_id_;
            w->wait([weak = weak_from_this(), id](error_code ec2, watch_event) {
                auto self = weak.lock();
                if (!self || id != self->turn_id_ || self->turn_ != turn_state::held) return;
                if (self->others_ != others_state::none) return;
                // A child came or went: look again before the budget is exceeded.
                self->others_ = ec2 ? others_state::waiting : others_state::unknown;
                self->pump();
            });
        }
        pump();
    }

    // The others-listing of a turn that ends: its reply and its watch are stale from now on.
    void drop_child_watch()
    {
        if (child_watch_) child_watch_->cancel_wait();
        child_watch_.reset();
        listing_ = false;
    }

    void maybe_idle()
    {
        if (turn_ == turn_state::idle && waiters_.empty() && holders_ == 0) {
            auto last = std::move(keepalive_);  // may destroy us as this function returns
        }
    }

    session_ptr s_;
    std::string key_;
    std::shared_ptr<const std::string> dir_;
    queue_policy policy_;
    std::shared_ptr<const lock_options> options_;  // the first acquire's lock object's
    std::uint32_t budget_;
    bool shared_;

    std::deque<waiter_ptr> waiters_;
    turn_state turn_ = turn_state::idle;
    std::uint64_t turn_id_ = 0;
    bool cancel_sent_ = false;
    asio::cancellation_signal cancel_;
    std::shared_ptr<lease_state> inner_;  // our node's lease while the turn is held
    std::size_t holders_ = 0;
    std::vector<std::weak_ptr<lease_state>> holders_list_;
    std::uint64_t grants_ = 0;  // local grants in this turn
    others_state others_ = others_state::unknown;
    bool listing_ = false;
    std::shared_ptr<watch_state> child_watch_;
    bool draining_ = false;
    std::shared_ptr<cohort> keepalive_;  // while not idle
    unique_function<void(error_code)> release_cb_;  // on_local_release's, while it runs pump()
};

void initiate_cohort_acquire(session_ptr s, acquire_request req, handler<error_code, lease> h)
{
    auto key = cohort_key(req);
    auto& slot = s->extension<cohort_table>().map[key];
    auto c = slot.lock();
    if (!c) {
        c = std::make_shared<cohort>(s, std::move(key), req);
        slot = c;
        s->subscribe(c);
    }
    c->acquire(std::move(req), std::move(h));
}

}  // namespace zklock::detail
