// A session's lifetime through a fault proxy: destruction never blocks the executor, no thread
// outlives the io_context, and async_connect honours per-operation cancellation.
#include "fault_common.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <dirent.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

using namespace zklock;
using namespace zklock::test;

namespace {

// The threads of this process (/proc/self/task).
int thread_count()
{
    int n = 0;
    if (DIR* d = ::opendir("/proc/self/task")) {
        while (dirent* e = ::readdir(d))
            if (e->d_name[0] != '.') ++n;
        ::closedir(d);
    }
    return n;
}

double ms_since(std::chrono::steady_clock::time_point t0) { return 1000 * since(t0); }

}  // namespace

TEST_CASE("destroying a session does not block its executor, and still ends the ZooKeeper session")
{
    // The C client's zookeeper_close sends the close request and then waits up to 1.5 s for the
    // server's answer. ~session and the move assignment used to call it inline: with the server
    // silent, every other connection of the io_context stalled for 1.5 s.
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto& server = fault_server();
        fault_proxy proxy{server.port()};
        const auto path = unique_path("lifetime-destroy");

        SUBCASE("destructor, server silent")
        {
            auto s = std::make_unique<session>(ex, config_for(proxy.connect_string(), 20000ms));
            co_await connect(*s);
            mutex m{*s, path};
            auto l = co_await m.async_acquire(5s);
            proxy.blackhole();
            const auto t0 = std::chrono::steady_clock::now();
            s.reset();
            const double took = ms_since(t0);
            MESSAGE("~session took " << took << " ms");
            CHECK(took < 500);  // the close alone waits 1500 ms for the silent server
        }
        SUBCASE("move assignment, server silent")
        {
            session s{ex, config_for(proxy.connect_string(), 20000ms)};
            co_await connect(s);
            proxy.blackhole();
            const auto t0 = std::chrono::steady_clock::now();
            s = session{ex, config_for(proxy.connect_string(), 20000ms)};
            const double took = ms_since(t0);
            MESSAGE("move assignment took " << took << " ms");
            CHECK(took < 500);
        }
        SUBCASE("destructor, server answering: the holder's node goes at once, not after the session timeout")
        {
            session other{ex, config_for(server.connect_string())};
            co_await connect(other);
            {
                session s{ex, config_for(proxy.connect_string(), 20000ms)};
                co_await connect(s);
                mutex m{s, path};
                auto l = co_await m.async_acquire(5s);
                CHECK(l.owns_lock());
            }  // destroyed holding the lock, without async_close
            const auto t0 = std::chrono::steady_clock::now();
            auto l2 = co_await mutex{other, path}.async_acquire(10s);  // 20 s if the close were lost
            CHECK(l2.owns_lock());
            MESSAGE("the next acquire was granted after " << ms_since(t0) << " ms");
            co_await l2.async_release();
            co_await other.async_close();
        }
    });
}

TEST_CASE("destroying the io_context while a close is in flight leaves no thread behind")
{
    // async_close runs the C client's blocking close on a helper thread. That thread used to be
    // detached: an io_context destroyed while it ran (the server silent) left it running, with no
    // way for a program to end cleanly. Now the io_context's destruction waits for it.
    auto& server = fault_server();
    fault_proxy proxy{server.port()};
    const int before = thread_count();
    {
        asio::io_context ioc;
        bool connected = false;
        auto s = std::make_shared<session>(ioc.get_executor(), config_for(proxy.connect_string(), 20000ms));
        s->async_connect([&](error_code ec) { connected = !ec; });
        ioc.run_for(10s);
        REQUIRE(connected);
        ioc.restart();
        proxy.blackhole();
        bool closed = false;
        s->async_close([&](error_code) { closed = true; });
        ioc.run_for(200ms);  // the close helper waits for the silent server
        CHECK_FALSE(closed);
        s.reset();
    }  // ~io_context
    CHECK(thread_count() == before);
}

