// The lease on the fake port (fake_port.hpp): its release, status, loss, revocation, guarded write
// and downgrade, and a stalled holder's queries on the port's clock, without a server.
#include "ops_fixtures.hpp"

#include "ops/lease_state.hpp"
#include "ops/queue_hints.hpp"

#include <zklock/detail/acquire_fsm.hpp>

using namespace zklock;
using namespace zklock::test;
using namespace zklock::test_ops;

namespace {

const std::string lock_dir = "/l";
const std::string own = "/l/x-0000000000000001-lock-0000000005";

std::shared_ptr<detail::lease_state> make_lease(const std::shared_ptr<fake_port>& port, bool mark)
{
    auto ls = std::make_shared<detail::lease_state>(port, own, 42, port->generation(), mark ? lock_dir : std::string());
    port->subscribe(ls);
    ls->start(nullptr, false);
    return ls;
}

struct outcome {
    int calls = 0;
    error_code ec;
    detail::unique_function<void(error_code)> cb()
    {
        return [this](error_code e) {
            ++calls;
            ec = e;
        };
    }
};

}  // namespace

TEST_CASE("lease: a release deletes the node, once")
{
    fake_fixture fx;
    auto& port = fx.port;
    auto ls = make_lease(port, false);
    outcome first, second;
    ls->release(first.cb());
    CHECK(ls->status() == lease_status::released);
    REQUIRE(port->pending().size() == 1);
    CHECK(port->pending().front().version == -1);
    port->answer("remove", own);
    port->run();
    CHECK(first.calls == 1);
    CHECK(!first.ec);
    ls->release(second.cb());
    CHECK(second.ec == errc::already_released);
    CHECK(port->pending().empty());
}

TEST_CASE("lease: an exclusive holder's release carries the handoff mark, by the queue it knew")
{
    for (const std::size_t hint : {std::size_t{0}, std::size_t{128}, std::size_t{127}}) {
        CAPTURE(hint);
        fake_fixture fx;
        auto& port = fx.port;
        port->extension<detail::queue_hints>().note(lock_dir, hint);
        auto ls = make_lease(port, true);
        outcome r;
        ls->release(r.cb());
        REQUIRE(port->pending().size() == 1);
        const auto& req = port->pending().front();
        if (detail::acquire_fsm::release_writes_mark(hint)) {
            CHECK(hint != 127);
            CHECK(req.op == "multi");
            REQUIRE(req.ops.size() == 2);
            CHECK(req.ops[0].path == lock_dir);
            CHECK(req.ops[0].data == detail::handoff_mark(detail::base_name(own)));
            CHECK(req.ops[1].path == own);
        } else {
            CHECK(hint == 127);  // a short queue: the plain delete is the cheaper write
            CHECK(req.op == "remove");
        }
        port->answer_next();
        port->run();
        CHECK(r.calls == 1);
        CHECK(!r.ec);
    }
}

TEST_CASE("lease: a refused mark becomes the plain delete, a node gone already is released")
{
    fake_fixture fx;
    auto& port = fx.port;
    auto ls = make_lease(port, true);
    outcome r;
    ls->release(r.cb());
    port->answer("multi", lock_dir, {.ec = zk_errc::no_auth, .results = {{zk_errc::no_auth, {}, {}}, {{}, {}, {}}}});
    port->run();
    port->answer("remove", own);
    port->run();
    CHECK(r.calls == 1);
    CHECK(!r.ec);

    auto gone = make_lease(port, true);
    outcome g;
    gone->release(g.cb());
    port->answer("multi", lock_dir, {.ec = zk_errc::no_node, .results = {{}, {zk_errc::no_node, {}, {}}}});
    port->run();
    CHECK(g.calls == 1);
    CHECK(!g.ec);
    CHECK(port->pending().empty());
}

TEST_CASE("lease: a release cut off by a connection loss deletes again once connected")
{
    fake_fixture fx;
    auto& port = fx.port;
    auto ls = make_lease(port, false);
    outcome r;
    ls->release(r.cb());
    port->set_state(session_state::suspended);
    port->answer("remove", own, {.ec = zk_errc::connection_loss});
    port->run();
    CHECK(r.calls == 0);
    CHECK(port->pending().empty());  // waits for the connection
    port->set_state(session_state::connected);
    port->run();
    port->answer("remove", own, {.ec = zk_errc::no_node});  // applied before the loss: gone is gone
    port->run();
    CHECK(r.calls == 1);
    CHECK(!r.ec);
}

