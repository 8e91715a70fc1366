// The election on the fake port (fake_port.hpp): the observer's news of the leader, and
// async_leader's reads, without a server.
#include "fake_port.hpp"

#include <zklock/election.hpp>

using namespace zklock;
using namespace zklock::test;
namespace asio = boost::asio;

namespace {

std::string candidate(int seq)
{
    std::string s = std::to_string(seq);
    return "x-00000000000000" + std::to_string(10 + seq) + "-lock-" + std::string(10 - s.size(), '0') + s;
}

struct observed {
    int calls = 0;
    error_code ec;
    leader_info info;
};

void observe_next(const std::shared_ptr<detail::observer_state>& o, observed& r)
{
    detail::initiate_observe_next(o, [&r](error_code ec, leader_info info) {
        ++r.calls;
        r.ec = ec;
        r.info = std::move(info);
    });
}

}  // namespace

TEST_CASE("election observer: a leader that came and went between two waits is not news")
{
    fake_fixture fx;
    auto& port = fx.port;
    auto o = detail::start_observer(port, "/e");
    auto children = port->answer("get_children", "/e", {.children = {}});
    port->run();
    observed first;
    observe_next(o, first);
    port->run();
    REQUIRE(first.calls == 1);
    CHECK(first.info.node.empty());  // nobody leads

    // L comes and goes while nobody waits.
    children->fire({}, watch_event{watch_event_type::child, "/e"});
    port->run();
    port->answer("get_children", "/e", {.children = {candidate(1)}});
    port->run();
    auto leader = port->answer("get_data", "/e/" + candidate(1), {.data = "L"});
    port->run();
    leader->fire({}, watch_event{watch_event_type::deleted, "/e/" + candidate(1)});
    port->run();
    children = port->answer("get_children", "/e", {.children = {}});
    port->run();

    observed second;
    observe_next(o, second);
    port->run();
    CHECK(second.calls == 0);  // nobody, as delivered last

    // M comes: that is news.
    children->fire({}, watch_event{watch_event_type::child, "/e"});
    port->run();
    port->answer("get_children", "/e", {.children = {candidate(2)}});
    port->run();
    port->answer("get_data", "/e/" + candidate(2), {.data = "M"});
    port->run();
    REQUIRE(second.calls == 1);
    CHECK(!second.ec);
    CHECK(second.info.node == candidate(2));
    CHECK(second.info.value == "M");
    detail::stop_observer(*o);
}

TEST_CASE("election observer: a new value of the same leader is news, the same one is not")
{
    fake_fixture fx;
    auto& port = fx.port;
    auto o = detail::start_observer(port, "/e");
    port->answer("get_children", "/e", {.children = {candidate(1), candidate(2)}});
    port->run();
    auto w = port->answer("get_data", "/e/" + candidate(1), {.data = "v1"});
    port->run();
    observed a;
    observe_next(o, a);
    port->run();
    REQUIRE(a.calls == 1);
    CHECK(a.info.value == "v1");

    observed b;
    observe_next(o, b);
    w->fire({}, watch_event{watch_event_type::changed, "/e/" + candidate(1)});
    port->run();
    w = port->answer("get_data", "/e/" + candidate(1), {.data = "v1"});  // rewritten, same value
    port->run();
    CHECK(b.calls == 0);
    w->fire({}, watch_event{watch_event_type::changed, "/e/" + candidate(1)});
    port->run();
    w = port->answer("get_data", "/e/" + candidate(1), {.data = "v2"});
    port->run();
    REQUIRE(b.calls == 1);
    CHECK(b.info.value == "v2");

    // The leader goes: the next listed candidate leads, read without a new listing.
    observed c;
    observe_next(o, c);
    w->fire({}, watch_event{watch_event_type::deleted, "/e/" + candidate(1)});
    port->run();
    port->answer("get_data", "/e/" + candidate(2), {.data = "v3"});
    port->run();
    REQUIRE(c.calls == 1);
    CHECK(c.info.node == candidate(2));
    CHECK(c.info.value == "v3");

    observed d;
    observe_next(o, d);
    detail::stop_observer(*o);
    port->run();
    REQUIRE(d.calls == 1);
    CHECK(d.ec == asio::error::operation_aborted);
}

TEST_CASE("election: async_leader reads the first candidate that still exists")
{
    fake_fixture fx;
    auto& port = fx.port;
    struct {
        std::optional<error_code> ec;
        leader_info info;
    } r;
    detail::initiate_leader(port, "/e", [&r](error_code ec, leader_info info) {
        r.ec = ec;
        r.info = std::move(info);
    });
    port->answer("get_children", "/e", {.children = {candidate(2), "junk", candidate(1)}});
    port->run();
    port->answer("get_data", "/e/" + candidate(1), {.ec = zk_errc::no_node});  // gone meanwhile
    port->run();
    port->answer("get_data", "/e/" + candidate(2), {.data = "me", .stat = {.czxid = 7}});
    port->run();
    REQUIRE(r.ec);
    CHECK(!*r.ec);
    CHECK(r.info.node == candidate(2));
    CHECK(r.info.value == "me");
    CHECK(r.info.sequence == 2);
    CHECK(r.info.stat.czxid == 7);
}

TEST_CASE("election: async_leader with no candidate, or no path, is no_leader, a missing chroot says so")
{
    fake_fixture fx;
    auto& port = fx.port;
    std::vector<error_code> got;
    const auto record_ec = [&got](error_code ec, leader_info) { got.push_back(ec); };
    detail::initiate_leader(port, "/e", record_ec);
    port->answer("get_children", "/e", {.children = {"junk"}});
    port->run();
    detail::initiate_leader(port, "/e", record_ec);
    port->answer("get_children", "/e", {.ec = zk_errc::no_node});
    port->run();
    port->answer("exists", "/", {.exists = zklock::stat{}});
    port->run();
    detail::initiate_leader(port, "/e", record_ec);
    port->answer("get_children", "/e", {.ec = zk_errc::no_node});
    port->run();
    port->answer("exists", "/", {});
    port->run();
    REQUIRE(got.size() == 3);
    CHECK(got[0] == errc::no_leader);
    CHECK(got[1] == errc::no_leader);
    CHECK(got[2] == errc::chroot_missing);
}
