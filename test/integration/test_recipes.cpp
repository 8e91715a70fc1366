// shared_mutex, semaphore, multi_lock and cooperative revocation against a real ZooKeeper server.
#include "../common.hpp"
#include "server.hpp"
#include "support/fault_proxy.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <algorithm>
#include <random>

using namespace zklock;
using namespace zklock::test;

namespace {

std::int64_t seq_of(const std::string& node) { return detail::parse_queue_node(detail::base_name(node))->seq; }

}  // namespace

TEST_CASE("shared_mutex: readers share, a writer excludes, queue order holds, random mix stays safe")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto ss = co_await open_sessions(3);
        const auto path = unique_path("rw");

        // Several readers at once.
        {
            int inside = 0, most = 0, done = 0;
            for (int i = 0; i < 5; ++i)
                asio::co_spawn(ex, [&, i]() -> awaitable<void> {
                    shared_mutex m{ss[i], path};
                    auto l = co_await m.async_acquire_shared(10s);
                    most = std::max(most, ++inside);
                    co_await sleep_for(150ms);
                    --inside;
                    co_await l.async_release();
                    ++done;
                }, asio::detached);
            CHECK(co_await eventually([&] { return done == 5; }));
            CHECK(most >= 2);
        }

        // A writer queued behind a reader is granted before a reader queued behind the writer.
        {
            shared_mutex m0{ss[0], path}, m1{ss[1], path}, m2{ss[2], path};
            auto r1 = co_await m0.async_acquire_shared(5s);
            std::vector<std::string> order;
            lease w, r2;
            asio::co_spawn(ex, [&]() -> awaitable<void> {
                w = co_await m1.async_acquire(10s);
                order.push_back("writer");
            }, asio::detached);
            CHECK(co_await wait_children(ss[0], path, 2) == 2);
            asio::co_spawn(ex, [&]() -> awaitable<void> {
                r2 = co_await m2.async_acquire_shared(10s);
                order.push_back("reader2");
            }, asio::detached);
            CHECK(co_await wait_children(ss[0], path, 3) == 3);
            co_await sleep_for(200ms);
            CHECK(order.empty());  // reader 2 does not overtake the waiting writer
            co_await r1.async_release();
            CHECK(co_await eventually([&] { return order.size() == 1; }));
            co_await sleep_for(100ms);
            REQUIRE(order.size() == 1);
            CHECK(order[0] == "writer");
            co_await w.async_release();
            CHECK(co_await eventually([&] { return order.size() == 2; }));
            co_await r2.async_release();
        }

        // Cancelling a waiting reader and a waiting writer leaves only the holder's node.
        {
            shared_mutex m{ss[0], path};
            auto holder = co_await m.async_acquire(5s);
            asio::cancellation_signal sr, sw;
            int finished = 0;
            m.async_acquire_shared(asio::bind_cancellation_slot(sr.slot(), [&](error_code ec, lease) {
                CHECK(ec == asio::error::operation_aborted);
                ++finished;
            }));
            m.async_acquire(asio::bind_cancellation_slot(sw.slot(), [&](error_code ec, lease) {
                CHECK(ec == asio::error::operation_aborted);
                ++finished;
            }));
            CHECK(co_await wait_children(ss[0], path, 3) == 3);
            sr.emit(asio::cancellation_type::terminal);
            sw.emit(asio::cancellation_type::total);
            CHECK(co_await eventually([&] { return finished == 2; }));
            CHECK((co_await children_of(ss[0], path)).size() == 1);
            co_await holder.async_release();
        }

        // Random mix: never a writer with anyone else inside; nothing lost.
        {
            int readers = 0, writers = 0, violations = 0, done = 0, counter = 0, writes = 0;
            std::mt19937 rng(7);
            const int workers = 24, rounds = 4;
            for (int i = 0; i < workers; ++i) {
                const unsigned seed = rng();
                asio::co_spawn(ex, [&, i, seed]() -> awaitable<void> {
                    std::mt19937 r(seed);
                    shared_mutex m{ss[i], path};
                    for (int k = 0; k < rounds; ++k) {
                        if (r() % 3 == 0) {
                            auto l = co_await m.async_acquire(30s);
                            ++writers;
                            if (writers != 1 || readers != 0) ++violations;
                            int v = counter;
                            co_await sleep_for(1ms);
                            counter = v + 1;
                            ++writes;
                            --writers;
                            co_await l.async_release();
                        } else {
                            auto l = co_await m.async_acquire_shared(30s);
                            ++readers;
                            if (writers != 0) ++violations;
                            co_await sleep_for(2ms);
                            --readers;
                            co_await l.async_release();
                        }
                    }
                    ++done;
                }, asio::detached);
            }
            CHECK(co_await eventually([&] { return done == workers; }, 60s));
            CHECK(violations == 0);
            CHECK(counter == writes);
            CHECK((co_await children_of(ss[0], path)).empty());
        }
    });
}