TEST_CASE("lease: a release cut off, then the session expired: the node went with it")
{
    fake_fixture fx;
    auto& port = fx.port;
    auto ls = make_lease(port, false);
    outcome r;
    ls->release(r.cb());
    port->set_state(session_state::suspended);
    port->answer("remove", own, {.ec = zk_errc::connection_loss});
    port->run();
    port->new_session();  // the session expired while cut off: a new ZooKeeper session
    port->set_state(session_state::connected);
    port->run();
    CHECK(r.calls == 1);
    CHECK(!r.ec);
    CHECK(port->pending().empty());
}

TEST_CASE("lease: its status follows the session, a deleted node is lock_lost")
{
    fake_fixture fx;
    auto& port = fx.port;
    auto ls = make_lease(port, false);
    std::vector<lease_status> seen;
    outcome lost;
    ls->wait_lost(lost.cb());
    // Someone waits: the lease watches its node.
    REQUIRE(port->pending().size() == 1);
    auto w = port->answer("get_data", own, {.data = "h:1"});
    port->run();
    REQUIRE(w);
    ls->wait_status([&](error_code, lease_status st) { seen.push_back(st); });
    port->set_state(session_state::suspended);
    CHECK(ls->status() == lease_status::suspended);
    ls->wait_status([&](error_code, lease_status st) { seen.push_back(st); });
    port->set_state(session_state::connected);
    CHECK(ls->status() == lease_status::held);
    CHECK(seen == std::vector<lease_status>{lease_status::suspended, lease_status::held});
    CHECK(lost.calls == 0);
    w->fire({}, watch_event{watch_event_type::deleted, own});
    port->run();
    CHECK(lost.calls == 1);
    CHECK(lost.ec == errc::lock_lost);
    CHECK(ls->status() == lease_status::lost);
    CHECK(ls->lost_reason() == errc::lock_lost);
}

TEST_CASE("lease: every status waiter hears the change it waited for, even if an earlier one releases")
{
    fake_fixture fx;
    auto& port = fx.port;
    auto ls = make_lease(port, false);
    std::vector<lease_status> seen;
    ls->wait_status([&](error_code, lease_status st) {
        seen.push_back(st);
        ls->release({});  // from inside the notice
    });
    ls->wait_status([&](error_code, lease_status st) { seen.push_back(st); });
    port->set_state(session_state::suspended);
    CHECK(seen == std::vector<lease_status>{lease_status::suspended, lease_status::suspended});
    CHECK(ls->status() == lease_status::released);
}

TEST_CASE("lease: a lost lease released has no loss reason (lost_reason() is empty unless lost)")
{
    // Found by the simulation's misuse probes (seed 424743): released after its loss, the lease
    // read released with the loss reason still set.
    fake_fixture fx;
    auto& port = fx.port;
    auto ls = make_lease(port, false);
    port->set_state(session_state::expired);
    REQUIRE(ls->status() == lease_status::lost);
    REQUIRE(ls->lost_reason() == errc::session_expired);
    ls->release({});
    CHECK(ls->status() == lease_status::released);
    CHECK_FALSE(ls->lost_reason());
    const auto r = ls->snapshot();
    CHECK(r.status == lease_status::released);
    CHECK_FALSE(r.lost_reason);
    CHECK(r.valid_until == std::chrono::steady_clock::time_point::min());
}

TEST_CASE("lease: an expired session loses it, a presumed expiry also deletes the node, plainly")
{
    fake_fixture fx;
    auto& port = fx.port;
    auto expired = make_lease(port, false);
    port->set_state(session_state::expired);
    CHECK(expired->status() == lease_status::lost);
    CHECK(expired->lost_reason() == errc::session_expired);
    CHECK(port->pending().empty());

    port->new_session();
    port->set_state(session_state::connected);
    auto presumed = make_lease(port, true);
    presumed->on_presumed_expired();
    CHECK(presumed->status() == lease_status::lost);
    CHECK(presumed->lost_reason() == errc::session_expired);
    REQUIRE(port->pending().size() == 1);
    CHECK(port->pending().front().op == "remove");  // no mark: the successor must list
    CHECK(port->pending().front().path == own);
}

