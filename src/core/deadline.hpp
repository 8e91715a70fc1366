// Deadline arithmetic that saturates instead of overflowing: a timeout of duration::max() (or
// milliseconds::max() in a config) means "no practical limit", never "already expired".
#pragma once

#include <chrono>

namespace zklock::detail {

using steady = std::chrono::steady_clock;

/// `d` in the steady clock's unit, clamped to its range (milliseconds::max() is ~10^6 times more
/// than steady_clock::duration can hold in nanoseconds).
template <class Rep, class Period> constexpr steady::duration to_steady(std::chrono::duration<Rep, Period> d) noexcept
{
    using target = steady::duration;
    using wide = std::chrono::duration<long double, target::period>;
    const wide w = std::chrono::duration_cast<wide>(d);
    if (w >= wide(target::max())) return target::max();
    if (w <= wide(target::min())) return target::min();
    return std::chrono::duration_cast<target>(d);
}

/// now + d, clamped to [now, time_point::max()] (d <= 0: now).
inline steady::time_point deadline_after(steady::duration d, steady::time_point now = steady::now()) noexcept
{
    if (d <= steady::duration::zero()) return now;
    if (now.time_since_epoch() > steady::duration::max() - d) return steady::time_point::max();
    return now + d;
}

/// The time left until `deadline` (zero if it has passed).
inline steady::duration time_left(steady::time_point deadline, steady::time_point now = steady::now()) noexcept
{
    if (deadline <= now) return steady::duration::zero();
    return deadline - now;  // deadline > now >= epoch: cannot overflow
}

/// How long an operation whose deadline has passed (or that was cancelled) waits for the server to
/// confirm its cleanup (our node deleted, a lease released) before it completes anyway: the
/// cleanup goes on in the background. The bound documented in basic_lock.hpp and multi_lock.hpp.
inline constexpr auto cleanup_grace = std::chrono::milliseconds(250);

/// A session timeout for the C client's int parameter, clamped to [0, 2^28] ms. 2^28 ms (3 days)
/// is far above any server's maxSessionTimeout, and the client computes recv_timeout * 2 / 3 in an
/// int: from 2^30 ms on it never connects (measured with 3.8.0).
template <class Rep, class Period> constexpr int to_session_timeout_ms(std::chrono::duration<Rep, Period> d) noexcept
{
    constexpr long double limit = 1L << 28;
    const auto ms = std::chrono::duration_cast<std::chrono::duration<long double, std::milli>>(d).count();
    if (ms <= 0) return 0;
    if (ms >= limit) return static_cast<int>(limit);
    return static_cast<int>(ms);
}

}  // namespace zklock::detail
