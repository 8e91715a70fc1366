// The C++ blocks of README.md and docs/*.md that no example holds, run against the real server.
// Each block is a region of this file (`//[name` ... `//]`), which test/docs/check_snippets.py
// (ctest docs.snippets) compares with the markdown; each case asserts that the block does what
// the docs say it does.
#include "../common.hpp"
#include "server.hpp"
#include "support/tls_certs.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <variant>

using namespace zklock;
using namespace zklock::test;
using namespace asio::experimental::awaitable_operators;

namespace {

using clock_type = std::chrono::steady_clock;

/// Sends std::cout into a string while it lives.
class capture_cout {
public:
    capture_cout() : old_(std::cout.rdbuf(out_.rdbuf())) {}
    ~capture_cout() { std::cout.rdbuf(old_); }
    capture_cout(const capture_cout&) = delete;
    capture_cout& operator=(const capture_cout&) = delete;
    std::string text() const { return out_.str(); }

private:
    std::ostringstream out_;
    std::streambuf* old_;
};

// ---- the guide's loss pattern ("The lease") --------------------------------------------------------

/// The guide's pattern: the work runs until it ends or the lock is lost, whichever comes first.
/// Returns the reason of the loss, or no error if the work ended first.
template <class Work> awaitable<error_code> work_while_held(zklock::lease& lease, Work do_the_work)
{
    //[loss_pattern
    using namespace asio::experimental::awaitable_operators;
    auto r = co_await (do_the_work(lease.fencing_token()) ||
                       lease.async_wait_lost(asio::as_tuple(asio::use_awaitable)));
    if (r.index() == 1) co_return std::get<0>(std::get<1>(r));  // lost: the work was cancelled
    //]
    co_return error_code{};
}

/// What the work did: 100 steps of 100 ms (10 s) unless cancelled.
struct work_record {
    int steps = 0;
    bool finished = false;
    std::int64_t token = 0;
};

auto ten_seconds_of_work(work_record& w)
{
    return [&w](std::int64_t fencing_token) -> awaitable<void> {
        w.token = fencing_token;
        asio::steady_timer t{co_await asio::this_coro::executor};
        for (int i = 0; i < 100; ++i) {
            t.expires_after(100ms);
            co_await t.async_wait(asio::use_awaitable);
            ++w.steps;
        }
        w.finished = true;
    };
}

/// `lease` (held through `holder`) runs the guide's pattern while `other` deletes its node 0.5 s in:
/// the work must stop within one round trip of the delete, long before its 10 s, and the pattern
/// must say that the loss won, with errc::lock_lost.
awaitable<void> loss_cancels_the_work(session& other, zklock::lease& lease)
{
    REQUIRE(lease.owns_lock());
    auto ex = co_await asio::this_coro::executor;
    work_record w;
    std::optional<clock_type::time_point> delete_sent;
    error_code delete_ec = errc::timeout;
    task_group g{ex};
    g.spawn([&]() -> awaitable<void> {
        co_await sleep_for(500ms);
        delete_sent = clock_type::now();
        std::tie(delete_ec) = co_await other.async_remove(lease.node(), tuple);
    });
    const auto start = clock_type::now();
    const auto reason = co_await work_while_held(lease, ten_seconds_of_work(w));
    const auto ended = clock_type::now();
    CHECK(co_await g.join());
    CHECK_FALSE(delete_ec);
    REQUIRE(delete_sent);
    const auto after_delete = std::chrono::duration_cast<std::chrono::milliseconds>(ended - *delete_sent);
    MESSAGE("work cancelled " << after_delete.count() << " ms after the delete was sent, after " << w.steps
                              << " steps");
    CHECK(reason == errc::lock_lost);
    CHECK_FALSE(w.finished);
    CHECK(w.token == lease.fencing_token());
    CHECK(w.steps >= 3);  // it ran until the delete
    CHECK(ended >= *delete_sent);
    CHECK(after_delete < 2s);
    CHECK(ended - start < 4s);
    CHECK_FALSE(lease.owns_lock());
    CHECK(lease.lost_reason() == errc::lock_lost);
}

}  // namespace

