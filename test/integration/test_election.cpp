// Leader election against a real ZooKeeper server: campaign, resign, proclaim, the leader, an
// observer, cancellation and the candidate names.
#include "../common.hpp"
#include "server.hpp"

#include <zklock/election.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

using namespace zklock;
using namespace zklock::test;

TEST_CASE("election: one leader at a time, in queue order, across resign and a candidate's death")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto ss = co_await open_sessions(4);
        const auto path = unique_path("elect");

        int leading = 0, most = 0;
        std::vector<int> order;
        std::vector<leadership> held(4);
        std::vector<error_code> outcome(4);
        std::vector<bool> done(4, false);
        for (int i = 0; i < 4; ++i) {
            asio::co_spawn(ex, [&, i]() -> awaitable<void> {
                election e{ss[i], path};
                auto [ec, l] = co_await e.async_campaign("candidate-" + std::to_string(i), 30s, tuple);
                outcome[i] = ec;
                done[i] = true;
                if (ec) co_return;
                most = std::max(most, ++leading);
                order.push_back(i);
                held[i] = std::move(l);
            }, asio::detached);
            // Queue them one by one: candidate i is the i-th in the queue.
            CHECK(co_await wait_children(ss[0], path, static_cast<std::size_t>(i) + 1) == static_cast<std::size_t>(i) + 1);
        }
        CHECK(co_await eventually([&] { return order.size() == 1; }));
        CHECK(order == std::vector<int>{0});
        CHECK(held[0].is_leader());
        CHECK(held[0].node().find("-lock-") != std::string::npos);  // Curator LeaderSelector's names

        // The leader, as anyone sees it.
        election watcher{ss[3], path};
        auto [lec, who] = co_await watcher.async_leader(tuple);
        REQUIRE_FALSE(lec);
        CHECK(who.value == "candidate-0");
        CHECK(path + "/" + who.node == held[0].node());
        CHECK(who.stat.czxid == held[0].fencing_token());
        CHECK(who.library == lock_library::zklock);

        // Resign: the next in queue order leads.
        const auto first_token = held[0].fencing_token();
        --leading;
        co_await held[0].async_resign();
        CHECK(co_await eventually([&] { return order.size() == 2; }));
        CHECK(order.back() == 1);
        CHECK(held[1].fencing_token() > first_token);

        // Candidate 2 dies (its session closes) while it waits: candidate 3 comes next.
        co_await ss[2].async_close(tuple);
        CHECK(co_await eventually([&] { return done[2]; }));
        CHECK(outcome[2] == errc::session_closed);
        --leading;
        co_await held[1].async_resign();
        CHECK(co_await eventually([&] { return order.size() == 3; }));
        CHECK(order.back() == 3);
        CHECK(most == 1);
        --leading;
        co_await held[3].async_resign();
        auto [nec, nobody] = co_await watcher.async_leader(tuple);
        CHECK(nec == errc::no_leader);
        CHECK_FALSE(nobody);
    });
}

