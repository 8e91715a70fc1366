#include "port/session_core.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>

namespace zklock::detail {

session_core::session_core(zk_port& port, session_io& io, std::chrono::milliseconds session_timeout,
                           bool reconnect_on_expiry)
    : port_(port), io_(io), fsm_(session_timeout, reconnect_on_expiry)
{
    // The hook runs inside an operation's step: the effects are applied from a posted handler,
    // but the evidence clock starts now (session_fsm::on_engaged).
    port_.metrics().on_engagement_change([this](bool engaged) {
        auto e = fsm_.on_engaged(engaged, port_.now());
        if (shut_) return;
        post([e, engaged](session_core& c) {
            c.apply(e);
            c.on_engagement(engaged);
        });
    });
}

session_core::~session_core() { port_.metrics().on_engagement_change({}); }

template <class F> void session_core::post(F f)
{
    asio::post(port_.executor(), [w = io_.owner(), this, f = std::move(f)]() mutable {
        const auto keep = w.lock();
        if (keep) f(*this);
    });
}

// ---- decisions carried out -----------------------------------------------------------------------

void session_core::apply(const session_effects& e)
{
    // State first, then the upcalls: a handler may run inline and look at the state.
    if (e.cancel_presume) {
        if (presume_timer_) presume_timer_->cancel();
        presume_armed_.reset();
    }
    // A later deadline waits for the armed one, which asks the fsm again: evidence arrives with
    // every write, and moving the timer for each would cost a timer operation per reply.
    if (e.presume_at && (!presume_armed_ || *e.presume_at < *presume_armed_)) arm_presume(*e.presume_at);
    if (fsm_.state() == session_state::closed) {
        if (probe_timer_) probe_timer_->cancel();
        probe_waiting_ = false;
    }
    io_.apply_io(e);
    if (e.settle_waiters) {
        auto waiters = std::move(connected_waiters_);
        connected_waiters_.clear();
        for (auto& [gen, w] : waiters) {
            auto outcome = e.waiters_error ? e.waiters_error : fsm_.check_connected(gen);
            if (outcome) w(*outcome);
            else connected_waiters_.emplace_back(gen, std::move(w));
        }
    }
    if (e.fail_watches) io_.fail_watches(*e.fail_watches);
    if (e.state_changed || e.observers_changed) notify_observers();
    // Back on a connection while engaged: ask the leader at once, to end a doubt soon.
    if (e.state_changed && fsm_.state() == session_state::connected && fsm_.engaged()) io_.send_probe();
    if (e.presumed_expired) {
        port_.metrics().presumed_expiry();
        port_.log().event(log_level::warning, "session presumed expired: no answer the leader vouches for within the "
                                              "session timeout; its leases are lost");
        // While they are told (a handler may run inline), a read of a lease not told yet reads lost.
        ++presumptions_untold_;
        auto copy = observers_;
        for (auto& w : copy)
            if (auto o = w.lock()) o->on_presumed_expired();
        --presumptions_untold_;
    }
}

void session_core::notify_observers()
{
    std::erase_if(observers_, [](const std::weak_ptr<session_observer>& w) { return w.expired(); });
    auto copy = observers_;
    for (auto& w : copy)
        if (auto o = w.lock()) o->on_session_state(fsm_.observed_state(), fsm_.generation());
}

void session_core::arm_presume(clock::time_point at)
{
    if (!presume_timer_) presume_timer_ = port_.make_timer();
    presume_armed_ = at;
    const auto now = port_.now();
    presume_timer_->start(at > now ? at - now : clock::duration::zero(), [this, w = io_.owner()] {
        const auto keep = w.lock();
        if (!keep) return;
        presume_armed_.reset();
        apply(fsm_.on_presume_timer(port_.now()));
    });
}

// ---- the session's queries -----------------------------------------------------------------------

session_reading session_core::read_now()
{
    const auto now = port_.now();
    if (!shut_ && fsm_.due(now)) {
        // The timer is due but has not run (the executor was busy, or it is just due): decide now
        // what it would decide, and tell from a posted handler, never inside a query.
        auto e = fsm_.on_presume_timer(now);
        if (e.presumed_expired) ++presumptions_untold_;
        post([e](session_core& c) {
            c.apply(e);
            if (e.presumed_expired) --c.presumptions_untold_;
        });
    }
    return {fsm_.observed_state(), fsm_.generation(), presumptions_untold_ > 0 || fsm_.presumed(), fsm_.valid_until()};
}

void session_core::wait_connected(std::uint64_t generation, void_cb cb)
{
    if (shut_) return;  // let go of, never called
    if (auto outcome = fsm_.check_connected(generation))
        return asio::post(port_.executor(), [cb = std::move(cb), ec = *outcome]() mutable { cb(ec); });
    connected_waiters_.emplace_back(generation, std::move(cb));
}

void session_core::subscribe(std::weak_ptr<session_observer> o)
{
    // Expired observers are dropped in one pass once the list has doubled since the last: O(1)
    // amortized per subscription, with tens of thousands of leases held (every user of the list
    // skips an expired entry).
    if (observers_.size() >= observers_prune_at_) {
        std::erase_if(observers_, [](const std::weak_ptr<session_observer>& w) { return w.expired(); });
        observers_prune_at_ = std::max<std::size_t>(64, 2 * observers_.size());
    }
    observers_.push_back(std::move(o));
}

error_code session_core::no_handle_error() const noexcept
{
    switch (fsm_.state()) {
    case session_state::closed: return errc::session_closed;
    case session_state::expired: return errc::session_expired;
    default: return errc::not_connected;
    }
}

// ---- the leader's evidence -----------------------------------------------------------------------

session_core::clock::time_point session_core::leader_request() { return last_leader_send_ = port_.now(); }

void session_core::on_leader_answer(clock::time_point sent) { apply(fsm_.on_leader_confirmed(sent, port_.now())); }

void session_core::on_engagement(bool engaged)
{
    if (fsm_.engaged()) arm_probe();
    else if (!engaged) {  // nothing to probe for: no timer keeps the executor busy
        if (probe_timer_) probe_timer_->cancel();
        probe_waiting_ = false;
    }
}

void session_core::arm_probe()
{
    if (probe_waiting_ || !fsm_.engaged() || shut_) return;
    if (!probe_timer_) probe_timer_ = port_.make_timer();
    probe_waiting_ = true;
    const auto at = last_leader_send_ + fsm_.probe_interval();
    const auto now = port_.now();
    probe_timer_->start(at > now ? at - now : clock::duration::zero(), [this, w = io_.owner()] {
        const auto keep = w.lock();
        if (!keep) return;
        probe_waiting_ = false;
        const auto t = port_.now();
        if (fsm_.engaged() && t >= last_leader_send_ + fsm_.probe_interval()) {
            io_.send_probe();
            // Not connected: nothing was sent; look again an interval later (a reconnect probes
            // at once, see apply()).
            if (last_leader_send_ < t) last_leader_send_ = t;
        }
        if (fsm_.state() != session_state::closed) arm_probe();
    });
}

// ---- the end ---------------------------------------------------------------------------------------

void session_core::shut_down(graveyard& g)
{
    if (!shut_) {
        shut_ = true;
        (void)fsm_.on_close();  // closed; the effects (handlers to call) are what is dropped here
    }
    for (auto& [gen, w] : connected_waiters_) g.bury(std::move(w));
    connected_waiters_.clear();
    stop_timers();
    auto observers = observers_;
    for (auto& w : observers)
        if (auto o = w.lock()) o->on_shutdown(g);
}

void session_core::stop_timers() noexcept
{
    if (presume_timer_) presume_timer_->cancel();
    presume_armed_.reset();
    if (probe_timer_) probe_timer_->cancel();
    probe_waiting_ = false;
}

}  // namespace zklock::detail