TEST_CASE("docs: README's acquire suspends the coroutine until the lock is free, blocking no thread")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto ss = co_await open_sessions(2);
        const auto path = unique_path("docs-readme");
        zklock::mutex mutex{ss[0], path};
        zklock::mutex other{ss[1], path};
        auto first = co_await other.async_acquire(5s, asio::deferred);
        const auto first_token = first.fencing_token();
        // The holder releases 300 ms in, on this same thread: it runs while the acquire waits.
        task_group g{ex};
        g.spawn([&]() -> awaitable<void> {
            co_await sleep_for(300ms);
            co_await first.async_release(asio::deferred);
        });
        const auto start = clock_type::now();
        //[readme_acquire
        auto lease = co_await mutex.async_acquire(5s);
        //]
        CHECK(clock_type::now() - start >= 300ms);
        CHECK(lease.owns_lock());
        CHECK(lease.fencing_token() > first_token);
        CHECK(co_await g.join());
        co_await lease.async_release(asio::deferred);
    });
}

TEST_CASE("docs: the loss pattern cancels a mutex holder's work within one round trip of the loss")
{
    run([]() -> awaitable<void> {
        auto ss = co_await open_sessions(2);
        mutex m{ss[0], unique_path("docs-loss-mutex")};
        auto l = co_await m.async_acquire(5s, asio::deferred);
        co_await loss_cancels_the_work(ss[1], l);
    });
}

TEST_CASE("docs: the loss pattern cancels a leader's work within one round trip of the loss")
{
    run([]() -> awaitable<void> {
        auto ss = co_await open_sessions(2);
        election e{ss[0], unique_path("docs-loss-election")};
        auto lead = co_await e.async_campaign("leader", 5s, asio::deferred);
        REQUIRE(lead.is_leader());
        co_await loss_cancels_the_work(ss[1], lead);
        CHECK_FALSE(lead.is_leader());
    });
}

TEST_CASE("docs: the loss pattern cancels a cohort's local holder's work within one round trip of the loss")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto ss = co_await open_sessions(2);
        const auto path = unique_path("docs-loss-cohort");
        mutex m{ss[0], path, lock_options{.cohort = true}};
        // A local waiter behind the holder: it fails with the same error when the node goes.
        auto l = co_await m.async_acquire(5s, asio::deferred);
        error_code waiter_ec;
        bool waiter_done = false;
        task_group g{ex};
        g.spawn([&]() -> awaitable<void> {
            auto [ec, w] = co_await m.async_acquire(20s, tuple);
            waiter_ec = ec;
            waiter_done = true;
        });
        co_await sleep_for(50ms);
        CHECK((co_await children_of(ss[1], path)).size() == 1);  // one node for both
        CHECK_FALSE(waiter_done);
        co_await loss_cancels_the_work(ss[1], l);
        CHECK(co_await g.join());
        CHECK(waiter_ec == errc::lock_lost);
    });
}

TEST_CASE("docs: the loss pattern's other form, use_awaitable, lets the work run on after the loss")
{
    // Asio's || waits for the first operation to succeed; a wait that ends in an exception is a
    // failure, so the work goes on. This is why the guide wraps the wait in as_tuple.
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto ss = co_await open_sessions(2);
        mutex m{ss[0], unique_path("docs-loss-wrong")};
        auto l = co_await m.async_acquire(5s, asio::deferred);
        task_group g{ex};
        g.spawn([&]() -> awaitable<void> {
            co_await sleep_for(200ms);
            co_await ss[1].async_remove(l.node(), tuple);
        });
        bool finished = false;
        auto short_work = [&]() -> awaitable<void> {
            co_await sleep_for(1500ms);
            finished = true;
        };
        const auto start = clock_type::now();
        auto r = co_await (short_work() || l.async_wait_lost(asio::use_awaitable));
        CHECK(r.index() == 0);
        CHECK(finished);
        CHECK(clock_type::now() - start >= 1500ms);
        CHECK(l.lost_reason() == errc::lock_lost);
        CHECK(co_await g.join());
    });
}

