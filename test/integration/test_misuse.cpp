// Misuse never crashes: every public operation called on a moved-from object, on an object of a
// closed session, or on a released lease completes with an error (the one each case names), once,
// on the handler's associated executor, and never inside the initiating function. The queries of
// those objects answer without touching what the object no longer has. (The sanitizer stage runs
// this under ASan: a use of a moved-from object's state fails it there even where it happens not
// to crash.)
#include "../common.hpp"
#include "server.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/system_executor.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

using namespace zklock;
using namespace zklock::test;

namespace {

// One call and what became of its handler.
struct outcome {
    std::string what;
    error_code expected;
    int calls = 0;
    error_code ec;
    bool inline_call = false;
    bool off_strand = false;
};

// Calls operations with handlers bound to a strand of the test's io_context, records each
// completion, and checks them all once every handler has run.
class misuse_calls {
public:
    explicit misuse_calls(asio::any_io_executor ex) : strand_(asio::make_strand(ex)) {}

    // `start(handler)` initiates one operation; `expected` is the error it must complete with.
    template <class Start> void call(std::string what, error_code expected, Start&& start)
    {
        auto o = std::make_shared<outcome>();
        o->what = std::move(what);
        o->expected = expected;
        auto strand = strand_;
        auto initiating = initiating_;
        *initiating = true;
        std::forward<Start>(start)(asio::bind_executor(strand, [o, strand, initiating](error_code ec, auto&&...) {
            ++o->calls;
            o->ec = ec;
            if (*initiating) o->inline_call = true;
            if (!strand.running_in_this_thread()) o->off_strand = true;
        }));
        *initiating = false;
        outcomes_.push_back(std::move(o));
    }

    // Waits (10 s at most) until every handler ran, then 100 ms more so that a second call would
    // be counted; checks each.
    awaitable<void> check_all()
    {
        const auto all_called = [this] {
            return std::ranges::all_of(outcomes_, [](const auto& o) { return o->calls > 0; });
        };
        co_await eventually(all_called, 10s);
        co_await sleep_for(100ms);
        for (const auto& o : outcomes_) {
            CAPTURE(o->what);
            CHECK(o->calls == 1);
            CHECK_MESSAGE(o->ec == o->expected, o->what << ": " << o->ec.message() << " (expected: " << o->expected.message() << ")");
            CHECK_FALSE(o->inline_call);
            CHECK_FALSE(o->off_strand);
        }
        outcomes_.clear();
    }

