// session::metrics() against a real ZooKeeper server: granted, timed-out, cancelled and failed
// acquires, a handoff, a lost lease, and the per-path gauges, counted exactly.
#include "../common.hpp"
#include "server.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <algorithm>

using namespace zklock;
using namespace zklock::test;

namespace {

std::uint64_t request_count(const metrics_snapshot& m, const std::string& type)
{
    for (const auto& [t, n] : m.requests)
        if (t == type) return n;
    FAIL("no request type " << type);
    return 0;
}

// A pointer into `m`: never pass a temporary snapshot (ASan found one).
const path_gauges* gauges_of(const metrics_snapshot&& m, const std::string& path) = delete;
const path_gauges* gauges_of(const metrics_snapshot& m, const std::string& path)
{
    auto it = std::find_if(m.paths.begin(), m.paths.end(), [&](const path_gauges& g) { return g.path == path; });
    return it == m.paths.end() ? nullptr : &*it;
}

}  // namespace

TEST_CASE("metrics: a session counts its acquires, handoffs, lost leases and gauges exactly")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session a{ex, config_for(shared_server().connect_string())};
        session b{ex, config_for(shared_server().connect_string())};
        co_await connect(a);
        co_await connect(b);
        const auto path = unique_path("metrics");
        {
            const auto m0 = a.metrics();
            CHECK(m0.exclusive.started == 0);
            CHECK(m0.paths.empty());
            CHECK(m0.reconnects == 0);
        }

        mutex m{a, path};
        auto l1 = co_await m.async_acquire(5s);  // granted at once
        {
            auto [ec, l] = co_await m.async_try_acquire(tuple);  // would_block
            CHECK(ec == errc::would_block);
        }
        {
            auto [ec, l] = co_await m.async_acquire(100ms, tuple);  // timeout
            CHECK(ec == errc::timeout);
        }
        // Cancelled while it waits; meanwhile the gauges show one waiter and one holder.
        {
            asio::cancellation_signal sig;
            bool done = false;
            error_code got;
            m.async_acquire(asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, lease) {
                got = ec;
                done = true;
            }));
            CHECK(co_await wait_children(a, path, 2) == 2);
            const auto mid = a.metrics();
            const auto* g = gauges_of(mid, path);
            REQUIRE(g != nullptr);
            CHECK(g->waiters == 1);
            CHECK(g->holders == 1);
            sig.emit(asio::cancellation_type::terminal);
            for (int i = 0; i < 500 && !done; ++i) co_await sleep_for(10ms);
            REQUIRE(done);
            CHECK(got == asio::error::operation_aborted);
        }
        // A handoff: l2 waits behind l1 (the head of its listing), l1 releases.
        lease l2;
        bool granted = false;
        m.async_acquire(10s, [&](error_code ec, lease l) {
            CHECK_FALSE(ec);
            l2 = std::move(l);
            granted = true;
        });
        CHECK(co_await wait_children(a, path, 2) == 2);
        co_await l1.async_release();
        CHECK(co_await eventually([&] { return granted; }));
        REQUIRE(l2.owns_lock());

        // Another session deletes l2's node: the lease is lost (lock_lost).
        auto [rec] = co_await b.async_remove(l2.node(), -1, tuple);
        CHECK_FALSE(rec);
        auto [lost] = co_await l2.async_wait_lost(tuple);
        CHECK(lost == errc::lock_lost);
        auto [rel] = co_await l2.async_release(tuple);  // counted once: it ended when it was lost
        CHECK_FALSE(rel);

        // A reader, to see the kind.
        shared_mutex sm{a, path + "-rw"};
        auto r = co_await sm.async_acquire_shared(5s);
        {
            const auto now = a.metrics();  // g points into it: keep the snapshot alive
            const auto* g = gauges_of(now, path + "-rw");
            REQUIRE(g != nullptr);
            CHECK(g->holders == 1);
            CHECK(g->waiters == 0);
        }
        co_await r.async_release();

        const auto s = a.metrics();
        CHECK(s.exclusive.started == 5);
        CHECK(s.exclusive.granted == 2);
        CHECK(s.exclusive.timed_out == 1);
        CHECK(s.exclusive.cancelled == 1);
        CHECK(s.exclusive.failed == 1);
        REQUIRE(s.failed_by_error.size() == 1);
        CHECK(s.failed_by_error[0] == std::pair<std::string, std::uint64_t>{"would_block", 1});
        CHECK(s.shared.started == 1);
        CHECK(s.shared.granted == 1);
        CHECK(s.permit.started == 0);
        CHECK(s.wait_seconds.count == 3);
        CHECK(s.hold_seconds.count == 3);
        CHECK(s.wait_seconds.sum > 0);
        CHECK(s.handoffs_with_listing + s.handoffs_without_listing == 1);
        CHECK(s.handoffs_without_listing == 1);  // the watched node was the head of l2's listing
        CHECK(s.leases_lost_node_deleted == 1);
        CHECK(s.leases_lost_session_expired == 0);
        CHECK(s.leases_lost_session_closed == 0);
        CHECK(s.reconnects == 0);
        CHECK(s.session_expiries == 0);
        CHECK(request_count(s, "create") >= 6);          // one queue node per acquire (+ parents)
        CHECK(request_count(s, "get_children") >= 6);    // at least one listing each
        CHECK(request_count(s, "delete") >= 3);          // try, timeout, cancel (+ releases)
        CHECK(s.listing_size.count >= 6);  // lock listings (wait_children's polls are get_children too)
        CHECK(s.listing_size.count <= request_count(s, "get_children"));
        CHECK(s.paths.empty());  // nobody waits or holds: no gauge left behind

        // b counted nothing of a's, only its own delete.
        const auto sb = b.metrics();
        CHECK(sb.exclusive.started == 0);
        CHECK(request_count(sb, "delete") == 1);
        CHECK(request_count(sb, "create") == 0);

        // The rendering of a real snapshot names the path's families and the counts.
        const auto text = to_prometheus(s, {{"session", "a"}});
        CHECK(text.find("zklock_acquires_granted_total{session=\"a\",kind=\"exclusive\"} 2\n") != std::string::npos);
        CHECK(text.find("zklock_leases_lost_total{session=\"a\",reason=\"node_deleted\"} 1\n") != std::string::npos);
        co_await a.async_close();
        co_await b.async_close();
    });
}

TEST_CASE("metrics: a lease held when its session is closed is counted as lost with the session")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session a{ex, config_for(shared_server().connect_string())};
        co_await connect(a);
        const auto path = unique_path("metrics-close");
        mutex m{a, path};
        auto l = co_await m.async_acquire(5s);
        auto lost_ec = std::make_shared<error_code>();
        auto lost_done = std::make_shared<bool>(false);
        l.async_wait_lost([lost_ec, lost_done](error_code ec) {
            *lost_ec = ec;
            *lost_done = true;
        });
        co_await a.async_close();
        CHECK(co_await eventually([&] { return *lost_done; }));
        CHECK(*lost_ec == errc::session_closed);
        const auto s = a.metrics();
        CHECK(s.leases_lost_session_closed == 1);
        CHECK(s.hold_seconds.count == 1);
        CHECK(s.paths.empty());
    });
}
