// Cohort mode on the fake port (fake_port.hpp): one node for the session's local queue, local
// handoffs and their limit, and a turn granted while the session is in doubt, without a server.
#include "ops_fixtures.hpp"

#include <boost/asio/cancellation_signal.hpp>

using namespace zklock;
using namespace zklock::test;
using namespace zklock::test_ops;
namespace asio = boost::asio;

TEST_CASE("cohort: one node for the session's local queue, handed on locally, deleted when nobody wants it")
{
    fake_fixture fx;
    auto& port = fx.port;
    const auto cohort_acquire = [&](acquired& r, asio::cancellation_slot slot = {}) {
        auto req = mutex_request("/c");
        req.cohort = true;
        start_acquire(port, std::move(req), r, slot);
    };
    acquired a, b, c;
    asio::cancellation_signal cancel_c;
    cohort_acquire(a);
    cohort_acquire(b);
    cohort_acquire(c, cancel_c.slot());
    port->run();
    const std::string node = grant_alone(*port, "/c", 7);  // the cohort's one node
    port->run();
    REQUIRE(a.ec);
    CHECK(!*a.ec);
    CHECK(a.l.node() == node);
    CHECK(a.l.fence().zxid == 1007);
    CHECK(a.l.fence().local == 1);
    CHECK_FALSE(b.ec);
    // The cohort watches its node (a revocation request) and the lock path (another process
    // waiting ends the local handoffs): nobody else is there.
    port->answer("get_data", node, {.data = "h:1"});
    port->answer("get_children", "/c", {.children = {std::string(detail::base_name(node))}});
    port->run();

    // A local waiter cancelled: it completes at once, nothing is sent.
    const auto made = port->log_of_requests().size();
    cancel_c.emit(asio::cancellation_type::terminal);
    port->run();
    REQUIRE(c.ec);
    CHECK(*c.ec == asio::error::operation_aborted);

    // The holder lets go: the next local waiter holds the same node, without a request.
    std::optional<error_code> released;
    a.l.async_release([&released](error_code ec) { released = ec; });
    port->run();
    REQUIRE(released);
    CHECK(!*released);
    REQUIRE(b.ec);
    CHECK(!*b.ec);
    CHECK(b.l.node() == node);
    CHECK(b.l.fence().zxid == 1007);
    CHECK(b.l.fence().local == 2);  // after a's, on the same node
    CHECK(port->log_of_requests().size() == made);

    // The last holder lets go: nobody wants the lock, the node is deleted.
    released.reset();
    b.l.async_release([&released](error_code ec) { released = ec; });
    port->run();
    port->answer("remove", node);
    port->run();
    REQUIRE(released);
    CHECK(!*released);
    CHECK(port->pending().empty());
}

TEST_CASE("cohort: with another process waiting, the turn goes to it after max_local_handoffs")
{
    fake_fixture fx;
    auto& port = fx.port;
    lock_options one;
    one.cohort = true;
    one.max_local_handoffs = 1;
    const auto options = std::make_shared<const lock_options>(one);
    const auto cohort_acquire = [&](acquired& r) {
        auto req = mutex_request("/c");
        req.cohort = true;
        req.options = options;
        start_acquire(port, std::move(req), r);
    };
    acquired a, b;
    cohort_acquire(a);
    cohort_acquire(b);
    port->run();
    const std::string node = grant_alone(*port, "/c", 7);
    REQUIRE(a.ec);
    port->answer("get_data", node, {.data = "h:1"});
    port->answer("get_children", "/c", {.children = {std::string(detail::base_name(node)), "x-00000000000000ff-lock-0000000008"}});
    port->run();

    // a lets go after one local grant: b is not granted on this node; the node goes, and b queues
    // anew behind the other process.
    a.l = lease{};
    port->run();
    CHECK_FALSE(b.ec);
    REQUIRE_FALSE(port->pending().empty());
    CHECK(port->pending().front().path == node);  // the node is deleted (with or without a mark)
    port->answer_next();
    port->run();
    REQUIRE_FALSE(port->pending().empty());
    CHECK(port->pending().front().op == "create");  // the next turn's node, for b
    CHECK_FALSE(b.ec);
}

TEST_CASE("cohort: a turn granted while the session is in doubt grants its local waiters once the doubt ends")
{
    // Found by the simulation (seed 4053693836102346478): the turn's lease never heard the doubt
    // end, so the cohort waited for a status change that had already come, and its local
    // waiters were never granted.
    fake_fixture fx;
    auto& port = fx.port;
    const auto T = port->session_timeout_;
    auto req = mutex_request("/c");
    req.cohort = true;
    acquired first, second;
    start_acquire(port, req, first);
    start_acquire(port, req, second);
    port->run();
    port->confirm_leader();
    port->advance(T / 3);
    port->run();
    grant_alone(*port, "/c", 7);
    port->run();
    while (!port->pending().empty() && port->pending().front().op != "get_children") port->answer_next({.data = "h:1"});
    port->run();
    CHECK(!first.ec);  // not granted locally while in doubt
    port->confirm_leader();
    port->run();
    while (!port->pending().empty()) port->answer_next({.data = "h:1", .children = {"x-0000000000000001-lock-0000000007"}});
    port->run();
    REQUIRE(first.ec);
    CHECK(!*first.ec);
    CHECK(first.l.status() == lease_status::held);
    CHECK(!second.ec);  // behind the first local holder
}
