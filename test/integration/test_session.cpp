// The session layer against a real ZooKeeper server: requests, watches, state, expiry.
#include "../common.hpp"
#include "server.hpp"
#include "support/fault_proxy.hpp"

#include <boost/asio/strand.hpp>

#include <thread>

using namespace zklock;
using namespace zklock::test;

TEST_CASE("session requests: create, exists, data, children, multi, remove")
{
    run([]() -> awaitable<void> {
        session s{co_await asio::this_coro::executor, config_for(shared_server().connect_string())};
        co_await connect(s);
        CHECK(s.session_id() != 0);
        CHECK(s.generation() == 1);
        const auto dir = unique_path("requests");
        auto [ec0, p0, st0] = co_await s.async_create("/zklock-test", "", create_mode::persistent, tuple);
        CHECK((!ec0 || ec0 == zk_errc::node_exists));
        auto [p, st] = co_await s.async_create(dir, "hello", create_mode::persistent, asio::deferred);
        CHECK(p == dir);
        CHECK(st.czxid > 0);
        auto [ec1, p1, st1] = co_await s.async_create(dir, "", create_mode::persistent, tuple);
        CHECK(ec1 == zk_errc::node_exists);
        auto ex = co_await s.async_exists(dir);
        REQUIRE(ex);
        CHECK(ex->data_length == 5);
        CHECK_FALSE(co_await s.async_exists(dir + "/missing"));
        auto [data, dst] = co_await s.async_get_data(dir, asio::deferred);
        CHECK(data == "hello");
        auto st2 = co_await s.async_set_data(dir, "world", dst.version);
        CHECK(st2.version == dst.version + 1);
        auto [ec3, st3] = co_await s.async_set_data(dir, "x", dst.version, tuple);
        CHECK(ec3 == zk_errc::bad_version);
        auto [seq1, sst] = co_await s.async_create(dir + "/n-", "", create_mode::ephemeral_sequential, asio::deferred);
        CHECK(seq1.size() == dir.size() + 3 + 10);
        // (Vectors built first: GCC 12 miscompiles braced lists inside co_await expressions.)
        std::vector<multi_op> good{multi_op::create(dir + "/a"), multi_op::create(dir + "/b", "B"),
                                   multi_op::set_data(dir, "multi")};
        auto results = co_await s.async_multi(good);
        REQUIRE(results.size() == 3);
        CHECK(results[1].path == dir + "/b");
        std::vector<multi_op> failing{multi_op::create(dir + "/c"), multi_op::create(dir + "/a")};
        auto [ecm, bad] = co_await s.async_multi(failing, tuple);
        CHECK(ecm == zk_errc::node_exists);
        CHECK_FALSE(co_await s.async_exists(dir + "/c"));  // all or nothing
        auto kids = co_await s.async_get_children(dir);
        CHECK(kids.size() == 3);
        auto [ecr] = co_await s.async_remove(dir, -1, tuple);
        CHECK(ecr == zk_errc::not_empty);
        for (auto& k : kids) co_await s.async_remove(dir + "/" + k);
        co_await s.async_remove(dir);
        CHECK_FALSE(co_await s.async_exists(dir));
    });
}

TEST_CASE("session requests: a container created in a multi is refused, nothing sent, no crash")
{
    // Found by the simulation's differential test: the C client aborted the process on the result.
    run([]() -> awaitable<void> {
        session s{co_await asio::this_coro::executor, config_for(shared_server().connect_string())};
        co_await connect(s);
        const auto dir = unique_path("multi-container");
        auto [ec0, p0, st0] = co_await s.async_create("/zklock-test", "", create_mode::persistent, tuple);
        CHECK((!ec0 || ec0 == zk_errc::node_exists));
        std::vector<multi_op> ops{multi_op::create(dir, "", create_mode::persistent),
                                  multi_op::create(dir + "/c", "", create_mode::container)};
        auto [ec, results] = co_await s.async_multi(ops, tuple);
        CHECK(ec == errc::invalid_argument);
        REQUIRE(results.size() == 2);
        for (const auto& r : results) CHECK(r.ec == errc::invalid_argument);
        CHECK_FALSE(co_await s.async_exists(dir));
        // A container made on its own is fine.
        co_await s.async_create(dir, "", create_mode::container, asio::deferred);
        CHECK(co_await s.async_exists(dir));
    });
}

