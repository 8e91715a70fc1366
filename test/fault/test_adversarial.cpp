// The adversarial run's findings (issue 10), each against a real server: two holders after fork(),
// two holders from data written by another client, two "exclusive" recipes on one path, requests
// the server refuses, overflowing durations, and inconsistent answers to the same question.
#include "fault_common.hpp"

#include <zklock/detail/acquire_fsm.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <limits>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace zklock;
using namespace zklock::test;

namespace {

// Makes `path` (and its parents) with acquire_fsm::min_queue_for_mark children that are not lock
// nodes ("junk-<i>", made `mode`): they count in a listing's size (listing them costs the same), so
// waiters on `path` read handoff marks instead of listing again. Returns how many it made.
awaitable<std::size_t> make_long_listing(session& raw, const std::string& path, create_mode mode)
{
    for (std::size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {  // the path and its parents
        auto [pec, pp, pst] = co_await raw.async_create(path.substr(0, slash), "", create_mode::persistent, tuple);
        REQUIRE((!pec || pec == zk_errc::node_exists));
        if (slash == std::string::npos) break;
    }
    const std::size_t n = detail::acquire_fsm::min_queue_for_mark;
    for (std::size_t i = 0; i < n; ++i) {
        auto [jec, jp, jst] = co_await raw.async_create(path + "/junk-" + std::to_string(i), "", mode, tuple);
        REQUIRE_FALSE(jec);
    }
    co_return n;
}

// What forked workers report to the test process, in memory shared across fork().
struct shared_tally {
    std::atomic<int> holders{0};   // inside the critical section right now
    std::atomic<int> overlaps{0};  // times a worker entered while another was inside
    std::atomic<int> grants{0};
    std::atomic<int> errors{0};    // acquire failures (a spurious lock_lost among them)
    std::atomic<int> lost{0};      // leases lost while held
    std::atomic<int> foreign_owner{0};  // a queue node whose default owner info names another pid
    std::atomic<int> done{0};
};

// One forked worker: a fresh io_context and session (as a prefork server's worker opens), `rounds`
// acquisitions of `path`, each with a read-pause-write of a counter node inside the lock.
int fork_worker(shared_tally* tally, const std::string& servers, const std::string& path, int rounds)
{
    asio::io_context ioc;
    bool finished = false;
    asio::co_spawn(ioc, [&]() -> awaitable<void> {
        session s{co_await asio::this_coro::executor, config_for(servers)};
        co_await connect(s);
        mutex m{s, path};
        for (int i = 0; i < rounds; ++i) {
            auto [ec, l] = co_await m.async_acquire(30s, tuple);
            if (ec) {
                tally->errors.fetch_add(1);
                continue;
            }
            tally->grants.fetch_add(1);
            if (tally->holders.fetch_add(1) != 0) tally->overlaps.fetch_add(1);
            // The default owner info ("host:pid", zklock list) is the worker's, not the parent's.
            auto [oec, owner, ost] = co_await s.async_get_data(l.node(), tuple);
            if (oec || !owner.ends_with(":" + std::to_string(::getpid()))) tally->foreign_owner.fetch_add(1);
            auto [gec, data, st] = co_await s.async_get_data(path + "-counter", tuple);
            co_await sleep_for(2ms);
            if (!gec) co_await s.async_set_data(path + "-counter", std::to_string(std::atoi(data.c_str()) + 1), -1, tuple);
            if (!l.owns_lock()) tally->lost.fetch_add(1);
            tally->holders.fetch_sub(1);
            co_await l.async_release(tuple);
        }
        co_await s.async_close(tuple);
        finished = true;
    }, asio::detached);
    ioc.run_for(120s);
    tally->done.fetch_add(1);
    return finished ? 0 : 1;
}

}  // namespace

TEST_CASE("fork safety: workers forked without exec after the parent used zklock never share an attempt id")
{
    const std::string servers = fault_server().connect_string();
    const auto path = unique_path("fork");
    // The parent uses zklock once (this is what seeded the old per-process id generator), then
    // closes its session and lets go of its io_context, as a prefork server does before forking.
    run([&]() -> awaitable<void> {
        session s{co_await asio::this_coro::executor, config_for(servers)};
        co_await connect(s);
        mutex m{s, path};
        auto l = co_await m.async_acquire(5s);
        auto [cec, created, cst] = co_await s.async_create(path + "-counter", "0", create_mode::persistent, tuple);
        REQUIRE_FALSE(cec);
        co_await l.async_release();
        co_await s.async_close();
    });

    void* mem = ::mmap(nullptr, sizeof(shared_tally), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    REQUIRE(mem != MAP_FAILED);
    auto* tally = new (mem) shared_tally;
    constexpr int workers = 4, rounds = 15;
    std::vector<pid_t> pids;
    for (int w = 0; w < workers; ++w) {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) ::_exit(fork_worker(tally, servers, path, rounds));  // no exec
        pids.push_back(pid);
    }
    int failed_workers = 0;
    for (pid_t pid : pids) {
        int status = 0;
        // Each worker bounds itself (run_for 120 s); wait a little longer, then kill what is left.
        for (int i = 0; i < 1500 && ::waitpid(pid, &status, WNOHANG) == 0; ++i) ::usleep(100'000);
        if (::waitpid(pid, &status, WNOHANG) == 0) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
        }
        failed_workers += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    CHECK(failed_workers == 0);
    CHECK(tally->overlaps.load() == 0);  // two holders at once
    CHECK(tally->errors.load() == 0);    // a spurious lock_lost: another process deleted our node
    CHECK(tally->lost.load() == 0);
    CHECK(tally->foreign_owner.load() == 0);
    CHECK(tally->grants.load() == workers * rounds);
    run([&]() -> awaitable<void> {
        session s{co_await asio::this_coro::executor, config_for(servers)};
        co_await connect(s);
        auto [ec, data, st] = co_await s.async_get_data(path + "-counter", tuple);
        CHECK_FALSE(ec);
        CHECK(data == std::to_string(workers * rounds));  // no lost update
        CHECK((co_await children_of(s, path)).empty());   // no orphan
        co_await s.async_close();
    });
    ::munmap(mem, sizeof(shared_tally));
}

TEST_CASE("data written by others: a forged holder mark in a waiter's node never grants the lock")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const std::string servers = fault_server().connect_string();
        session a{ex, config_for(servers)}, b{ex, config_for(servers)}, c{ex, config_for(servers)}, raw{ex, config_for(servers)};
        co_await connect(a);
        co_await connect(b);
        co_await connect(c);
        co_await connect(raw);
        const auto path = unique_path("forged-mark");
        checker chk;
        chk.expect_queue_order(path);
        mutex ma{a, path}, mb{b, path}, mc{c, path};

        auto la = co_await ma.async_acquire(5s);
        chk.granted(path, "a", la.fencing_token(), seq_of(la.node()));

        // b queues behind a (cancellable), c behind b.
        asio::cancellation_signal cancel_b;
        bool b_done = false;
        error_code b_ec;
        mb.async_acquire(30s, asio::bind_cancellation_slot(cancel_b.slot(), [&](error_code ec, lease) {
            b_ec = ec;
            b_done = true;
        }));
        REQUIRE(co_await wait_children(raw, path, 2) == 2);
        lease lc;
        bool c_done = false;
        asio::co_spawn(ex, [&]() -> awaitable<void> {
            auto [ec, l] = co_await mc.async_acquire(30s, tuple);
            CHECK_FALSE(ec);
            lc = std::move(l);
            if (lc) chk.granted(path, "c", lc.fencing_token(), seq_of(lc.node()));
            c_done = true;
        }, asio::detached);
        REQUIRE(co_await wait_children(raw, path, 3) == 3);

        // Any client may write into b's node under the default open ACL: it writes what a holder's
        // mark looked like, and c (watching b) reads it.
        auto kids = co_await children_of(raw, path);
        std::sort(kids.begin(), kids.end(), [](const std::string& x, const std::string& y) { return seq_of(x) < seq_of(y); });
        const std::string b_node = path + "/" + kids[1];
        REQUIRE(co_await wait_watched(fault_server(), b_node));  // c's watch on b is set: c sees the write as an event
        auto [sec, st] = co_await raw.async_set_data(b_node, "forger:1\nzklock:held", -1, tuple);
        REQUIRE_FALSE(sec);
        co_await sleep_for(300ms);  // c has re-read b's node

        // b gives up: its node goes while a still holds. c must list and wait behind a.
        cancel_b.emit(asio::cancellation_type::terminal);
        CHECK(co_await wait_until([&] { return b_done; }, 10s));
        CHECK(b_ec == asio::error::operation_aborted);
        co_await sleep_for(700ms);
        CHECK_FALSE(c_done);  // two holders if c was granted here
        CHECK(la.status() == lease_status::held);

        chk.released(path, "a");
        co_await la.async_release();
        CHECK(co_await wait_until([&] { return c_done; }, 10s));
        REQUIRE(lc.owns_lock());
        chk.released(path, "c");
        co_await lc.async_release();
        CHECK_MESSAGE(chk.ok(), chk.report());
        CHECK(chk.grants(path) == 2);
    });
}

