// Partitions inside a 3-server ensemble: one server cut off from the other two (quorum and
// election links held both ways) while its clients' own links stay up. Each client is pinned to
// one server. The holder must be told before the next holder is granted, whichever server is cut
// off; nobody is told of a loss that did not happen.
#include "fault_common.hpp"

using namespace zklock;
using namespace zklock::test;

namespace {

constexpr auto session_timeout = 4000ms;

/// tickTime 500 ms, syncLimit 5 (a follower cut off from the leader serves its clients for 2.5 s
/// more), every server link through a proxy.
server_options partition_options()
{
    server_options o;
    o.tick_time = 500ms;
    o.max_session_timeout_ms = 20000;
    o.extra_config = {"initLimit=10", "syncLimit=5"};
    o.proxy_server_links = true;
    return o;
}

/// The leader's index and the two followers', by asking each server.
struct roles {
    int leader = -1;
    int followers[2] = {-1, -1};
};

roles find_roles(const zk_ensemble& ens)
{
    roles r;
    r.leader = ens.leader();
    REQUIRE(r.leader >= 0);
    int k = 0;
    for (int i = 0; i < ens.size(); ++i)
        if (i != r.leader) r.followers[k++] = i;
    return r;
}

lock_options options_for(bool cohort)
{
    lock_options o;
    o.cohort = cohort;
    return o;
}

/// Acquires `m` (waiting up to `limit`) in a coroutine of its own: once granted, sets `granted`
/// and holds briefly through critical_section; sets `done` at the end either way. Everything
/// passed must outlive it.
void contend(const asio::any_io_executor& ex, mutex& m, checker& c, const std::string& path, const char* name,
             std::chrono::seconds limit, bool& granted, bool& done)
{
    asio::co_spawn(ex, [&, name, limit]() -> awaitable<void> {
        auto [ec, l] = co_await m.async_acquire(limit, tuple);
        if (!ec) {
            granted = true;
            co_await critical_section(c, path, name, l, 1ms);
        }
        done = true;
    }, asio::detached);
}

/// Times of one run, relative to the partition (seconds; -1: did not happen).
struct timeline {
    double told = -1, granted = -1, local_failed = -1;
};

/// H holds on server `h`; W (next in line) on `w`, W2 on `w2`. Server h is cut off from the other
/// two and stays so until W was granted. With `cohort`, H is a cohort's local holder and a second
/// local acquire of H's session waits behind it.
awaitable<timeline> holder_cut_off(zk_ensemble& ens, int h, int w, int w2, bool cohort)
{
    auto ex = co_await asio::this_coro::executor;
    session hs{ex, config_for(ens.connect_string(h), session_timeout)};
    session ws{ex, config_for(ens.connect_string(w), session_timeout)};
    session w2s{ex, config_for(ens.connect_string(w2), session_timeout)};
    co_await connect(hs);
    co_await connect(ws);
    co_await connect(w2s);
    REQUIRE(hs.negotiated_timeout() == session_timeout);
    checker c;
    const auto path = unique_path("partition");
    mutex mh{hs, path, options_for(cohort)}, mw{ws, path}, mw2{w2s, path};
    auto held = co_await mh.async_acquire(10s);
    c.granted(path, "H", held.fence().zxid, held.fence().local, seq_of(held.node()));

    const auto t0_unset = std::chrono::steady_clock::time_point{};
    auto t0 = t0_unset;
    timeline tl;
    int local_done = 0;
    error_code local_ec;
    task_group tasks{ex};
    if (cohort)
        tasks.spawn([&]() -> awaitable<void> {
            auto [ec, l] = co_await mh.async_acquire(60s, tuple);
            local_ec = ec;
            if (t0 != t0_unset) tl.local_failed = since(t0);
            ++local_done;
            if (!ec) co_await critical_section(c, path, "H-local", l, 1ms);
        });
    bool w_done = false, w2_done = false;
    fence_token w_fence;
    asio::co_spawn(ex, [&]() -> awaitable<void> {
        auto [ec, l] = co_await mw.async_acquire(60s, tuple);
        if (!ec) {
            tl.granted = since(t0);
            w_fence = l.fence();
            co_await critical_section(c, path, "W", l, 100ms);
        }
        w_done = true;
    }, asio::detached);
    REQUIRE(co_await wait_children(ws, path, 2) == 2);
    asio::co_spawn(ex, [&]() -> awaitable<void> {
        auto [ec, l] = co_await mw2.async_acquire(60s, tuple);
        if (!ec) co_await critical_section(c, path, "W2", l, 1ms);
        w2_done = true;
    }, asio::detached);
    REQUIRE(co_await wait_children(ws, path, 3) == 3);

    ens.isolate(h);
    t0 = std::chrono::steady_clock::now();
    auto [reason] = co_await held.async_wait_lost(tuple);
    tl.told = since(t0);
    c.released(path, "H", "lost: " + reason.message());
    CHECK(reason == errc::session_expired);
    CHECK(co_await wait_until([&] { return tl.granted >= 0; }, 40s));
    MESSAGE("H told " << tl.told << " s, W granted " << tl.granted << " s after the partition: margin "
                      << tl.granted - tl.told << " s");
    CHECK(tl.told < tl.granted);
    CHECK(w_fence > held.fence());
    if (cohort) {
        CHECK(co_await wait_until([&] { return local_done == 1; }, 10s));
        MESSAGE("H's local waiter failed " << tl.local_failed << " s after the partition: " << local_ec.message());
        CHECK(local_ec);
        CHECK(tl.local_failed < tl.granted);
    }

    ens.heal();
    CHECK(co_await wait_until([&] { return w_done && w2_done; }, 60s));
    CHECK(co_await tasks.join());
    CHECK(ens.wait_quorum(30s));
    CHECK_MESSAGE(c.ok(), c.report());
    CHECK(co_await wait_children(ws, path, 0, 30s) == 0);
    co_return tl;
}

/// A fresh bed, and holder_cut_off with H on the leader (W and W2 on the followers) or on a
/// follower (W on the leader, W2 on the other follower).
void holder_case(bool holder_on_leader, bool cohort)
{
    zk_ensemble ens{3, partition_options()};
    const auto r = find_roles(ens);
    const int h = holder_on_leader ? r.leader : r.followers[0];
    const int w = holder_on_leader ? r.followers[0] : r.leader;
    run([&]() -> awaitable<void> { co_await holder_cut_off(ens, h, w, r.followers[1], cohort); });
}

}  // namespace

