// multi_lock as a sans-io machine: which lock to take next and under what deadline, and what a
// failure, a cancel or the cleanup grace leads to. Time is an input (`now`); the acquires, the
// releases and the grace's timer are multi_lock.cpp's, which performs each action.
#pragma once

#include "core/deadline.hpp"

#include <zklock/error.hpp>
#include <zklock/multi_lock.hpp>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <optional>
#include <tuple>
#include <vector>

namespace zklock::detail {

class multi_lock_fsm {
public:
    struct action {
        enum class kind {
            none,            ///< wait for the next event
            acquire,         ///< acquire specs[index], under `time_left` (none: no deadline)
            cancel_acquire,  ///< cancel the acquire in flight: it completes with operation_aborted
            release,         ///< release every lease taken that still holds; tell releasing(count)
            arm_grace,       ///< the cleanup grace starts: grace_passed() when it ends
            complete,        ///< complete with `ec` (the leases taken, if no error)
        };
        kind what = kind::none;
        std::size_t index = 0;
        std::optional<steady::duration> time_left;
        error_code ec;
        /// complete after the grace: releases still running, which go on in the background.
        std::size_t backgrounded = 0;
    };
    using kind = action::kind;

    /// `timeout` <= 0 means "try once", as for the single locks: each lock is tried once, all or
    /// nothing. Otherwise one deadline (saturated: duration::max() never overflows) covers the set.
    multi_lock_fsm(const std::vector<lock_spec>& specs, std::optional<steady::duration> timeout, steady::time_point now)
        : order_(specs.size()), try_only_(timeout && *timeout <= steady::duration::zero())
    {
        if (timeout && !try_only_) deadline_ = deadline_after(*timeout, now);
        // Canonical order (path, then kind): two sets that share locks take them in the same order.
        std::iota(order_.begin(), order_.end(), std::size_t{0});
        std::sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
            return std::tie(specs[a].path, specs[a].kind) < std::tie(specs[b].path, specs[b].kind);
        });
        bad_ = specs.empty();
        for (std::size_t i = 1; i < order_.size(); ++i) bad_ = bad_ || specs[order_[i]].path == specs[order_[i - 1]].path;
    }

    bool try_only() const noexcept { return try_only_; }
    bool done() const noexcept { return done_; }
    /// The specs' indexes in the order they are taken.
    const std::vector<std::size_t>& order() const noexcept { return order_; }

    /// No spec, or two on one path: refused, nothing taken.
    action start(steady::time_point now)
    {
        if (bad_) return complete(errc::invalid_argument);
        return step(now);
    }

    /// The acquire of specs[index] completed. `earlier_lost`: why the first lock taken before it
    /// that reads lost now is lost, or empty.
    action acquired(error_code ec, error_code earlier_lost, steady::time_point now)
    {
        acquiring_ = false;
        if (ec) return fail(ec);
        ++next_;
        // A lock taken before was lost while this one was awaited (its session presumed expired,
        // its node deleted): the set is not held, and fails with that loss.
        if (earlier_lost) return fail(earlier_lost);
        if (cancelled_) return fail(asio::error::operation_aborted);
        return step(now);
    }

    /// Cancelled: the acquire in flight undoes itself, then what was taken is released.
    action cancel()
    {
        if (cancelled_ || failure_ || done_) return {};
        cancelled_ = true;
        // Between steps nothing is in flight: the next step comes only from acquired(), which
        // sees cancelled_.
        if (acquiring_) return {kind::cancel_acquire};
        return {};
    }

    /// After a release action: how many releases started.
    action releasing(std::size_t count)
    {
        releasing_ = count;
        if (count == 0) return complete(failure_);
        return {kind::arm_grace};
    }

    /// One release ended (whatever its result). With the grace passed, it was in the background.
    action released()
    {
        if (releasing_ > 0) --releasing_;
        if (done_ || releasing_ > 0) return {};
        return complete(failure_);
    }

    /// The grace ended with releases still running: complete now, they go on in the background.
    action grace_passed()
    {
        if (done_) return {};
        auto a = complete(failure_);
        a.backgrounded = releasing_;
        return a;
    }

private:
    action step(steady::time_point now)
    {
        if (next_ == order_.size()) return complete({});
        std::optional<steady::duration> left;
        if (deadline_) {
            left = time_left(*deadline_, now);
            if (*left <= steady::duration::zero()) return fail(errc::timeout);
        }
        acquiring_ = true;
        return {kind::acquire, order_[next_], left};
    }

    action fail(error_code ec)
    {
        failure_ = ec;
        return {kind::release};
    }

    action complete(error_code ec)
    {
        done_ = true;
        action a{kind::complete};
        a.ec = ec;
        return a;
    }

    std::vector<std::size_t> order_;
    std::size_t next_ = 0;  // into order_
    bool try_only_ = false;
    bool bad_ = false;
    std::optional<steady::time_point> deadline_;
    bool acquiring_ = false;
    bool cancelled_ = false;
    bool done_ = false;
    error_code failure_;
    std::size_t releasing_ = 0;
};

}  // namespace zklock::detail