TEST_CASE("handoff marks: an exclusive release marks the lock path, and a mark written by a set_data alone grants nothing")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const std::string servers = fault_server().connect_string();
        session a{ex, config_for(servers)}, b{ex, config_for(servers)}, c{ex, config_for(servers)}, raw{ex, config_for(servers)};
        co_await connect(a);
        co_await connect(b);
        co_await connect(c);
        co_await connect(raw);
        const auto path = unique_path("forged-handoff");
        checker chk;
        chk.expect_queue_order(path);
        mutex ma{a, path}, mb{b, path}, mc{c, path};
        // A long listing: a waiter whose predecessor leaves reads the mark rather than list again.
        const std::size_t junk = co_await make_long_listing(raw, path, create_mode::persistent);

        // a holds; b and c queue. a was granted by a listing that showed nobody after it: it
        // deletes plainly (b saw it as the head). b was granted by a handoff: it marks, in the
        // transaction of its delete, and c (watching b, which was not the head in c's listing)
        // is granted by that mark.
        {
            auto l0 = co_await ma.async_acquire(5s);
            lease l1, l2;
            int granted = 0;
            mb.async_acquire(30s, [&](error_code ec, lease l) {
                CHECK_FALSE(ec);
                l1 = std::move(l);
                ++granted;
            });
            REQUIRE(co_await wait_children(raw, path, junk + 2) == junk + 2);
            mc.async_acquire(30s, [&](error_code ec, lease l) {
                CHECK_FALSE(ec);
                l2 = std::move(l);
                ++granted;
            });
            REQUIRE(co_await wait_children(raw, path, junk + 3) == junk + 3);
            co_await l0.async_release();
            auto [d0ec, d0, d0st] = co_await raw.async_get_data(path, tuple);
            CHECK(d0.empty());
            CHECK(co_await wait_until([&] { return granted == 1; }, 10s));
            REQUIRE(l1.owns_lock());
            const std::string l1_name = l1.node().substr(path.size() + 1);
            co_await l1.async_release();
            CHECK(co_await wait_until([&] { return granted == 2; }, 10s));
            auto [dec, data, dst] = co_await raw.async_get_data(path, tuple);
            REQUIRE_FALSE(dec);
            CHECK(data == "zklock-released " + l1_name);
            CHECK(dst.mzxid == dst.pzxid);
            REQUIRE(l2.owns_lock());
            co_await l2.async_release();
        }

        auto la = co_await ma.async_acquire(5s);
        chk.granted(path, "a", la.fencing_token(), seq_of(la.node()));
        // b queues behind a (cancellable), c behind b: c watches b, an exclusive node that is not
        // the head, so b's deletion makes c read the lock path's mark.
        asio::cancellation_signal cancel_b;
        bool b_done = false;
        error_code b_ec;
        mb.async_acquire(30s, asio::bind_cancellation_slot(cancel_b.slot(), [&](error_code ec, lease) {
            b_ec = ec;
            b_done = true;
        }));
        REQUIRE(co_await wait_children(raw, path, junk + 2) == junk + 2);
        lease lc;
        bool c_done = false;
        asio::co_spawn(ex, [&]() -> awaitable<void> {
            auto [ec, l] = co_await mc.async_acquire(30s, tuple);
            CHECK_FALSE(ec);
            lc = std::move(l);
            if (lc) chk.granted(path, "c", lc.fencing_token(), seq_of(lc.node()));
            c_done = true;
        }, asio::detached);
        REQUIRE(co_await wait_children(raw, path, junk + 3) == junk + 3);
        auto kids = co_await children_of(raw, path);
        std::erase_if(kids, [](const std::string& k) { return k.starts_with("junk-"); });
        std::sort(kids.begin(), kids.end(), [](const std::string& x, const std::string& y) { return seq_of(x) < seq_of(y); });
        REQUIRE(kids.size() == 3);
        const std::string b_node = path + "/" + kids[1];
        REQUIRE(co_await wait_watched(fault_server(), b_node));

        // Anyone who may write the lock path's data writes b's mark, as b would if it held: a
        // set_data alone, so its mzxid is not the zxid of the path's last child change.
        auto [sec, st] = co_await raw.async_set_data(path, "zklock-released " + kids[1], -1, tuple);
        REQUIRE_FALSE(sec);
        // b gives up while a holds: its deletion moves the path's pzxid past the forged mark's
        // mzxid. c reads the mark, must not trust it, and lists: a is still there.
        cancel_b.emit(asio::cancellation_type::terminal);
        CHECK(co_await wait_until([&] { return b_done; }, 10s));
        CHECK(b_ec == asio::error::operation_aborted);
        co_await sleep_for(700ms);
        CHECK_FALSE(c_done);  // two holders if c was granted here
        CHECK(la.status() == lease_status::held);

        chk.released(path, "a");
        co_await la.async_release();
        CHECK(co_await wait_until([&] { return c_done; }, 10s));
        REQUIRE(lc.owns_lock());
        chk.released(path, "c");
        co_await lc.async_release();
        CHECK_MESSAGE(chk.ok(), chk.report());
        CHECK(chk.grants(path) == 2);
    });
}