TEST_CASE("the close thread ends once its closes are done, while the io_context lives on")
{
    // It used to stay until the io_context was destroyed: a server that closed one session at
    // start-up kept an idle thread for its whole life (and the bench counted 2 threads, not 1).
    auto& server = fault_server();
    const int before = thread_count();
    asio::io_context ioc;
    {
        bool connected = false;
        auto s = std::make_shared<session>(ioc.get_executor(), config_for(server.connect_string()));
        s->async_connect([&](error_code ec) { connected = !ec; });
        ioc.run_for(10s);
        REQUIRE(connected);
        ioc.restart();
        s.reset();  // hands the close to the close thread
    }
    CHECK(thread_count() > before);  // the close is under way on its thread
    const auto t0 = std::chrono::steady_clock::now();
    while (thread_count() > before && since(t0) < 10) {
        ioc.restart();
        ioc.run_for(20ms);
    }
    CHECK(thread_count() == before);
    MESSAGE("the close thread ended after " << ms_since(t0) << " ms");
}

TEST_CASE("async_connect honours per-operation cancellation")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto& server = fault_server();
        fault_proxy proxy{server.port()};
        proxy.blackhole();  // the connection is accepted, the handshake never answered
        auto cfg = config_for(proxy.connect_string(), 20000ms);
        cfg.connect_timeout = 30s;
        session s{ex, cfg};
        for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial, asio::cancellation_type::total}) {
            CAPTURE(static_cast<int>(type));
            asio::cancellation_signal sig;
            bool done = false;
            error_code ec;
            s.async_connect(asio::bind_cancellation_slot(sig.slot(), [&](error_code e) {
                ec = e;
                done = true;
            }));
            co_await sleep_for(200ms);
            CHECK_FALSE(done);
            const auto t0 = std::chrono::steady_clock::now();
            sig.emit(type);
            CHECK(co_await wait_until([&] { return done; }, 10s));  // a hang detector: 30 s without
            CHECK(ec == asio::error::operation_aborted);
            CHECK(s.state() == session_state::disconnected);  // the attempt was abandoned
            MESSAGE("completed " << ms_since(t0) << " ms after the cancellation");
        }
        proxy.pass();
        auto [ec] = co_await s.async_connect(tuple);  // a later connect starts afresh
        CHECK_FALSE(ec);
        CHECK(s.state() == session_state::connected);
        co_await s.async_close();
    });
}

TEST_CASE("a multi that gets no answer reports the error for every op, never an empty or ok result")
{
    // One result per op, always: a multi refused before it was sent (not connected, too large)
    // used to complete with no results at all.
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto& server = fault_server();
        fault_proxy proxy{server.port()};
        const auto path = unique_path("unanswered-multi");
        auto two_ops = [&](std::size_t data_bytes) {  // (not a braced list inside co_await: GCC 12)
            std::vector<multi_op> ops;
            ops.push_back(multi_op::create(path, std::string(data_bytes, 'a'), create_mode::persistent));
            ops.push_back(multi_op::set_data(path, "b", -1));
            return ops;
        };
        auto check_all = [](error_code ec, const std::vector<multi_result>& results, error_code expected) {
            CHECK(ec == expected);
            REQUIRE(results.size() == 2);
            for (auto& r : results) CHECK(r.ec == expected);
        };
        session s{ex, config_for(proxy.connect_string(), 20000ms)};
        {
            auto [ec, results] = co_await s.async_multi(two_ops(1), tuple);  // never connected
            check_all(ec, results, errc::not_connected);
        }
        co_await connect(s);
        {
            auto [ec, results] = co_await s.async_multi(two_ops(2 << 20), tuple);  // past max_request_bytes
            check_all(ec, results, errc::request_too_large);
        }
        {
            proxy.drop_reply_to_next(zk_op::multi);  // applied by the server, the reply lost
            auto [ec, results] = co_await s.async_multi(two_ops(1), tuple);
            check_all(ec, results, zk_errc::connection_loss);
        }
        CHECK(co_await wait_until([&] { return s.state() == session_state::connected; }, 20s));
        co_await s.async_remove(path, -1, tuple);
        co_await s.async_close();
    });
}

