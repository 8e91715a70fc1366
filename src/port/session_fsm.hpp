// The session's state as a state machine that holds no Asio or ZooKeeper object (sans-io, like
// acquire_fsm): its states, the ZooKeeper session generation, the presumed expiry while cut off,
// and what becomes of those waiting for a connection. The driver (session_impl) feeds it what the
// C client reports and applies the effects it returns; the unit tests drive it directly.
//
//   disconnected ──connect──> connecting ──connected──> connected <──connected── suspended
//        ^                      │ timeout / cancel        │ connection lost          │
//        └──────────────────────┘ / auth failed           └─────────────────────────>┘
//   expired: the server ended the session (a new one follows if reconnect_on_expiry).
//   closed: final.
//
// The generation counts ZooKeeper sessions: it grows each time we connect with a session id we
// did not have before, so "connected within generation g" means "our ephemeral nodes of g exist".
//
// Liveness while engaged (an acquire waits or a lease is held): the evidence that the *leader*
// still counts the session alive is the send time t of the latest request only the leader
// answers (a sync or a write) that was answered. The leader cannot expire the session before
// t + T - P - I (T the session timeout, P the longest gap between our requests, I the gap between
// the leader's pings of our server; docs/liveness.md). The driver keeps P <= T/6 while engaged;
// the fsm makes observers see the session suspended ("doubtful") from t + T/3 and presumes it
// expired at t + T/2, whatever the connection to our own server looks like.
#pragma once

#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include <chrono>
#include <cstdint>
#include <optional>

namespace zklock::detail {

/// What the driver does after an event, in this order: state waiters and observers (when the
/// state changed), then the async_connect waiters, then those waiting for a connection, then the
/// watches, then the C handle.
struct session_effects {
    bool state_changed = false;
    std::optional<error_code> connects;  ///< complete every async_connect with this
    /// Settle each wait_connected(generation) waiter with check_connected(generation), or with
    /// this error if set: nullopt from check_connected keeps it waiting.
    bool settle_waiters = false;
    std::optional<error_code> waiters_error;
    std::optional<error_code> fail_watches;  ///< every registered watch fires with this
    bool close_handle = false;       ///< close the C handle (from outside the C client)
    bool start_handle = false;       ///< after close_handle: start a fresh one
    bool cancel_connect_timer = false;
    /// Arm the presumed-expiry timer for this time (on_presume_timer() when it fires), or cancel it.
    std::optional<std::chrono::steady_clock::time_point> presume_at;
    bool cancel_presume = false;
    bool presumed_expired = false;   ///< tell the observers: the server has presumably expired us
    /// Tell the observers observed_state() (a doubt began or ended; the state itself did not change).
    bool observers_changed = false;
};

class session_fsm {
public:
    using clock = std::chrono::steady_clock;

    /// `session_timeout`: what we asked for, used to presume expiry until one is negotiated.
    session_fsm(std::chrono::milliseconds session_timeout, bool reconnect_on_expiry) noexcept
        : requested_timeout_(session_timeout), reconnect_on_expiry_(reconnect_on_expiry)
    {
    }

    session_state state() const noexcept { return state_; }
    std::uint64_t generation() const noexcept { return generation_; }
    /// The ZooKeeper session id while connected or suspended, else 0.
    std::int64_t session_id() const noexcept
    {
        return state_ == session_state::connected || state_ == session_state::suspended ? session_id_ : 0;
    }
    std::chrono::milliseconds negotiated_timeout() const noexcept { return negotiated_; }

    /// The outcome of waiting to be connected within `generation` (0: any session), if known now;
    /// nullopt while it may still come (connecting, suspended, or expired with generation 0).
    std::optional<error_code> check_connected(std::uint64_t generation) const noexcept;

    /// Bytes from the server reached us (the presumed expiry counts from the last ones).
    void on_heard(clock::time_point now) noexcept { last_heard_ = now; }