TEST_CASE("look-ahead: a waiter armed while its predecessor holds is granted by that deletion alone, never once its own node is gone")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const std::string servers = fault_server().connect_string();
        session a{ex, config_for(servers)}, b{ex, config_for(servers)}, c{ex, config_for(servers)},
            d{ex, config_for(servers)}, raw{ex, config_for(servers)};
        co_await connect(a);
        co_await connect(b);
        co_await connect(c);
        co_await connect(d);
        co_await connect(raw);
        const auto path = unique_path("lookahead");
        checker chk;
        chk.expect_queue_order(path);
        mutex ma{a, path}, mb{b, path}, mc{c, path}, md{d, path};
        struct waiter {
            lease l;
            error_code ec;
            bool done = false;
        };
        auto queue = [&](mutex& m, waiter& w, std::string name) {
            asio::co_spawn(ex, [&m, &w, &chk, path, name]() -> awaitable<void> {
                auto [ec, l] = co_await m.async_acquire(30s, tuple);
                w.ec = ec;
                w.l = std::move(l);
                if (w.l) chk.granted(path, name, w.l.fencing_token(), seq_of(w.l.node()));
                w.done = true;
            }, asio::detached);
        };
        auto nodes = [&]() -> awaitable<std::vector<std::string>> {
            auto kids = co_await children_of(raw, path);
            std::sort(kids.begin(), kids.end(), [](const std::string& x, const std::string& y) { return seq_of(x) < seq_of(y); });
            for (auto& k : kids) k = path + "/" + k;
            co_return kids;
        };

        // a holds; b waits on a; c waits on b with a as its look-ahead node.
        auto la = co_await ma.async_acquire(5s);
        chk.granted(path, "a", la.fencing_token(), seq_of(la.node()));
        waiter wb, wc, wd;
        queue(mb, wb, "b");
        REQUIRE(co_await wait_children(raw, path, 2) == 2);
        queue(mc, wc, "c");
        REQUIRE(co_await wait_children(raw, path, 3) == 3);
        auto kids = co_await nodes();
        REQUIRE(co_await wait_watched(fault_server(), kids[1]));  // c's watch on b
        // c's own node: watched with its first watch, so that arming is one request.
        CHECK(co_await wait_watched(fault_server(), kids[2]));
        const auto c_lists = c.metrics().requests_of("get_children");

        // a goes: b holds (a was the head of its listing); c arms: one listing, which shows b at
        // the head.
        chk.released(path, "a");
        co_await la.async_release();
        CHECK(co_await wait_until([&] { return wb.done; }, 10s));
        REQUIRE(wb.l.owns_lock());
        CHECK(co_await wait_until([&] { return c.metrics().requests_of("get_children") == c_lists + 1; }, 10s));
        co_await sleep_for(300ms);  // its reply
        CHECK(c.metrics().requests_of("get_children") == c_lists + 1);
        CHECK_FALSE(wc.done);

        // b goes: c holds with no request after b's deletion.
        const auto c_requests = c.metrics().requests;
        chk.released(path, "b");
        co_await wb.l.async_release();
        CHECK(co_await wait_until([&] { return wc.done; }, 10s));
        REQUIRE(wc.l.owns_lock());
        CHECK(c.metrics().requests == c_requests);
        CHECK(c.metrics().handoffs_without_listing >= 1);
        // b, granted by a handoff with c behind it, released in a short queue: a plain delete, no
        // mark (nobody reads marks in a queue this short).
        auto [mec, mdata, mst] = co_await raw.async_get_data(path, tuple);
        REQUIRE_FALSE(mec);
        CHECK(mdata.empty());
        CHECK(b.metrics().requests_of("multi") == 0);

        // An armed waiter whose node goes: b queues again behind c, d behind b (d's look-ahead
        // node: c). c goes: b holds, d arms. Then someone deletes d's node: d must end with
        // lock_lost, and b's release must grant nobody: one holder at a time throughout.
        queue(mb, wb = {}, "b2");
        REQUIRE(co_await wait_children(raw, path, 2) == 2);
        queue(md, wd, "d");
        REQUIRE(co_await wait_children(raw, path, 3) == 3);
        kids = co_await nodes();
        REQUIRE(co_await wait_watched(fault_server(), kids[1]));  // d's watch on b
        REQUIRE(co_await wait_watched(fault_server(), kids[2]));  // d's own node
        const auto d_lists = d.metrics().requests_of("get_children");
        chk.released(path, "c");
        co_await wc.l.async_release();
        CHECK(co_await wait_until([&] { return wb.done; }, 10s));
        REQUIRE(wb.l.owns_lock());
        // d arms (its listing shows b at the head).
        CHECK(co_await wait_until([&] { return d.metrics().requests_of("get_children") == d_lists + 1; }, 10s));
        co_await sleep_for(300ms);
        CHECK_FALSE(wd.done);
        auto [dec] = co_await raw.async_remove(kids[2], -1, tuple);
        REQUIRE_FALSE(dec);
        CHECK(co_await wait_until([&] { return wd.done; }, 10s));
        CHECK(wd.ec == errc::lock_lost);
        CHECK_FALSE(wd.l);
        CHECK(wb.l.status() == lease_status::held);
        chk.released(path, "b2");
        co_await wb.l.async_release();
        CHECK(co_await wait_children(raw, path, 0) == 0);
        CHECK_MESSAGE(chk.ok(), chk.report());
        CHECK(chk.grants(path) == 4);
    });
}