namespace {

// A fresh persistent directory under /zklock-test, for one test's nodes.
awaitable<std::string> make_test_dir(session& s, const std::string& name)
{
    auto dir = unique_path(name);
    co_await s.async_create("/zklock-test", "", create_mode::persistent, tuple);
    co_await s.async_create(dir, "", create_mode::persistent);
    co_return dir;
}

}  // namespace

TEST_CASE("watches fire once with the right event")
{
    run([]() -> awaitable<void> {
        auto exec = co_await asio::this_coro::executor;
        session s{exec, config_for(shared_server().connect_string())};
        session other{exec, config_for(shared_server().connect_string())};
        co_await connect(s);
        co_await connect(other);
        const auto dir = co_await make_test_dir(s, "watches");

        auto [d, st, w] = co_await s.async_watch_data(dir, asio::deferred);
        auto [kids, cw] = co_await s.async_watch_children(dir, asio::deferred);
        auto [missing, ew] = co_await s.async_watch_exists(dir + "/later", asio::deferred);
        CHECK_FALSE(missing);
        co_await other.async_set_data(dir, "changed");
        auto ev = co_await w.async_wait();
        CHECK(ev.type == watch_event_type::changed);
        CHECK(ev.path == dir);
        co_await other.async_create(dir + "/later", "", create_mode::ephemeral);
        auto cev = co_await cw.async_wait();
        CHECK(cev.type == watch_event_type::child);
        auto eev = co_await ew.async_wait();
        CHECK(eev.type == watch_event_type::created);
        // One wait at a time: a second wait on a watch (or on a copy of it) while one is pending
        // completes at once with operation_in_progress; the first still gets the event.
        co_await other.async_set_data(dir + "/later", "x");  // (nothing watches it: no event)
        auto [d2, st2, w2] = co_await s.async_watch_data(dir, asio::deferred);
        bool first_done = false;
        watch_event first_ev{};
        w2.async_wait([&](error_code ec, watch_event e) {
            CHECK_FALSE(ec);
            first_ev = e;
            first_done = true;
        });
        watch copy = w2;
        auto [sec, sev] = co_await copy.async_wait(tuple);
        CHECK(sec == errc::operation_in_progress);
        CHECK_FALSE(first_done);
        co_await other.async_set_data(dir, "again");
        for (int i = 0; i < 500 && !first_done; ++i) co_await sleep_for(10ms);
        CHECK(first_done);
        CHECK(first_ev.type == watch_event_type::changed);
        // Fired means fired: waiting again completes at once with the same event.
        auto again = co_await w.async_wait();
        CHECK(again.type == watch_event_type::changed);
        // No node: no watch left behind.
        auto [ecn, dn, stn, wn] = co_await s.async_watch_data(dir + "/none", tuple);
        CHECK(ecn == zk_errc::no_node);
        CHECK_FALSE(wn.valid());
        co_await other.async_close();
        co_await s.async_remove(dir);
    });
}