TEST_CASE("a mutex and a shared_mutex on one path exclude each other")
{
    run([]() -> awaitable<void> {
        auto ss = co_await open_sessions(2);
        const auto path = unique_path("interop");
        shared_mutex rw{ss[0], path};
        mutex x{ss[1], path};
        auto r = co_await rw.async_acquire_shared(5s);
        auto [ec, l] = co_await x.async_try_acquire(tuple);
        CHECK(ec == errc::would_block);
        co_await r.async_release();
        auto held = co_await x.async_acquire(5s);
        auto [ec2, l2] = co_await rw.async_try_acquire_shared(tuple);
        CHECK(ec2 == errc::would_block);
    });
}

TEST_CASE("semaphore: at most N holders, FIFO, one waiter woken per release, count checked")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto ss = co_await open_sessions(3);
        const auto path = unique_path("sem");
        const std::uint32_t n = 3;

        // Random workload: never more than N inside, and N reached.
        {
            int inside = 0, most = 0, done = 0;
            const int workers = 15;
            for (int i = 0; i < workers; ++i)
                asio::co_spawn(ex, [&, i]() -> awaitable<void> {
                    semaphore sem{ss[i], path, n};
                    for (int k = 0; k < 3; ++k) {
                        auto l = co_await sem.async_acquire(30s);
                        most = std::max(most, ++inside);
                        // Holds long against a grant (a few round trips): N is reached.
                        co_await sleep_for(std::chrono::milliseconds(20 + (i * 7 + k) % 20));
                        --inside;
                        co_await l.async_release();
                    }
                    ++done;
                }, asio::detached);
            CHECK(co_await eventually([&] { return done == workers; }, 60s));
            CHECK(most == static_cast<int>(n));
        }

        // FIFO: each freed permit goes to the earliest waiter. Permits are freed one at a time,
        // so exactly one waiter is eligible at each step and the grant order must be the queue order.
        {
            semaphore sem{ss[0], path, n};
            std::vector<lease> held;
            for (std::uint32_t i = 0; i < n; ++i) held.push_back(co_await sem.async_acquire(5s));
            std::vector<std::int64_t> grants;
            std::vector<lease> granted;
            const int waiters = 9;
            for (int i = 0; i < waiters; ++i) {
                asio::co_spawn(ex, [&, i]() -> awaitable<void> {
                    semaphore s{ss[i], path, n};
                    auto l = co_await s.async_acquire(30s);
                    grants.push_back(seq_of(l.node()));
                    granted.push_back(std::move(l));
                }, asio::detached);
                CHECK(co_await wait_children(ss[0], path, n + i + 1) == n + i + 1);
            }
            std::size_t next = 0;  // release the oldest holder, wait for exactly one grant
            for (int k = 0; k < waiters; ++k) {
                auto& oldest = next < held.size() ? held[next] : granted[next - held.size()];
                ++next;
                co_await oldest.async_release();
                CHECK(co_await eventually([&] { return static_cast<int>(grants.size()) == k + 1; }));
                co_await sleep_for(20ms);
                CHECK(static_cast<int>(grants.size()) == k + 1);  // one release, one wake-up
            }
            CHECK(std::is_sorted(grants.begin(), grants.end()));
            for (auto& l : held) co_await l.async_release(tuple);
            for (auto& l : granted) co_await l.async_release(tuple);
        }

        // Timeout and try leave nothing; a different count is refused.
        {
            semaphore sem{ss[0], path, n};
            std::vector<lease> all;
            for (std::uint32_t i = 0; i < n; ++i) all.push_back(co_await sem.async_acquire(5s));
            auto [ec, l] = co_await sem.async_acquire(200ms, tuple);
            CHECK(ec == errc::timeout);
            auto [ec2, l2] = co_await sem.async_try_acquire(tuple);
            CHECK(ec2 == errc::would_block);
            CHECK((co_await children_of(ss[0], path)).size() == n);
            semaphore other{ss[1], path, n + 1};
            auto [ec3, l3] = co_await other.async_acquire(1s, tuple);
            CHECK(ec3 == errc::permit_mismatch);
            semaphore zero{ss[1], path, 0};
            auto [ec4, l4] = co_await zero.async_acquire(1s, tuple);
            CHECK(ec4 == errc::invalid_argument);
            for (auto& a : all) co_await a.async_release();
        }
    });
}