// The look-ahead's own-node watch is sent with the read that arms the wait. When the node we
// wait on leaves before the server reads ours, its deletion event comes before the own watch's
// reply. That watch is not confirmed yet, and must not be taken for one confirmed on an older
// connection: the driver dropped it then, and every such handoff listed the whole queue again
// (bench W1000: 388 of 998 handoffs). Here c's traffic is 60 ms late, so both deletions reach c
// before its own watch's reply.
TEST_CASE("look-ahead: a predecessor that leaves before the server reads our own node still hands over without a listing")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto& server = fault_server();
        fault_proxy proxy{server.port()};
        const std::string servers = server.connect_string();
        session a{ex, config_for(servers)}, b{ex, config_for(servers)}, d{ex, config_for(servers)},
            c{ex, config_for(proxy.connect_string(), 6000ms)}, raw{ex, config_for(servers)};
        co_await connect(a);
        co_await connect(b);
        co_await connect(c);
        co_await connect(d);
        co_await connect(raw);
        const auto path = unique_path("lookahead-late-own");
        checker chk;
        chk.expect_queue_order(path);
        // A long listing, so that waiters read the handoff mark.
        const std::size_t junk = co_await make_long_listing(raw, path, create_mode::ephemeral);
        mutex ma{a, path}, mb{b, path}, mc{c, path}, md{d, path};
        struct waiter {
            lease l;
            error_code ec;
            bool done = false;
        };
        // Each waiter that is granted records it; w (on d) releases at once, as a holder at hold 0.
        auto queue = [&](mutex& m, waiter& w, std::string name, bool release_at_once) {
            asio::co_spawn(ex, [&m, &w, &chk, path, name, release_at_once]() -> awaitable<void> {
                auto [ec, l] = co_await m.async_acquire(30s, tuple);
                w.ec = ec;
                if (l) chk.granted(path, name, l.fencing_token(), seq_of(l.node()));
                if (l && release_at_once) {
                    chk.released(path, name);
                    co_await l.async_release(tuple);
                }
                w.l = std::move(l);
                w.done = true;
            }, asio::detached);
        };

        // The queue: a (holds), b, w, x. x waits on w, with b as its look-ahead node.
        auto la = co_await ma.async_acquire(5s);
        chk.granted(path, "a", la.fencing_token(), seq_of(la.node()));
        waiter wb, ww, wx;
        queue(mb, wb, "b", false);
        REQUIRE(co_await wait_children(raw, path, junk + 2) == junk + 2);
        queue(md, ww, "w", true);
        REQUIRE(co_await wait_children(raw, path, junk + 3) == junk + 3);
        queue(mc, wx, "x", false);
        REQUIRE(co_await wait_children(raw, path, junk + 4) == junk + 4);
        auto kids = co_await children_of(raw, path);
        std::erase_if(kids, [](const std::string& k) { return k.starts_with("junk-"); });
        std::sort(kids.begin(), kids.end(), [](const std::string& x, const std::string& y) { return seq_of(x) < seq_of(y); });
        REQUIRE(kids.size() == 4);
        REQUIRE(co_await wait_watched(server, path + "/" + kids[1]));  // x's look-ahead watch on b (and w's wait)
        REQUIRE(co_await wait_watched(server, path + "/" + kids[2]));  // x's watch on w

        // a goes (b was the head of b's listing: b holds). Then b goes with a mark, w reads it,
        // holds and releases at once, with a mark naming w. x hears of both deletions 60 ms late,
        // before its own watch's reply; its read of the mark (served after w left) names w.
        chk.released(path, "a");
        co_await la.async_release();
        CHECK(co_await wait_until([&] { return wb.done; }, 10s));
        REQUIRE(wb.l.owns_lock());
        co_await sleep_for(200ms);  // w's look-ahead read (a left without a mark) is answered
        const auto x_lists = c.metrics().requests_of("get_children");
        proxy.delay(60ms);
        chk.released(path, "b");
        co_await wb.l.async_release();
        CHECK(co_await wait_until([&] { return ww.done && wx.done; }, 10s));
        CHECK_FALSE(ww.ec);
        CHECK_FALSE(wx.ec);
        REQUIRE(wx.l.owns_lock());
        proxy.pass();
        CHECK(c.metrics().requests_of("get_children") == x_lists);  // no listing after w's deletion
        CHECK(c.metrics().handoffs_with_listing == 0);
        CHECK(c.metrics().handoffs_without_listing == 1);
        chk.released(path, "x");
        co_await wx.l.async_release();
        CHECK_MESSAGE(chk.ok(), chk.report());
        CHECK(chk.grants(path) == 4);
    });
}

