// What zklock::session asks of its session beyond the port (zk_port): connecting and closing,
// waiting for a state change, the configuration and the server list. An operation (src/ops)
// never needs it: the recipes talk to the port alone. The bridge answers it for a real session
// (src/bridge/session.cpp); another port (the simulation's) answers it for its own, and the
// public session wraps the two (session's constructor from a port).
#pragma once

#include "port/zk_port.hpp"

#include <zklock/config.hpp>
#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include <chrono>
#include <cstdint>
#include <string>

namespace zklock::detail {

class session_control {
public:
    virtual ~session_control() = default;

    /// Completes (posted) once connected, or with why it cannot be. Returns an id for
    /// cancel_connect, or 0 when the wait cannot be cancelled (its outcome is known, or posted).
    virtual std::uint64_t connect(void_cb cb) = 0;
    /// Completes that connect with operation_aborted (session::async_connect's cancellation).
    virtual void cancel_connect(std::uint64_t id) = 0;
    /// Closes the session at once; `cb` completes (posted) once the close is done. Never blocks.
    virtual void close(void_cb cb) = 0;
    /// Completes at the next change of the session's state, with the new state.
    virtual void wait_state_change(unique_function<void(error_code, session_state)> cb) = 0;
    /// session::config().
    virtual const session_config& config() const noexcept = 0;
    /// The session timeout the server granted (0 until connected).
    virtual std::chrono::milliseconds negotiated_timeout() const noexcept = 0;
    /// session::set_servers.
    virtual error_code set_servers(std::string servers) = 0;
};

}  // namespace zklock::detail