TEST_CASE("semaphore: a permit freed by any holder goes to the first waiter at once, in every order of release")
{
    // Two permits held by h0 (the oldest) and h1; w2 is the first waiter, w3 waits behind it. A
    // waiter that watched only the node two places ahead (w2: h0) heard nothing of h1's release:
    // the permit idled as long as h0 held.
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto ss = co_await open_sessions(4);
        const auto path = unique_path("sem-order");
        semaphore sems[] = {{ss[0], path, 2}, {ss[1], path, 2}, {ss[2], path, 2}, {ss[3], path, 2}};
        auto h0 = co_await sems[0].async_acquire(5s);
        auto h1 = co_await sems[1].async_acquire(5s);
        lease w2, w3;
        asio::co_spawn(ex, [&]() -> awaitable<void> { w2 = co_await sems[2].async_acquire(30s); }, asio::detached);
        CHECK(co_await wait_children(ss[0], path, 3) == 3);
        asio::co_spawn(ex, [&]() -> awaitable<void> { w3 = co_await sems[3].async_acquire(30s); }, asio::detached);
        CHECK(co_await wait_children(ss[0], path, 4) == 4);

        // The younger holder leaves first: w2 holds while h0 still does, and w3 still waits.
        co_await h1.async_release();
        CHECK(co_await eventually([&] { return w2.owns_lock(); }, 10s));
        CHECK(h0.status() == lease_status::held);
        co_await sleep_for(100ms);
        CHECK_FALSE(w3.owns_lock());
        // The newest holder (w2, granted last) leaves before the oldest: w3, the first waiter
        // since w2's grant, holds.
        co_await w2.async_release();
        CHECK(co_await eventually([&] { return w3.owns_lock(); }, 10s));
        CHECK(h0.status() == lease_status::held);
        CHECK((co_await children_of(ss[0], path)).size() == 2);
        co_await h0.async_release();
        co_await w3.async_release();
    });
}

TEST_CASE("semaphore: an object reads the stored count once, a lock path found gone gets it again")
{
    run([]() -> awaitable<void> {
        auto ss = co_await open_sessions(1);
        session& s = ss[0];
        const auto path = unique_path("sem-count");
        semaphore sem{s, path, 2};
        co_await (co_await sem.async_acquire(5s)).async_release();
        auto [dec, data, st] = co_await s.async_get_data(path, tuple);
        CHECK(data == "zklock-semaphore permits=2");
        // A foreign count written now: this object has verified its count and queues without
        // reading it again (one round trip less per acquire); a new object reads it and refuses.
        auto [sec, st2] = co_await s.async_set_data(path, "zklock-semaphore permits=5", -1, tuple);
        REQUIRE_FALSE(sec);
        auto [ec1, l1] = co_await sem.async_acquire(5s, tuple);
        CHECK_FALSE(ec1);
        co_await l1.async_release();
        auto [ec2, l2] = co_await semaphore{s, path, 2}.async_acquire(5s, tuple);
        CHECK(ec2 == errc::permit_mismatch);
        // The path goes (as the server removes an empty container): the next acquire through the
        // verified object finds it gone at its create, and stores the count again.
        auto [rec] = co_await s.async_remove(path, -1, tuple);
        REQUIRE_FALSE(rec);
        auto [ec3, l3] = co_await sem.async_acquire(5s, tuple);
        CHECK_FALSE(ec3);
        auto [dec2, data2, st3] = co_await s.async_get_data(path, tuple);
        CHECK(data2 == "zklock-semaphore permits=2");
        co_await l3.async_release();
    });
}