TEST_CASE("one recipe per path: a semaphore and a mutex (or shared_mutex) refuse to share a path")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const std::string servers = fault_server().connect_string();
        session a{ex, config_for(servers)}, b{ex, config_for(servers)};
        co_await connect(a);
        co_await connect(b);

        SUBCASE("a mutex holds: semaphore(1) is refused, not granted")
        {
            const auto path = unique_path("mix-mutex-first");
            mutex m{a, path};
            auto l = co_await m.async_acquire(5s);
            semaphore sem{b, path, 1};
            auto [ec, sl] = co_await sem.async_acquire(3s, tuple);
            CHECK(ec == errc::recipe_mismatch);
            CHECK_FALSE(sl.owns_lock());
            CHECK((co_await children_of(a, path)).size() == 1);  // the refused node is gone
            auto [tec, tl] = co_await sem.async_try_acquire(tuple);
            CHECK(tec == errc::recipe_mismatch);
            CHECK(l.status() == lease_status::held);
            co_await l.async_release();
        }
        SUBCASE("a semaphore holds: a mutex, a writer and a reader are refused")
        {
            const auto path = unique_path("mix-semaphore-first");
            semaphore sem{a, path, 2};
            auto l = co_await sem.async_acquire(5s);
            mutex m{b, path};
            auto [ec, ml] = co_await m.async_acquire(3s, tuple);
            CHECK(ec == errc::recipe_mismatch);
            shared_mutex rw{b, path};
            auto [wec, wl] = co_await rw.async_acquire(3s, tuple);
            CHECK(wec == errc::recipe_mismatch);
            auto [rec, rl] = co_await rw.async_acquire_shared(3s, tuple);
            CHECK(rec == errc::recipe_mismatch);
            CHECK((co_await children_of(a, path)).size() == 1);
            co_await l.async_release();
            // Once the path is free again, any recipe may use it.
            auto ml2 = co_await m.async_acquire(5s);
            CHECK(ml2.owns_lock());
            co_await ml2.async_release();
        }
        co_await a.async_close();
        co_await b.async_close();
    });
}