TEST_CASE("docs: the loss pattern with a work that throws waits on for the loss, as the guide says")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto ss = co_await open_sessions(2);
        mutex m{ss[0], unique_path("docs-loss-throws")};
        auto l = co_await m.async_acquire(5s, asio::deferred);
        task_group g{ex};
        g.spawn([&]() -> awaitable<void> {
            co_await sleep_for(1s);
            co_await ss[1].async_remove(l.node(), tuple);
        });
        bool threw = false;
        auto failing_work = [&](std::int64_t) -> awaitable<void> {
            co_await sleep_for(100ms);
            threw = true;
            throw std::runtime_error("the work failed");
        };
        const auto start = clock_type::now();
        const auto reason = co_await work_while_held(l, failing_work);
        CHECK(threw);
        CHECK(clock_type::now() - start >= 1s);  // not at the throw, 0.1 s in
        CHECK(reason == errc::lock_lost);
        CHECK(co_await g.join());
    });
}

// ---- the guide's election block ------------------------------------------------------------------

namespace {

/// The guide's observer, on its own session: prints each change of leader or value.
awaitable<void> print_leaders(zklock::session& zk)
{
    zklock::election e{zk, "/services/billing/leader"};
    //[election_observer
    auto who = co_await e.async_leader();                      // who leads now (errc::no_leader)
    auto observer = e.observe();
    for (;;) {
        auto leader = co_await observer.async_next();          // each change of leader or value
        std::cout << (leader ? leader.value : "(nobody)") << "\n";
    }
    //]
}

}  // namespace

TEST_CASE("docs: the guide's election: lead and run the job then proclaim and resign while the observer prints each")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto ss = co_await open_sessions(2);
        auto& zk = ss[0];
        std::string printed;
        bool job_done = false;
        std::int64_t job_token = 0, lead_token = -1;
        asio::cancellation_signal stop_printer;
        bool printer_done = false;
        {
            capture_cout out;
            // The job (once we lead): starts the observer, waits until it has printed us, ends.
            auto run_the_job = [&](std::int64_t fencing_token) -> awaitable<void> {
                job_token = fencing_token;
                asio::co_spawn(ex, print_leaders(ss[1]),
                               asio::bind_cancellation_slot(stop_printer.slot(), [&](std::exception_ptr) {
                                   printer_done = true;
                               }));
                co_await eventually([&] { return out.text() == "host-7:8080\n"; });
                job_done = true;
            };
            //[election
            zklock::election e{zk, "/services/billing/leader"};
            auto lead = co_await e.async_campaign("host-7:8080");      // waits until we lead
            co_await (run_the_job(lead.fencing_token()) || lead.async_wait_lost(asio::as_tuple(asio::use_awaitable)));
            if (lead.is_leader()) {                                     // the job ended, not the leadership
                co_await lead.async_proclaim("host-7:8080 draining");  // observers see the new value
                co_await lead.async_resign();                           // the next candidate leads
            }
            //]
            lead_token = lead.fencing_token();
            co_await eventually([&] {
                const auto t = out.text();
                return t.size() >= 9 && t.compare(t.size() - 9, 9, "(nobody)\n") == 0;
            });
            printed = out.text();
            stop_printer.emit(asio::cancellation_type::terminal);
            co_await eventually([&] { return printer_done; });
        }
        CHECK(job_done);
        CHECK(job_token == lead_token);
        CHECK(printer_done);
        // The leader, then (unless a slow reader skipped it) the proclaimed value, then nobody.
        CHECK((printed == "host-7:8080\nhost-7:8080 draining\n(nobody)\n" || printed == "host-7:8080\n(nobody)\n"));
        MESSAGE("the observer printed: " << printed);
        election e{zk, "/services/billing/leader"};
        auto [ec, who] = co_await e.async_leader(tuple);
        CHECK(ec == errc::no_leader);
    });
}

// ---- the guide's cohort block ----------------------------------------------------------------------

