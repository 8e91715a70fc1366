// The fairness demo: many coroutine waiters over several sessions contend for one lock, on one
// thread. It prints, live, every grant against the waiter's place in the queue, then a summary:
// queue-order inversions, the wait-time distribution and Jain's fairness index.
//
//   fairness_demo [--waiters N] [--sessions S] [--rounds R] [--hold-ms H] [--plain | --color]
//
// Colour only on a terminal (and not when NO_COLOR is set): --plain turns it off, --color on.
//
// Server list from $ZK_SERVERS (default 127.0.0.1:2181).
#include <zklock/zklock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
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
    int waiters = 64;
    int sessions = 8;
    int rounds = 3;
    int hold_ms = 2;
    bool plain = false;  // no ANSI colour (decided in main: a terminal, NO_COLOR, --plain, --color)
};

struct grant {
    int waiter;
    int session;
    std::int64_t seq;
    std::int64_t token;
    double wait_ms;
};

const char* color(const options& o, const char* code) { return o.plain ? "" : code; }

asio::awaitable<void> pause(std::chrono::steady_clock::duration d)
{
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::deferred);
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
    const std::string path = "/zklock-demo/fairness-" + std::to_string(::getpid());
    std::printf("%szklock fairness demo%s: %d coroutine waiters over %d ZooKeeper sessions, one thread, lock %s\n",
                color(o, "\033[1m"), color(o, "\033[0m"), o.waiters, o.sessions, path.c_str());

    std::vector<grant> grants;
    std::vector<int> per_waiter(static_cast<std::size_t>(o.waiters), 0);
    int inversions = 0;
    for (int round = 1; round <= o.rounds; ++round) {
        // A gate holds the lock while every waiter queues, so the queue order is plain to see.
        zklock::mutex gate_lock{*sessions[0], path};
        auto gate = co_await gate_lock.async_acquire(10s);
        int done = 0;
        std::vector<grant> round_grants;
        const auto t_request = clock_type::now();
        for (int w = 0; w < o.waiters; ++w) {
            asio::co_spawn(ex, [&, w]() -> asio::awaitable<void> {
                const int s = w % o.sessions;
                zklock::mutex m{*sessions[static_cast<std::size_t>(s)], path};
                auto lease = co_await m.async_acquire(60s);
                const double wait_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t_request).count();
                auto seq = zklock::queue_sequence(lease.node()).value_or(-1);
                round_grants.push_back({w, s, seq, lease.fencing_token(), wait_ms});
                co_await pause(std::chrono::milliseconds(o.hold_ms));
                co_await lease.async_release();
                ++done;
            }, asio::detached);
        }
        // Wait until all have queued behind the gate.
        for (int i = 0; i < 2000; ++i) {
            auto kids = co_await sessions[0]->async_get_children(path);
            if (static_cast<int>(kids.size()) >= o.waiters + 1) break;
            co_await pause(5ms);
        }
        std::printf("\n%sround %d%s: %d waiters queued; opening the gate\n", color(o, "\033[1;36m"), round,
                    color(o, "\033[0m"), o.waiters);
        std::printf("  %-6s %-8s %-8s %-12s %-10s\n", "grant", "waiter", "session", "queue seq", "wait ms");
        co_await gate.async_release();
        std::size_t shown = 0;
        while (done < o.waiters) {
            while (shown < round_grants.size()) {
                const auto& g = round_grants[shown];
                const bool inv = shown > 0 && g.seq < round_grants[shown - 1].seq;
                inversions += inv;
                std::printf("  %s#%-5zu w%-7d s%-7d %-12lld %-10.2f%s%s\n", inv ? color(o, "\033[31m") : "", shown + 1,
                            g.waiter, g.session, static_cast<long long>(g.seq), g.wait_ms, inv ? " OUT OF ORDER" : "",
                            inv ? color(o, "\033[0m") : "");
                ++per_waiter[static_cast<std::size_t>(g.waiter)];
                ++shown;
            }
            co_await pause(2ms);
        }
        while (shown < round_grants.size()) ++per_waiter[static_cast<std::size_t>(round_grants[shown++].waiter)];
        grants.insert(grants.end(), round_grants.begin(), round_grants.end());
    }

    // Summary.
    std::vector<double> waits;
    for (auto& g : grants) waits.push_back(g.wait_ms);
    std::sort(waits.begin(), waits.end());
    auto pct = [&](double p) { return waits[std::min(waits.size() - 1, static_cast<std::size_t>(p * waits.size()))]; };
    double sum = 0, sum2 = 0;
    for (int c : per_waiter) {
        sum += c;
        sum2 += static_cast<double>(c) * c;
    }
    const double jain = sum * sum / (static_cast<double>(per_waiter.size()) * sum2);
    std::printf("\n%ssummary%s\n", color(o, "\033[1m"), color(o, "\033[0m"));
    std::printf("  grants                  %zu (%d rounds x %d waiters)\n", grants.size(), o.rounds, o.waiters);
    std::printf("  queue-order inversions  %s%d%s\n", color(o, inversions ? "\033[31m" : "\033[32m"), inversions,
                color(o, "\033[0m"));
    std::printf("  Jain fairness index     %.4f\n", jain);
    std::printf("  wait ms                 p50 %.2f  p90 %.2f  p99 %.2f  max %.2f\n", pct(0.5), pct(0.9), pct(0.99), waits.back());
    // Wait-time histogram: 10 buckets up to the max.
    const double top = std::max(waits.back(), 1e-3);
    int buckets[10] = {};
    for (double w : waits) ++buckets[std::min(9, static_cast<int>(w / top * 10))];
    const int most = *std::max_element(std::begin(buckets), std::end(buckets));
    for (int b = 0; b < 10; ++b) {
        std::printf("  %7.1f-%-7.1f ms |%s%s%s %d\n", top * b / 10, top * (b + 1) / 10, color(o, "\033[32m"),
                    std::string(static_cast<std::size_t>(most ? 40 * buckets[b] / most : 0), '#').c_str(),
                    color(o, "\033[0m"), buckets[b]);
    }
    for (auto& s : sessions) co_await s->async_close();
    co_return inversions == 0 ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv)
{
    options o;
    int colour = -1;  // -1: decide by the terminal
    for (int i = 1; i < argc; ++i) {
        auto arg = [&](const char* name) { return std::strcmp(argv[i], name) == 0 && i + 1 < argc; };
        if (arg("--waiters")) o.waiters = std::atoi(argv[++i]);
        else if (arg("--sessions")) o.sessions = std::atoi(argv[++i]);
        else if (arg("--rounds")) o.rounds = std::atoi(argv[++i]);
        else if (arg("--hold-ms")) o.hold_ms = std::atoi(argv[++i]);
        else if (std::strcmp(argv[i], "--plain") == 0) colour = 0;
        else if (std::strcmp(argv[i], "--color") == 0) colour = 1;
        else {
            std::fprintf(stderr, "usage: fairness_demo [--waiters N] [--sessions S] [--rounds R] [--hold-ms H] [--plain | --color]\n");
            return 2;
        }
    }
    if (colour < 0) {
        const char* no_color = std::getenv("NO_COLOR");  // https://no-color.org
        colour = ::isatty(STDOUT_FILENO) && !(no_color && *no_color) ? 1 : 0;
    }
    o.plain = colour == 0;
    if (o.waiters < 1 || o.sessions < 1 || o.rounds < 1 || o.hold_ms < 0) {
        std::fprintf(stderr, "fairness_demo: counts must be positive\n");
        return 2;
    }
    asio::io_context ioc;
    int status = 1;
    asio::co_spawn(ioc, run(o), [&](std::exception_ptr e, int rc) {
        try {
            if (e) std::rethrow_exception(e);
            status = rc;
        } catch (const std::exception& ex) {
            std::fprintf(stderr, "fairness_demo: %s\n", ex.what());
        }
    });
    ioc.run();
    return status;
}