TEST_CASE("session state changes are observable, and close completes waiters")
{
    run([]() -> awaitable<void> {
        auto exec = co_await asio::this_coro::executor;
        session s{exec, config_for(shared_server().connect_string())};
        CHECK(s.state() == session_state::disconnected);
        co_await connect(s);
        CHECK(s.state() == session_state::connected);
        session_state seen = session_state::connected;
        bool got = false;
        s.async_wait_state_change([&](error_code ec, session_state st) {
            CHECK_FALSE(ec);
            seen = st;
            got = true;
        });
        auto [kids_ec, kids, w] = co_await s.async_watch_children("/", tuple);
        CHECK_FALSE(kids_ec);
        co_await s.async_close();
        co_await sleep_for(10ms);
        CHECK(got);
        CHECK(seen == session_state::closed);
        auto [wec, wev] = co_await w.async_wait(tuple);
        CHECK(wec == errc::session_closed);
        auto [ec] = co_await s.async_connect(tuple);
        CHECK(ec == errc::session_closed);
        auto [ec2, p, st] = co_await s.async_create("/x", "", create_mode::ephemeral, tuple);
        CHECK(ec2 == errc::session_closed);
    });
}

TEST_CASE("async_close: the io_context may be destroyed as soon as the close has completed")
{
    // The C client's close runs on a helper thread. Once the close has completed, nothing of that
    // thread may still refer to the executor: a program may stop() its io_context then and destroy
    // it, and a strand's state lives in a service of the io_context. (Under ASan, a late release
    // by that thread of the strand, or of the outstanding work it held, was a use after free; the
    // window is short, hence the rounds.)
    auto rounds = [](bool on_strand, bool stop_at_close) {
        constexpr int n = 40;
        int closed = 0;
        for (int i = 0; i < n; ++i) {
            asio::io_context ioc;
            bool done = false;
            std::exception_ptr error;
            auto co_main = [&]() -> awaitable<void> {
                session s{co_await asio::this_coro::executor, config_for(shared_server().connect_string())};
                co_await connect(s);
                auto [ec] = co_await s.async_close(tuple);
                CHECK_FALSE(ec);
                if (!ec) ++closed;
            };
            auto on_done = [&](std::exception_ptr e) {
                done = true;
                error = e;
                if (stop_at_close) ioc.stop();
            };
            if (on_strand) asio::co_spawn(asio::make_strand(ioc), co_main, on_done);
            else asio::co_spawn(ioc, co_main, on_done);
            ioc.run_for(60s);
            REQUIRE_MESSAGE(done, "round " << i << " did not finish (hang)");
            if (error) std::rethrow_exception(error);
        }  // ~io_context here, right after run() returned
        CHECK(closed == n);
    };
    SUBCASE("on a strand: run() returns when the work is done") { rounds(true, false); }
    SUBCASE("stop() as soon as the close completes") { rounds(false, true); }
    SUBCASE("on a strand: stop() as soon as the close completes") { rounds(true, true); }
}

TEST_CASE("the holder's session expires: its lease is lost, the next waiter gets the lock, the session recovers")
{
    run([]() -> awaitable<void> {
        auto exec = co_await asio::this_coro::executor;
        fault_proxy proxy{shared_server().port()};
        session holder{exec, config_for(proxy.connect_string(), 1000ms)};
        session waiter{exec, config_for(shared_server().connect_string())};
        co_await connect(holder);
        co_await connect(waiter);
        CHECK(holder.negotiated_timeout() == 1000ms);
        const auto path = unique_path("expiry");
        mutex mh{holder, path}, mw{waiter, path};
        auto held = co_await mh.async_acquire(5s);
        lease next;
        bool granted = false;
        asio::co_spawn(exec, [&]() -> awaitable<void> {
            next = co_await mw.async_acquire(30s);
            granted = true;
        }, asio::detached);
        CHECK(co_await wait_children(waiter, path, 2) == 2);

        std::vector<lease_status> seen;
        task_group tasks{exec};
        record_statuses(tasks, held, seen);

        proxy.blackhole();
        auto t0 = std::chrono::steady_clock::now();
        auto [reason] = co_await held.async_wait_lost(tuple);
        auto told_after = std::chrono::steady_clock::now() - t0;
        CHECK(reason == errc::session_expired);
        CHECK(told_after < 10s);  // learnt while still cut off, by the client-side timer
        CHECK(held.status() == lease_status::lost);
        for (int i = 0; i < 1500 && !granted; ++i) co_await sleep_for(10ms);
        REQUIRE(granted);
        CHECK(next.fencing_token() > held.fencing_token());
        REQUIRE(seen.size() >= 2);
        CHECK(seen.front() == lease_status::suspended);
        CHECK(seen.back() == lease_status::lost);

        proxy.pass();
        for (int i = 0; i < 2000 && !(holder.state() == session_state::connected && holder.generation() == 2); ++i)
            co_await sleep_for(10ms);
        CHECK(holder.state() == session_state::connected);
        CHECK(holder.generation() == 2);
        co_await next.async_release();
        auto again = co_await mh.async_acquire(5s);
        CHECK(again.owns_lock());
        CHECK(again.fencing_token() > next.fencing_token());
        CHECK(co_await tasks.join());
    });
}