    /// What observers are told: suspended while connected but doubtful (the leader has not
    /// confirmed the session for T/3 while engaged), else state().
    session_state observed_state() const noexcept
    {
        return state_ == session_state::connected && doubtful_ ? session_state::suspended : state_;
    }
    bool engaged() const noexcept { return engaged_; }
    /// Presumed expired on the evidence we have (until newer evidence, or a new session).
    bool presumed() const noexcept { return presumed_; }
    /// Something depends on the session now (an acquire waits, a lease is held), or nothing does.
    /// Becoming engaged starts the evidence clock at `now` at the latest: every grant of this
    /// engagement follows a write of its own sent after `now` and applied by the leader.
    session_effects on_engaged(bool engaged, clock::time_point now);
    /// A request only the leader answers (a sync or a write), sent at `sent`, was answered.
    session_effects on_leader_confirmed(clock::time_point sent, clock::time_point now);
    /// How often the driver must send a request to the leader while engaged (a sync when no write
    /// went out meanwhile): T/6.
    clock::duration probe_interval() const noexcept { return timeout() / 6; }
    /// How long a try-acquire waits for its answer: until the session would doubt its server.
    clock::duration answer_deadline() const noexcept { return timeout() / 3; }

    /// A C handle was started (connect, or a fresh one after an expiry).
    session_effects on_handle_started();
    /// The C client reports a (re)connection with this session id and negotiated timeout.
    session_effects on_connected(std::int64_t session_id, std::chrono::milliseconds negotiated, clock::time_point now);
    /// The connection was lost while connected (the session may live on).
    session_effects on_connection_lost();
    /// The presumed-expiry timer fired (it also marks the start of a doubt).
    session_effects on_presume_timer(clock::time_point now);
    /// A doubt or a presumption is due by `now`: on_presume_timer(now) would make it.
    bool due(clock::time_point now) const
    {
        const auto d = doubt_at();
        const auto p = presume_deadline();
        return (d && now >= *d) || (p && now >= *p);
    }
    /// The deadline of the presumption the evidence allows (session_reading::valid_until):
    /// time_point::min() once presumed, or when no rule applies (not engaged and connected,
    /// connecting, ended).
    clock::time_point valid_until() const
    {
        const auto p = presume_deadline();
        return p ? *p : clock::time_point::min();
    }
    /// The server says the session expired.
    session_effects on_expired();
    /// The server refused our credentials.
    session_effects on_auth_failed();
    /// session_config::connect_timeout passed with async_connect waiters, or every server refused
    /// the connection for a reason of its own; `why`: the latest refusal seen (errc::not_zookeeper,
    /// a TLS error), which the waiters get instead of errc::connect_timeout.
    session_effects on_connect_timeout(error_code why = {});
    /// The last async_connect waiter was cancelled.
    session_effects on_connect_abandoned();
    /// async_close, or the session's destruction.
    session_effects on_close();

private:
    session_effects enter(session_state s);
    session_effects abandon_attempt();
    std::chrono::milliseconds timeout() const noexcept
    {
        return negotiated_.count() > 0 ? negotiated_ : requested_timeout_;
    }
    /// Sets e.presume_at to the next doubt or presumption due, or e.cancel_presume.
    void rearm(session_effects& e) const;
    std::optional<clock::time_point> doubt_at() const;
    std::optional<clock::time_point> presume_deadline() const;

    std::chrono::milliseconds requested_timeout_;
    bool reconnect_on_expiry_;
    session_state state_ = session_state::disconnected;
    std::uint64_t generation_ = 0;
    std::int64_t session_id_ = 0;
    std::chrono::milliseconds negotiated_{0};
    clock::time_point last_heard_{};
    bool engaged_ = false;
    clock::time_point confirmed_{};  // send time of the latest answered leader request (or the engagement's start)
    bool doubtful_ = false;          // engaged, and unconfirmed for T/3
    bool presumed_ = false;          // presumed expired on the evidence we have; cleared by newer evidence
};

}  // namespace zklock::detail
