#include "queue/cohort_fsm.hpp"

#include <zklock/detail/path.hpp>

#include <boost/asio/error.hpp>

#include <algorithm>

namespace zklock::detail {

using ak = cohort_fsm::action::kind_t;

cohort_fsm::cohort_fsm(node_kind kind, std::uint32_t budget) noexcept
    : shared_(kind == node_kind::shared), budget_(std::max<std::uint32_t>(budget, 1))
{
}

bool cohort_fsm::anyone_behind(const std::vector<std::string>& children, std::string_view own)
{
    const auto me = parse_queue_view(own);
    if (!me) return false;
    for (const auto& c : children) {
        const auto v = parse_queue_view(c);
        // Behind us: a later node whose grant rule counts our kind (behind a shared turn a writer,
        // or a reader behind a writer: then that writer is there too).
        if (v && v->seq > me->seq && (rule_of(v->kind).counts & kind_bit(me->kind))) return true;
    }
    return false;
}

cohort_fsm::actions cohort_fsm::arrive(id_type id)
{
    actions out;
    waiters_.push_back(id);
    if (turn_ == turn_state::idle) start_turn(out);
    else pump(out);
    return out;
}

cohort_fsm::try_verdict cohort_fsm::try_arrive(id_type id, actions& out)
{
    if (turn_ == turn_state::held && shared_ && waiters_.empty() && may_grant()) {
        grant(id, out);
        return try_verdict::granted;
    }
    if (turn_ == turn_state::idle && holders_.empty()) return try_verdict::plain;
    return try_verdict::busy;
}

cohort_fsm::actions cohort_fsm::leave(id_type id, error_code reason)
{
    actions out;
    const auto it = std::find(waiters_.begin(), waiters_.end(), id);
    if (it == waiters_.end()) return out;  // granted or failed already
    waiters_.erase(it);
    out.push_back({ak::fail, id, 0, 0, reason});
    // The last waiter gone while our node waits in ZooKeeper: the turn's acquire is cancelled,
    // which deletes the node.
    if (waiters_.empty() && turn_ == turn_state::acquiring && !cancel_sent_) {
        cancel_sent_ = true;
        out.push_back({ak::cancel_turn, 0, turn_id_});
    }
    pump(out);
    return out;
}

cohort_fsm::actions cohort_fsm::on_turn_acquired(std::uint64_t turn, error_code ec, std::string_view node_name,
                                                 node_status status, error_code lost_reason,
                                                 bool revocation_requested)
{
    actions out;
    if (turn != turn_id_ || turn_ != turn_state::acquiring) return out;
    if (ec) {
        turn_ = turn_state::idle;
        if (cancel_sent_ && ec == boost::asio::error::operation_aborted) {
            // Our last waiter left and the node is gone; someone may have come since.
            if (!waiters_.empty()) start_turn(out);
            return out;
        }
        fail_waiters(ec, out);
        return out;
    }
    turn_ = turn_state::held;
    own_.assign(node_name);
    status_ = status;
    if (status == node_status::lost) {
        turn_lost(lost_reason, out);
        return out;
    }
    if (waiters_.empty()) {  // granted as the last waiter left
        end_turn(out);
        return out;
    }
    // A request the acquire's watch on our node already read: no local handoffs.
    if (revocation_requested) draining_ = true;
    out.push_back({ak::follow_node, 0, turn_id_});
    pump(out);
    return out;
}

cohort_fsm::actions cohort_fsm::on_node_status(std::uint64_t turn, node_status st, error_code reason)
{
    actions out;
    if (turn != turn_id_ || turn_ != turn_state::held) return out;
    if (st == node_status::lost) {
        turn_lost(reason, out);
        return out;
    }
    status_ = st;
    pump(out);  // back to held: local grants may go on
    return out;
}

cohort_fsm::actions cohort_fsm::on_revocation(std::uint64_t turn)
{
    actions out;
    if (turn != turn_id_ || turn_ != turn_state::held) return out;
    draining_ = true;
    pump(out);
    return out;
}

cohort_fsm::actions cohort_fsm::on_others_listed(std::uint64_t turn, error_code ec,
                                                 const std::vector<std::string>& children)
{
    actions out;
    if (turn != turn_id_ || turn_ != turn_state::held || !listing_) return out;
    listing_ = false;
    if (ec) {
        others_ = others_state::waiting;  // not known: assume someone waits (the budget applies)
    } else if (anyone_behind(children, own_)) {
        others_ = others_state::waiting;
    } else {
        others_ = others_state::none;
        out.push_back({ak::wait_others, 0, turn_id_});
    }
    pump(out);
    return out;
}

cohort_fsm::actions cohort_fsm::on_others_changed(std::uint64_t turn, error_code ec)
{
    actions out;
    if (turn != turn_id_ || turn_ != turn_state::held || others_ != others_state::none) return out;
    // A child came or went: look again before the budget is exceeded.
    others_ = ec ? others_state::waiting : others_state::unknown;
    pump(out);
    return out;
}

cohort_fsm::actions cohort_fsm::on_local_release(std::uint64_t turn, id_type id)
{
    actions out;
    if (turn != turn_id_) return out;  // a holder of a turn that was lost
    std::erase(holders_, id);
    pump(out);
    return out;
}

cohort_fsm::actions cohort_fsm::on_presumed_expired()
{
    // Holders of a held turn hear of it through the node's status; a turn still queued in
    // ZooKeeper is cancelled (its node goes once the session is back, or with it).
    actions out;
    if (turn_ != turn_state::acquiring || waiters_.empty()) return out;
    fail_waiters(errc::session_expired, out);
    if (!cancel_sent_) {
        cancel_sent_ = true;
        out.push_back({ak::cancel_turn, 0, turn_id_});
    }
    return out;
}

bool cohort_fsm::may_grant() const noexcept
{
    return turn_ == turn_state::held && (!draining_ || grants_ == 0) && status_ == node_status::held &&
           (grants_ < budget_ || others_ == others_state::none);
}

// Grants what can be granted, and ends the turn when it is over.
void cohort_fsm::pump(actions& out)
{
    if (turn_ != turn_state::held) return;
    if (!waiters_.empty()) check_others(out);
    while (!waiters_.empty() && (shared_ || holders_.empty()) && may_grant()) grant_front(out);
    if (others_ == others_state::waiting && grants_ >= budget_) draining_ = true;
    if (!holders_.empty()) return;
    if (status_ == node_status::suspended && !waiters_.empty() && !draining_) return;  // wait
    if (waiters_.empty() || draining_) {
        end_turn(out);
        if (!waiters_.empty()) start_turn(out);
    }
    // else: the budget is spent and the listing that says whether anyone waits is in flight.
}

void cohort_fsm::grant_front(actions& out)
{
    const auto id = waiters_.front();
    waiters_.pop_front();
    grant(id, out);
}

void cohort_fsm::grant(id_type id, actions& out)
{
    ++grants_;
    holders_.push_back(id);
    out.push_back({ak::grant, id, turn_id_, grants_});
}

void cohort_fsm::start_turn(actions& out)
{
    turn_ = turn_state::acquiring;
    cancel_sent_ = false;
    ++turn_id_;
    grants_ = 0;
    others_ = others_state::unknown;
    draining_ = false;
    status_ = node_status::held;
    own_.clear();
    drop_others(out);
    out.push_back({ak::start_turn, 0, turn_id_});
}

// The turn is over: its node goes (the acquire's release, with its handoff to the next node).
void cohort_fsm::end_turn(actions& out)
{
    const auto turn = turn_id_++;
    turn_ = turn_state::idle;
    drop_others(out);
    holders_.clear();
    out.push_back({ak::release_node, 0, turn});
}

// The node is lost (session expired, closed, presumed expired, or deleted by someone else):
// every local holder and waiter is told, and the node removed if it still exists.
void cohort_fsm::turn_lost(error_code reason, actions& out)
{
    const auto turn = turn_id_++;  // local releases of this turn are stale from now on
    turn_ = turn_state::idle;
    drop_others(out);
    auto holders = std::move(holders_);
    holders_.clear();
    for (auto h : holders) out.push_back({ak::lose, h, turn, 0, reason});
    out.push_back({ak::release_node, 0, turn});
    fail_waiters(reason, out);
}

void cohort_fsm::fail_waiters(error_code ec, actions& out)
{
    auto ws = std::move(waiters_);
    waiters_.clear();
    for (auto w : ws) out.push_back({ak::fail, w, 0, 0, ec});
}

// Whether a contender waits behind our node: one get_children with a child watch per turn, again
// after each change of children, only while local waiters want a handoff.
void cohort_fsm::check_others(actions& out)
{
    if (others_ != others_state::unknown || listing_) return;
    listing_ = true;
    watching_ = true;
    out.push_back({ak::list_others, 0, turn_id_});
}

void cohort_fsm::drop_others(actions& out)
{
    listing_ = false;
    if (!watching_) return;
    watching_ = false;
    out.push_back({ak::drop_others, 0, turn_id_});
}

}  // namespace zklock::detail