TEST_CASE("partition: the holder's server is a follower cut off from the leader: the holder is told before the next grant")
{
    holder_case(false, false);
}

TEST_CASE("partition: the holder's server is the leader: the holder is told before the next grant")
{
    holder_case(true, false);
}

TEST_CASE("partition: cohort mode, the holder's server is a follower: local holder and waiter are told before the next grant")
{
    holder_case(false, true);
}

TEST_CASE("partition: the next waiter's server is cut off: the holder keeps the lock, the waiter behind is granted after it")
{
    zk_ensemble ens{3, partition_options()};
    const auto r = find_roles(ens);
    const int h = r.leader, w = r.followers[0], w2 = r.followers[1];
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session hs{ex, config_for(ens.connect_string(h), session_timeout)};
        session ws{ex, config_for(ens.connect_string(w), session_timeout)};
        session w2s{ex, config_for(ens.connect_string(w2), session_timeout)};
        co_await connect(hs);
        co_await connect(ws);
        co_await connect(w2s);
        checker c;
        const auto path = unique_path("waiter-cut");
        mutex mh{hs, path}, mw{ws, path}, mw2{w2s, path};
        auto held = co_await mh.async_acquire(10s);
        c.granted(path, "H", held.fence().zxid, held.fence().local, seq_of(held.node()));
        std::vector<lease_status> seen;
        task_group tasks{ex};
        record_statuses(tasks, held, seen);
        bool w_granted = false, w_done = false, w2_granted = false, w2_done = false;
        contend(ex, mw, c, path, "W", 30s, w_granted, w_done);
        REQUIRE(co_await wait_children(hs, path, 2) == 2);
        contend(ex, mw2, c, path, "W2", 60s, w2_granted, w2_done);
        REQUIRE(co_await wait_children(hs, path, 3) == 3);

        ens.isolate(w);
        const auto t0 = std::chrono::steady_clock::now();
        // W's session expires at the leader (after 4 s): its node goes, W2 is next behind H.
        co_await sleep_for(6000ms);
        CHECK(held.status() == lease_status::held);
        CHECK(seen.empty());  // H was never suspended nor lost: its server is fine
        CHECK_FALSE(w2_granted);
        const auto kids = co_await children_of(hs, path);
        CHECK(kids.size() == 2);  // H and W2
        c.released(path, "H");
        co_await held.async_release();
        CHECK(co_await wait_until([&] { return w2_granted; }, 10s));
        MESSAGE("W2 granted " << since(t0) << " s after W's server was cut off");
        ens.heal();
        CHECK(co_await wait_until([&] { return w_done && w2_done; }, 60s));
        CHECK(co_await tasks.join());
        CHECK(ens.wait_quorum(30s));
        CHECK_MESSAGE(c.ok(), c.report());
    });
}