TEST_CASE("semaphore: a holder's session expiry frees its permit")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        fault_proxy proxy{shared_server().port()};
        session holder{ex, config_for(proxy.connect_string(), 1000ms)};
        session waiter{ex, config_for(shared_server().connect_string())};
        co_await connect(holder);
        co_await connect(waiter);
        const auto path = unique_path("sem-expiry");
        semaphore sh{holder, path, 1}, sw{waiter, path, 1};
        auto held = co_await sh.async_acquire(5s);
        proxy.blackhole();
        auto t0 = std::chrono::steady_clock::now();
        auto got = co_await sw.async_acquire(20s);
        CHECK(got.owns_lock());
        CHECK(std::chrono::steady_clock::now() - t0 >= 900ms);
        CHECK(held.status() == lease_status::lost);
        proxy.pass();
    });
}

TEST_CASE("multi_lock: all or nothing under one deadline, no deadlock in opposite orders")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto ss = co_await open_sessions(2);
        const auto a = unique_path("multi-a"), b = unique_path("multi-b"), c = unique_path("multi-c");

        // Opposite orders, many rounds, concurrently: both finish every time.
        int done = 0, overlaps = 0, inside = 0;
        for (int w = 0; w < 2; ++w)
            asio::co_spawn(ex, [&, w]() -> awaitable<void> {
                std::vector<lock_spec> specs = w == 0 ? std::vector{lock_spec::exclusive(a), lock_spec::exclusive(b)}
                                                      : std::vector{lock_spec::exclusive(b), lock_spec::exclusive(a)};
                multi_lock ml{ss[w], specs};
                for (int k = 0; k < 15; ++k) {
                    auto leases = co_await ml.async_acquire(20s);
                    if (++inside != 1) ++overlaps;
                    co_await sleep_for(1ms);
                    --inside;
                    for (auto& l : leases) co_await l.async_release();
                }
                ++done;
            }, asio::detached);
        CHECK(co_await eventually([&] { return done == 2; }, 60s));
        CHECK(overlaps == 0);

        // One deadline for the set; a timeout releases what was taken.
        mutex mb{ss[1], b};
        auto hold_b = co_await mb.async_acquire(5s);
        std::vector<lock_spec> set{lock_spec::exclusive(a), lock_spec::exclusive(b)};
        multi_lock ml{ss[0], set};
        auto t0 = std::chrono::steady_clock::now();
        auto [ec, leases] = co_await ml.async_acquire(400ms, tuple);
        auto took = std::chrono::steady_clock::now() - t0;
        CHECK(ec == errc::timeout);
        CHECK(took < 3s);
        CHECK(leases.empty());
        CHECK((co_await children_of(ss[0], a)).empty());
        CHECK((co_await children_of(ss[0], b)).size() == 1);
        co_await hold_b.async_release();

        // A mix of kinds; leases come back in the order given.
        std::vector<lock_spec> mixed{lock_spec::semaphore(c, 2), lock_spec::shared(b), lock_spec::exclusive(a)};
        multi_lock mix{ss[0], mixed};
        auto got = co_await mix.async_acquire(5s);
        REQUIRE(got.size() == 3);
        CHECK(got[0].node().rfind(c + "/s-", 0) == 0);
        CHECK(got[1].node().rfind(b + "/r-", 0) == 0);
        CHECK(got[2].node().rfind(a + "/x-", 0) == 0);

        std::vector<lock_spec> dup{lock_spec::exclusive(a), lock_spec::shared(a)};
        multi_lock bad{ss[0], dup};
        auto [ec2, l2] = co_await bad.async_acquire(1s, tuple);
        CHECK(ec2 == errc::invalid_argument);
    });
}