namespace {

/// A resource that keeps the largest fence it accepted and refuses any fence not greater.
struct fenced_table {
    zklock::fence_token highest{};
    std::vector<std::pair<std::string, zklock::fence_token>> rows;
    int refused = 0;

    awaitable<void> write(std::string row, zklock::fence_token fence)
    {
        co_await sleep_for(2ms);  // the write takes a moment
        if (!(highest < fence)) {
            ++refused;
            co_return;
        }
        highest = fence;
        rows.emplace_back(std::move(row), fence);
    }
};

awaitable<void> write_order(zklock::session& zk, fenced_table& db, std::string row)
{
    //[cohort
    zklock::lock_options opt;
    opt.cohort = true;               // this session's acquires of the lock share one queue node
    opt.max_local_handoffs = 32;     // the default: see "Fairness between sessions"
    zklock::mutex orders{zk, "/locks/orders", opt};

    auto lease = co_await orders.async_acquire(5s);   // the same API, the same contract
    co_await db.write(row, lease.fence());            // compare fence(), not fencing_token(): below
    //]
}

}  // namespace

TEST_CASE("docs: the guide's cohort block: every writer accepted and fence() increasing across local handoffs")
{
    CHECK(lock_options{}.max_local_handoffs == 32);
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto ss = co_await open_sessions(2);
        fenced_table db;
        task_group g{ex};
        for (int i = 0; i < 12; ++i)
            g.spawn(write_order(ss[static_cast<std::size_t>(i % 3 == 2)], db, "row-" + std::to_string(i)));
        CHECK(co_await g.join());
        CHECK(db.refused == 0);
        CHECK(db.rows.size() == 12);
        // Local handoffs happened: holders one after the other on one node (one zxid, local 1, 2, ...),
        // whose fencing_token() alone would not have increased.
        int shared_zxid = 0;
        for (std::size_t i = 1; i < db.rows.size(); ++i) {
            CHECK(db.rows[i - 1].second < db.rows[i].second);
            if (db.rows[i - 1].second.zxid == db.rows[i].second.zxid) ++shared_zxid;
        }
        CHECK(shared_zxid > 0);
        MESSAGE(shared_zxid << " of 11 grants handed on locally");
    });
}

// ---- the guide's "Cancellation and timeouts" ------------------------------------------------------

namespace {

awaitable<std::variant<zklock::lease, std::monostate>> acquire_or_shutdown(zklock::mutex& m,
                                                                          asio::steady_timer& shutdown)
{
    //[cancellation_composes
    using namespace asio::experimental::awaitable_operators;
    auto r = co_await (m.async_acquire(asio::use_awaitable) || shutdown.async_wait(asio::use_awaitable));
    //]
    co_return r;
}

}  // namespace

TEST_CASE("docs: an acquire || a shutdown timer: the shutdown cancels the acquire and its node is gone")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto ss = co_await open_sessions(2);
        const auto path = unique_path("docs-shutdown");
        mutex m{ss[0], path};
        mutex holder_lock{ss[1], path};
        auto holder = co_await holder_lock.async_acquire(5s, asio::deferred);

        asio::steady_timer shutdown{ex, 300ms};
        const auto start = clock_type::now();
        auto r = co_await acquire_or_shutdown(m, shutdown);
        CHECK(r.index() == 1);
        CHECK(clock_type::now() - start < 2s);
        // Only the holder's node is left: the acquire's was deleted before it completed.
        const auto left = co_await children_of(ss[1], path);
        CHECK(left == std::vector<std::string>{holder.node().substr(path.size() + 1)});
        co_await holder.async_release(asio::deferred);

        // The lock free: the acquire wins and the timer's wait is cancelled.
        asio::steady_timer later{ex, 30s};
        auto won = co_await acquire_or_shutdown(m, later);
        REQUIRE(won.index() == 0);
        CHECK(std::get<0>(won).owns_lock());
        co_await std::get<0>(won).async_release(asio::deferred);
    });
}

// ---- the guide's metrics ---------------------------------------------------------------------------

