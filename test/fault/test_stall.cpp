// A holder process stopped with SIGSTOP past its session timeout while another session takes the
// lock: what it reads when it runs again.
#include "fault_common.hpp"

#include "support/process_util.hpp"

#include <signal.h>

#include <sstream>

using namespace zklock;
using namespace zklock::test;

namespace {

using clock_type = std::chrono::steady_clock;

struct sample {
    clock_type::time_point at;
    std::string status;
};

/// The child's samples ("<ns> <status>" lines), in order.
std::vector<sample> samples_of(const std::string& out)
{
    std::vector<sample> v;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream l(line);
        long long ns = 0;
        std::string st;
        if (line.starts_with("held") || !(l >> ns >> st)) continue;
        v.push_back({clock_type::time_point(std::chrono::nanoseconds(ns)), st});
    }
    return v;
}

}  // namespace

TEST_CASE("fault 4s: a holder stopped with SIGSTOP past its session reads lost at its first sample after SIGCONT")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto& server = fault_server();
        const auto path = unique_path("sigstop");
        const auto T = 1000ms;
        scratch_dir dir{"zklock-stall"};
        child_process holder;
        holder.start({ZKLOCK_STALL_HOLDER, server.connect_string(), path, std::to_string(T.count()), "12"},
                     dir / "out", dir / "err");
        CHECK(co_await eventually([&] { return holder.out().starts_with("held "); }, 20s));
        REQUIRE_MESSAGE(holder.out().starts_with("held "), holder.err());

        session ws{ex, config_for(server.connect_string(), 4000ms)};
        co_await connect(ws);
        mutex mw{ws, path};
        std::optional<clock_type::time_point> granted;
        lease wl;
        asio::co_spawn(ex, [&]() -> awaitable<void> {
            wl = co_await mw.async_acquire(30s);
            granted = clock_type::now();
        }, asio::detached);
        CHECK(co_await wait_children(ws, path, 2) == 2);

        holder.signal(SIGSTOP);
        const auto stopped = clock_type::now();
        CHECK(co_await eventually([&] { return granted.has_value(); }, 10s));
        REQUIRE(granted);
        // Stopped for 2.5 T in all.
        co_await sleep_until(stopped + T * 5 / 2);
        const auto resumed = clock_type::now();
        holder.signal(SIGCONT);
        MESSAGE("the other session was granted " << std::chrono::duration<double>(*granted - stopped).count()
                                                 << " s after the holder stopped");

        CHECK(co_await eventually([&] {
            const auto s = samples_of(holder.out());
            return !s.empty() && s.back().at > resumed;
        }, 10s));
        const auto s = samples_of(holder.out());
        const auto first = std::find_if(s.begin(), s.end(), [&](const sample& x) { return x.at > resumed; });
        REQUIRE(first != s.end());
        MESSAGE("first sample after SIGCONT, " << std::chrono::duration<double>(first->at - resumed).count()
                                               << " s after it: " << first->status);
        CHECK(first->status == "lost");
        // No sample taken after the other session's grant says the lock is still ours.
        for (const auto& x : s)
            if (x.at >= *granted) CHECK_MESSAGE(x.status == "lost", "a sample after the grant read " << x.status);
        holder.kill_and_reap();
        co_await wl.async_release();
        CHECK(co_await wait_children(ws, path, 0) == 0);
    }, 90s);
}