TEST_CASE("partition: a cut that heals well before the edge tells nobody of a loss")
{
    // The edge: a holder is suspended once the leader has not confirmed its session for a third of
    // the timeout and told of a loss at half of it; with a probe every sixth, a cut of less than
    // 1/3 - 1/6 = 1/6 of the timeout plus a round trip can never reach the loss. 600 ms of 4 s.
    zk_ensemble ens{3, partition_options()};
    const auto r = find_roles(ens);
    const int h = r.followers[0], w = r.leader;
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session hs{ex, config_for(ens.connect_string(h), session_timeout)};
        session ws{ex, config_for(ens.connect_string(w), session_timeout)};
        co_await connect(hs);
        co_await connect(ws);
        checker c;
        const auto path = unique_path("short-cut");
        mutex mh{hs, path}, mw{ws, path};
        auto held = co_await mh.async_acquire(10s);
        c.granted(path, "H", held.fence().zxid, held.fence().local, seq_of(held.node()));
        const auto token = held.fencing_token();
        std::vector<lease_status> seen;
        task_group tasks{ex};
        record_statuses(tasks, held, seen);
        bool w_granted = false, w_done = false;
        contend(ex, mw, c, path, "W", 60s, w_granted, w_done);
        REQUIRE(co_await wait_children(hs, path, 2) == 2);

        for (int round = 0; round < 3; ++round) {
            ens.isolate(h);
            co_await sleep_for(600ms);
            ens.heal();
            co_await sleep_for(1500ms);
        }
        co_await sleep_for(session_timeout);  // past any expiry the cuts could have caused
        for (auto st : seen) CHECK(st != lease_status::lost);
        CHECK(held.status() == lease_status::held);
        CHECK(held.fencing_token() == token);
        CHECK(hs.generation() == 1);
        CHECK_FALSE(w_granted);
        CHECK(hs.metrics().presumed_expiries == 0);
        MESSAGE("H's lease went through " << seen.size() << " status changes");

        c.released(path, "H");
        co_await held.async_release();
        CHECK(co_await wait_until([&] { return w_done; }, 10s));
        CHECK(w_granted);
        CHECK(co_await tasks.join());
        CHECK_MESSAGE(c.ok(), c.report());
        CHECK(co_await wait_children(ws, path, 0, 30s) == 0);
    });
}