TEST_CASE("lease: a revocation request in the node's data reaches its waiters")
{
    fake_fixture fx;
    auto& port = fx.port;
    auto ls = make_lease(port, false);
    outcome revoked;
    ls->wait_revocation(revoked.cb());
    auto w = port->answer("get_data", own, {.data = "h:1"});
    port->run();
    CHECK(revoked.calls == 0);
    CHECK(!ls->revocation_requested());
    w->fire({}, watch_event{watch_event_type::changed, own});
    port->run();
    port->answer("get_data", own, {.data = std::string(revocation_request)});
    port->run();
    CHECK(revoked.calls == 1);
    CHECK(!revoked.ec);
    CHECK(ls->revocation_requested());
    CHECK(ls->status() == lease_status::held);  // asked to let go, not taken
}

TEST_CASE("lease: a guarded write checks the node in the same transaction, a failed check is lock_lost")
{
    fake_fixture fx;
    auto& port = fx.port;
    auto ls = make_lease(port, false);
    std::optional<error_code> ok, lost;
    std::vector<multi_result> ok_results;
    detail::initiate_guarded_multi(ls, {multi_op::set_data("/data", "v", 3)},
                                   [&](error_code ec, std::vector<multi_result> r) {
                                       ok = ec;
                                       ok_results = std::move(r);
                                   });
    REQUIRE(port->pending().size() == 1);
    const auto& sent = port->pending().front().ops;
    REQUIRE(sent.size() == 2);
    CHECK(sent[0].type == multi_op::kind::check);
    CHECK(sent[0].path == own);
    CHECK(sent[1].path == "/data");
    port->answer_next({.results = {{}, {{}, {}, zklock::stat{.version = 4}}}});
    port->run();
    REQUIRE(ok);
    CHECK(!*ok);
    REQUIRE(ok_results.size() == 1);  // the check is not the caller's
    CHECK(ok_results[0].stat.version == 4);

    detail::initiate_guarded_multi(ls, {multi_op::set_data("/data", "w", 4)},
                                   [&](error_code ec, std::vector<multi_result>) { lost = ec; });
    port->answer_next({.ec = zk_errc::no_node, .results = {{zk_errc::no_node, {}, {}}, {zk_errc::runtime_inconsistency, {}, {}}}});
    port->run();
    REQUIRE(lost);
    CHECK(*lost == errc::lock_lost);
    CHECK(ls->status() == lease_status::lost);
}

TEST_CASE("lease: a writer's downgrade marks its node, a node found gone is lock_lost, a mutex cannot")
{
    fake_fixture fx;
    auto& port = fx.port;
    const std::string writer = "/l/x-0000000000000001-__WRIT__0000000005";
    const auto downgrade = [&](const std::shared_ptr<detail::lease_state>& ls, std::optional<error_code>& got) {
        detail::initiate_downgrade(ls, [&got](error_code ec) { got = ec; });
    };
    auto ls = std::make_shared<detail::lease_state>(port, writer, 42, port->generation());
    port->subscribe(ls);
    ls->start(nullptr, false);
    std::optional<error_code> got;
    downgrade(ls, got);
    port->answer("get_data", writer, {.data = "host:1", .stat = {.version = 2}});
    port->run();
    REQUIRE(port->pending().size() == 1);
    CHECK(port->pending().front().op == "set_data");
    CHECK(port->pending().front().data == detail::downgrade_mark("host:1"));
    CHECK(port->pending().front().version == 2);
    port->answer("set_data", writer);
    port->run();
    REQUIRE(got);
    CHECK(!*got);
    CHECK(ls->status() == lease_status::held);

    got.reset();
    downgrade(ls, got);
    port->answer("get_data", writer, {.ec = zk_errc::no_node});
    port->run();
    REQUIRE(got);
    CHECK(*got == errc::lock_lost);
    CHECK(ls->status() == lease_status::lost);

    auto mutex_lease = make_lease(port, false);
    got.reset();
    downgrade(mutex_lease, got);
    port->run();
    REQUIRE(got);
    CHECK(*got == errc::invalid_argument);
    CHECK(port->pending().empty());
}

// ---- a stalled holder: every query on the clock ---------------------------------------------------