TEST_CASE("request size: an owner_info past the server's limit is refused before it is sent")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session s{ex, config_for(fault_server().connect_string())};
        co_await connect(s);
        const auto gen = s.generation();
        const auto path = unique_path("big-owner");
        lock_options big;
        big.owner_info = std::string(2 * 1024 * 1024, 'o');
        const auto started = std::chrono::steady_clock::now();
        mutex m{s, path, big};
        auto [ec, l] = co_await m.async_acquire(10s, tuple);
        CHECK(ec == errc::request_too_large);
        auto [tec, tl] = co_await m.async_try_acquire(tuple);
        CHECK(tec == errc::request_too_large);
        semaphore sem{s, path, 1, big};
        auto [sec, sl] = co_await sem.async_acquire(10s, tuple);
        CHECK(sec == errc::request_too_large);
        CHECK(std::chrono::steady_clock::now() - started < 5s);  // at once, not after a timeout
        // The raw requests too.
        auto [cec, created, cst] = co_await s.async_create(path + "-raw", std::string(1048576, 'd'), create_mode::persistent, tuple);
        CHECK(cec == errc::request_too_large);
        std::vector<multi_op> ops;  // (a braced list inside co_await trips GCC 12)
        ops.push_back(multi_op::create(path + "-m1", std::string(600'000, 'd')));
        ops.push_back(multi_op::create(path + "-m2", std::string(600'000, 'd')));
        auto [mec, mres] = co_await s.async_multi(std::move(ops), tuple);
        CHECK(mec == errc::request_too_large);
        // Nothing reached the server: the connection never dropped.
        CHECK(s.state() == session_state::connected);
        CHECK(s.generation() == gen);
        // Just under the limit works.
        lock_options fits;
        fits.owner_info = std::string(1000 * 1000, 'o');
        mutex m2{s, path, fits};
        auto l2 = co_await m2.async_acquire(10s);
        CHECK(l2.owns_lock());
        co_await l2.async_release();
        co_await s.async_close();
    });
}

TEST_CASE("request size: a create the server drops every time ends with request_dropped after bounded tries")
{
    // A server whose jute.maxbuffer is smaller than the client was told: the server closes the
    // connection on each create, which looks like a connection loss. The acquire must not loop.
    server_options options;
    options.tick_time = std::chrono::milliseconds(200);
    options.jvm_flags.push_back("-Djute.maxbuffer=65536");
    zk_server small{options};
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session s{ex, config_for(small.connect_string())};
        co_await connect(s);
        const auto path = unique_path("dropped");
        // The lock directory first, with a small request that the server takes.
        co_await s.async_create("/zklock-test", "", create_mode::persistent, tuple);
        co_await s.async_create(path, "", create_mode::persistent, tuple);
        lock_options big;
        big.owner_info = std::string(200'000, 'o');
        mutex m{s, path, big};
        auto [ec, l] = co_await m.async_acquire(tuple);  // no timeout: it must end by itself
        CHECK(ec == errc::request_dropped);
        auto [tec, tl] = co_await m.async_try_acquire(tuple);
        CHECK(tec == errc::request_dropped);
        // The session is still usable (it reconnects after the last drop), and no node was created.
        CHECK(co_await wait_until([&] { return s.state() == session_state::connected; }, 10s));
        CHECK((co_await children_of(s, path)).empty());
        mutex small_owner{s, path};
        auto ok_lease = co_await small_owner.async_acquire(10s);
        CHECK(ok_lease.owns_lock());
        co_await ok_lease.async_release();
        co_await s.async_close();
    }, std::chrono::seconds(120));
}

TEST_CASE("durations: the largest values saturate instead of overflowing, bad ones get invalid_argument")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const std::string servers = fault_server().connect_string();
        const auto path = unique_path("durations");

        SUBCASE("connect_timeout = milliseconds::max(): connects")
        {
            auto cfg = config_for(servers);
            cfg.connect_timeout = std::chrono::milliseconds::max();
            session s{ex, cfg};
            auto [ec] = co_await s.async_connect(tuple);
            CHECK_FALSE(ec);
            CHECK(s.state() == session_state::connected);
            co_await s.async_close();
        }
        SUBCASE("session_timeout <= 0 or connect_timeout <= 0: invalid_argument, not connect_timeout")
        {
            for (auto t : {std::chrono::milliseconds(0), std::chrono::milliseconds(-5), std::chrono::milliseconds::min()}) {
                auto cfg = config_for(servers);
                cfg.session_timeout = t;
                session s{ex, cfg};
                auto [ec] = co_await s.async_connect(tuple);
                CHECK(ec == errc::invalid_argument);
                auto cfg2 = config_for(servers);
                cfg2.connect_timeout = t;
                session s2{ex, cfg2};
                auto [ec2] = co_await s2.async_connect(tuple);
                CHECK(ec2 == errc::invalid_argument);
            }
        }
        SUBCASE("session_timeout of 2^32 + 3000 ms is not truncated to 3000 ms: the server grants its maximum")
        {
            auto cfg = config_for(servers);
            cfg.session_timeout = std::chrono::milliseconds((std::int64_t{1} << 32) + 3000);
            session s{ex, cfg};
            co_await connect(s);
            CHECK(s.negotiated_timeout() == 20000ms);  // the fault server's maxSessionTimeout
            co_await s.async_close();
        }
        SUBCASE("acquire with duration::max(): mutex, semaphore and multi_lock are granted")
        {
            session s{ex, config_for(servers)};
            co_await connect(s);
            const auto forever = std::chrono::steady_clock::duration::max();
            mutex m{s, path + "-m"};
            auto l = co_await m.async_acquire(forever);
            CHECK(l.owns_lock());
            co_await l.async_release();
            semaphore sem{s, path + "-s", 2};
            auto sl = co_await sem.async_acquire(forever);
            CHECK(sl.owns_lock());
            co_await sl.async_release();
            multi_lock ml{s, {lock_spec::exclusive(path + "-a"), lock_spec::shared(path + "-b")}};
            auto [ec, leases] = co_await ml.async_acquire(forever, tuple);
            CHECK_FALSE(ec);
            REQUIRE(leases.size() == 2);
            CHECK(leases[0].owns_lock());
            CHECK(leases[1].owns_lock());
            for (auto& x : leases) co_await x.async_release();
            co_await s.async_close();
        }
    });
}

