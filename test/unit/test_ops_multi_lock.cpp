// multi_lock over the acquire on the fake port (fake_port.hpp): the order of its locks, its
// failures, cancellation and deadline on the port's clock, without a server.
#include "ops_fixtures.hpp"

#include "core/deadline.hpp"

#include <zklock/multi_lock.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

using namespace zklock;
using namespace zklock::test;
using namespace zklock::test_ops;
namespace asio = boost::asio;

namespace {

struct multi_result_of {
    std::optional<error_code> ec;
    std::vector<lease> leases;
};

void start_multi(const std::shared_ptr<fake_port>& port, std::vector<lock_spec> specs, multi_result_of& r,
                 asio::cancellation_slot slot = {})
{
    detail::initiate_multi_acquire(port, std::move(specs), lock_options{}, std::nullopt,
                                   asio::bind_cancellation_slot(slot, [&r](error_code ec, std::vector<lease> l) {
                                       r.ec = ec;
                                       r.leases = std::move(l);
                                   }));
}

// Starts multi_lock over /a and /b: /a is granted, /b's create refused (no_auth). Returns /a's node.
std::string take_a_then_refuse_b(const std::shared_ptr<fake_port>& port, multi_result_of& r)
{
    start_multi(port, {lock_spec::exclusive("/a"), lock_spec::exclusive("/b")}, r);
    const std::string a = grant_alone(*port, "/a", 1);
    const std::string prefix = port->pending().front().path;
    port->answer("create", prefix, {.ec = zk_errc::no_auth});
    port->answer("list_children", "/b", {.children = {}});
    port->run();
    return a;
}

}  // namespace

TEST_CASE("multi_lock: the locks in canonical order, the leases in the caller's")
{
    fake_fixture fx;
    auto& port = fx.port;
    multi_result_of r;
    start_multi(port, {lock_spec::exclusive("/b"), lock_spec::exclusive("/a")}, r);
    const std::string a = grant_alone(*port, "/a", 1);  // /a first, whatever the caller's order
    CHECK(!r.ec);
    const std::string b = grant_alone(*port, "/b", 2);
    REQUIRE(r.ec);
    CHECK(!*r.ec);
    REQUIRE(r.leases.size() == 2);
    CHECK(r.leases[0].node() == b);
    CHECK(r.leases[1].node() == a);
    CHECK(r.leases[1].fencing_token() == 1001);
}

TEST_CASE("multi_lock: a failure releases what was taken, then completes")
{
    fake_fixture fx;
    auto& port = fx.port;
    multi_result_of r;
    const std::string a = take_a_then_refuse_b(port, r);
    CHECK(!r.ec);  // not before /a is released
    port->answer("remove", a);
    port->run();
    REQUIRE(r.ec);
    CHECK(*r.ec == zk_errc::no_auth);
    CHECK(r.leases.empty());
    CHECK(port->pending().empty());
}

TEST_CASE("multi_lock: two specs on one path are refused, nothing sent")
{
    fake_fixture fx;
    auto& port = fx.port;
    multi_result_of r;
    start_multi(port, {lock_spec::exclusive("/a"), lock_spec::shared("/a")}, r);
    port->run();
    REQUIRE(r.ec);
    CHECK(*r.ec == errc::invalid_argument);
    CHECK(port->log_of_requests().empty());
}

TEST_CASE("multi_lock: a lock lost while the next one is awaited fails the set, and lets the rest go")
{
    // Found by the simulation: the first lease was lost (its session presumed expired, its node
    // deleted) while the second was awaited; newer evidence ended the presumption, the second
    // was granted, and the set completed with all held but one.
    fake_fixture fx;
    auto& port = fx.port;
    const auto T = port->session_timeout_;
    port->confirm_leader();
    multi_result_of r;
    start_multi(port, {lock_spec::exclusive("/a"), lock_spec::exclusive("/b")}, r);
    const std::string a = grant_alone(*port, "/a", 1);
    const std::string prefix = port->pending().front().path;
    const std::string ours = prefix + "0000000009";
    const std::string theirs = "/b/x-00000000000000ff-lock-0000000008";
    port->answer("create", prefix, {.path = ours, .stat = {.czxid = 9}});
    port->answer("list_children", "/b", {.children = {std::string(detail::base_name(theirs)), std::string(detail::base_name(ours))}});
    port->run();
    std::shared_ptr<detail::watch_state> b_watch;
    while (!port->pending().empty()) {
        const std::string op = port->pending().front().op, path = port->pending().front().path;
        auto w = port->answer(op, path, {.data = "h:2"});
        if (path == theirs) b_watch = w;
        port->run();
    }
    REQUIRE(b_watch);
    port->advance(T / 2);  // presumed expired: the first lease is lost, its node deleted plainly
    port->run();
    REQUIRE(port->pending().size() == 1);
    CHECK(port->pending().front().op == "remove");
    CHECK(port->pending().front().path == a);
    port->answer("remove", a);
    port->run();
    port->confirm_leader();  // the leader answers again: the session lives on
    b_watch->fire({}, {watch_event_type::deleted, theirs});  // the second lock comes free
    port->run();
    for (int i = 0; i < 6 && !r.ec && !port->pending().empty(); ++i) {
        const std::string op = port->pending().front().op, path = port->pending().front().path;
        if (op == "list_children") port->answer(op, path, {.children = {std::string(detail::base_name(ours))}});
        else if (op == "remove" && path == ours) port->answer(op, path);
        else port->answer(op, path, {.data = "h:2"});
        port->run();
    }
    REQUIRE(r.ec);
    CHECK(*r.ec == errc::session_expired);
    CHECK(r.leases.empty());
    bool released = false;
    for (const auto& m : port->log_of_requests()) released = released || m == "remove " + ours;
    CHECK(released);
}

