// bench/stats.hpp — the arithmetic behind the figures of bench/PROTOCOL.md. No I/O.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace zklock_bench {

/// One acquisition. Times are nanoseconds of one steady clock (the process's), t_request taken
/// before acquire is called, t_acquired when it completed, t_release_start before release is
/// called, t_released when it completed.
struct acquisition {
    int contender = 0;
    std::int64_t seq = 0;  ///< the queue node's sequence number
    std::uint64_t local = 0;  ///< cohort mode: the grant's place on its node (lease::fence().local), else 0
    std::int64_t t_request = 0;
    std::int64_t t_acquired = 0;
    std::int64_t t_release_start = 0;
    std::int64_t t_released = 0;
};

/// Nearest-rank percentile (p in [0, 1]) of an ascending vector; 0 for an empty one.
inline double percentile(const std::vector<double>& sorted, double p)
{
    if (sorted.empty()) return 0;
    auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

/// Median (the mean of the two middle values for an even count); 0 for an empty vector.
inline double median(std::vector<double> v)
{
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Jain's fairness index of per-contender counts: (Σx)² / (n·Σx²). 1 = perfectly even.
inline double jain_index(const std::vector<std::int64_t>& counts)
{
    double sum = 0, sum2 = 0;
    for (auto c : counts) {
        sum += static_cast<double>(c);
        sum2 += static_cast<double>(c) * static_cast<double>(c);
    }
    return sum2 == 0 ? 0 : sum * sum / (static_cast<double>(counts.size()) * sum2);
}

/// Sorts by grant time (t_acquired).
inline void sort_by_grant(std::vector<acquisition>& a)
{
    std::sort(a.begin(), a.end(), [](const acquisition& x, const acquisition& y) { return x.t_acquired < y.t_acquired; });
}

/// Acquisitions granted out of queue-node sequence order: in grant order, how many were granted
/// after an acquisition with a larger sequence number (each such grant counts once). Expects
/// grant order. A fair (FIFO) lock has 0.
inline std::int64_t fifo_inversions(const std::vector<acquisition>& by_grant)
{
    std::int64_t inversions = 0, highest = -1;
    for (const auto& a : by_grant) {
        if (a.seq < highest) ++inversions;
        highest = std::max(highest, a.seq);
    }
    return inversions;
}

/// The semaphore's version of fifo_inversions (expects grant order): a grant counts when its
/// sequence number is below that of a grant made at least `window` grants earlier, i.e. reorders
/// among grants fewer than `window` apart are not counted. window 1 is fifo_inversions.
inline std::int64_t fifo_inversions_window(const std::vector<acquisition>& by_grant, std::size_t window)
{
    if (window == 0) window = 1;
    std::int64_t inversions = 0, highest = -1;  // highest: the largest seq of grants 0 .. i - window
    for (std::size_t i = 0; i < by_grant.size(); ++i) {
        if (i >= window) highest = std::max(highest, by_grant[i - window].seq);
        if (by_grant[i].seq < highest) ++inversions;
    }
    return inversions;
}

/// The most half-open intervals [begin, end) open at one instant; an interval that ends where
/// another begins does not overlap it.
inline std::int64_t max_concurrent(const std::vector<std::pair<std::int64_t, std::int64_t>>& intervals)
{
    std::vector<std::pair<std::int64_t, int>> events;  // (time, +1 begin / -1 end); ends sort first
    events.reserve(2 * intervals.size());
    for (const auto& [b, e] : intervals) {
        events.emplace_back(b, +1);
        events.emplace_back(std::max(b, e), -1);
    }
    std::sort(events.begin(), events.end());
    std::int64_t open = 0, most = 0;
    for (const auto& ev : events) most = std::max(most, open += ev.second);
    return most;
}

/// Exclusive holds that overlapped any other hold (expects grant order): how many acquisitions
/// `a` with exclusive(a) have a hold [t_acquired, t_release_start) that intersects the hold of any
/// other acquisition. Each counts once. Must be 0 for a readers/writer lock's writers.
template <class Pred>
std::int64_t exclusive_overlaps(const std::vector<acquisition>& by_grant, Pred exclusive)
{
    std::int64_t n = 0, held_until = -1;  // the latest t_release_start of the grants before i
    for (std::size_t i = 0; i < by_grant.size(); ++i) {
        const auto& a = by_grant[i];
        const bool before = held_until > a.t_acquired;
        const bool after = i + 1 < by_grant.size() && by_grant[i + 1].t_acquired < a.t_release_start;
        if (exclusive(a) && (before || after)) ++n;
        held_until = std::max(held_until, a.t_release_start);
    }
    return n;
}

/// Mutual exclusion check (expects grant order): grants that came before the previous holder had
/// started to release. Must be 0 for any lock; the benchmark reports a non-zero count as an error.
inline std::int64_t overlaps(const std::vector<acquisition>& by_grant)
{
    std::int64_t n = 0;
    for (std::size_t i = 1; i < by_grant.size(); ++i)
        if (by_grant[i].t_acquired < by_grant[i - 1].t_release_start) ++n;
    return n;
}

/// Handoff times in µs (expects grant order): t_acquired of the next holder − t_release_start of
/// the previous one.
inline std::vector<double> handoffs_us(const std::vector<acquisition>& by_grant)
{
    std::vector<double> h;
    if (by_grant.size() > 1) h.reserve(by_grant.size() - 1);
    for (std::size_t i = 1; i < by_grant.size(); ++i)
        h.push_back(static_cast<double>(by_grant[i].t_acquired - by_grant[i - 1].t_release_start) / 1e3);
    std::sort(h.begin(), h.end());
    return h;
}

/// Waits (t_acquired − t_request), ascending, in µs (scale 1e3) or ms (scale 1e6).
inline std::vector<double> waits(const std::vector<acquisition>& a, double scale)
{
    std::vector<double> w;
    w.reserve(a.size());
    for (const auto& x : a) w.push_back(static_cast<double>(x.t_acquired - x.t_request) / scale);
    std::sort(w.begin(), w.end());
    return w;
}

}  // namespace zklock_bench