TEST_CASE("cooperative revocation: a holder is asked to give the lock up")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto ss = co_await open_sessions(2);
        const auto path = unique_path("revoke");
        mutex m0{ss[0], path}, m1{ss[1], path};
        auto held = co_await m0.async_acquire(5s);
        bool asked = false;
        task_group tasks{ex};
        tasks.spawn([&]() -> awaitable<void> {
            co_await held.async_wait_revocation();
            asked = true;
            co_await held.async_release();  // this holder cooperates
        });
        co_await sleep_for(100ms);
        CHECK_FALSE(asked);
        CHECK_FALSE(held.revocation_requested());
        // Another client asks, naming the holder's node (e.g. found with get_children).
        auto kids = co_await children_of(ss[1], path);
        REQUIRE(kids.size() == 1);
        co_await ss[1].async_set_data(path + "/" + kids[0], std::string(revocation_request));
        auto mine = co_await m1.async_acquire(10s);
        CHECK(asked);
        CHECK(mine.owns_lock());
        CHECK(co_await tasks.join());
    });
}

TEST_CASE("shared_mutex: a writer downgrades to a reader and no queued writer gets in between")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto ss = co_await open_sessions(4);
        const auto path = unique_path("downgrade");
        shared_mutex m0{ss[0], path}, m1{ss[1], path}, m2{ss[2], path}, m3{ss[3], path};

        // W1 holds; behind it a reader R1, a writer W2, a reader R2.
        auto w1 = co_await m0.async_acquire(5s);
        lease r1, w2, r2;
        asio::co_spawn(ex, [&]() -> awaitable<void> { r1 = co_await m1.async_acquire_shared(20s); }, asio::detached);
        CHECK(co_await wait_children(ss[0], path, 2) == 2);
        asio::co_spawn(ex, [&]() -> awaitable<void> { w2 = co_await m2.async_acquire(20s); }, asio::detached);
        CHECK(co_await wait_children(ss[0], path, 3) == 3);
        asio::co_spawn(ex, [&]() -> awaitable<void> { r2 = co_await m3.async_acquire_shared(20s); }, asio::detached);
        CHECK(co_await wait_children(ss[0], path, 4) == 4);
        co_await sleep_for(100ms);
        CHECK_FALSE(r1.owns_lock());

        const auto token = w1.fencing_token();
        co_await w1.async_downgrade();
        // R1 shares the lock with the downgraded W1 at once; W2 and the reader behind it wait.
        CHECK(co_await eventually([&] { return r1.owns_lock(); }, 5s));
        CHECK(w1.owns_lock());
        CHECK(w1.fencing_token() == token);
        co_await sleep_for(300ms);
        CHECK_FALSE(w2.owns_lock());
        CHECK_FALSE(r2.owns_lock());
        auto [lec, listing] = co_await async_list_queue(ss[0], path, tuple);
        REQUIRE(listing.entries.size() == 4);
        CHECK(listing.entries[0].data.starts_with("zklock-downgraded "));

        // Downgrading again is a no-op; the two reads end, then W2, then R2.
        CHECK(co_await w1.async_downgrade(tuple) == std::tuple{error_code()});
        co_await w1.async_release();
        co_await sleep_for(200ms);
        CHECK_FALSE(w2.owns_lock());
        co_await r1.async_release();
        CHECK(co_await eventually([&] { return w2.owns_lock(); }));
        CHECK_FALSE(r2.owns_lock());
        co_await w2.async_release();
        CHECK(co_await eventually([&] { return r2.owns_lock(); }));
        co_await r2.async_release();

        // A reader that queues after the downgrade is granted at once too.
        auto w3 = co_await m0.async_acquire(5s);
        co_await w3.async_downgrade();
        auto r3 = co_await m1.async_acquire_shared(5s);
        CHECK(r3.owns_lock());
        auto [tec, w4] = co_await m2.async_try_acquire(tuple);
        CHECK(tec == errc::would_block);
        co_await r3.async_release();
        co_await w3.async_release();

        // Only a shared_mutex writer's lease downgrades.
        mutex plain{ss[0], unique_path("downgrade-mutex")};
        auto held = co_await plain.async_acquire(5s);
        CHECK(co_await held.async_downgrade(tuple) == std::tuple{error_code(errc::invalid_argument)});
        auto r4 = co_await m1.async_acquire_shared(5s);
        CHECK(co_await r4.async_downgrade(tuple) == std::tuple{error_code(errc::invalid_argument)});
        co_await r4.async_release();
        CHECK(co_await r4.async_downgrade(tuple) == std::tuple{error_code(errc::already_released)});
        co_await held.async_release();
    });
}
