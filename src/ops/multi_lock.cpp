// multi_lock: the single acquires in canonical order, then (on failure) the releases, as one
// operation object driven by the completions of its steps, like acquire_op.
#include "core/deadline.hpp"
#include "core/handler_util.hpp"
#include "port/zk_port.hpp"

#include <zklock/detail/acquire_fwd.hpp>
#include <zklock/multi_lock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <numeric>

namespace zklock::detail {

namespace {

queue_policy policy_of(const lock_spec& spec)
{
    switch (spec.type) {
    case lock_spec::kind::shared: return {reader_recipe};
    case lock_spec::kind::permit: return {semaphore_recipe, spec.permits};
    case lock_spec::kind::writer: return {writer_recipe};
    case lock_spec::kind::exclusive: break;
    }
    return {mutex_recipe};
}

class multi_acquire_op : public std::enable_shared_from_this<multi_acquire_op> {
public:
    using results = std::vector<lease>;

    multi_acquire_op(session_ptr s, std::vector<lock_spec> specs, lock_options options,
                     std::optional<steady::duration> timeout, handler<error_code, results> h)
        : s_(std::move(s)), specs_(std::move(specs)), options_(std::make_shared<const lock_options>(std::move(options))), h_(std::move(h), s_->executor()),
          taken_(specs_.size())
    {
        // A timeout <= 0 means "try once", as for the single locks: each lock is tried once, all or
        // nothing. Otherwise one deadline (saturated: duration::max() never overflows) covers the set.
        try_only_ = timeout && *timeout <= steady::duration::zero();
        if (timeout && !try_only_) deadline_ = deadline_after(*timeout);
    }

    void start()
    {
        order_.resize(specs_.size());
        std::iota(order_.begin(), order_.end(), std::size_t{0});
        std::sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
            return std::tie(specs_[a].path, specs_[a].type) < std::tie(specs_[b].path, specs_[b].type);
        });
        bool bad = specs_.empty();
        for (std::size_t i = 1; i < order_.size(); ++i) bad = bad || specs_[order_[i]].path == specs_[order_[i - 1]].path;
        if (bad) return h_.post(s_->executor(), errc::invalid_argument, results());
        // Every cancellation type, the same way: the acquire in flight undoes itself (it gets the
        // signal), and we release what was taken.
        on_cancellation(h_, s_->executor(), [weak = weak_from_this()] {
            if (auto self = weak.lock()) self->cancel();
        });
        in_initiation_ = true;
        step();
        in_initiation_ = false;
    }

private:
    void step()
    {
        if (next_ == order_.size()) return complete({});
        std::optional<steady::duration> left;
        if (deadline_) {
            left = time_left(*deadline_);
            if (*left <= steady::duration::zero()) return fail(errc::timeout);
        }
        const std::size_t idx = order_[next_];
        acquire_request req{std::make_shared<const std::string>(specs_[idx].path), policy_of(specs_[idx]), try_only_,
                            false, false, left, options_, nullptr};
        acquiring_ = true;
        initiate_acquire(s_, std::move(req),
                         asio::bind_cancellation_slot(child_.slot(), [self = shared_from_this(), idx](error_code ec, lease l) {
                             self->on_acquired(idx, ec, std::move(l));
                         }));
    }

    void on_acquired(std::size_t idx, error_code ec, lease l)
    {
        acquiring_ = false;
        if (ec) return fail(ec);
        taken_[idx] = std::move(l);
        ++next_;
        if (cancelled_) return fail(asio::error::operation_aborted);
        step();
    }

    void cancel()
    {
        if (cancelled_ || failure_ || done_) return;
        cancelled_ = true;
        if (acquiring_) child_.emit(asio::cancellation_type::total);  // it completes with operation_aborted
        // Between steps nothing is in flight: step() runs only from on_acquired, which sees cancelled_.
    }

    // Releases what was taken, then completes with `ec`: once the releases are done, or when the
    // cleanup grace has passed, whichever comes first. A release the server has not confirmed by
    // then goes on in the background (a lease's release is retried across reconnects), counted
    // as a background cleanup.
    void fail(error_code ec)
    {
        failure_ = ec;
        auto self = shared_from_this();
        for (auto& l : taken_) {
            if (!l.owns_lock()) continue;
            ++releasing_;
            l.async_release([self](error_code) {
                --self->releasing_;
                if (self->backgrounded_ > 0) {
                    --self->backgrounded_;
                    self->s_->metrics().background_cleanup_done();
                } else if (self->releasing_ == 0) {
                    self->complete(self->failure_);
                }
            });
        }
        if (releasing_ == 0) return complete(failure_);
        grace_ = std::make_unique<asio::steady_timer>(s_->executor(), cleanup_grace);
        grace_->async_wait([self](error_code e) {
            if (e || self->done_) return;
            self->backgrounded_ = self->releasing_;
            for (std::size_t i = 0; i < self->backgrounded_; ++i) self->s_->metrics().background_cleanup_started();
            self->complete(self->failure_);
        });
    }

    void complete(error_code ec)
    {
        if (done_) return;
        done_ = true;
        if (grace_) grace_->cancel();
        results r;
        if (!ec) r = std::move(taken_);
        if (in_initiation_) h_.post(s_->executor(), ec, std::move(r));
        else h_.complete(ec, std::move(r));
    }

    session_ptr s_;
    std::vector<lock_spec> specs_;
    std::shared_ptr<const lock_options> options_;
    stored_handler<error_code, results> h_;
    std::vector<lease> taken_;  // in the order of specs_
    std::vector<std::size_t> order_;
    std::size_t next_ = 0;      // into order_
    bool try_only_ = false;
    std::optional<steady::time_point> deadline_;
    asio::cancellation_signal child_;  // to the single acquire in flight
    bool acquiring_ = false;
    bool cancelled_ = false;
    bool done_ = false;
    bool in_initiation_ = false;
    error_code failure_;
    std::size_t releasing_ = 0;
    std::size_t backgrounded_ = 0;  // releases still running after the grace (see fail)
    std::unique_ptr<asio::steady_timer> grace_;
};

}  // namespace

void initiate_multi_acquire(session_ptr s, std::vector<lock_spec> specs, lock_options options,
                            std::optional<std::chrono::steady_clock::duration> timeout,
                            handler<error_code, std::vector<lease>> h)
{
    std::make_shared<multi_acquire_op>(std::move(s), std::move(specs), std::move(options), timeout, std::move(h))
        ->start();
}

}  // namespace zklock::detail
