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

    /// A C handle was started (connect, or a fresh one after an expiry).
    session_effects on_handle_started();
    /// The C client reports a (re)connection with this session id and negotiated timeout.
    session_effects on_connected(std::int64_t session_id, std::chrono::milliseconds negotiated, clock::time_point now);
    /// The connection was lost while connected (the session may live on).
    session_effects on_connection_lost();
    /// The presumed-expiry timer fired.
    session_effects on_presume_timer();
    /// The server says the session expired.
    session_effects on_expired();
    /// The server refused our credentials.
    session_effects on_auth_failed();
    /// session_config::connect_timeout passed with async_connect waiters.
    session_effects on_connect_timeout();
    /// The last async_connect waiter was cancelled.
    session_effects on_connect_abandoned();
    /// async_close, or the session's destruction.
    session_effects on_close();

private:
    session_effects enter(session_state s);
    session_effects abandon_attempt();

    std::chrono::milliseconds requested_timeout_;
    bool reconnect_on_expiry_;
    session_state state_ = session_state::disconnected;
    std::uint64_t generation_ = 0;
    std::int64_t session_id_ = 0;
    std::chrono::milliseconds negotiated_{0};
    clock::time_point last_heard_{};
};

}  // namespace zklock::detail