    std::size_t count() const noexcept { return outcomes_.size(); }

private:
    asio::strand<asio::any_io_executor> strand_;
    std::shared_ptr<bool> initiating_ = std::make_shared<bool>(false);
    std::vector<std::shared_ptr<outcome>> outcomes_;
};

// `f(h, args...)` as a handler with `h`'s associated executor: a check of the completion's
// values on the way to the recording handler `h`.
template <class H, class F> auto then(H h, F f)
{
    auto ex = asio::get_associated_executor(h);
    return asio::bind_executor(ex, [h = std::move(h), f = std::move(f)](auto&&... args) mutable {
        f(std::move(h), std::forward<decltype(args)>(args)...);
    });
}

const error_code closed = errc::session_closed;
const error_code released = errc::already_released;
const error_code empty_object = errc::invalid_argument;

// Every operation of a session.
void call_session_ops(misuse_calls& c, const std::string& state, session& s, const std::string& dir, error_code expected)
{
    const auto n = [&](const char* op) { return state + " session::" + op; };
    c.call(n("async_connect"), expected, [&](auto h) { s.async_connect(std::move(h)); });
    c.call(n("async_wait_state_change"), expected, [&](auto h) {
        s.async_wait_state_change(then(std::move(h), [](auto h, error_code ec, session_state st) {
            CHECK(st == session_state::closed);
            std::move(h)(ec);
        }));
    });
    c.call(n("async_create"), expected, [&](auto h) { s.async_create(dir + "/c", "", create_mode::ephemeral, std::move(h)); });
    c.call(n("async_remove"), expected, [&](auto h) { s.async_remove(dir, std::move(h)); });
    c.call(n("async_remove(version)"), expected, [&](auto h) { s.async_remove(dir, 3, std::move(h)); });
    c.call(n("async_exists"), expected, [&](auto h) { s.async_exists(dir, std::move(h)); });
    c.call(n("async_watch_exists"), expected, [&](auto h) {
        s.async_watch_exists(dir, then(std::move(h), [](auto h, error_code ec, std::optional<zklock::stat>, watch w) {
            CHECK_FALSE(w.valid());
            std::move(h)(ec);
        }));
    });
    c.call(n("async_get_data"), expected, [&](auto h) { s.async_get_data(dir, std::move(h)); });
    c.call(n("async_watch_data"), expected, [&](auto h) {
        s.async_watch_data(dir, then(std::move(h), [](auto h, error_code ec, std::string, zklock::stat, watch w) {
            CHECK_FALSE(w.valid());
            std::move(h)(ec);
        }));
    });
    c.call(n("async_set_data"), expected, [&](auto h) { s.async_set_data(dir, "x", std::move(h)); });
    c.call(n("async_set_data(version)"), expected, [&](auto h) { s.async_set_data(dir, "x", 0, std::move(h)); });
    c.call(n("async_get_children"), expected, [&](auto h) { s.async_get_children(dir, std::move(h)); });
    c.call(n("async_watch_children"), expected, [&](auto h) {
        s.async_watch_children(dir, then(std::move(h), [](auto h, error_code ec, std::vector<std::string>, watch w) {
            CHECK_FALSE(w.valid());
            std::move(h)(ec);
        }));
    });
    c.call(n("async_multi"), expected, [&](auto h) {
        std::vector<multi_op> ops{multi_op::check(dir, -1), multi_op::set_data(dir, "y")};
        s.async_multi(std::move(ops), then(std::move(h), [expected](auto h, error_code ec, std::vector<multi_result> r) {
            CHECK(r.size() == 2);
            for (const auto& x : r) CHECK(x.ec == expected);
            std::move(h)(ec);
        }));
    });
    c.call(state + " async_list_queue", expected, [&](auto h) { async_list_queue(s, dir, std::move(h)); });
    // Closing a closed (or moved-from) session succeeds at once, as closing a closed socket does.
    c.call(n("async_close"), {}, [&](auto h) { s.async_close(std::move(h)); });
    CHECK(s.set_servers("127.0.0.1:1") == errc::session_closed);
    CHECK(s.state() == session_state::closed);
}

// Every acquire of every lock recipe, and what its queries say.
void call_lock_ops(misuse_calls& c, const std::string& state, mutex& m, shared_mutex& rw, semaphore& sem, mutex& cohort_m,
                   multi_lock& ml, error_code expected)
{
    const auto n = [&](const std::string& op) { return state + " " + op; };
    const auto lease_empty = [](auto h) {
        return then(std::move(h), [](auto h, error_code ec, lease l) {
            CHECK_FALSE(l.owns_lock());
            std::move(h)(ec);
        });
    };
    c.call(n("mutex::async_acquire(timeout)"), expected, [&](auto h) { m.async_acquire(5s, lease_empty(std::move(h))); });
    c.call(n("mutex::async_acquire"), expected, [&](auto h) { m.async_acquire(lease_empty(std::move(h))); });
    c.call(n("mutex::async_try_acquire"), expected, [&](auto h) { m.async_try_acquire(lease_empty(std::move(h))); });
    c.call(n("mutex(cohort)::async_acquire"), expected, [&](auto h) { cohort_m.async_acquire(5s, lease_empty(std::move(h))); });
    c.call(n("shared_mutex::async_acquire(timeout)"), expected, [&](auto h) { rw.async_acquire(5s, std::move(h)); });
    c.call(n("shared_mutex::async_acquire"), expected, [&](auto h) { rw.async_acquire(std::move(h)); });
    c.call(n("shared_mutex::async_try_acquire"), expected, [&](auto h) { rw.async_try_acquire(std::move(h)); });
    c.call(n("shared_mutex::async_acquire_shared(timeout)"), expected, [&](auto h) { rw.async_acquire_shared(5s, std::move(h)); });
    c.call(n("shared_mutex::async_acquire_shared"), expected, [&](auto h) { rw.async_acquire_shared(std::move(h)); });
    c.call(n("shared_mutex::async_try_acquire_shared"), expected, [&](auto h) { rw.async_try_acquire_shared(std::move(h)); });
    c.call(n("semaphore::async_acquire(timeout)"), expected, [&](auto h) { sem.async_acquire(5s, std::move(h)); });
    c.call(n("semaphore::async_acquire"), expected, [&](auto h) { sem.async_acquire(std::move(h)); });
    c.call(n("semaphore::async_try_acquire"), expected, [&](auto h) { sem.async_try_acquire(std::move(h)); });
    c.call(n("multi_lock::async_acquire(timeout)"), expected, [&](auto h) {
        ml.async_acquire(5s, then(std::move(h), [](auto h, error_code ec, std::vector<lease> ls) {
            CHECK(ls.empty());
            std::move(h)(ec);
        }));
    });
    c.call(n("multi_lock::async_acquire"), expected, [&](auto h) { ml.async_acquire(std::move(h)); });
    // The queries.
    (void)m.get_executor();
    (void)rw.get_executor();
    (void)sem.get_executor();
    (void)m.path();
    (void)m.options();
    (void)sem.permits();
    (void)ml.specs();
}

// Every operation of an election.
void call_election_ops(misuse_calls& c, const std::string& state, election& e, error_code expected,
                       error_code observer_expected)
{
    const auto n = [&](const std::string& op) { return state + " election::" + op; };
    c.call(n("async_campaign(timeout)"), expected, [&](auto h) {
        e.async_campaign("v", 5s, then(std::move(h), [](auto h, error_code ec, leadership l) {
            CHECK_FALSE(l.is_leader());
            std::move(h)(ec);
        }));
    });
    c.call(n("async_campaign"), expected, [&](auto h) { e.async_campaign("v", std::move(h)); });
    c.call(n("async_try_campaign"), expected, [&](auto h) { e.async_try_campaign("v", std::move(h)); });
    c.call(n("async_leader"), expected, [&](auto h) { e.async_leader(std::move(h)); });
    // observe() returns an observer (an empty one without a session): its async_next says why.
    auto o = std::make_shared<election_observer>(e.observe());
    c.call(n("observe().async_next"), observer_expected, [&](auto h) {
        o->async_next(then(std::move(h), [o](auto h, error_code ec, leader_info) { std::move(h)(ec); }));
    });
    (void)e.get_executor();
    (void)e.path();
}

// Every operation of a lease (and of a leadership) that is empty or released.
void call_lease_ops(misuse_calls& c, const std::string& state, lease& l, error_code release_ec, error_code wait_ec,
                    error_code write_ec)
{
    const auto n = [&](const std::string& op) { return state + " lease::" + op; };
    c.call(n("async_wait_lost"), wait_ec, [&](auto h) { l.async_wait_lost(std::move(h)); });
    c.call(n("async_wait_revocation"), wait_ec, [&](auto h) { l.async_wait_revocation(std::move(h)); });
    c.call(n("async_wait_status_change"), wait_ec, [&](auto h) { l.async_wait_status_change(std::move(h)); });
    c.call(n("async_guarded_multi"), write_ec, [&](auto h) {
        std::vector<multi_op> ops{multi_op::set_data("/zklock-test", "x"), multi_op::check("/zklock-test", -1)};
        l.async_guarded_multi(std::move(ops), then(std::move(h), [write_ec](auto h, error_code ec, std::vector<multi_result> r) {
            CHECK(r.size() == 2);
            for (const auto& x : r) CHECK(x.ec == write_ec);
            std::move(h)(ec);
        }));
    });
    c.call(n("async_downgrade"), write_ec, [&](auto h) { l.async_downgrade(std::move(h)); });
    c.call(n("async_release"), release_ec, [&](auto h) { l.async_release(std::move(h)); });
    CHECK_FALSE(l.owns_lock());
    CHECK_FALSE(static_cast<bool>(l));
    CHECK(l.valid_until() == std::chrono::steady_clock::time_point::min());
    CHECK(l.read().valid_until == std::chrono::steady_clock::time_point::min());
    (void)l.status();
    (void)l.fencing_token();
    (void)l.fence();
    (void)l.node();
    (void)l.lost_reason();
    (void)l.revocation_requested();
}

void call_leadership_ops(misuse_calls& c, const std::string& state, leadership& l, error_code resign_ec, error_code write_ec)
{
    c.call(state + " leadership::async_proclaim", write_ec, [&](auto h) { l.async_proclaim("w", std::move(h)); });
    c.call(state + " leadership::async_resign", resign_ec, [&](auto h) { l.async_resign(std::move(h)); });
    CHECK_FALSE(l.is_leader());
}

}  // namespace

