// The simulation's one clock: time moves only when the scheduler moves it, and a timer that comes
// due is posted to its executor (a client's io_context), to run when that client next runs.
#pragma once

#include "zk_model.hpp"

#include <zklock/detail/unique_function.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>

namespace zklock::sim {

class virtual_clock {
public:
    using time_point = sim_clock::time_point;
    using duration = sim_clock::duration;

    /// One timer's state: its callback is empty while it is not running.
    struct entry {
        boost::asio::any_io_executor ex;
        detail::unique_function<void()> cb;
        time_point due{};
        std::uint64_t key = 0;  ///< its place in the queue (0: none)
    };

    explicit virtual_clock(time_point start) : now_(start) {}
    virtual_clock(const virtual_clock&) = delete;
    virtual_clock& operator=(const virtual_clock&) = delete;

    time_point now() const noexcept { return now_; }

    /// Runs `cb` on `e->ex` once the clock reaches `due` (replacing what `e` ran before).
    void start(const std::shared_ptr<entry>& e, time_point due, detail::unique_function<void()> cb);
    void cancel(entry& e) noexcept;
    /// When the next timer comes due, if one runs.
    std::optional<time_point> next_due() const;
    /// Moves the clock to `t` (never back): every timer due by then is posted, earliest first.
    void advance_to(time_point t);
    /// Lets go of every timer's callback without calling it.
    void drop_all();

private:
    time_point now_;
    std::uint64_t next_key_ = 1;
    // By due time, then by start order: the timers running.
    std::map<std::pair<time_point, std::uint64_t>, std::weak_ptr<entry>> queue_;
};

}  // namespace zklock::sim