TEST_CASE("election: proclaim, and an observer that sees each change and never misses the last")
{
    run([]() -> awaitable<void> {
        auto ss = co_await open_sessions(3);
        const auto path = unique_path("observe");
        election e0{ss[0], path}, e1{ss[1], path}, e2{ss[2], path};

        // Before anyone campaigns (no path yet): no leader.
        auto obs = e2.observe();
        auto [ec0, none] = co_await obs.async_next(tuple);
        REQUIRE_FALSE(ec0);
        CHECK_FALSE(none);

        auto l0 = co_await e0.async_campaign("a", 5s);
        auto [ec1, first] = co_await obs.async_next(tuple);
        REQUIRE_FALSE(ec1);
        CHECK(first.value == "a");

        // A new value, once.
        co_await l0.async_proclaim("a2");
        auto [ec2, second] = co_await obs.async_next(tuple);
        REQUIRE_FALSE(ec2);
        CHECK(second.node == first.node);
        CHECK(second.value == "a2");
        auto [ec3, again] = co_await e1.async_leader(tuple);
        REQUIRE_FALSE(ec3);
        CHECK(again.value == "a2");

        // Nothing changed: the next call waits (a timer wins the race).
        {
            asio::cancellation_signal cancel;
            asio::steady_timer t{co_await asio::this_coro::executor, 300ms};
            t.async_wait([&](error_code) { cancel.emit(asio::cancellation_type::terminal); });
            auto [ec, info] = co_await obs.async_next(asio::bind_cancellation_slot(cancel.slot(), asio::as_tuple(asio::use_awaitable)));
            CHECK(ec == asio::error::operation_aborted);
        }

        // Several changes while nobody reads: the next read is the latest state.
        lease l1;
        asio::co_spawn(co_await asio::this_coro::executor, [&]() -> awaitable<void> {
            l1 = co_await e1.async_campaign("b", 10s);
        }, asio::detached);
        CHECK(co_await wait_children(ss[0], path, 2) == 2);
        co_await l0.async_proclaim("a3");
        co_await l0.async_resign();
        CHECK(co_await eventually([&] { return l1.owns_lock(); }));
        // What it delivers is a subsequence of the changes (a3, then b), ending with the latest: the
        // observer may not have heard of the last change yet when the read starts.
        std::vector<std::string> seen;
        while (seen.size() < 3 && (seen.empty() || seen.back() != "b")) {
            auto [ec4, latest] = co_await obs.async_next(tuple);
            REQUIRE_FALSE(ec4);
            seen.push_back(latest.value);
        }
        CHECK((seen == std::vector<std::string>{"b"} || seen == std::vector<std::string>{"a3", "b"}));

        // Proclaim after resigning, and by a leader whose node was deleted under it.
        CHECK(co_await l0.async_proclaim("late", tuple) == std::tuple{error_code(errc::already_released)});
        leadership l1_lead{std::move(l1)};
        co_await ss[2].async_remove(l1_lead.node(), -1, tuple);
        auto [ec5] = co_await l1_lead.async_proclaim("b2", tuple);
        CHECK(ec5 == errc::lock_lost);
        auto [ec6, gone] = co_await obs.async_next(tuple);
        REQUIRE_FALSE(ec6);
        CHECK_FALSE(gone);

        // A second wait while one is pending is refused.
        bool first_done = false;
        asio::co_spawn(co_await asio::this_coro::executor, [&]() -> awaitable<void> {
            co_await obs.async_next(tuple);
            first_done = true;
        }, asio::detached);
        co_await sleep_for(50ms);
        auto [ec7, busy] = co_await obs.async_next(tuple);
        CHECK(ec7 == errc::operation_in_progress);
        auto l2 = co_await e2.async_campaign("c", 5s);
        CHECK(co_await eventually([&] { return first_done; }));
        co_await l2.async_resign();
    });
}

