// The hot-lock demo: cohort mode (lock_options::cohort). S sessions x K coroutines hammer one lock
// for a few seconds, first each coroutine with its own ZooKeeper node (the plain recipe), then in
// cohort mode (the coroutines of a session queue locally behind one node). For each mode it prints
// acquisitions per second, ZooKeeper creates per acquisition, each session's share, and the
// longest run of grants one session had while another was waiting, and it checks every grant:
// one holder at a time, lease::fence() strictly increasing. Exit status 3 if a check failed.
//
//   hot_lock_demo [--sessions S] [--per-session K] [--seconds T] [--hold-us H] [--budget B]
//
// Server list from $ZK_SERVERS (default 127.0.0.1:2181).
#include <zklock/zklock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

struct options {
    int sessions = 4;
    int per_session = 8;
    double seconds = 2;
    int hold_us = 0;
    std::uint32_t budget = zklock::lock_options{}.max_local_handoffs;
};

struct outcome {
    std::size_t grants = 0;
    double per_s = 0;
    double creates_per_grant = 0;
    std::vector<std::size_t> per_session;
    std::size_t longest_run_while_others_wait = 0;
    int violations = 0;
};

std::uint64_t creates(const zklock::session& s)
{
    for (const auto& [t, n] : s.metrics().requests)
        if (t == "create") return n;
    return 0;
}

asio::awaitable<outcome> hammer(const options& o, std::vector<std::unique_ptr<zklock::session>>& sessions,
                                const std::string& path, bool cohort)
{
    auto ex = co_await asio::this_coro::executor;
    zklock::lock_options lo;
    lo.cohort = cohort;
    lo.max_local_handoffs = o.budget;
    std::vector<std::unique_ptr<zklock::mutex>> locks;
    std::uint64_t creates0 = 0;
    for (auto& s : sessions) {
        locks.push_back(std::make_unique<zklock::mutex>(*s, path, lo));
        creates0 += creates(*s);
    }
    outcome out;
    out.per_session.assign(sessions.size(), 0);
    int holders = 0, done = 0;
    zklock::fence_token last{};
    std::vector<int> waiting(sessions.size(), 0);  // coroutines of each session waiting now
    int run_session = -1;
    std::size_t run = 0;
    const auto stop = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o.seconds));
    const auto t0 = clock_type::now();
    const int total = o.sessions * o.per_session;
    for (int i = 0; i < total; ++i) {
        asio::co_spawn(ex, [&, i]() -> asio::awaitable<void> {
            const auto s = static_cast<std::size_t>(i % o.sessions);
            asio::steady_timer hold(ex);
            while (clock_type::now() < stop) {
                ++waiting[s];
                auto lease = co_await locks[s]->async_acquire(30s);
                --waiting[s];
                // The checks: one holder at a time, fences strictly increasing.
                if (++holders != 1 || !(lease.fence() > last)) ++out.violations;
                last = lease.fence();
                ++out.per_session[s];
                ++out.grants;
                // The run of grants to this session; counted only while another session waits.
                bool others_wait = false;
                for (std::size_t k = 0; k < waiting.size(); ++k) others_wait = others_wait || (k != s && waiting[k] > 0);
                if (run_session == static_cast<int>(s)) ++run;
                else run = 1, run_session = static_cast<int>(s);
                if (others_wait) out.longest_run_while_others_wait = std::max(out.longest_run_while_others_wait, run);
                if (o.hold_us > 0) {
                    hold.expires_after(std::chrono::microseconds(o.hold_us));
                    co_await hold.async_wait(asio::deferred);
                }
                --holders;
                co_await lease.async_release();
            }
            ++done;
        }, asio::detached);
    }
    asio::steady_timer poll(ex);
    while (done < total) {
        poll.expires_after(10ms);
        co_await poll.async_wait(asio::deferred);
    }
    out.per_s = static_cast<double>(out.grants) / std::chrono::duration<double>(clock_type::now() - t0).count();
    std::uint64_t made = 0;
    for (auto& s : sessions) made += creates(*s);
    out.creates_per_grant = out.grants ? static_cast<double>(made - creates0) / static_cast<double>(out.grants) : 0;
    co_return out;
}

void print(const char* mode, const outcome& r)
{
    std::printf("  %-8s %9.0f acquisitions/s  %6.3f creates per acquisition  longest run while others wait %3zu  "
                "per session",
                mode, r.per_s, r.creates_per_grant, r.longest_run_while_others_wait);
    for (auto n : r.per_session) std::printf(" %zu", n);
    std::printf("  checks %s\n", r.violations ? "FAILED" : "ok");
}

asio::awaitable<int> run(options o)
{
    auto ex = co_await asio::this_coro::executor;
    const char* env = std::getenv("ZK_SERVERS");
    const std::string servers = env ? env : "127.0.0.1:2181";
    std::vector<std::unique_ptr<zklock::session>> sessions;
    for (int i = 0; i < o.sessions; ++i) {
        sessions.push_back(std::make_unique<zklock::session>(ex, zklock::session_config{.servers = servers}));
        co_await sessions.back()->async_connect();
    }
    const std::string path = "/zklock-demo/hot-" + std::to_string(::getpid());
    std::printf("zklock hot-lock demo: %d sessions x %d coroutines on one lock %s, %.1f s per mode, hold %d us, "
                "one thread\n",
                o.sessions, o.per_session, path.c_str(), o.seconds, o.hold_us);
    const auto plain = co_await hammer(o, sessions, path, false);
    print("plain", plain);
    const auto cohort = co_await hammer(o, sessions, path, true);
    print("cohort", cohort);
    std::printf("  cohort mode: %.1fx the acquisitions/s; a session gives the lock up after at most %u local "
                "grants once another waits\n",
                plain.per_s > 0 ? cohort.per_s / plain.per_s : 0.0, o.budget);
    for (auto& s : sessions) co_await s->async_close();
    co_return plain.violations || cohort.violations ? 3 : 0;
}

}  // namespace

int main(int argc, char** argv)
{
    options o;
    for (int i = 1; i < argc; ++i) {
        auto arg = [&](const char* name) { return std::strcmp(argv[i], name) == 0 && i + 1 < argc; };
        if (arg("--sessions")) o.sessions = std::atoi(argv[++i]);
        else if (arg("--per-session")) o.per_session = std::atoi(argv[++i]);
        else if (arg("--seconds")) o.seconds = std::atof(argv[++i]);
        else if (arg("--hold-us")) o.hold_us = std::atoi(argv[++i]);
        else if (arg("--budget")) o.budget = static_cast<std::uint32_t>(std::atoi(argv[++i]));
        else {
            std::fprintf(stderr,
                         "usage: hot_lock_demo [--sessions S] [--per-session K] [--seconds T] [--hold-us H] [--budget B]\n");
            return 2;
        }
    }
    if (o.sessions < 1 || o.per_session < 1 || o.seconds <= 0 || o.hold_us < 0) {
        std::fprintf(stderr, "hot_lock_demo: counts and times must be positive\n");
        return 2;
    }
    asio::io_context ioc;
    int status = 1;
    asio::co_spawn(ioc, run(o), [&](std::exception_ptr e, int rc) {
        try {
            if (e) std::rethrow_exception(e);
            status = rc;
        } catch (const std::exception& ex) {
            std::fprintf(stderr, "hot_lock_demo: %s\n", ex.what());
        }
    });
    ioc.run();
    return status;
}
