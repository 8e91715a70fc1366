// Faults of a 3-server ensemble: the leader killed in the middle of a contended run, and the
// follower a session is connected to restarted under it.
#include "fault_common.hpp"

#include <map>

using namespace zklock;
using namespace zklock::test;

namespace {

server_options ensemble_options()
{
    return server_options{.tick_time = std::chrono::milliseconds(200), .max_session_timeout_ms = 20000};
}

}  // namespace

TEST_CASE("fault 5: the leader is killed during a contended run of 64 waiters over 8 sessions")
{
    zk_ensemble ens{3, ensemble_options()};
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        blocking_runner runner;
        std::vector<std::unique_ptr<session>> sessions;
        for (int i = 0; i < 8; ++i) {
            sessions.push_back(std::make_unique<session>(ex, config_for(ens.connect_string(), 10000ms)));
            co_await connect(*sessions.back());
        }
        checker c;
        const auto path = unique_path("leader-killed");
        c.expect_queue_order(path);
        const int waiters = 64, cycles = 4;
        int finished = 0, written = 0, errors = 0, lost_sections = 0;
        std::map<std::string, int> error_kinds;
        for (int w = 0; w < waiters; ++w) {
            asio::co_spawn(ex, [&, w]() -> awaitable<void> {
                mutex m{*sessions[w % 8], path};
                int done = 0;
                for (int attempt = 0; done < cycles && attempt < 40; ++attempt) {
                    auto [ec, l] = co_await m.async_acquire(60s, tuple);
                    if (ec) {
                        ++errors;
                        ++error_kinds[ec.message()];
                        co_await sleep_for(50ms);
                        continue;
                    }
                    const auto holder = "w" + std::to_string(w) + "#" + std::to_string(attempt);
                    if (co_await critical_section(c, path, holder, l, 1ms)) {
                        ++written;
                        ++done;
                    } else
                        ++lost_sections;
                }
                ++finished;
            }, asio::detached);
        }
        // Let the run get going, then kill the leader.
        REQUIRE(co_await wait_until([&] { return c.grants(path) >= 40; }, 60s));
        const int leader = ens.leader();
        REQUIRE(leader >= 0);
        const auto grants_before = c.grants(path);
        auto t0 = std::chrono::steady_clock::now();
        ens.kill(leader);
        bool quorum = false;
        co_await runner.run([&] { quorum = ens.wait_quorum(std::chrono::seconds(30)); }, 40s);
        CHECK(quorum);
        MESSAGE("leader " << leader << " killed after " << grants_before << " grants; new quorum in " << since(t0)
                          << " s (leader now " << ens.leader() << ")");
        // The run goes on after the election.
        CHECK(co_await wait_until([&] { return c.grants(path) > grants_before + 20 || finished == waiters; }, 60s));
        MESSAGE("run resumed " << since(t0) << " s after the kill");
        // Bring the old leader back as a follower while the run goes on.
        co_await runner.run([&] { ens.start(leader); }, 60s);
        CHECK(co_await wait_until([&] { return finished == waiters; }, 180s));
        MESSAGE("all " << waiters << " waiters finished " << since(t0) << " s after the kill; " << c.grants(path)
                       << " grants, " << errors << " acquire errors, " << lost_sections << " sections lost");
        for (auto& [what, n] : error_kinds) MESSAGE("  acquire error x" << n << ": " << what);
        CHECK(written == waiters * cycles);
        CHECK(c.counter(path) == waiters * cycles);  // no lost update
        CHECK(c.counter_writes(path) == static_cast<std::size_t>(waiters * cycles));
        CHECK(co_await wait_children(*sessions[0], path, 0, 30s) == 0);  // no orphan node
        CHECK_MESSAGE(c.ok(), c.report());
        for (auto& s : sessions) CHECK(s->generation() == 1);  // the sessions survived the election
    }, std::chrono::seconds(280));
}

TEST_CASE("fault 6: the follower a session is on is restarted: the session moves, watches fire, waiters keep order")
{
    zk_ensemble ens{3, ensemble_options()};
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        blocking_runner runner;
        const int leader = ens.leader();
        REQUIRE(leader >= 0);
        // A session with the whole ensemble in its list, which happens to be on a follower (the C
        // client picks a server at random: reconnect until it is on one, found through `cons`).
        std::unique_ptr<session> s;
        int follower = -1;
        for (int attempt = 0; attempt < 20 && follower < 0; ++attempt) {
            s = std::make_unique<session>(ex, config_for(ens.connect_string(), 10000ms));
            co_await connect(*s);
            const int on = server_of(ens, s->session_id());
            if (on >= 0 && on != leader) follower = on;
            else co_await s->async_close();
        }
        REQUIRE(follower >= 0);
        MESSAGE("session " << sid_text(s->session_id()) << " is on follower " << follower
                             << " (leader " << leader << ")");
        session h{ex, config_for(ens.connect_string(leader), 10000ms)};
        co_await connect(h);

        checker c;
        const auto path = unique_path("follower-restart");
        c.expect_queue_order(path);
        const auto marker = path + "-marker";
        // `s` creates the marker it watches: a read on the follower may not yet see another
        // session's write (ZooKeeper orders each session's view, not reads across sessions).
        co_await s->async_create("/zklock-test", "", create_mode::persistent, tuple);
        co_await s->async_create(marker, "0", create_mode::ephemeral);
        auto [data, st, w] = co_await s->async_watch_data(marker, asio::deferred);

        mutex mh{h, path}, ms{*s, path};
        auto held = co_await mh.async_acquire(5s);
        c.granted(path, "holder", held.fencing_token(), seq_of(held.node()));
        const int n = 4;
        std::vector<int> order;
        task_group tasks{ex};
        for (int i = 0; i < n; ++i) {
            tasks.spawn([&, i]() -> awaitable<void> {
                auto l = co_await ms.async_acquire(60s);
                order.push_back(i);
                co_await critical_section(c, path, "w" + std::to_string(i), l, 5ms);
            });
            CHECK(co_await wait_children(h, path, i + 2) == i + 2);
        }
        co_await sleep_for(200ms);  // watches set

        auto t0 = std::chrono::steady_clock::now();
        co_await runner.run([&] { ens.stop(follower); }, 30s);
        CHECK(co_await wait_until([&] { return s->state() == session_state::connected && server_of(ens, s->session_id()) >= 0; }, 20s));
        const int now_on = server_of(ens, s->session_id());
        MESSAGE("session moved to server " << now_on << " " << since(t0) << " s after the stop");
        CHECK(now_on != follower);
        CHECK(s->generation() == 1);  // the same ZooKeeper session
        co_await runner.run([&] { ens.start(follower); }, 60s);
        MESSAGE("follower " << follower << " restarted " << since(t0) << " s after the stop");

        // A watch set through the old server fires through the new one.
        co_await h.async_set_data(marker, "1");
        auto ev = co_await w.async_wait();
        CHECK(ev.type == watch_event_type::changed);
        CHECK(ev.path == marker);

        CHECK(order.empty());
        c.released(path, "holder");
        co_await held.async_release();
        CHECK(co_await wait_until([&] { return order.size() == n; }, 20s));
        CHECK(order == std::vector<int>{0, 1, 2, 3});
        CHECK(co_await wait_children(h, path, 0) == 0);
        CHECK(co_await tasks.join());
        CHECK(c.counter(path) == n);
        CHECK_MESSAGE(c.ok(), c.report());
        co_await h.async_remove(marker);
    }, std::chrono::seconds(240));
}