TEST_CASE("one answer to one question: a zero timeout tries once everywhere, bad paths are invalid_path")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const std::string servers = fault_server().connect_string();
        session a{ex, config_for(servers)}, b{ex, config_for(servers)};
        co_await connect(a);
        co_await connect(b);
        const auto path = unique_path("zero");

        // multi_lock(0s) on free locks: granted, like mutex(0s) and semaphore(0s).
        multi_lock ml{a, {lock_spec::exclusive(path + "-a"), lock_spec::semaphore(path + "-s", 1)}};
        auto [ec, leases] = co_await ml.async_acquire(0s, tuple);
        CHECK_FALSE(ec);
        REQUIRE(leases.size() == 2);
        mutex ma{a, path + "-m"};
        auto lm = co_await ma.async_acquire(0s);
        CHECK(lm.owns_lock());
        // Held elsewhere: would_block at once, and nothing of the attempt is left.
        multi_lock mlb{b, {lock_spec::exclusive(path + "-free"), lock_spec::exclusive(path + "-a")}};
        auto [bec, bl] = co_await mlb.async_acquire(0s, tuple);
        CHECK(bec == errc::would_block);
        CHECK(bl.empty());
        CHECK((co_await children_of(b, path + "-free")).empty());
        CHECK((co_await children_of(b, path + "-a")).size() == 1);
        mutex mb{b, path + "-m"};
        auto [mec, mbl] = co_await mb.async_acquire(0s, tuple);
        CHECK(mec == errc::would_block);
        auto [nec, nbl] = co_await mb.async_acquire(-5s, tuple);
        CHECK(nec == errc::would_block);
        for (auto& x : leases) co_await x.async_release();
        co_await lm.async_release();

        // Paths: a C1 control character (U+0085) and invalid UTF-8 are invalid_path, like C0.
        for (std::string bad : {std::string("/zklock-test/a\xc2\x85" "b"), std::string("/zklock-test/a\xff" "b"),
                                std::string("/zklock-test/a\xc0\xaf"), std::string("/zklock-test/\xed\xa0\x80"),
                                std::string("/zklock-test/\xf0\x9f\x94\x92"), std::string("/zklock-test/a\x01")}) {
            CAPTURE(bad);
            mutex m{a, bad};
            auto [pec, pl] = co_await m.async_acquire(1s, tuple);
            CHECK(pec == errc::invalid_path);
        }
        // Valid UTF-8 in the BMP is fine.
        mutex ok_m{a, "/zklock-test/verrou-\xc3\xa9t\xc3\xa9-" + std::to_string(::getpid())};
        auto ok_l = co_await ok_m.async_acquire(5s);
        CHECK(ok_l.owns_lock());
        co_await ok_l.async_release();
        co_await a.async_close();
        co_await b.async_close();
    });
}
