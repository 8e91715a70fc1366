// multi_lock's driver, and nothing more: it performs multi_lock_fsm's actions (the single acquires
// in canonical order, the releases, the grace's timer) and feeds the outcomes back, with what the
// leases it took read; what comes next, and why the set fails, are the machine's.
#include "core/handler_util.hpp"
#include "ops/multi_lock_fsm.hpp"
#include "port/zk_port.hpp"

#include <zklock/detail/acquire_fwd.hpp>
#include <zklock/multi_lock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <algorithm>

namespace zklock::detail {

namespace {

queue_policy policy_of(const lock_spec& spec)
{
    switch (spec.kind) {
    case lock_kind::shared: return {reader_recipe};
    case lock_kind::permit: return {semaphore_recipe, spec.permits};
    case lock_kind::exclusive: break;
    }
    return {spec.as_writer ? writer_recipe : mutex_recipe};
}

// The driver of multi_lock_fsm: performs its actions (the single acquires, the releases, the
// grace's timer) and feeds their completions back.
class multi_acquire_op : public std::enable_shared_from_this<multi_acquire_op> {
public:
    using results = std::vector<lease>;
    using kind = multi_lock_fsm::kind;

    multi_acquire_op(session_ptr s, std::vector<lock_spec> specs, lock_options options,
                     std::optional<steady::duration> timeout, handler<error_code, results> h)
        : s_(std::move(s)), specs_(std::move(specs)), options_(std::make_shared<const lock_options>(std::move(options))),
          h_(std::move(h), s_->executor()), taken_(specs_.size()), fsm_(specs_, timeout, s_->now())
    {
    }

    void start()
    {
        in_initiation_ = true;
        auto first = fsm_.start(s_->now());
        if (!fsm_.done()) {
            // The acquire in flight undoes itself (it gets the signal, of the same type), and we
            // release what was taken. A total cancellation completes once that is done, with no
            // grace: nothing is left behind.
            on_cancellation(h_, s_->executor(), [weak = weak_from_this()](asio::cancellation_type t) {
                if (auto self = weak.lock()) {
                    self->cancel_type_ = t;
                    self->perform(self->fsm_.cancel());
                }
            });
        }
        perform(first);
        in_initiation_ = false;
    }

private:
    void perform(const multi_lock_fsm::action& a)
    {
        switch (a.what) {
        case kind::none: return;
        case kind::acquire: return acquire(a.index, a.time_left);
        case kind::cancel_acquire: return child_.emit(cancel_type_);  // it completes with operation_aborted
        case kind::release: return release();
        case kind::arm_grace: return arm_grace();
        case kind::complete: return complete(a);
        }
    }

    void acquire(std::size_t idx, std::optional<steady::duration> left)
    {
        acquire_request req{std::make_shared<const std::string>(specs_[idx].path), policy_of(specs_[idx]), fsm_.try_only(),
                            false, false, left, options_, nullptr};
        initiate_acquire(s_, std::move(req),
                         asio::bind_cancellation_slot(child_.slot(), [self = shared_from_this(), idx](error_code ec, lease l) {
                             error_code earlier_lost;
                             if (!ec) {
                                 self->taken_[idx] = std::move(l);
                                 for (const auto& t : self->taken_)
                                     if (t.status() == lease_status::lost) {
                                         earlier_lost = t.lost_reason();
                                         break;
                                     }
                             }
                             self->perform(self->fsm_.acquired(ec, earlier_lost, self->s_->now()));
                         }));
    }

    // Releases what was taken, then completes: once the releases are done, or when the cleanup
    // grace has passed, whichever comes first. A release the server has not confirmed by then
    // goes on in the background (a lease's release is retried across reconnects), counted as a
    // background cleanup.
    void release()
    {
        const auto count = static_cast<std::size_t>(std::count_if(taken_.begin(), taken_.end(), [](const lease& l) { return l.owns_lock(); }));
        const auto next = fsm_.releasing(count);
        if (next.what == kind::complete) return perform(next);
        for (auto& l : taken_) {
            if (!l.owns_lock()) continue;
            l.async_release([self = shared_from_this()](error_code) {
                if (self->backgrounded_ > 0) {
                    --self->backgrounded_;
                    self->s_->metrics().background_cleanup_done();
                }
                self->perform(self->fsm_.released());
            });
        }
        perform(next);
    }

    void arm_grace()
    {
        if (total_only(cancel_type_)) return;  // complete once the releases are done
        grace_ = s_->make_timer();
        grace_->start(cleanup_grace, [self = shared_from_this()] { self->perform(self->fsm_.grace_passed()); });
    }

    void complete(const multi_lock_fsm::action& a)
    {
        if (grace_) grace_->cancel();
        backgrounded_ = a.backgrounded;
        for (std::size_t i = 0; i < backgrounded_; ++i) s_->metrics().background_cleanup_started();
        results r;
        if (!a.ec) r = std::move(taken_);
        if (in_initiation_) h_.post(s_->executor(), a.ec, std::move(r));
        else h_.complete(a.ec, std::move(r));
    }

    session_ptr s_;
    std::vector<lock_spec> specs_;
    std::shared_ptr<const lock_options> options_;
    stored_handler<error_code, results> h_;
    std::vector<lease> taken_;  // in the order of specs_
    multi_lock_fsm fsm_;
    asio::cancellation_signal child_;  // to the single acquire in flight
    // The type a cancellation of ours passes on to the acquire in flight (a deadline: terminal).
    asio::cancellation_type cancel_type_ = asio::cancellation_type::terminal;
    bool in_initiation_ = false;
    std::size_t backgrounded_ = 0;  // releases still running after the grace (see release)
    std::unique_ptr<port_timer> grace_;
};

}  // namespace

void initiate_multi_acquire(session_ptr s, std::vector<lock_spec> specs, lock_options options,
                            std::optional<std::chrono::steady_clock::duration> timeout,
                            handler<error_code, std::vector<lease>> h)
{
    // A multi_lock without a session (moved from, or made from a moved-from session).
    if (!s) return post_without_session(std::move(h), error_code(errc::session_closed), std::vector<lease>());
    std::make_shared<multi_acquire_op>(std::move(s), std::move(specs), std::move(options), timeout, std::move(h))
        ->start();
}

}  // namespace zklock::detail