TEST_CASE("multi_lock: cancelled while the second waits: its node and the first lock are let go")
{
    fake_fixture fx;
    auto& port = fx.port;
    asio::cancellation_signal sig;
    multi_result_of r;
    start_multi(port, {lock_spec::exclusive("/a"), lock_spec::exclusive("/b")}, r, sig.slot());
    const std::string a = grant_alone(*port, "/a", 1);
    // /b is held by someone else: the acquire watches that node.
    const std::string prefix = port->pending().front().path;
    const std::string ours = prefix + "0000000009";
    const std::string theirs = "x-00000000000000ff-lock-0000000008";
    port->answer("create", prefix, {.path = ours, .stat = {.czxid = 9}});
    port->answer("list_children", "/b", {.children = {theirs, std::string(detail::base_name(ours))}});
    port->run();
    REQUIRE(!port->pending().empty());
    CHECK(port->pending().back().op == "get_data");
    CHECK(port->pending().back().path == "/b/" + theirs);
    while (!port->pending().empty()) port->answer_next({.data = "h:2"});  // the watch is set
    port->run();
    sig.emit(asio::cancellation_type::terminal);
    port->run();
    port->answer("remove", ours);  // the waiting acquire deletes its node
    port->run();
    port->answer("remove", a);  // then the first lock is released
    port->run();
    REQUIRE(r.ec);
    CHECK(*r.ec == asio::error::operation_aborted);
    CHECK(r.leases.empty());
    CHECK(port->pending().empty());
}

// ---- time: the fake's manual clock ---------------------------------------------------------------

TEST_CASE("multi_lock: its deadline is on the port's clock, across its acquires")
{
    // Found by the simulation: multi_lock measured its deadline on the system's clock while its
    // acquires' timers ran on the port's, so each acquire was given the whole timeout again.
    fake_fixture fx;
    auto& port = fx.port;
    multi_result_of r;
    detail::initiate_multi_acquire(port, {lock_spec::exclusive("/a"), lock_spec::exclusive("/b")}, lock_options{},
                                   std::chrono::seconds(5), [&r](error_code ec, std::vector<lease> l) {
                                       r.ec = ec;
                                       r.leases = std::move(l);
                                   });
    port->run();
    port->advance(std::chrono::seconds(3));  // /a takes 3 s
    const std::string a = grant_alone(*port, "/a", 1);
    const std::string prefix = port->pending().front().path;
    const std::string ours = prefix + "0000000009";
    port->answer("create", prefix, {.path = ours, .stat = {.czxid = 9}});
    port->answer("list_children", "/b", {.children = {"x-00000000000000ff-lock-0000000008", std::string(detail::base_name(ours))}});
    port->run();
    while (!port->pending().empty()) port->answer_next({.data = "h:2"});
    port->run();
    port->advance(std::chrono::seconds(2));  // the set's deadline: /b has 2 s, not 5
    port->run();
    REQUIRE(!port->pending().empty());
    CHECK(port->pending().front().op == "remove");
    CHECK(port->pending().front().path == ours);
    port->answer("remove", ours);
    port->run();
    port->answer("remove", a);
    port->run();
    REQUIRE(r.ec);
    CHECK(*r.ec == errc::timeout);
}

TEST_CASE("multi_lock: a release unconfirmed within the grace: the set completes, the release goes on")
{
    fake_fixture fx;
    auto& port = fx.port;
    multi_result_of r;
    const std::string a = take_a_then_refuse_b(port, r);
    REQUIRE(port->pending().size() == 1);
    CHECK(port->pending().front().path == a);  // /a's release, not answered
    port->advance(detail::cleanup_grace - std::chrono::milliseconds(1));
    port->run();
    CHECK_FALSE(r.ec);
    port->advance(std::chrono::milliseconds(1));
    port->run();
    REQUIRE(r.ec);
    CHECK(*r.ec == zk_errc::no_auth);
    CHECK(port->metrics().snapshot().background_cleanups == 1);
    CHECK(port->metrics().snapshot().background_cleanups_pending == 1);
    port->answer("remove", a);
    port->run();
    CHECK(port->metrics().snapshot().background_cleanups_pending == 0);
    CHECK(port->pending().empty());
}

TEST_CASE("multi_lock: a writer's node is named as a shared_mutex's, a mutex's as a mutex's")
{
    fake_fixture fx;
    auto& port = fx.port;
    multi_result_of r;
    start_multi(port, {lock_spec::writer("/w"), lock_spec::exclusive("/m")}, r);
    CHECK(lock_spec::writer("/w").kind == lock_kind::exclusive);
    const std::string m = grant_alone(*port, "/m", 1);  // canonical order: /m first
    CHECK(m.find("-lock-") != std::string::npos);
    const std::string w = grant_alone(*port, "/w", 2);
    CHECK(w.find("-__WRIT__") != std::string::npos);
    REQUIRE(r.ec);
    CHECK(!*r.ec);
}
