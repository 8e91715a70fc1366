// The session core: everything a session decides, once, under every port. The real port
// (bridge/session_impl), the simulation's port (test/sim/sim_port) and the unit tests' fake
// (test/unit/fake_port.hpp) each own one and feed it what their connection reports; the core
// decides through session_fsm and carries the decisions out on the port's executor and clock:
//   - the state and generation, and those waiting for a connection (wait_connected);
//   - the observers, told of state changes and of a presumed expiry;
//   - the presumption step: a read (read_now) that finds a doubt or a presumption due makes it
//     there and then, and until its observers are told, every read says presumed;
//   - the presumption's timer, and the leader probe's (a sync whenever no request only the
//     leader answers went out for T/6 while engaged);
//   - which error a request gets when there is no handle to send it on.
// The port moves bytes and time: it sends the requests (the probe's too, through session_io),
// holds the watches, and runs its own connection's effects (session_io::apply_io).
#pragma once

#include "port/session_fsm.hpp"
#include "port/zk_port.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace zklock::detail {

/// What a port does for its session_core: the I/O its decisions call for.
class session_io {
public:
    /// Sends a sync to the server now, as a request only the leader answers (the port marks it
    /// with session_core::leader_request and reports its answer with on_leader_answer); nothing
    /// if the connection is not up.
    virtual void send_probe() = 0;
    /// The port's own share of `e` (its handle, its connect timer and waiters, its log), run after
    /// the core has armed or cancelled its timers and before it settles those waiting for a
    /// connection and tells the observers.
    virtual void apply_io(const session_effects& e) = 0;
    /// Every watch the port holds fires with `ec`.
    virtual void fail_watches(error_code ec) = 0;
    /// The port's owner: a handler or a timer of the core holds it while it runs, and does
    /// nothing once it is gone.
    virtual std::weak_ptr<void> owner() = 0;

protected:
    ~session_io() = default;
};

class session_core {
public:
    using clock = std::chrono::steady_clock;

    /// `session_timeout`: the one asked for (session_fsm). The core registers the port's
    /// engagement hook (metrics_state::on_engagement_change) and makes its timers with the port's
    /// make_timer() when first armed.
    session_core(zk_port& port, session_io& io, std::chrono::milliseconds session_timeout, bool reconnect_on_expiry);
    ~session_core();
    session_core(const session_core&) = delete;
    session_core& operator=(const session_core&) = delete;

    const session_fsm& fsm() const noexcept { return fsm_; }
    /// For the port's events: `core.apply(core.fsm_events().on_connected(...))`.
    session_fsm& fsm_events() noexcept { return fsm_; }

    /// Carries out `e`: the timers, the port's share (session_io::apply_io), the connection
    /// waiters, the watches, the observers, a probe on a reconnect while engaged, and a presumed
    /// expiry's notices.
    void apply(const session_effects& e);

    // zk_port's session queries, as every port answers them.
    session_reading read_now();
    void wait_connected(std::uint64_t generation, void_cb cb);
    void subscribe(std::weak_ptr<session_observer> o);
    /// The error of a request made with no handle to send it on (expired, closed, not connected).
    error_code no_handle_error() const noexcept;
    /// A request only the leader answers (a write or a sync) goes out now: returns its send
    /// time, which the port hands to on_leader_answer when it is answered without error.
    clock::time_point leader_request();
    /// The leader answered a request sent at `sent`: evidence that the session lives.
    void on_leader_answer(clock::time_point sent);

    /// The execution context shuts down (or the simulation's client dies): the session is
    /// closed without a word; those waiting for a connection are buried, the observers bury what
    /// they hold, the timers stop; from now on nothing is posted and a wait_connected is let go.
    void shut_down(graveyard& g);
    bool is_shut_down() const noexcept { return shut_; }

private:
    /// Stops the presumption's and the probe's timers.
    void stop_timers() noexcept;
    void notify_observers();
    void arm_presume(clock::time_point at);
    void on_engagement(bool engaged);
    void arm_probe();
    /// A handler that runs `f(core)` on the port's executor while the owner lives.
    template <class F> void post(F f);

    zk_port& port_;
    session_io& io_;
    session_fsm fsm_;
    bool shut_ = false;
    std::vector<std::pair<std::uint64_t, void_cb>> connected_waiters_;
    std::vector<std::weak_ptr<session_observer>> observers_;
    std::size_t observers_prune_at_ = 64;  // subscribe() drops expired observers at this size
    std::size_t presumptions_untold_ = 0;  // presumptions made whose observers are not all told yet
    std::unique_ptr<port_timer> presume_timer_;
    std::optional<clock::time_point> presume_armed_;  // when presume_timer_ fires, if it waits
    std::unique_ptr<port_timer> probe_timer_;
    bool probe_waiting_ = false;
    clock::time_point last_leader_send_{};
};

}  // namespace zklock::detail