namespace {

/// Every synchronous query of `l`, as one value to compare.
struct queries {
    lease_status status;
    bool owns;
    bool as_bool;
    error_code reason;
    std::chrono::steady_clock::time_point valid_until;
    bool operator==(const queries&) const = default;
};

queries read_all(const lease& l)
{
    return {l.status(), l.owns_lock(), static_cast<bool>(l), l.lost_reason(), l.valid_until()};
}

/// Grants `req` alone on the fake (create, listing), with the leader's evidence confirmed at the
/// grant: the lease is valid until half the session timeout from now.
acquired grant_confirmed(const std::shared_ptr<fake_port>& port, detail::acquire_request req, int seq)
{
    acquired r;
    const std::string dir = *req.dir;
    start_acquire(port, std::move(req), r);
    port->run();
    port->confirm_leader();
    grant_alone(*port, dir, seq);
    REQUIRE(r.ec);
    REQUIRE(!*r.ec);
    return r;
}

constexpr auto never = std::chrono::steady_clock::time_point::min();

}  // namespace

TEST_CASE("lease: a stalled holder reads every query on the clock, before any handler runs")
{
    fake_fixture fx;
    auto& port = fx.port;
    const auto T = port->session_timeout_;
    auto a = grant_confirmed(port, mutex_request("/l"), 5);
    const auto deadline = port->now() + T / 2;
    std::optional<error_code> told;
    a.l.async_wait_lost([&](error_code ec) { told = ec; });
    port->run();
    while (!port->pending().empty()) port->answer_next({.data = "h:1"});  // the watch on our node
    port->run();
    CHECK(read_all(a.l) == queries{lease_status::held, true, true, {}, deadline});

    // The executor is blocked: time runs, no handler does.
    port->advance(T / 3);
    CHECK(read_all(a.l) == queries{lease_status::suspended, true, true, {}, deadline});
    port->advance(T / 2 - T / 3);
    const queries lost{lease_status::lost, false, false, errc::session_expired, never};
    CHECK(read_all(a.l) == lost);
    CHECK(!told);  // nothing has run yet

    // A guarded write now sends nothing: lock_lost, not a connection_loss to guess at.
    const auto made = port->log_of_requests().size();
    std::optional<error_code> write;
    std::vector<multi_result> results;
    a.l.async_guarded_multi({multi_op::set_data("/data", "v", -1)}, [&](error_code ec, std::vector<multi_result> r) {
        write = ec;
        results = std::move(r);
    });
    CHECK(port->log_of_requests().size() == made);

    // The executor resumes: the waiters hear what the reads said, and newer evidence (an answer
    // arriving late) does not bring the lease back.
    port->confirm_leader();
    port->run();
    REQUIRE(write);
    CHECK(*write == errc::lock_lost);
    REQUIRE(results.size() == 1);
    CHECK(results[0].ec == errc::lock_lost);
    REQUIRE(told);
    CHECK(*told == errc::session_expired);
    CHECK(read_all(a.l) == lost);
    // The node is deleted, plainly (a presumed holder's successor lists), and nothing else is sent.
    bool multi_sent = false;
    for (std::size_t i = made; i < port->log_of_requests().size(); ++i)
        multi_sent = multi_sent || port->log_of_requests()[i].starts_with("multi");
    CHECK(!multi_sent);
    REQUIRE(port->pending().size() == 1);
    CHECK(port->pending().front().op == "remove");
    CHECK(port->pending().front().path == a.l.node());
}

TEST_CASE("lease: evidence moves its deadline on, a doubt ends with an answer")
{
    fake_fixture fx;
    auto& port = fx.port;
    const auto T = port->session_timeout_;
    auto a = grant_confirmed(port, mutex_request("/l"), 5);
    port->advance(T / 3);
    CHECK(a.l.status() == lease_status::suspended);
    port->confirm_leader();  // an answer the leader vouches for
    CHECK(a.l.status() == lease_status::held);
    CHECK(a.l.valid_until() == port->now() + T / 2);
    port->advance(T / 2 - std::chrono::milliseconds(1));
    CHECK(a.l.owns_lock());
    port->advance(std::chrono::milliseconds(1));
    CHECK(a.l.status() == lease_status::lost);
}

