#include "port/session_fsm.hpp"

#include "core/mutant.hpp"

#include <algorithm>

namespace zklock::detail {

std::optional<error_code> session_fsm::check_connected(std::uint64_t generation) const noexcept
{
    if (state_ == session_state::closed) return error_code(errc::session_closed);
    if (generation != 0 && generation != generation_) return error_code(errc::session_expired);
    if (state_ == session_state::expired && generation != 0) return error_code(errc::session_expired);
    if (state_ == session_state::connected) return error_code();
    if (state_ == session_state::disconnected) return error_code(errc::not_connected);
    return std::nullopt;  // connecting, suspended, or expired and any session will do
}

session_effects session_fsm::enter(session_state s)
{
    session_effects e;
    if (s != state_) {
        state_ = s;
        e.state_changed = true;
    }
    return e;
}

session_effects session_fsm::on_handle_started() { return enter(session_state::connecting); }

session_effects session_fsm::on_connected(std::int64_t session_id, std::chrono::milliseconds negotiated,
                                          clock::time_point now)
{
    bool new_session = false;
    if (session_id != session_id_) {
        ++generation_;
        session_id_ = session_id;
        new_session = true;
        // A new session was just created by the leader: its liveness starts now, and what was
        // presumed of the old one does not carry over.
        confirmed_ = std::max(confirmed_, now);
        doubtful_ = presumed_ = false;
    }
    negotiated_ = negotiated;
    last_heard_ = now;
    // Unengaged, only the connection rule presumes, and a new connection is new evidence for it.
    if (!engaged_) presumed_ = false;
    auto e = enter(session_state::connected);
    e.state_changed = e.state_changed || new_session;  // observers learn of a new generation too
    e.cancel_connect_timer = true;
    e.connects = error_code();
    e.settle_waiters = true;
    rearm(e);
    return e;
}

session_effects session_fsm::on_connection_lost()
{
    if (state_ != session_state::connected) return {};
    auto e = enter(session_state::suspended);
    // The server expires the session after its timeout without hearing from us; we cannot learn
    // that while cut off, so we presume it (as Curator does) and tell the observers: a holder must
    // not go on believing it holds the lock. Our clock starts at the last bytes we received; the
    // server's started when it received what they answer, a round trip (and any server delay)
    // earlier, so a timer of one full timeout fires late on a slow link. Fire a tenth of the
    // timeout early. While engaged, the leader's evidence (rearm) is what counts, and it comes
    // earlier: this rule covers a session nothing depends on.
    rearm(e);
    return e;
}

std::optional<session_fsm::clock::time_point> session_fsm::doubt_at() const
{
    if (!engaged_ || doubtful_ || presumed_) return std::nullopt;
    if (state_ != session_state::connected && state_ != session_state::suspended) return std::nullopt;
    return confirmed_ + timeout() / ZKLOCK_MUTANT(mutant::doubt_at_presumption, 3, 2);
}

std::optional<session_fsm::clock::time_point> session_fsm::presume_deadline() const
{
    if (presumed_) return std::nullopt;
    std::optional<clock::time_point> d;
    const auto t = timeout();
    if (state_ == session_state::suspended) d = last_heard_ + t - t / 10;
    if (engaged_ && (state_ == session_state::connected || state_ == session_state::suspended)) {
        const auto by_leader = confirmed_ + t / 2;
        d = d ? std::min(*d, by_leader) : by_leader;
    }
    return d;
}

void session_fsm::rearm(session_effects& e) const
{
    auto d = doubt_at();
    if (auto p = presume_deadline()) d = d ? std::min(*d, *p) : *p;
    if (d) e.presume_at = *d;
    else e.cancel_presume = true;
}

session_effects session_fsm::on_engaged(bool engaged, clock::time_point now)
{
    session_effects e;
    if (engaged == engaged_) return e;
    engaged_ = engaged;
    if (engaged) {
        confirmed_ = std::max(confirmed_, now);
        presumed_ = false;
    }
    if (doubtful_) {
        doubtful_ = false;
        e.observers_changed = state_ == session_state::connected;
    }
    rearm(e);
    return e;
}

session_effects session_fsm::on_leader_confirmed(clock::time_point sent, clock::time_point now)
{
    session_effects e;
    if (sent <= confirmed_) return e;
    confirmed_ = sent;
    const auto t = timeout();
    // Evidence that is already too old to stop a presumption does not undo one.
    if (presumed_ && now < confirmed_ + t / 2) presumed_ = false;
    if (doubtful_ && !presumed_ && now < confirmed_ + t / 3) {
        doubtful_ = false;
        e.observers_changed = state_ == session_state::connected;
    }
    rearm(e);
    return e;
}

session_effects session_fsm::on_presume_timer(clock::time_point now)
{
    session_effects e;
    if (auto d = doubt_at(); d && now >= *d) {
        doubtful_ = true;
        e.observers_changed = state_ == session_state::connected;
    }
    if (auto d = presume_deadline(); ZKLOCK_MUTANT(mutant::no_presumed_expiry, d && now >= *d, false)) {
        presumed_ = true;
        e.presumed_expired = true;
    }
    rearm(e);
    return e;
}

session_effects session_fsm::on_expired()
{
    auto e = enter(session_state::expired);
    e.cancel_presume = true;
    e.settle_waiters = true;  // generation g: expired; any session: a fresh one may follow
    e.fail_watches = error_code(errc::session_expired);
    e.close_handle = true;
    e.start_handle = reconnect_on_expiry_;
    return e;
}

session_effects session_fsm::on_auth_failed()
{
    auto e = enter(session_state::disconnected);
    e.close_handle = true;
    e.connects = error_code(zk_errc::auth_failed);
    e.settle_waiters = true;
    e.waiters_error = error_code(zk_errc::auth_failed);
    return e;
}

session_effects session_fsm::abandon_attempt()
{
    // Never established: abandon the attempt, so that a later connect starts afresh.
    if (state_ != session_state::connecting) return {};
    auto e = enter(session_state::disconnected);
    e.close_handle = true;
    e.settle_waiters = true;  // not_connected
    return e;
}

session_effects session_fsm::on_connect_timeout(error_code why)
{
    auto e = abandon_attempt();
    e.connects = why ? why : error_code(errc::connect_timeout);
    return e;
}

session_effects session_fsm::on_connect_abandoned() { return abandon_attempt(); }

session_effects session_fsm::on_close()
{
    if (state_ == session_state::closed) return {};
    auto e = enter(session_state::closed);
    e.cancel_connect_timer = true;
    e.cancel_presume = true;
    e.connects = error_code(errc::session_closed);
    e.settle_waiters = true;  // session_closed
    e.fail_watches = error_code(errc::session_closed);
    return e;
}

}  // namespace zklock::detail