TEST_CASE("misuse: every operation of a moved-from object completes with an error, posted")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const auto dir = unique_path("misuse-moved");
        session zk{ex, config_for(shared_server().connect_string())};
        co_await connect(zk);
        misuse_calls c(ex);

        // Objects of a live session, moved from.
        mutex m{zk, dir + "/m"};
        shared_mutex rw{zk, dir + "/rw"};
        semaphore sem{zk, dir + "/sem", 2};
        mutex cohort_m{zk, dir + "/cohort", lock_options{.cohort = true}};
        multi_lock ml{zk, {lock_spec::exclusive(dir + "/a"), lock_spec::shared(dir + "/b")}};
        election e{zk, dir + "/e"};
        mutex m2{std::move(m)};
        shared_mutex rw2{std::move(rw)};
        semaphore sem2{std::move(sem)};
        mutex cohort2{std::move(cohort_m)};
        multi_lock ml2{std::move(ml)};
        election e2{std::move(e)};
        call_lock_ops(c, "moved-from", m, rw, sem, cohort_m, ml, closed);
        call_election_ops(c, "moved-from", e, closed, empty_object);
        CHECK(m.path().empty());
        CHECK(e.path().empty());
        CHECK(ml.specs().empty());
        CHECK(sem.permits() == 2);  // the count is the object's, not the session's
        CHECK(m.get_executor() == asio::any_io_executor(asio::system_executor()));

        // The objects moved into still work: one acquire each.
        {
            auto [ec, l] = co_await m2.async_acquire(5s, tuple);
            CHECK_FALSE(ec);
            CHECK(l.owns_lock());
            co_await l.async_release(tuple);
        }

        // Leases, leaderships and observers moved from.
        auto held = co_await m2.async_acquire(5s, asio::deferred);
        lease taken{std::move(held)};
        call_lease_ops(c, "moved-from", held, released, released, released);
        CHECK(held.status() == lease_status::released);
        CHECK(held.node().empty());
        CHECK(held.fencing_token() == 0);
        auto lead = co_await e2.async_campaign("v", 5s, asio::deferred);
        leadership lead2{std::move(lead)};
        call_lease_ops(c, "moved-from (leadership)", lead, released, released, released);
        call_leadership_ops(c, "moved-from", lead, released, released);
        auto observer = e2.observe();
        election_observer observer2{std::move(observer)};
        c.call("moved-from election_observer::async_next", empty_object, [&](auto h) { observer.async_next(std::move(h)); });
        // Watches: a moved-from watch is an empty one.
        auto [wec, wst, w] = co_await zk.async_watch_exists(dir + "/absent", tuple);
        REQUIRE_FALSE(wec);
        watch w2{std::move(w)};
        c.call("moved-from watch::async_wait", empty_object, [&](auto h) { w.async_wait(std::move(h)); });
        co_await c.check_all();
        CHECK(taken.owns_lock());
        CHECK(lead2.is_leader());
        co_await taken.async_release(tuple);
        co_await lead2.async_resign(tuple);

        // A moved-from session, and the objects made from it afterwards.
        session zk2{std::move(zk)};
        CHECK(zk2.state() == session_state::connected);
        call_session_ops(c, "moved-from", zk, dir, closed);
        CHECK(zk.session_id() == 0);
        CHECK(zk.generation() == 0);
        CHECK(zk.negotiated_timeout() == std::chrono::milliseconds::zero());
        CHECK(zk.config().servers == session_config{}.servers);
        CHECK(zk.metrics().exclusive.started == 0);
        CHECK(zk.get_executor() == asio::any_io_executor(asio::system_executor()));
        mutex m3{zk, dir + "/m"};
        shared_mutex rw3{zk, dir + "/rw"};
        semaphore sem3{zk, dir + "/sem", 2};
        mutex cohort3{zk, dir + "/cohort", lock_options{.cohort = true}};
        multi_lock ml3{zk, {lock_spec::exclusive(dir + "/a")}};
        election e3{zk, dir + "/e"};
        call_lock_ops(c, "of a moved-from session:", m3, rw3, sem3, cohort3, ml3, closed);
        call_election_ops(c, "of a moved-from session:", e3, closed, empty_object);
        // Moving into a moved-from session, and assigning a moved-from one, work as for any other.
        session zk3{std::move(zk2)};
        zk = std::move(zk3);
        CHECK(zk.state() == session_state::connected);
        call_session_ops(c, "moved-from (again)", zk3, dir, closed);
        co_await c.check_all();
        co_await zk.async_close(tuple);
    });
}