TEST_CASE("election: a campaign cancelled or timed out leaves no candidate behind")
{
    run([]() -> awaitable<void> {
        auto ss = co_await open_sessions(2);
        const auto path = unique_path("campaign");
        election e0{ss[0], path}, e1{ss[1], path};
        auto l0 = co_await e0.async_campaign("leader", 5s);

        auto [ec1, l1] = co_await e1.async_campaign("late", 300ms, tuple);
        CHECK(ec1 == errc::timeout);
        CHECK(co_await wait_children(ss[0], path, 1) == 1);

        auto [ec2, l2] = co_await e1.async_campaign("now-or-never", 0s, tuple);
        CHECK(ec2 == errc::would_block);
        auto [ec2b, l2b] = co_await e1.async_try_campaign("now-or-never", tuple);
        CHECK(ec2b == errc::would_block);
        CHECK(co_await wait_children(ss[0], path, 1) == 1);

        // A waiting campaign is told its place.
        std::size_t ahead = 99;
        election_options told;
        told.on_queued = [&](std::string_view, std::size_t n) { ahead = n; };
        election e1q{ss[1], path, told};
        auto [ec2c, l2c] = co_await e1q.async_campaign("queued", 300ms, tuple);
        CHECK(ec2c == errc::timeout);
        CHECK(ahead == 1);

        asio::cancellation_signal cancel;
        bool cancelled = false;
        asio::co_spawn(co_await asio::this_coro::executor, [&]() -> awaitable<void> {
            auto [ec, l] = co_await e1.async_campaign("patient", asio::bind_cancellation_slot(cancel.slot(), asio::as_tuple(asio::use_awaitable)));
            cancelled = ec == asio::error::operation_aborted;
        }, asio::detached);
        CHECK(co_await wait_children(ss[0], path, 2) == 2);
        cancel.emit(asio::cancellation_type::terminal);
        CHECK(co_await eventually([&] { return cancelled; }));
        CHECK(co_await wait_children(ss[0], path, 1) == 1);

        // Bad input: a clear error, nothing sent.
        election bad{ss[1], "no-slash"};
        auto [ec3, l3] = co_await bad.async_campaign("x", 1s, tuple);
        CHECK(ec3 == errc::invalid_path);
        auto [ec4, who] = co_await bad.async_leader(tuple);
        CHECK(ec4 == errc::invalid_path);
        auto obs = bad.observe();
        auto [ec5, seen] = co_await obs.async_next(tuple);
        CHECK(ec5 == errc::invalid_path);
        // A chroot that does not exist: said, not waited on.
        session rooted{co_await asio::this_coro::executor,
                       config_for(shared_server().connect_string() + "/no-such-chroot-" + std::to_string(::getpid()))};
        co_await connect(rooted);
        election orphan{rooted, "/e"};
        auto [ec8, w8] = co_await orphan.async_leader(tuple);
        CHECK(ec8 == errc::chroot_missing);
        auto orphan_obs = orphan.observe();
        auto [ec9, w9] = co_await orphan_obs.async_next(tuple);
        CHECK(ec9 == errc::chroot_missing);
        election_observer empty;
        auto [ec6, nothing] = co_await empty.async_next(tuple);
        CHECK(ec6 == errc::invalid_argument);
        co_await l0.async_resign();
    });
}

TEST_CASE("election: candidates are named as the library sharing the path names them")
{
    run([]() -> awaitable<void> {
        auto ss = co_await open_sessions(1);
        struct expect {
            election_names names;
            const char* marker;
        };
        for (auto [names, marker] : {expect{election_names::curator_latch, "-latch-"}, expect{election_names::kazoo, "-__lock__"},
                                     expect{election_names::curator_selector, "-lock-"}}) {
            const auto path = unique_path("names");
            election e{ss[0], path, election_options{names}};
            auto l = co_await e.async_campaign("v", 5s);
            CAPTURE(marker);
            CHECK(l.node().find(marker) != std::string::npos);
            auto [ec, q] = co_await async_list_queue(ss[0], path, tuple);
            REQUIRE(q.entries.size() == 1);
            // A "lock-" candidate is a mutex's node: Curator's LeaderSelector is a mutex too.
            CHECK(q.entries[0].recipe == (names == election_names::curator_selector ? "mutex" : "election"));
            CHECK(q.entries[0].data == "v");
            co_await l.async_resign();
        }
        // Named for Curator's LeaderLatch, a leader cannot proclaim: a LeaderLatch waiting on it
        // would stop watching it.
        {
            election latch{ss[0], unique_path("latch"), election_options{election_names::curator_latch}};
            auto l = co_await latch.async_campaign("v", 5s);
            auto [ec] = co_await l.async_proclaim("v2", tuple);
            CHECK(ec == errc::not_supported);
            auto [lec, who] = co_await latch.async_leader(tuple);
            CHECK(who.value == "v");
            co_await l.async_resign();
        }
        // A selector-named election and a mutex on one path are one queue.
        const auto path = unique_path("selector");
        election e{ss[0], path, election_options{election_names::curator_selector}};
        mutex m{ss[0], path};
        auto l = co_await e.async_campaign("v", 5s);
        auto [ec, held] = co_await m.async_try_acquire(tuple);
        CHECK(ec == errc::would_block);
        co_await l.async_resign();
    });
}
