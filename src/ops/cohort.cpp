// Cohort mode's driver, and nothing more: it performs cohort_fsm's actions with the session, the
// acquire operation and local leases, and feeds the outcomes back; who is granted, when a turn
// starts or ends and what a loss does are cohort_fsm's (src/queue/cohort_fsm.hpp).
//
// Fencing: every local holder's lease carries the node's czxid and its grant's number in the turn
// (1, 2, ...): lease::fence() orders (czxid, n) lexicographically, and the next turn's node has a
// larger czxid than any before it (sequence order is creation order).
//
// Everything runs on the session's executor; completions of local waiters are always posted.
#include "ops/cohort.hpp"

#include "port/zk_port.hpp"
#include "ops/lease_state.hpp"
#include "queue/cohort_fsm.hpp"

#include <zklock/detail/path.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/post.hpp>

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

cohort_fsm::node_status node_status_of(lease_status st) noexcept
{
    switch (st) {
    case lease_status::suspended: return cohort_fsm::node_status::suspended;
    case lease_status::lost: return cohort_fsm::node_status::lost;
    default: return cohort_fsm::node_status::held;
    }
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
    using id_type = cohort_fsm::id_type;

    cohort(session_ptr s, std::string key, const acquire_request& first)
        : s_(std::move(s)), key_(std::move(key)), dir_(first.dir), policy_(first.policy), options_(first.options),
          fsm_(first.policy.kind(), first.options ? first.options->max_local_handoffs : lock_options{}.max_local_handoffs)
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
        const auto id = ++next_id_;
        if (req.try_only) return try_acquire(id, std::move(req), std::move(h));
        auto& w = waiters_.try_emplace(id, std::move(h), s_->executor()).first->second;
        s_->metrics().acquire_started(policy_.kind(), *dir_);
        on_cancellation(w.h, s_->executor(), [weak = weak_from_this(), id] {
            if (auto c = weak.lock()) c->perform(c->fsm_.leave(id, asio::error::operation_aborted));
        });
        if (req.timeout) {
            w.timer = s_->make_timer();
            w.timer->start(*req.timeout, [weak = weak_from_this(), id] {
                if (auto c = weak.lock()) c->perform(c->fsm_.leave(id, errc::timeout));
            });
        }
        perform(fsm_.arrive(id));
    }

    void on_session_state(session_state, std::uint64_t) override {}

    void on_presumed_expired() override
    {
        auto self = shared_from_this();
        perform(fsm_.on_presumed_expired());
    }

    void on_shutdown(graveyard& g) override
    {
        for (auto& [id, w] : waiters_) g.bury(std::make_unique<waiter>(std::move(w)));
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
    struct waiter {
        waiter(handler<error_code, lease> h0, const asio::any_io_executor& ex) : h(std::move(h0), ex) {}
        stored_handler<error_code, lease> h;
        std::unique_ptr<port_timer> timer;  // only with a timeout
        clock::time_point started = clock::now();
    };

    // A try-acquire is granted locally only if it can be at once (a reader joining a held shared
    // turn); with no turn running it is an ordinary try-acquire of its own node (not a turn: a try
    // holds no local queue); else the lock is busy.
    void try_acquire(id_type id, acquire_request req, handler<error_code, lease> h)
    {
        cohort_fsm::actions out;
        switch (fsm_.try_arrive(id, out)) {
        case cohort_fsm::try_verdict::plain:
            req.cohort = false;
            return initiate_acquire(s_, std::move(req), std::move(h));
        case cohort_fsm::try_verdict::granted:
            waiters_.try_emplace(id, std::move(h), s_->executor());
            s_->metrics().acquire_started(policy_.kind(), *dir_);
            return perform(out);
        case cohort_fsm::try_verdict::busy: {
            s_->metrics().acquire_started(policy_.kind(), *dir_);
            waiter w(std::move(h), s_->executor());
            s_->metrics().acquire_finished(policy_.kind(), *dir_, errc::would_block, {}, false, false);
            w.h.post(s_->executor(), errc::would_block, lease{});
            return;
        }
        }
    }

    // Performs the machine's actions in order, then lets the cohort go if nothing runs. An action
    // that runs user code inline (lose) may feed a new event in first; its actions are performed
    // then and there.
    void perform(const cohort_fsm::actions& out)
    {
        using ak = cohort_fsm::action::kind_t;
        for (const auto& a : out) {
            switch (a.kind) {
            case ak::start_turn: start_turn(a.turn); break;
            case ak::cancel_turn: cancel_.emit(asio::cancellation_type::terminal); break;
            case ak::follow_node: follow_node(a.turn); break;
            case ak::grant: grant(a.id, a.turn, a.n); break;
            case ak::fail: fail(a.id, a.ec); break;
            case ak::lose:
                if (auto it = holders_.find(a.id); it != holders_.end()) {
                    auto h = it->second.lock();
                    holders_.erase(it);
                    if (h) h->lose(a.ec);
                }
                break;
            case ak::list_others: list_others(a.turn); break;
            case ak::wait_others: wait_others(a.turn); break;
            case ak::drop_others:
                if (child_watch_) child_watch_->cancel_wait();
                child_watch_.reset();
                break;
            case ak::release_node:
                if (inner_ && inner_turn_ == a.turn) {
                    auto in = std::move(inner_);
                    in->release(std::move(release_cb_));  // the local release that ended the turn, if any
                }
                break;
            }
        }
        if (fsm_.idle()) {
            holders_.clear();
            auto last = std::move(keepalive_);  // may destroy us as this function returns
        } else {
            keepalive_ = shared_from_this();
        }
    }

    void start_turn(std::uint64_t turn)
    {
        acquire_request r{dir_, policy_, false, false, false, std::nullopt, options_, nullptr};
        r.internal = true;
        initiate_acquire(s_, std::move(r),
                         asio::bind_cancellation_slot(cancel_.slot(), [self = shared_from_this(), turn](error_code ec, lease l) {
                             self->on_turn_acquired(turn, ec, std::move(l));
                         }));
    }

    void on_turn_acquired(std::uint64_t turn, error_code ec, lease l)
    {
        if (ec) return perform(fsm_.on_turn_acquired(turn, ec));
        if (turn != fsm_.turn()) return;  // (cannot happen: one turn at a time) the lease goes with l
        inner_ = lease_access::take(l);
        inner_turn_ = turn;
        perform(fsm_.on_turn_acquired(turn, {}, base_name(inner_->node()), node_status_of(inner_->status()),
                                      inner_->lost_reason(), inner_->revocation_requested()));
    }

    // The node's status and revocation requests, for as long as the turn holds.
    void follow_node(std::uint64_t turn)
    {
        follow_status(turn);
        inner_->wait_revocation([weak = weak_from_this(), turn](error_code ec) {
            if (auto self = weak.lock(); self && !ec) self->perform(self->fsm_.on_revocation(turn));
        });
    }

    void follow_status(std::uint64_t turn)
    {
        inner_->wait_status([weak = weak_from_this(), turn](error_code ec, lease_status st) {
            auto self = weak.lock();
            if (!self || ec || st == lease_status::released || turn != self->fsm_.turn()) return;
            if (st != lease_status::lost) self->follow_status(turn);
            self->perform(self->fsm_.on_node_status(turn, node_status_of(st), self->inner_->lost_reason()));
        });
    }

    void grant(id_type id, std::uint64_t turn, std::uint64_t n)
    {
        auto it = waiters_.find(id);
        auto w = std::move(it->second);
        waiters_.erase(it);
        if (w.timer) w.timer->cancel();
        const auto now = clock::now();
        auto ls = std::make_shared<lease_state>(s_, inner_->node(), inner_->token(), inner_->generation(), std::string(), now);
        ls->make_local(n, [self = shared_from_this(), turn, id](unique_function<void(error_code)> cb) {
            auto ex = self->s_->executor();
            asio::post(ex, [self = std::move(self), turn, id, cb = std::move(cb)]() mutable {
                self->on_local_release(turn, id, std::move(cb));
            });
        }, inner_);  // a request already seen on our node, or one to come, reaches it through inner_
        s_->subscribe(ls);
        ls->on_granted(s_->read_now());
        holders_.emplace(id, ls);
        s_->metrics().acquire_finished(policy_.kind(), *dir_, {}, now - w.started, false, false);
        s_->metrics().cohort_grant(n == 1);
        s_->log().event(log_level::info, n == 1 ? "lock granted" : "lock granted by a local handoff", *dir_, inner_->node());
        w.h.post(s_->executor(), {}, lease(std::move(ls)));
    }

    void fail(id_type id, error_code ec)
    {
        auto it = waiters_.find(id);
        if (it == waiters_.end()) return;
        auto w = std::move(it->second);
        waiters_.erase(it);
        if (w.timer) w.timer->cancel();
        s_->metrics().acquire_finished(policy_.kind(), *dir_, ec, clock::now() - w.started, false, false);
        w.h.post(s_->executor(), ec, lease{});
    }

    // A local holder released. If that ends the turn, its release completes when our node is gone
    // (as a plain release does: the lock is free in ZooKeeper then); else at once (posted).
    void on_local_release(std::uint64_t turn, id_type id, unique_function<void(error_code)> cb)
    {
        holders_.erase(id);
        release_cb_ = std::move(cb);
        perform(fsm_.on_local_release(turn, id));
        if (auto rest = std::move(release_cb_)) rest({});
    }

    void list_others(std::uint64_t turn)
    {
        auto w = child_watch_ = s_->make_watch();
        s_->get_children(*dir_, w, [weak = weak_from_this(), turn, w](error_code ec, std::vector<std::string> children) {
            auto self = weak.lock();
            // The listing of a turn that ended (its watch was dropped) is stale.
            if (!self || self->child_watch_ != w) return;
            self->perform(self->fsm_.on_others_listed(turn, ec, children));
        });
    }

    void wait_others(std::uint64_t turn)
    {
        if (!child_watch_) return;
        child_watch_->wait([weak = weak_from_this(), turn](error_code ec, watch_event) {
            if (auto self = weak.lock()) self->perform(self->fsm_.on_others_changed(turn, ec));
        });
    }

    session_ptr s_;
    std::string key_;
    std::shared_ptr<const std::string> dir_;
    queue_policy policy_;
    std::shared_ptr<const lock_options> options_;  // the first acquire's lock object's
    cohort_fsm fsm_;

    id_type next_id_ = 0;
    std::unordered_map<id_type, waiter> waiters_;                         // waiting (and a try being granted)
    std::unordered_map<id_type, std::weak_ptr<lease_state>> holders_;     // the turn's local holders
    asio::cancellation_signal cancel_;                                    // the turn's acquire
    std::shared_ptr<lease_state> inner_;                                  // our node's lease while the turn holds
    std::uint64_t inner_turn_ = 0;
    std::shared_ptr<watch_state> child_watch_;                            // list_others'
    std::shared_ptr<cohort> keepalive_;                                   // while not idle
    unique_function<void(error_code)> release_cb_;                        // on_local_release's, while it runs
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
