// The storms: many waiters on two locks over six sessions, half of them in cohort mode
// (lock_options::cohort), acquiring with and without deadlines, cancelled at random moments,
// trying. Meanwhile, in fault 7 (one server, four sessions behind fault proxies) connections are
// reset, delayed and cut off for a while, and the server is restarted once; in fault 7b (three
// servers, two sessions pinned to each) servers are cut off from the other two, briefly and once
// for longer than the session timeout. Bounded in time: 20 s by default, --soak[=N] or
// ZKLOCK_SOAK_SECONDS=N for longer (CI runs fault 7 for 60 s as fault.storm.soak).
// At the end every waiter has finished, the lock directories are empty and the checker is clean.
#include "fault_common.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <map>
#include <random>

using namespace zklock;
using namespace zklock::test;

namespace {

/// What the waiters of a storm share: sessions, locks, the checker, their outcomes.
struct storm {
    std::vector<std::unique_ptr<session>>& sessions;
    std::chrono::steady_clock::time_point deadline;
    std::mt19937 rng;
    checker c;
    std::string paths[2] = {unique_path("storm-a"), unique_path("storm-b")};
    static constexpr int waiters = 24;
    int finished = 0;
    std::map<std::string, int> outcomes;
    std::vector<std::string> unexpected;

    int rand_int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }

    /// Waiter w: acquires on random sessions and paths until the deadline, in one of four ways.
    awaitable<void> waiter(int w)
    {
        auto ex = co_await asio::this_coro::executor;
        for (int round = 0; round < 100000 && std::chrono::steady_clock::now() < deadline; ++round) {
            session& s = *sessions[static_cast<std::size_t>(rand_int(0, static_cast<int>(sessions.size()) - 1))];
            const std::string& path = paths[rand_int(0, 1)];
            // Half the waiters in cohort mode (a small budget, so that turns end often):
            // cohort turns and plain nodes in one queue, under the same faults.
            lock_options opt;
            opt.cohort = w % 2 == 1;
            opt.max_local_handoffs = static_cast<std::uint32_t>(rand_int(1, 4));
            mutex m{s, path, opt};
            const int mode = rand_int(0, 3);
            error_code ec;
            lease l;
            if (mode == 0) {  // a generous deadline
                std::tie(ec, l) = co_await m.async_acquire(10s, tuple);
            } else if (mode == 1) {  // a short deadline
                std::tie(ec, l) = co_await m.async_acquire(std::chrono::milliseconds(rand_int(20, 500)), tuple);
            } else if (mode == 2) {  // cancelled at a random moment
                auto sig = std::make_shared<asio::cancellation_signal>();
                auto timer = std::make_shared<asio::steady_timer>(ex, std::chrono::milliseconds(rand_int(0, 300)));
                timer->async_wait([sig](error_code e) {
                    if (!e) sig->emit(asio::cancellation_type::terminal);
                });
                std::tie(ec, l) = co_await m.async_acquire(
                    asio::bind_cancellation_slot(sig->slot(), asio::as_tuple(asio::use_awaitable)));
                timer->cancel();
            } else {  // try
                std::tie(ec, l) = co_await m.async_try_acquire(tuple);
            }
            ++outcomes[ec ? ec.message() : "acquired"];
            if (!ec) {
                const auto holder = "w" + std::to_string(w) + "#" + std::to_string(round);
                co_await critical_section(c, path, holder, l, std::chrono::milliseconds(rand_int(0, 5)));
            } else if (ec != errc::timeout && ec != errc::would_block && ec != asio::error::operation_aborted &&
                       ec != errc::session_expired && ec != errc::not_connected) {
                unexpected.push_back(ec.to_string() + " " + ec.message());
                co_await sleep_for(50ms);
            } else if (ec == errc::session_expired || ec == errc::not_connected) {
                co_await sleep_for(50ms);
            }
        }
        ++finished;
    }

    void start(const asio::any_io_executor& ex)
    {
        for (int w = 0; w < waiters; ++w) asio::co_spawn(ex, waiter(w), asio::detached);
    }

