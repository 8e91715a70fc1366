// What a session counts (zklock/metrics.hpp): plain increments, called by the recipes and the
// bridge on the session's executor (so no atomics), read by session::metrics().
//
// The per-path gauge map holds only the paths with waiters or holders right now: an entry is
// erased when both reach 0, so it never grows beyond what the session is doing.
#pragma once

#include <zklock/types.hpp>
#include <zklock/detail/unique_function.hpp>
#include <zklock/error.hpp>
#include <zklock/metrics.hpp>

#include <boost/unordered/unordered_flat_map.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace zklock::detail {

/// A histogram with fixed bounds (per-bucket counts; the snapshot makes them cumulative).
template <std::size_t N> struct fixed_histogram {
    const std::array<double, N>* bounds;
    std::array<std::uint64_t, N + 1> buckets{};  // the last one: above every bound
    double sum = 0;
    std::uint64_t count = 0;

    void observe(double v) noexcept
    {
        std::size_t i = 0;
        while (i < N && v > (*bounds)[i]) ++i;
        ++buckets[i];
        sum += v;
        ++count;
    }
    histogram_snapshot snapshot() const;
};

/// 1-2-5 steps from 100 µs to 100 s: the wait and hold times (seconds).
inline constexpr std::array<double, 19> duration_bounds{1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 0.1,
                                                        0.2,  0.5,  1,    2,    5,    10,   20,   50,   100};
/// 1-2-5 steps from 1 to 100 000 children: listing sizes.
inline constexpr std::array<double, 16> size_bounds{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000};

enum class request_type : std::uint8_t { create, remove, exists, get_data, set_data, get_children, multi, sync, count_ };

class metrics_state {
public:
    using clock = std::chrono::steady_clock;

    /// An acquire started: a waiter on `path` until acquire_finished.
    void acquire_started(lock_kind k, const std::string& path);
    /// It completed: granted (no error), timed out, cancelled or failed. `wait`: since its start.
    /// `handoff`: it was granted after waiting behind another node; `with_listing`: that grant
    /// came from a listing of the path (else a handoff without one).
    void acquire_finished(lock_kind k, const std::string& path, error_code ec, clock::duration wait, bool handoff,
                          bool with_listing);
    /// A lease ended (released or lost) after holding `path` for `held`. `lost_reason`: empty for
    /// a release, else errc::lock_lost, session_expired, session_closed.
    void lease_ended(const std::string& path, clock::duration held, error_code lost_reason);
    void request(request_type t) noexcept { ++requests_[static_cast<std::size_t>(t)]; }
    void listing(std::size_t children) noexcept { listing_size_.observe(static_cast<double>(children)); }
    /// Cohort mode: a local grant, as the first holder of a fresh node or handed on on the same one.
    void cohort_grant(bool first_on_node) noexcept { ++(first_on_node ? cohort_turns_ : cohort_local_); }
    void reconnect() noexcept { ++reconnects_; }
    void expiry() noexcept { ++expiries_; }
    void presumed_expiry() noexcept { ++presumed_expiries_; }
    /// An acquire completed before its node was gone; its deletion goes on (then: ..._done).
    void background_cleanup_started() noexcept
    {
        ++background_cleanups_;
        ++background_cleanups_pending_;
    }
    void background_cleanup_done() noexcept
    {
        if (background_cleanups_pending_ > 0) --background_cleanups_pending_;
    }

    /// Whether some path has waiters or holders now.
    bool engaged() const noexcept { return !paths_.empty(); }
    /// Called with engaged() each time it changes (the session probes its leader while engaged).
    void on_engagement_change(unique_function<void(bool)> f) { on_engaged_ = std::move(f); }

    metrics_snapshot snapshot() const;

private:
    struct gauges {
        std::uint64_t waiters = 0;
        std::uint64_t holders = 0;
    };
    acquire_counters& counters(lock_kind k) noexcept { return by_kind_[static_cast<std::size_t>(k)]; }
    // A flat table: a path's entry comes and goes with each uncontended cycle, and a session may
    // have thousands of paths engaged at once. No entry is held across an insert.
    using gauge_map = boost::unordered_flat_map<std::string, gauges>;
    void release_gauge(gauge_map::iterator it);
    void engagement_changed(bool was)
    {
        if (was != engaged() && on_engaged_) on_engaged_(engaged());
    }

    std::array<acquire_counters, std::size(lock_kinds)> by_kind_;  // by lock_kind's value
    std::vector<std::pair<error_code, std::uint64_t>> failed_;  // few distinct errors: a vector
    fixed_histogram<duration_bounds.size()> wait_{&duration_bounds};
    fixed_histogram<duration_bounds.size()> hold_{&duration_bounds};
    fixed_histogram<size_bounds.size()> listing_size_{&size_bounds};
    std::uint64_t handoffs_listed_ = 0, handoffs_unlisted_ = 0;
    std::uint64_t cohort_turns_ = 0, cohort_local_ = 0;
    std::uint64_t lost_deleted_ = 0, lost_expired_ = 0, lost_closed_ = 0;
    std::uint64_t reconnects_ = 0, expiries_ = 0, presumed_expiries_ = 0;
    std::uint64_t background_cleanups_ = 0, background_cleanups_pending_ = 0;
    std::array<std::uint64_t, static_cast<std::size_t>(request_type::count_)> requests_{};
    gauge_map paths_;
    unique_function<void(bool)> on_engaged_;
};

}  // namespace zklock::detail