TEST_CASE("misuse: every operation of a closed session's objects completes with an error, posted")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const auto dir = unique_path("misuse-closed");
        session zk{ex, config_for(shared_server().connect_string())};
        co_await connect(zk);
        misuse_calls c(ex);
        mutex m{zk, dir + "/m"};
        shared_mutex rw{zk, dir + "/rw"};
        semaphore sem{zk, dir + "/sem", 2};
        mutex cohort_m{zk, dir + "/cohort", lock_options{.cohort = true}};
        multi_lock ml{zk, {lock_spec::exclusive(dir + "/a"), lock_spec::shared(dir + "/b")}};
        election e{zk, dir + "/e"};

        // What the session held when it was closed.
        auto held = co_await m.async_acquire(5s, asio::deferred);
        auto writer = co_await rw.async_acquire(5s, asio::deferred);
        auto permit = co_await sem.async_acquire(5s, asio::deferred);
        auto local = co_await cohort_m.async_acquire(5s, asio::deferred);
        auto set = co_await ml.async_acquire(5s, asio::deferred);
        auto lead = co_await e.async_campaign("v", 5s, asio::deferred);
        auto observer = e.observe();
        auto [first_ec, first] = co_await observer.async_next(tuple);
        CHECK_FALSE(first_ec);
        auto [wec, wst, w] = co_await zk.async_watch_exists(dir + "/absent", tuple);
        REQUIRE_FALSE(wec);
        REQUIRE(held.owns_lock());
        REQUIRE(lead.is_leader());

        CHECK_FALSE(std::get<0>(co_await zk.async_close(tuple)));
        CHECK(zk.state() == session_state::closed);

        call_session_ops(c, "closed", zk, dir, closed);
        call_lock_ops(c, "closed session's", m, rw, sem, cohort_m, ml, closed);
        call_election_ops(c, "closed session's", e, closed, closed);
        c.call("closed session's election_observer::async_next", closed, [&](auto h) { observer.async_next(std::move(h)); });
        c.call("closed session's watch::async_wait", closed, [&](auto h) { w.async_wait(std::move(h)); });
        // Its leases read lost (session_closed); a release succeeds (the node went with the
        // session); a write through one is refused (lock_lost) without being sent.
        for (auto* l : {&held, &writer, &permit, &local, &set[0], &set[1]}) {
            CHECK(l->status() == lease_status::lost);
            CHECK(l->lost_reason() == errc::session_closed);
            call_lease_ops(c, "closed session's " + l->node(), *l, {}, closed, errc::lock_lost);
        }
        CHECK(lead.status() == lease_status::lost);
        call_leadership_ops(c, "closed session's", lead, {}, errc::lock_lost);
        co_await c.check_all();
        // Released now: the released state's errors.
        call_lease_ops(c, "closed, then released", held, released, released, released);
        co_await c.check_all();

        // A lock object that outlives its session object: as closed.
        auto gone = std::make_unique<session>(ex, config_for(shared_server().connect_string()));
        co_await connect(*gone);
        mutex orphan{*gone, dir + "/orphan"};
        gone.reset();
        c.call("destroyed session's mutex::async_acquire", closed, [&](auto h) { orphan.async_acquire(5s, std::move(h)); });
        co_await c.check_all();
    });
}