    /// Once the chaos is over: every waiter finishes, the directories empty, the checker is clean.
    awaitable<void> finish(session& observer)
    {
        CHECK(co_await wait_until([&] { return finished == waiters; }, 90s));
        for (auto& [what, n] : outcomes) MESSAGE("  x" << n << ": " << what);
        for (auto& u : unexpected) MESSAGE("  unexpected: " << u);
        CHECK(unexpected.empty());
        CHECK(finished == waiters);
        CHECK(c.grants() >= 20);  // it did make progress
        for (const auto& path : paths) {
            CAPTURE(path);
            CHECK(co_await wait_children(observer, path, 0, 30s) == 0);
            CHECK(c.counter(path) == static_cast<std::int64_t>(c.counter_writes(path)));
        }
        CHECK_MESSAGE(c.ok(), c.report());
    }
};

}  // namespace

TEST_CASE("fault 7: storm of cancellations, timeouts, connection resets and a server restart")
{
    const int seconds = soak_seconds(20);
    zk_server server{server_options{.tick_time = std::chrono::milliseconds(200), .max_session_timeout_ms = 20000}};
    const auto seed = static_cast<unsigned>(std::random_device{}());
    MESSAGE("storm: " << seconds << " s, seed " << seed);
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        blocking_runner runner;  // restarts the server (ends before it: see blocking_runner)
        fault_proxy p1{server.port()}, p2{server.port()};
        std::vector<std::unique_ptr<session>> sessions;
        // p1's sessions have a short timeout: one long cut-off expires them. p2's ride out short ones.
        for (int i = 0; i < 6; ++i) {
            const auto servers = i < 2 ? p1.connect_string() : i < 4 ? p2.connect_string() : server.connect_string();
            sessions.push_back(std::make_unique<session>(ex, config_for(servers, i < 2 ? 3000ms : 8000ms)));
            co_await connect(*sessions.back());
        }
        const auto t0 = std::chrono::steady_clock::now();
        const auto deadline = t0 + std::chrono::seconds(seconds);

        storm st{sessions, deadline, std::mt19937(seed)};
        auto rand_int = [&](int lo, int hi) { return st.rand_int(lo, hi); };
        st.start(ex);

        // The chaos, until 2 s before the end; the server restart at about a third of the run.
        int resets = 0, delays = 0, cuts = 0, drops = 0;
        bool restarted = false, expired = false;
        double restart_took = 0;
        while (std::chrono::steady_clock::now() + 2s < deadline) {
            co_await sleep_for(std::chrono::milliseconds(rand_int(300, 1200)));
            const auto elapsed = std::chrono::steady_clock::now() - t0;
            if (!restarted && elapsed > std::chrono::seconds(seconds) / 3) {
                restarted = true;
                const auto r0 = std::chrono::steady_clock::now();
                co_await runner.run([&] {
                    server.stop();
                    server.start();
                }, 60s);
                restart_took = std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count();
                continue;
            }
            if (!expired && elapsed > std::chrono::seconds(seconds) * 2 / 3) {
                // Longer than p1's session timeout: its holders are told (client-side), the server
                // expires the sessions, and they come back as new ZooKeeper sessions.
                expired = true;
                p1.blackhole();
                co_await sleep_for(3500ms);
                p1.pass();
                continue;
            }
            fault_proxy& p = rand_int(0, 1) ? p1 : p2;
            switch (rand_int(0, 3)) {
            case 0:
                p.reset();
                ++resets;
                break;
            case 1:
                p.delay(std::chrono::milliseconds(rand_int(10, 80)));
                co_await sleep_for(std::chrono::milliseconds(rand_int(200, 1000)));
                p.pass();
                ++delays;
                break;
            case 2:  // on p2, shorter than 2/3 of the session timeout: suspended at most
                p2.blackhole();
                co_await sleep_for(std::chrono::milliseconds(rand_int(200, 1500)));
                p2.pass();
                ++cuts;
                break;
            case 3: {  // the next reply of one kind is lost (applied by the server, connection reset)
                const std::int32_t ops[] = {zk_op::create2, zk_op::delete_, zk_op::get_children, zk_op::get_data,
                                            zk_op::set_data};
                p.drop_reply_to_next(ops[rand_int(0, 4)]);
                ++drops;
                break;
            }
            }
        }
        p1.pass();
        p2.pass();
        CHECK(restarted);
        CHECK(expired);
        CHECK(co_await wait_until([&] { return sessions[0]->state() == session_state::connected &&
                                               sessions[1]->state() == session_state::connected; }, 20s));
        CHECK(sessions[0]->generation() >= 2);  // p1's sessions expired and came back
        CHECK(sessions[1]->generation() >= 2);
        MESSAGE("storm over after " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
                                    << " s: " << resets << " resets, " << delays << " delays, " << cuts
                                    << " cut-offs, " << drops << " lost replies armed (" << p1.replies_dropped() + p2.replies_dropped()
                                    << " dropped), server restart took " << restart_took << " s; " << st.c.grants()
                                    << " grants");
        co_await st.finish(*sessions[4]);
    }, std::chrono::seconds(seconds + 200));
}

