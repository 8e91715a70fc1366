// The threading rules of the guide ("Which thread may call what"), as a program on several
// threads writes them: an operation started from a thread that does not run the session's
// executor, its result awaited there with asio::use_future.
#include "../common.hpp"
#include "core/executor_check.hpp"
#include "support/zk_server.hpp"

#include <boost/asio/use_future.hpp>

#include <atomic>
#include <future>
#include <thread>

using namespace zklock;
using namespace zklock::test;

namespace {

std::atomic<int> wrong_thread_calls{0};
void count_wrong_thread(const char*) noexcept { ++wrong_thread_calls; }

zk_server& api_server()
{
    static zk_server server{server_options{.tick_time = std::chrono::milliseconds(200)}};
    return server;
}

}  // namespace

TEST_CASE("threads: use_future from a thread that does not run the executor, by way of co_spawn")
{
    asio::io_context ioc;
    auto work = asio::make_work_guard(ioc);
    std::thread runner([&] { ioc.run(); });
    auto ex = ioc.get_executor();
    session zk{ex, config_for(api_server().connect_string())};
    zklock::mutex m{zk, unique_path("use-future")};
    // Even the connect: the session is the executor's from the first call on.
    asio::co_spawn(ex, zk.async_connect(asio::use_awaitable), asio::use_future).get();
    bool on_runner = false;
    //[threads_use_future
    // On a thread that does not run the session's executor: co_spawn starts the acquire on the
    // executor, and the future hands the lease over. (f.get() on the executor's own thread would
    // wait forever: the acquire completes on that thread.)
    std::future<zklock::lease> f = asio::co_spawn(ex, m.async_acquire(5s, asio::use_awaitable), asio::use_future);
    zklock::lease lease = f.get();
    // The lease, too, is used on the executor: read it and release it there.
    auto held = asio::co_spawn(
        ex, [&]() -> asio::awaitable<bool> { co_return lease.owns_lock(); }, asio::use_future);
    if (held.get()) asio::co_spawn(ex, lease.async_release(asio::use_awaitable), asio::use_future).get();
    //]
    asio::co_spawn(
        ex, [&]() -> asio::awaitable<void> {
            on_runner = std::this_thread::get_id() != runner.get_id() ? false : true;
            CHECK(lease.status() == lease_status::released);
            co_await zk.async_close();
        },
        asio::use_future)
        .get();
    CHECK(on_runner);
    work.reset();
    runner.join();
}

TEST_CASE("threads: a debug build reports an operation started off the session's executor" *
          doctest::skip(!zklock::detail::caller_checks_enabled()))
{
    asio::io_context ioc;
    auto work = asio::make_work_guard(ioc);
    std::thread runner([&] { ioc.run(); });
    auto ex = ioc.get_executor();
    session zk{ex, config_for(api_server().connect_string())};
    zklock::mutex m{zk, unique_path("wrong-thread")};
    // Before the session has run a handler, any thread may start it.
    const auto before = wrong_thread_calls.load();
    const auto old = zklock::detail::wrong_thread;
    zklock::detail::wrong_thread = &count_wrong_thread;
    auto connected = std::make_shared<std::promise<error_code>>();
    zk.async_connect([connected](error_code ec) { connected->set_value(ec); });
    CHECK(wrong_thread_calls.load() == before);
    REQUIRE_FALSE(connected->get_future().get());

    // On the executor: not reported.
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
        auto [ec, l] = co_await m.async_acquire(5s, tuple);
        CHECK_FALSE(ec);
        co_await l.async_release(tuple);
    }, asio::use_future).get();
    CHECK(wrong_thread_calls.load() == before);

    // From this thread while the executor's thread is parked (so that the call itself races with
    // nothing): reported, once.
    std::promise<void> parked, resume;
    asio::post(ex, [&] {
        parked.set_value();
        resume.get_future().wait();
    });
    parked.get_future().wait();
    auto done = std::make_shared<std::promise<error_code>>();
    m.async_try_acquire([done](error_code ec, lease) { done->set_value(ec); });
    CHECK(wrong_thread_calls.load() == before + 1);
    zklock::detail::wrong_thread = old;
    resume.set_value();
    (void)done->get_future().get();
    asio::co_spawn(ex, zk.async_close(asio::use_awaitable), asio::use_future).get();
    work.reset();
    runner.join();
}