TEST_CASE("misuse: every operation of a released lease completes with already_released, posted")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const auto dir = unique_path("misuse-released");
        session zk{ex, config_for(shared_server().connect_string())};
        co_await connect(zk);
        misuse_calls c(ex);
        mutex m{zk, dir + "/m"};
        shared_mutex rw{zk, dir + "/rw"};
        semaphore sem{zk, dir + "/sem", 2};
        mutex cohort_m{zk, dir + "/cohort", lock_options{.cohort = true}};
        multi_lock ml{zk, {lock_spec::exclusive(dir + "/a"), lock_spec::shared(dir + "/b")}};
        election e{zk, dir + "/e"};
        election latch{zk, dir + "/latch", election_options{.names = election_names::curator_latch}};

        auto held = co_await m.async_acquire(5s, asio::deferred);
        auto writer = co_await rw.async_acquire(5s, asio::deferred);
        shared_mutex rw_read{zk, dir + "/rw-read"};
        auto reader = co_await rw_read.async_acquire_shared(5s, asio::deferred);
        auto permit = co_await sem.async_acquire(5s, asio::deferred);
        auto local = co_await cohort_m.async_acquire(5s, asio::deferred);
        auto set = co_await ml.async_acquire(5s, asio::deferred);
        auto lead = co_await e.async_campaign("v", 5s, asio::deferred);
        auto latched = co_await latch.async_campaign("v", 5s, asio::deferred);
        // A revocation requested before the release: the released lease says released all the same.
        CHECK_FALSE(std::get<0>(co_await zk.async_set_data(held.node(), std::string(revocation_request), tuple)));
        CHECK_FALSE(std::get<0>(co_await held.async_wait_revocation(tuple)));
        for (auto* l : {&held, &writer, &reader, &permit, &local, &set[0], &set[1], static_cast<lease*>(&lead),
                        static_cast<lease*>(&latched)}) {
            REQUIRE(l->owns_lock());
            CHECK_FALSE(std::get<0>(co_await l->async_release(tuple)));
            CHECK(l->status() == lease_status::released);
            call_lease_ops(c, "released " + l->node(), *l, released, released, released);
        }
        call_leadership_ops(c, "resigned", lead, released, released);
        call_leadership_ops(c, "resigned (LeaderLatch names)", latched, released, released);
        co_await c.check_all();
        co_await zk.async_close(tuple);
    });
}

