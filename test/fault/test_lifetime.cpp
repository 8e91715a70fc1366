// A session's lifetime through a fault proxy: destruction never blocks the executor, no thread
// outlives the io_context, and async_connect honours per-operation cancellation.
#include "fault_common.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <dirent.h>

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