TEST_CASE("docs: metrics with paths cleared: the session's totals, no series per lock path")
{
    run([]() -> awaitable<void> {
        auto ss = co_await open_sessions(1);
        auto& zk = ss[0];
        const auto path = unique_path("docs-metrics");
        mutex lock{zk, path};
        auto l = co_await lock.async_acquire(5s, asio::deferred);
        const auto full = to_prometheus(zk.metrics(), {{"app", "orders"}});
        CHECK(full.find("zklock_holders{app=\"orders\",path=\"" + path + "\"} 1\n") != std::string::npos);
        //[metrics_without_paths
        auto m = zk.metrics();
        m.paths.clear();  // no zklock_waiters / zklock_holders series per lock path
        auto page = zklock::to_prometheus(m, {{"app", "orders"}});
        //]
        CHECK(page.find("zklock_holders{") == std::string::npos);
        CHECK(page.find("zklock_waiters{") == std::string::npos);
        CHECK(page.find("zklock_acquires_granted_total{app=\"orders\",kind=\"exclusive\"} 1\n") != std::string::npos);
        CHECK(zk.metrics().paths.size() == 1);  // the session keeps its own
        co_await l.async_release(asio::deferred);
    });
}

// ---- docs/security.md ------------------------------------------------------------------------------

TEST_CASE("docs: security.md's digest_auth: another identity cannot delete our queue node")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        //[digest_auth
        zklock::session_config cfg;
        cfg.servers = "zk1:2181,zk2:2181,zk3:2181";
        cfg.digest_auth = "orders-service:secret";  // added at every (re)connect
        //]
        cfg.servers = shared_server().connect_string();  // the test's server
        session zk{ex, cfg};
        co_await zk.async_connect(asio::deferred);
        auto others = co_await open_sessions(1);  // no digest_auth
        // The lock's directory is created by the authenticated session: creator-only.
        mutex m{zk, unique_path("docs-digest")};
        auto l = co_await m.async_acquire(5s, asio::deferred);
        auto [ec] = co_await others[0].async_remove(l.node(), tuple);
        CHECK(ec == zk_errc::no_auth);
        CHECK(l.owns_lock());
        co_await l.async_release(asio::deferred);
        co_await zk.async_close(asio::deferred);
    });
}

TEST_CASE("docs: security.md's TLS settings connect to a server's secureClientPort and lock (without TLS built: not_supported)")
{
    const auto& certs = shared_tls_certs();
    zk_server server{server_options{.tick_time = 200ms, .tls = certs.server_tls()}};
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        //[tls
        zklock::session_config cfg;
        cfg.servers = "zk1.example:2281,zk2.example:2281,zk3.example:2281";  // the servers' secureClientPort
        cfg.tls.enabled = true;
        cfg.tls.ca_file = "/etc/zklock/ca.pem";        // empty: the system's CAs
        cfg.tls.cert_file = "/etc/zklock/client.pem";  // optional: for ssl.clientAuth=need, and identities
        cfg.tls.key_file = "/etc/zklock/client.key";
        //]
        // The test's server and certificates in place of the example's.
        cfg.servers = server.tls_connect_string();
        cfg.tls.ca_file = certs.ca_cert().string();
        cfg.tls.cert_file = certs.client_cert("alice").string();
        cfg.tls.key_file = certs.client_key("alice").string();
        session zk{ex, cfg};
#if !ZKLOCK_TEST_TLS
        // A libzklock built without TLS (ZKLOCK_TLS=OFF) refuses the settings at connect.
        auto [ec] = co_await zk.async_connect(asio::as_tuple(asio::deferred));
        CHECK(ec == zklock::errc::not_supported);
        CHECK(ec == std::errc::not_supported);
        CHECK(zk.state() != zklock::session_state::connected);
        co_return;
#endif
        co_await zk.async_connect(asio::deferred);
        mutex m{zk, unique_path("docs-tls")};
        auto l = co_await m.async_acquire(5s, asio::deferred);
        CHECK(l.owns_lock());
        co_await l.async_release(asio::deferred);
        co_await zk.async_close(asio::deferred);
    });
}