TEST_CASE("misuse: a completion without a session goes to the handler's associated executor, else posted elsewhere")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const auto dir = unique_path("misuse-executor");
        session zk{ex, config_for(shared_server().connect_string())};
        mutex m{zk, dir + "/m"};
        session moved{std::move(zk)};
        mutex moved_m{std::move(m)};
        lease empty;

        // A coroutine's handler: resumed on the coroutine's executor, with the error.
        auto [ec1, l1] = co_await m.async_acquire(5s, tuple);
        CHECK(ec1 == errc::session_closed);
        auto [ec2, kids] = co_await zk.async_get_children("/", tuple);
        CHECK(ec2 == errc::session_closed);
        auto [ec3, st3] = co_await zk.async_wait_state_change(tuple);
        CHECK(ec3 == errc::session_closed);
        CHECK(st3 == session_state::closed);

        // A handler bound to a strand runs there (misuse_calls checks each one).
        misuse_calls c(ex);
        c.call("moved-from mutex, bound to a strand", errc::session_closed, [&](auto h) { m.async_try_acquire(std::move(h)); });
        c.call("moved-from session, bound to a strand", errc::session_closed, [&](auto h) { zk.async_exists("/", std::move(h)); });
        co_await c.check_all();

        // A handler with no executor of its own: asio::system_executor's thread, never this one
        // (so never inside the call).
        std::atomic<int> done{0};
        std::atomic<bool> on_this_thread{false};
        std::atomic<bool> wrong_error{false};
        const auto caller = std::this_thread::get_id();
        const auto record = [&](error_code ec, error_code expected) {
            if (std::this_thread::get_id() == caller) on_this_thread = true;
            if (ec != expected) wrong_error = true;
            ++done;
        };
        m.async_acquire(5s, [&](error_code ec, lease) { record(ec, errc::session_closed); });
        zk.async_create(dir, "", create_mode::persistent,
                        [&](error_code ec, std::string, zklock::stat) { record(ec, errc::session_closed); });
        empty.async_wait_status_change([&](error_code ec, lease_status) { record(ec, errc::already_released); });
        CHECK(co_await eventually([&] { return done == 3; }, 5s));
        CHECK_FALSE(on_this_thread);
        CHECK_FALSE(wrong_error);
        co_await moved.async_close(tuple);
    });
}