TEST_CASE("fault 7b: storm over a 3-server ensemble whose servers are cut off from each other, briefly and once for longer than the session timeout")
{
    const int seconds = soak_seconds(20);
    server_options o;
    o.tick_time = 500ms;
    o.max_session_timeout_ms = 20000;
    o.extra_config = {"initLimit=10", "syncLimit=5"};
    o.proxy_server_links = true;
    zk_ensemble ens{3, o};
    const auto seed = static_cast<unsigned>(std::random_device{}());
    MESSAGE("ensemble storm: " << seconds << " s, seed " << seed);
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        std::vector<std::unique_ptr<session>> sessions;
        // Two sessions pinned to each server: one with a 3 s timeout (a long cut expires it), one
        // with 8 s (it rides the cuts out).
        for (int i = 0; i < 6; ++i) {
            sessions.push_back(std::make_unique<session>(ex, config_for(ens.connect_string(i % 3), i < 3 ? 3000ms : 8000ms)));
            co_await connect(*sessions.back());
        }
        const auto t0 = std::chrono::steady_clock::now();
        const auto deadline = t0 + std::chrono::seconds(seconds);
        storm st{sessions, deadline, std::mt19937(seed)};
        st.start(ex);

        // The chaos, until 2 s before the end: a random server cut off for 0.2-1 s (less than
        // syncLimit x tickTime: nobody notices but through the missing answers), and at about half
        // the run one cut off for 5 s (its 3 s sessions expire; if it led, the others elect anew).
        int cuts = 0;
        bool long_cut = false, long_cut_leader = false;
        int long_cut_server = -1;
        while (std::chrono::steady_clock::now() + 2s < deadline) {
            co_await sleep_for(std::chrono::milliseconds(st.rand_int(300, 1200)));
            const int victim = st.rand_int(0, 2);
            const auto elapsed = std::chrono::steady_clock::now() - t0;
            if (!long_cut && elapsed > std::chrono::seconds(seconds) / 2) {
                long_cut = true;
                long_cut_server = victim;
                long_cut_leader = ens.leader() == victim;
                ens.isolate(victim);
                co_await sleep_for(5000ms);
                ens.heal();
                CHECK(co_await wait_until([&] { return ens.wait_quorum(0ms); }, 30s));
                continue;
            }
            ens.isolate(victim);
            co_await sleep_for(std::chrono::milliseconds(st.rand_int(200, 1000)));
            ens.heal();
            ++cuts;
        }
        ens.heal();
        CHECK(long_cut);
        CHECK(co_await wait_until([&] { return ens.wait_quorum(0ms); }, 30s));
        // A follower cut off for 5 s: its 3 s session expired and came back. (A cut-off leader's
        // sessions got a fresh timeout from the new leader, which the heal may beat.)
        if (!long_cut_leader)
            CHECK(co_await wait_until([&] { return sessions[static_cast<std::size_t>(long_cut_server)]->generation() >= 2; }, 30s));
        MESSAGE("ensemble storm over after " << since(t0) << " s: " << cuts << " short cuts, server "
                                             << long_cut_server + 1 << (long_cut_leader ? " (the leader)" : " (a follower)")
                                             << " cut off for 5 s; " << st.c.grants() << " grants");
        co_await st.finish(*sessions[3]);
    }, std::chrono::seconds(seconds + 200));
}