namespace {

// What one scenario of the test below leaves suspended in a zklock operation, on a session of the
// io_context that is then destroyed. `ready` is set once it is suspended there.
using victim_body = std::function<awaitable<void>(session&, const std::string& path, bool& ready)>;

awaitable<void> victim(std::string servers, std::string path, victim_body body, bool* ready)
{
    session s{co_await asio::this_coro::executor, config_for(servers, 20000ms)};
    co_await connect(s);
    // Observable from outside: an ephemeral node of this session, gone only when the session is.
    co_await s.async_create(path + "-marker", "", create_mode::ephemeral, asio::deferred);
    co_await body(s, path, *ready);
}

}  // namespace

TEST_CASE("destroying the io_context mid-operation frees every operation and ends the ZooKeeper session")
{
    // Asio destroys the pending handlers of a destroyed io_context. A session held its operations'
    // handlers (and the coroutine frames holding the session) itself: the cycle outlived the
    // context, with the socket open and the ZooKeeper session alive until the server expired it.
    victim_body body;
    std::string name;
    SUBCASE("a waiting acquire")
    {
        name = "acquire";
        body = [](session& s, const std::string& path, bool& ready) -> awaitable<void> {
            mutex m{s, path};
            ready = true;
            co_await m.async_acquire(asio::deferred);
        };
    }
    SUBCASE("a waiting acquire with a timeout")
    {
        name = "timed";
        body = [](session& s, const std::string& path, bool& ready) -> awaitable<void> {
            mutex m{s, path};
            ready = true;
            co_await m.async_acquire(60s, asio::deferred);
        };
    }
    SUBCASE("two waiting cohort acquires")
    {
        name = "cohort";
        body = [](session& s, const std::string& path, bool& ready) -> awaitable<void> {
            lock_options o;
            o.cohort = true;
            mutex m{s, path, o};
            asio::co_spawn(co_await asio::this_coro::executor, m.async_acquire(asio::use_awaitable), asio::detached);
            ready = true;
            co_await m.async_acquire(asio::deferred);
        };
    }
    SUBCASE("a watch wait")
    {
        name = "watch";
        body = [](session& s, const std::string& path, bool& ready) -> awaitable<void> {
            auto [st, w] = co_await s.async_watch_exists(path + "-absent", asio::deferred);
            ready = true;
            co_await w.async_wait(asio::deferred);
        };
    }
    SUBCASE("a held lease's waits")
    {
        name = "lease";
        body = [](session& s, const std::string& path, bool& ready) -> awaitable<void> {
            auto l = co_await mutex{s, path + "-free"}.async_acquire(10s, asio::deferred);
            asio::co_spawn(co_await asio::this_coro::executor, l.async_wait_status_change(asio::use_awaitable),
                           asio::detached);
            ready = true;
            co_await l.async_wait_lost(asio::deferred);
        };
    }
    CAPTURE(name);
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto& server = fault_server();
        const auto path = unique_path("destroyed-" + name);
        session holder{ex, config_for(server.connect_string(), 20000ms)};
        co_await connect(holder);
        auto held = co_await mutex{holder, path}.async_acquire(10s);
        bool ready = false;
        {
            asio::io_context ioc;
            asio::co_spawn(ioc, victim(server.connect_string(), path, body, &ready), asio::detached);
            const auto t0 = std::chrono::steady_clock::now();
            while (!ready && since(t0) < 20) ioc.run_for(10ms);
            REQUIRE(ready);
            ioc.run_for(300ms);  // its requests answered: the operation waits
            REQUIRE((co_await children_of(holder, "/zklock-test")).size() > 0);
        }  // ~io_context with the operation pending
        // The victim's session is closed, not left to expire (20 s): its marker goes at once.
        const auto t0 = std::chrono::steady_clock::now();
        bool gone = false;
        while (!gone && since(t0) < 8) {
            auto [ec, st] = co_await holder.async_exists(path + "-marker", tuple);
            gone = !ec && !st;
            if (!gone) co_await sleep_for(20ms);
        }
        CHECK(gone);
        MESSAGE("the victim's session ended " << ms_since(t0) << " ms after its io_context was destroyed");
        CHECK((co_await children_of(holder, path)).size() == 1);  // only the holder's node is left
        co_await held.async_release();
        co_await holder.async_close();
    });
#if defined(__SANITIZE_ADDRESS__)
    CHECK(__lsan_do_recoverable_leak_check() == 0);  // the session, the operations, the frames
#endif
}