TEST_CASE("a burst larger than the socket's send buffer: every request is answered, and replies and events still come after it")
{
    // The C client writes requests as they are made; only while its socket's buffer is full does the
    // session wait for the socket to become writable, and after that it registers the socket for
    // reading only again (session_io.cpp, drop_write_registration). Both must lose nothing.
    run([]() -> awaitable<void> {
        auto exec = co_await asio::this_coro::executor;
        session s{exec, config_for(shared_server().connect_string())};
        session other{exec, config_for(shared_server().connect_string())};
        co_await connect(s);
        co_await connect(other);
        const auto dir = co_await make_test_dir(s, "burst");
        const std::string big(64 * 1024, 'x');
        constexpr int n = 96;  // 6 MB: more than a loopback socket buffers
        int answered = 0, failed = 0;
        for (int i = 0; i < n; ++i)
            s.async_set_data(dir, big, -1, [&](error_code ec, zklock::stat) {
                ++answered;
                if (ec) ++failed;
            });
        for (int i = 0; i < 3000 && answered < n; ++i) co_await sleep_for(10ms);
        CHECK(answered == n);
        CHECK(failed == 0);
        auto [data, st] = co_await s.async_get_data(dir, asio::deferred);
        CHECK(data.size() == big.size());
        CHECK(st.version == n);
        auto [d, st2, w] = co_await s.async_watch_data(dir, asio::deferred);
        co_await other.async_set_data(dir, "small");
        auto ev = co_await w.async_wait();
        CHECK(ev.type == watch_event_type::changed);
        co_await other.async_close();
        co_await s.async_remove(dir);
    });
}

namespace {
/// The requests of this turn go out, the executor is held while every reply arrives (the session
/// finds them all in its socket at once), then waits up to 10 s for `done`.
awaitable<void> replies_pile_up(std::function<bool()> done)
{
    co_await asio::post(co_await asio::this_coro::executor, asio::deferred);
    std::this_thread::sleep_for(300ms);
    for (int i = 0; i < 1000 && !done(); ++i) co_await sleep_for(10ms);
}
}  // namespace

TEST_CASE("a burst of replies longer than one drain: the replies already read are handled without more data")
{
    // The session hands the C client at most 256 replies per readiness of its socket
    // (session_io.cpp, run_client). Replies it has already read from the socket past that bound are
    // not reported by the socket again: they must be handled in a later turn, not when the next
    // packet arrives (the next ping, 10 s away with a 30 s session timeout). 300 small replies fit
    // one read of the session's buffer; the executor is held while they all arrive.
    run([]() -> awaitable<void> {
        auto exec = co_await asio::this_coro::executor;
        session s{exec, config_for(shared_server().connect_string(), 30000ms)};
        co_await connect(s);
        const auto dir = co_await make_test_dir(s, "drain");
        constexpr int n = 300;
        int answered = 0, failed = 0;
        for (int i = 0; i < n; ++i)
            s.async_exists(dir, [&](error_code ec, std::optional<zklock::stat> st) {
                ++answered;
                if (ec || !st) ++failed;
            });
        co_await replies_pile_up([&] { return answered == n; });
        CHECK(answered == n);
        CHECK(failed == 0);
        co_await s.async_remove(dir);
    });
}

