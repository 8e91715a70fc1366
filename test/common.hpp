// Shared helpers of the zklock tests.
#pragma once

#include <zklock/zklock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include <unistd.h>

namespace zklock::test {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using asio::awaitable;

inline constexpr auto tuple = asio::as_tuple(asio::deferred);

/// Runs `co_main()` on a fresh io_context with a watchdog: a hang fails the test instead of
/// stalling CI. Exceptions from the coroutine fail the test with their message.
template <class F> void run(F&& co_main, std::chrono::seconds limit = std::chrono::seconds(90))
{
    asio::io_context ioc;
    bool done = false;
    std::exception_ptr error;
    asio::co_spawn(ioc, std::forward<F>(co_main)(), [&](std::exception_ptr e) {
        done = true;
        error = e;
    });
    ioc.run_for(limit);
    REQUIRE_MESSAGE(done, "the test coroutine did not finish within " << limit.count() << " s (hang)");
    if (error) std::rethrow_exception(error);
}

/// A lock path no other test (or earlier run) uses.
inline std::string unique_path(const std::string& name)
{
    static std::atomic<int> counter{0};
    return "/zklock-test/" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

inline awaitable<void> sleep_for(std::chrono::steady_clock::duration d)
{
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::deferred);
}

/// Suspends until `when`.
inline awaitable<void> sleep_until(std::chrono::steady_clock::time_point when)
{
    asio::steady_timer t(co_await asio::this_coro::executor, when);
    co_await t.async_wait(asio::deferred);
}

/// Connects a session with test-friendly timeouts.
inline awaitable<void> connect(session& s) { co_await s.async_connect(asio::deferred); }

inline session_config config_for(const std::string& servers, std::chrono::milliseconds session_timeout = 4000ms)
{
    session_config c;
    c.servers = servers;
    c.session_timeout = session_timeout;
    c.connect_timeout = 15s;
    return c;
}

/// Sessions of one test, each connected; `[i]` wraps around.
struct sessions {
    std::vector<std::unique_ptr<session>> all;
    session& operator[](std::size_t i) { return *all[i % all.size()]; }
};

/// Opens `n` sessions to `servers`, one after the other.
inline awaitable<sessions> open_sessions(std::string servers, int n)
{
    auto ex = co_await asio::this_coro::executor;
    sessions s;
    for (int i = 0; i < n; ++i) {
        s.all.push_back(std::make_unique<session>(ex, config_for(servers)));
        co_await connect(*s.all.back());
    }
    co_return s;
}

/// The queue nodes under `path` (empty when the directory does not exist).
inline awaitable<std::vector<std::string>> children_of(session& s, const std::string& path)
{
    auto [ec, kids] = co_await s.async_get_children(path, tuple);
    if (ec == zk_errc::no_node) co_return std::vector<std::string>{};
    if (ec) throw boost::system::system_error(ec);
    co_return kids;
}

/// Polls until `path` has `n` children, or the deadline passes. Returns the last count.
inline awaitable<std::size_t> wait_children(session& s, const std::string& path, std::size_t n,
                                            std::chrono::milliseconds limit = 20s)
{
    auto deadline = std::chrono::steady_clock::now() + limit;
    std::size_t count = 0;
    while (std::chrono::steady_clock::now() < deadline) {
        count = (co_await children_of(s, path)).size();
        if (count == n) break;
        co_await sleep_for(10ms);
    }
    co_return count;
}

/// Coroutines a test runs beside its main coroutine, which joins them before it returns: they may
/// then use its locals by reference. A coroutine that touches them after the last thing the main
/// coroutine waits for would otherwise run on against a freed frame (run() goes on until the
/// io_context runs out of work). The count of those still running and the first exception one
/// threw live behind a shared pointer: a coroutine that ends after the group is gone (a join that
/// timed out) touches no freed memory. Single-threaded: use it from the executor they run on.
class task_group {
public:
    explicit task_group(asio::any_io_executor ex) : ex_(std::move(ex)) {}

    /// Spawns `f` (what asio::co_spawn takes: an awaitable, or a function returning one).
    template <class F> void spawn(F&& f)
    {
        ++state_->running;
        asio::co_spawn(ex_, std::forward<F>(f), [st = state_](std::exception_ptr e, auto&&...) {
            --st->running;
            if (e && !st->error) st->error = e;
        });
    }

    /// Polls every 10 ms until every coroutine spawned has finished, or `limit` passes. Rethrows
    /// the first exception one of them threw, so that it fails the test instead of vanishing;
    /// otherwise returns whether they all finished.
    awaitable<bool> join(std::chrono::milliseconds limit = 20s)
    {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (state_->running > 0 && std::chrono::steady_clock::now() < deadline) co_await sleep_for(10ms);
        if (state_->error) std::rethrow_exception(std::exchange(state_->error, nullptr));
        co_return state_->running == 0;
    }

private:
    struct state {
        int running = 0;
        std::exception_ptr error;
    };
    asio::any_io_executor ex_;
    std::shared_ptr<state> state_ = std::make_shared<state>();
};

/// Appends every status change of `l` to `seen`, from a coroutine of `tasks`, until the lease is
/// lost or released. `l` and `seen` must outlive it: join `tasks` once the lease has ended.
inline void record_statuses(task_group& tasks, lease& l, std::vector<lease_status>& seen)
{
    tasks.spawn([&l, &seen]() -> awaitable<void> {
        for (;;) {
            auto [ec, st] = co_await l.async_wait_status_change(tuple);
            if (ec) break;
            seen.push_back(st);
            if (st == lease_status::lost || st == lease_status::released) break;
        }
    });
}

/// Polls `p` every 5 ms until true or `limit` passes; returns whether it became true.
template <class Pred> awaitable<bool> eventually(Pred p, std::chrono::milliseconds limit = 20s)
{
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!p()) {
        if (std::chrono::steady_clock::now() > deadline) co_return false;
        co_await sleep_for(5ms);
    }
    co_return true;
}

}  // namespace zklock::test
