#include "session_fsm.hpp"

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
    }
    negotiated_ = negotiated;
    last_heard_ = now;
    auto e = enter(session_state::connected);
    e.state_changed = e.state_changed || new_session;  // observers learn of a new generation too
    e.cancel_connect_timer = true;
    e.cancel_presume = true;
    e.connects = error_code();
    e.settle_waiters = true;
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
    // earlier, so a timer of one full timeout fires late on a slow link (fault test 4b saw the next
    // holder granted 30 ms before this one was told, over a 100 ms round trip). Fire a tenth of the
    // timeout early: the holder is told before the server acts unless that delay exceeds it.
    const auto timeout = negotiated_.count() > 0 ? negotiated_ : requested_timeout_;
    e.presume_at = last_heard_ + timeout - timeout / 10;
    return e;
}

session_effects session_fsm::on_presume_timer()
{
    session_effects e;
    e.presumed_expired = state_ == session_state::suspended;
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

session_effects session_fsm::on_connect_timeout()
{
    auto e = abandon_attempt();
    e.connects = error_code(errc::connect_timeout);
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
