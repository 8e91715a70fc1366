// The completion-handler contract, checked with a tracking token: every handler runs exactly
// once, on its associated executor, and never inside the initiating function, including when the
// operation fails at once (bad input, not connected).
#include "../common.hpp"
#include "server.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/strand.hpp>

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <string>

using namespace zklock;
using namespace zklock::test;

namespace {

struct tracker {
    int calls = 0;
    bool inline_call = false;
    bool wrong_executor = false;
    bool initiating = false;
};

// A handler bound to `strand` that records how it was called.
template <class Strand> auto tracking(tracker& t, Strand strand)
{
    return asio::bind_executor(strand, [&t, strand](auto&&...) {
        ++t.calls;
        if (t.initiating) t.inline_call = true;
        if (!strand.running_in_this_thread()) t.wrong_executor = true;
    });
}

template <class Initiate> void initiate(tracker& t, Initiate&& f)
{
    t.initiating = true;
    f();
    t.initiating = false;
}

// Runs `ioc` until each of `ts` has been called (10 s at most), then a little longer, so that a
// second call would be counted, and readies it for the next run.
void run_until_called(asio::io_context& ioc, std::initializer_list<const tracker*> ts)
{
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    const auto all_called = [&] { return std::ranges::all_of(ts, [](const tracker* t) { return t->calls > 0; }); };
    while (!all_called() && !ioc.stopped() && std::chrono::steady_clock::now() < deadline)
        ioc.run_one_until(deadline);
    ioc.restart();
    ioc.run_for(200ms);
    ioc.restart();
}

void check(const tracker& t, const char* what)
{
    CAPTURE(what);
    CHECK(t.calls == 1);
    CHECK_FALSE(t.inline_call);
    CHECK_FALSE(t.wrong_executor);
}

}  // namespace

TEST_CASE("handlers run once, on their executor, never inside the initiating function")
{
    asio::io_context ioc;
    auto strand = asio::make_strand(ioc);
    session s{ioc, config_for(shared_server().connect_string())};
    session bad{ioc, {.servers = "not a server list"}};
    session idle{ioc, config_for(shared_server().connect_string())};
    const auto path = unique_path("tracking");
    mutex m{s, path};
    mutex bad_path{s, "relative"};
    mutex not_connected{idle, path};
    semaphore zero_permits{s, path + "-sem", 0};

    tracker connect, bad_connect, acquire, bad_acquire, idle_acquire, sem, children, release, lost;
    lease held;
    initiate(connect, [&] { s.async_connect(tracking(connect, strand)); });
    initiate(bad_connect, [&] { bad.async_connect(tracking(bad_connect, strand)); });
    initiate(bad_acquire, [&] { bad_path.async_acquire(1s, tracking(bad_acquire, strand)); });
    initiate(idle_acquire, [&] { not_connected.async_acquire(1s, tracking(idle_acquire, strand)); });
    initiate(sem, [&] { zero_permits.async_acquire(1s, tracking(sem, strand)); });
    run_until_called(ioc, {&connect, &bad_connect, &bad_acquire, &idle_acquire, &sem});
    REQUIRE(s.state() == session_state::connected);

    initiate(acquire, [&] {
        m.async_acquire(5s, asio::bind_executor(strand, [&](error_code ec, lease l) {
            CHECK_FALSE(ec);
            held = std::move(l);
            tracking(acquire, strand)();
        }));
    });
    initiate(children, [&] { s.async_get_children("/", tracking(children, strand)); });
    run_until_called(ioc, {&acquire, &children});
    REQUIRE(held.owns_lock());
    initiate(lost, [&] { held.async_wait_lost(tracking(lost, strand)); });
    initiate(release, [&] { held.async_release(tracking(release, strand)); });
    run_until_called(ioc, {&lost, &release});

    check(connect, "connect");
    check(bad_connect, "connect with a bad server list");
    check(bad_acquire, "acquire on a bad path");
    check(idle_acquire, "acquire on a session never connected");
    check(sem, "semaphore with zero permits");
    check(acquire, "acquire");
    check(children, "get_children");
    check(release, "release");
    check(lost, "wait_lost ended by the release");
}

namespace {

int threads_of_this_process()
{
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
    return -1;
}

}  // namespace

TEST_CASE("a released or lost lease completes at once through the session's executor, starting no thread")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session s{ex, config_for(shared_server().connect_string())};
        co_await connect(s);
        mutex m{s, unique_path("no-system-pool")};
        auto l = co_await m.async_acquire(5s);
        co_await l.async_release();
        const int before = threads_of_this_process();
        // Each completes at once (already released), posted, on this io_context.
        for (int i = 0; i < 3; ++i) {
            auto [ec] = co_await l.async_release(tuple);
            CHECK(ec == errc::already_released);
            auto [wec] = co_await l.async_wait_lost(tuple);
            CHECK(wec == errc::already_released);
            std::vector<multi_op> ops{multi_op::check("/", -1)};
            auto [gec, res] = co_await l.async_guarded_multi(std::move(ops), tuple);
            CHECK(gec == errc::already_released);
        }
        // asio::system_executor would have started Asio's system thread pool (one thread per
        // core). (Counted before the close, whose helper thread is short-lived.)
        CHECK(threads_of_this_process() == before);
        co_await s.async_close();
    });
}
