// Ensemble change: the members of a 3-server ensemble are replaced one by one by new servers on
// new ports (dynamic reconfiguration) while a holder holds and waiters wait; the sessions follow
// with session::set_servers called by hand, or by session_config::follow_ensemble. And
// set_servers with a bad list.
#include "fault_common.hpp"

#include <algorithm>

using namespace zklock;
using namespace zklock::test;

namespace {

server_options reconfig_options()
{
    return server_options{.tick_time = std::chrono::milliseconds(200), .max_session_timeout_ms = 20000, .dynamic_config = true};
}

enum class follow { by_hand, ensemble_config };

// Whether two host lists hold the same "host:port" entries, in any order.
bool same_hosts(std::string a, std::string b)
{
    const auto entries = [](const std::string& s) {
        std::vector<std::string> out;
        for (std::size_t start = 0; start <= s.size();) {
            std::size_t end = s.find(',', start);
            if (end == std::string::npos) end = s.size();
            out.push_back(s.substr(start, end - start));
            start = end + 1;
        }
        std::sort(out.begin(), out.end());
        return out;
    };
    return entries(a) == entries(b);
}

// Polls (every 200 ms: each look asks every running server for its connections) until every
// session is connected to a running server and none to `gone`, or `limit` passes.
awaitable<bool> placed_off(const zk_ensemble& ens, const std::vector<std::unique_ptr<session>>& sessions, int gone,
                           std::chrono::milliseconds limit)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        bool ok = true;
        for (const auto& s : sessions) {
            const int on = s->state() == session_state::connected ? server_of(ens, s->session_id()) : -1;
            ok = ok && on >= 0 && on != gone;
        }
        if (ok) co_return true;
        if (std::chrono::steady_clock::now() >= deadline) co_return false;
        co_await sleep_for(200ms);
    }
}

awaitable<void> replace_every_member(zk_ensemble& ens, follow how)
{
    auto ex = co_await asio::this_coro::executor;
    blocking_runner runner;
    // Session 0 holds; sessions 1..3 each queue two waiters.
    std::vector<std::unique_ptr<session>> sessions;
    std::vector<std::int64_t> ids;
    for (int i = 0; i < 4; ++i) {
        auto cfg = config_for(ens.connect_string(), 20000ms);
        cfg.follow_ensemble = how == follow::ensemble_config;
        sessions.push_back(std::make_unique<session>(ex, cfg));
        co_await connect(*sessions.back());
        ids.push_back(sessions.back()->session_id());
    }

    // What the waiters share with the test, held by them too: were the test to end early, they
    // would finish against closed sessions, never against a freed frame.
    struct run_state {
        checker c;
        int granted = 0;
        std::vector<std::string> failures;
    };
    auto st = std::make_shared<run_state>();
    checker& c = st->c;
    const auto path = unique_path("ensemble-change");
    c.expect_queue_order(path);
    mutex mh{*sessions[0], path};
    auto held = co_await mh.async_acquire(10s);
    c.granted(path, "holder", held.fence().zxid, held.fence().local, seq_of(held.node()));
    const int waiters = 6;
    for (int w = 0; w < waiters; ++w) {
        asio::co_spawn(ex, [st, path, w, s = sessions[1 + w % 3].get()]() -> awaitable<void> {
            mutex m{*s, path};
            const auto name = "w" + std::to_string(w);
            auto [ec, l] = co_await m.async_acquire(240s, tuple);
            if (ec) {
                st->failures.push_back(name + ": " + ec.message());
                co_return;
            }
            if (co_await critical_section(st->c, path, name, l, 5ms)) ++st->granted;
            else st->failures.push_back(name + ": lost its lease");
        }, asio::detached);
        // One at a time: the queue order is the spawn order.
        CHECK(co_await wait_children(*sessions[0], path, static_cast<std::size_t>(w) + 2) == static_cast<std::size_t>(w) + 2);
    }

    const int original = ens.size();
    const auto start = std::chrono::steady_clock::now();
    for (int k = 0; k < original; ++k) {
        const auto t0 = std::chrono::steady_clock::now();
        int added = -1;
        co_await runner.run([&] {
            added = ens.add_server();
            ens.reconfig({added}, {k});
        }, 150s);
        const auto t_reconfig = since(t0);
        const std::string list = ens.members_connect_string();
        const auto on_k = std::count_if(sessions.begin(), sessions.end(),
                                        [&](const auto& s) { return server_of(ens, s->session_id()) == k; });
        if (how == follow::by_hand)
            for (auto& s : sessions) CHECK_FALSE(s->set_servers(list));
        // Following: each session has read the new configuration through its watch.
        const bool listed = co_await wait_until([&] {
            return std::all_of(sessions.begin(), sessions.end(),
                               [&](const auto& s) { return same_hosts(s->config().servers, list); });
        }, 30s);
        CHECK_MESSAGE(listed, "a session did not take the list " << list);
        // Every session has left the removed server, which still runs: set_servers moved them.
        CHECK(co_await placed_off(ens, sessions, k, 30s));
        co_await runner.run([&] { ens.stop(k); }, 30s);
        MESSAGE("server " << k + 1 << " replaced by server " << added + 1 << ": joined and reconfigured in "
                          << t_reconfig << " s; the " << on_k << " session(s) on it were off it "
                          << since(t0) - t_reconfig << " s later");
        CHECK(st->granted == 0);  // the holder still holds
    }
    MESSAGE("all three members replaced in " << since(start) << " s; members now " << ens.members_connect_string());

    // Only new servers run; every session is on one of them, with its own ZooKeeper session.
    REQUIRE(co_await placed_off(ens, sessions, -1, 30s));
    for (std::size_t i = 0; i < sessions.size(); ++i) {
        CHECK(sessions[i]->session_id() == ids[i]);
        CHECK(sessions[i]->generation() == 1);
        CHECK(same_hosts(sessions[i]->config().servers, ens.members_connect_string()));
        const int on = server_of(ens, ids[i]);
        CHECK(on >= original);
        CHECK(std::find(ens.members().begin(), ens.members().end(), on) != ens.members().end());
        MESSAGE("session " << i << ": " << sessions[i]->metrics().reconnects << " reconnects");
    }
    CHECK(held.owns_lock());
    CHECK(st->granted == 0);

    c.released(path, "holder");
    co_await held.async_release();
    CHECK(co_await wait_until([&] { return st->granted + static_cast<int>(st->failures.size()) == waiters; }, 60s));
    for (const auto& f : st->failures) MESSAGE("waiter failed: " << f);
    CHECK(st->granted == waiters);
    CHECK(c.counter(path) == waiters);
    CHECK_MESSAGE(c.ok(), c.report());
    CHECK(co_await wait_children(*sessions[0], path, 0, 30s) == 0);
    for (std::size_t i = 0; i < sessions.size(); ++i) CHECK(sessions[i]->session_id() == ids[i]);
}

}  // namespace