TEST_CASE("long replies back to back, read across the channel's buffer: each arrives whole, byte for byte")
{
    // The channel reads up to 32 KB at a time into its buffer and hands the rest of a longer reply
    // to the C client straight from the socket (client_io.cpp, read_on). Replies of 100 to 300 KB,
    // each with its own content, small ones between them, all in the socket at once: every one is
    // whole and in order, wherever the buffer's reads end.
    run([]() -> awaitable<void> {
        auto exec = co_await asio::this_coro::executor;
        session s{exec, config_for(shared_server().connect_string(), 30000ms)};
        co_await connect(s);
        const auto dir = co_await make_test_dir(s, "long-replies");
        constexpr int n = 6;
        std::vector<std::string> contents;
        for (int i = 0; i < n; ++i) {
            std::string c(static_cast<std::size_t>(100 * 1024 + i * 40 * 1024 + 7 * i), '\0');
            for (std::size_t k = 0; k < c.size(); ++k) c[k] = static_cast<char>('a' + (k * 31 + static_cast<std::size_t>(i)) % 26);
            co_await s.async_create(dir + "/n" + std::to_string(i), c, create_mode::persistent, tuple);
            contents.push_back(std::move(c));
        }
        std::vector<std::string> got(n);
        int answered = 0, failed = 0, small = 0;
        for (int round = 0; round < 2; ++round)
            for (int i = 0; i < n; ++i) {
                s.async_get_data(dir + "/n" + std::to_string(i), [&, i](error_code ec, std::string d, zklock::stat) {
                    ++answered;
                    if (ec || d != contents[static_cast<std::size_t>(i)]) ++failed;
                    got[static_cast<std::size_t>(i)] = std::move(d);
                });
                s.async_exists(dir, [&](error_code ec, std::optional<zklock::stat> st) {
                    if (!ec && st) ++small;
                });
            }
        co_await replies_pile_up([&] { return answered == 2 * n && small == 2 * n; });
        CHECK(answered == 2 * n);
        CHECK(small == 2 * n);
        CHECK(failed == 0);
        for (int i = 0; i < n; ++i) CHECK(got[static_cast<std::size_t>(i)].size() == contents[static_cast<std::size_t>(i)].size());
        CHECK((co_await s.async_get_children(dir)).size() == static_cast<std::size_t>(n));
        for (int i = 0; i < n; ++i) co_await s.async_remove(dir + "/n" + std::to_string(i));
        co_await s.async_remove(dir);
    });
}

TEST_CASE("a pending watch wait completes although every copy of its watch was destroyed")
{
    run([]() -> awaitable<void> {
        session s{co_await asio::this_coro::executor, config_for(shared_server().connect_string())};
        co_await connect(s);
        const auto path = unique_path("watch-dropped");
        co_await s.async_create("/zklock-test", "", create_mode::persistent, tuple);
        co_await s.async_create(path, "", create_mode::persistent, tuple);
        bool done = false;
        error_code got;
        watch_event_type type = watch_event_type::deleted;
        {
            auto [ec, data, st, w] = co_await s.async_watch_data(path, tuple);
            REQUIRE_FALSE(ec);
            w.async_wait([&](error_code e, watch_event ev) {
                got = e;
                type = ev.type;
                done = true;
            });
        }  // the only watch object goes; the wait is pending
        co_await s.async_set_data(path, "x", tuple);
        for (int i = 0; i < 500 && !done; ++i) co_await sleep_for(std::chrono::milliseconds(10));
        REQUIRE(done);
        CHECK_FALSE(got);
        CHECK(type == watch_event_type::changed);
        co_await s.async_remove(path, tuple);
    });
}