TEST_CASE("lease: released after its deadline, as a lost lease: waiters hear the expiry, the node goes plainly")
{
    fake_fixture fx;
    auto& port = fx.port;
    const auto T = port->session_timeout_;
    auto a = grant_confirmed(port, mutex_request("/l"), 5);
    std::optional<error_code> told, released;
    a.l.async_wait_lost([&](error_code ec) { told = ec; });
    port->run();
    while (!port->pending().empty()) port->answer_next({.data = "h:1"});
    port->run();
    port->advance(T);
    const auto node = a.l.node();
    a.l.async_release([&](error_code ec) { released = ec; });
    REQUIRE(port->pending().size() == 1);
    CHECK(port->pending().front().op == "remove");  // not a multi with a handoff mark
    CHECK(port->pending().front().path == node);
    port->answer("remove", node);
    port->run();
    REQUIRE(told);
    CHECK(*told == errc::session_expired);
    REQUIRE(released);
    CHECK(!*released);
    CHECK(a.l.status() == lease_status::released);
    CHECK(port->pending().empty());  // one delete, not two
}

TEST_CASE("lease: assigned over after its deadline, before the presumption is told: the node still goes")
{
    // Found by the simulation: the holder's executor stalls past T/2 (the presumption is due but
    // not told), then the holder's code replaces the lease (`l = lease()`, or with the next
    // acquire's). The lease reads lost, but its node exists while the session lives.
    fake_fixture fx;
    auto& port = fx.port;
    const auto T = port->session_timeout_;
    auto a = grant_confirmed(port, mutex_request("/l"), 5);
    port->run();
    while (!port->pending().empty()) port->answer_next({.data = "h:1"});
    port->run();
    port->advance(T);
    const auto node = a.l.node();
    CHECK(a.l.status() == lease_status::lost);
    a.l = lease();
    port->run();
    REQUIRE(port->pending().size() == 1);
    CHECK(port->pending().front().op == "remove");
    CHECK(port->pending().front().path == node);
    port->answer("remove", node);
    port->run();
    CHECK(port->pending().empty());  // one delete, not two
}

TEST_CASE("lease: a shared lock's reader and a cohort's local holder read their status on the clock too")
{
    fake_fixture fx;
    auto& port = fx.port;
    const auto T = port->session_timeout_;
    auto reader = grant_confirmed(port, detail::acquire_request{std::make_shared<const std::string>("/rw"),
                                                                detail::queue_policy{detail::reader_recipe}},
                                  3);
    CHECK(reader.l.owns_lock());

    auto cohort_req = mutex_request("/c");
    cohort_req.cohort = true;
    acquired holder, waiter;
    start_acquire(port, cohort_req, holder);
    start_acquire(port, cohort_req, waiter);
    port->run();
    grant_alone(*port, "/c", 7);
    port->run();
    REQUIRE(holder.ec);
    REQUIRE(!*holder.ec);
    while (!port->pending().empty()) port->answer_next({.data = "h:1", .children = {"x-0000000000000001-lock-0000000007"}});
    port->run();
    CHECK(holder.l.owns_lock());
    CHECK(!waiter.ec);

    port->advance(T / 2);
    CHECK(reader.l.status() == lease_status::lost);
    CHECK(reader.l.lost_reason() == errc::session_expired);
    CHECK(holder.l.status() == lease_status::lost);
    CHECK(holder.l.valid_until() == never);
    // Once the executor runs: the local waiter is not handed a node that is presumed gone.
    port->run();
    CHECK(holder.l.status() == lease_status::lost);
    CHECK(!(waiter.ec && !*waiter.ec));
}

TEST_CASE("lease: granted while the session is in doubt, its status waiters hear the doubt end")
{
    // Found by the simulation once it ran the real session core: the lease recorded the
    // connection's state (connected) while the session read suspended (in doubt), so the notice
    // that the doubt ended changed nothing it had recorded, and no status waiter heard it.
    fake_fixture fx;
    auto& port = fx.port;
    const auto T = port->session_timeout_;
    acquired r;
    start_acquire(port, "/l", r);
    port->run();
    port->confirm_leader();
    port->advance(T / 3);  // no answer the leader vouches for: in doubt
    port->run();
    grant_alone(*port, "/l", 5);
    REQUIRE(r.ec);
    REQUIRE(!*r.ec);
    CHECK(r.l.status() == lease_status::suspended);
    std::vector<lease_status> seen;
    r.l.async_wait_status_change([&](error_code, lease_status st) { seen.push_back(st); });
    port->run();
    while (!port->pending().empty()) port->answer_next({.data = "h:1"});  // the watch on our node
    port->run();
    port->confirm_leader();  // the leader answers: the doubt ends
    port->run();
    CHECK(r.l.status() == lease_status::held);
    CHECK(seen == std::vector<lease_status>{lease_status::held});
}