TEST_CASE("ensemble change: every member replaced by a new server on a new port, set_servers by hand")
{
    zk_ensemble ens{3, reconfig_options()};
    run([&]() -> awaitable<void> { co_await replace_every_member(ens, follow::by_hand); }, std::chrono::seconds(280));
}

TEST_CASE("ensemble change: every member replaced by a new server on a new port, follow_ensemble")
{
    zk_ensemble ens{3, reconfig_options()};
    run([&]() -> awaitable<void> { co_await replace_every_member(ens, follow::ensemble_config); },
        std::chrono::seconds(280));
}

TEST_CASE("ensemble change: set_servers refuses a bad list and changes nothing")
{
    auto& server = fault_server();
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session setup{ex, config_for(server.connect_string())};
        co_await connect(setup);
        const auto chroot = unique_path("chroot");
        co_await setup.async_create("/zklock-test", "", create_mode::persistent, tuple);
        co_await setup.async_create(chroot, "", create_mode::persistent);

        const std::string list = server.connect_string() + chroot;
        session s{ex, config_for(list, 10000ms)};
        co_await connect(s);
        const auto id = s.session_id();
        const auto unchanged = [&]() -> awaitable<void> {
            co_await sleep_for(300ms);  // a move is posted: it would have happened by now
            CHECK(s.state() == session_state::connected);
            CHECK(s.session_id() == id);
            CHECK(s.metrics().reconnects == 0);
            auto [ec, st] = co_await s.async_exists("/", tuple);  // the chroot's node
            CHECK_FALSE(ec);
            CHECK(st.has_value());
        };

        for (const char* bad : {"", ",", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:70000", "127.0.0.1:1,,127.0.0.1:2",
                                "127.0.0.1:x", "127.0.0.1:1/a//b", "127.0.0.1:1/zookeeper"}) {
            CAPTURE(bad);
            CHECK(s.set_servers(bad) == errc::invalid_servers);
        }
        CHECK(s.set_servers(server.connect_string() + "/other") == errc::chroot_mismatch);
        CHECK(s.set_servers(server.connect_string() + "/") == errc::chroot_mismatch);  // "/": no chroot
        CHECK(s.config().servers == list);
        co_await unchanged();

        // A good list that keeps the session's server: the connection stays, the chroot too.
        const std::string wider = "127.0.0.1:1," + server.connect_string();
        CHECK_FALSE(s.set_servers(wider));
        CHECK(s.config().servers == wider + chroot);
        CHECK_FALSE(s.set_servers(server.connect_string() + chroot));  // the session's own chroot
        CHECK(s.config().servers == list);
        co_await unchanged();

        co_await s.async_close();
        CHECK(s.set_servers(wider) == errc::session_closed);
        CHECK(s.config().servers == list);
        co_await setup.async_remove(chroot);
    });
}

TEST_CASE("ensemble change: follow_ensemble on a standalone server reads its empty config once and keeps the list")
{
    auto& server = fault_server();
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto cfg = config_for(server.connect_string(), 10000ms);
        cfg.follow_ensemble = true;
        session s{ex, cfg};
        co_await connect(s);
        CHECK(co_await eventually([&] { return s.metrics().requests_of("get_data") == 1; }, 10s));
        co_await sleep_for(500ms);
        CHECK(s.metrics().requests_of("get_data") == 1);  // one read per connect
        CHECK(s.metrics().requests_of("sync") == 0);      // never engaged: no leader probe
        CHECK(s.config().servers == server.connect_string());
        CHECK(s.state() == session_state::connected);
        CHECK(s.metrics().reconnects == 0);
        co_await s.async_close();
    });
}
