// The model's replication and session rules, which the differential test (one server, sessions
// closed rather than expired) does not reach: a follower behind the leader, a follower cut off,
// expiry by the leader's clock, the watches set again on a reconnect.
#include "zk_model.hpp"

#include <doctest/doctest.h>

using namespace zklock;
using namespace zklock::sim;
using namespace std::chrono_literals;

namespace {

const sim_clock::time_point t0{};

request make(request::kind k, std::string path, create_mode mode = create_mode::persistent, bool watch = false)
{
    request r;
    r.type = k;
    r.path = std::move(path);
    r.mode = mode;
    r.watch = watch;
    return r;
}

// Steps the session's requests as far as they go; returns its messages.
std::deque<message> run(zk_model& m, session_id s)
{
    while (m.can_step_session(s)) m.step_session(s, t0);
    auto out = std::move(m.outbox(s));
    m.outbox(s).clear();
    return out;
}

}  // namespace

TEST_CASE("sim model: a follower answers a write once it has applied it, and reads behind the leader")
{
    zk_model m(3);
    const auto a = m.open_session(1, 6s, t0);  // on follower 1
    const auto b = m.open_session(0, 6s, t0);  // on the leader
    m.submit(a, 1, make(request::kind::create, "/x"), t0);
    CHECK(run(m, a).empty());  // at the leader, not yet applied on follower 1
    // The leader's session reads it at once; the follower's own read waits behind the write.
    m.submit(b, 1, make(request::kind::exists, "/x"), t0);
    auto rb = run(m, b);
    REQUIRE(rb.size() == 1);
    CHECK(rb[0].r.stat.has_value());
    m.submit(a, 2, make(request::kind::exists, "/x"), t0);
    CHECK(run(m, a).empty());
    REQUIRE(m.can_step_server(1));
    m.step_server(1);
    auto ra = run(m, a);
    REQUIRE(ra.size() == 2);
    CHECK(ra[0].r.tag == 1);
    CHECK(ra[0].r.path == "/x");
    CHECK(ra[1].r.tag == 2);
    CHECK(ra[1].r.stat.has_value());
}

TEST_CASE("sim model: a follower cut off from the leader serves stale reads and holds its writes")
{
    zk_model m(3);
    const auto a = m.open_session(2, 6s, t0);
    const auto b = m.open_session(0, 6s, t0);
    m.set_reaches_leader(2, false);
    m.submit(b, 1, make(request::kind::create, "/y"), t0);
    run(m, b);
    CHECK_FALSE(m.can_step_server(2));
    m.submit(a, 1, make(request::kind::exists, "/y"), t0);
    auto r = run(m, a);
    REQUIRE(r.size() == 1);
    CHECK(r[0].r.ec == zk_errc::no_node);  // stale: the leader has /y
    m.submit(a, 2, make(request::kind::create, "/z"), t0);
    CHECK_FALSE(m.can_step_session(a));  // forwarded only once it reaches the leader
    CHECK(m.nodes() == std::vector<std::string>{"/", "/y"});
    // Its session is not touched at the leader while cut off: it expires there.
    m.touch(a, t0 + 5s);
    m.touch(b, t0 + 5s);
    CHECK(m.expire_due(t0 + 6s) == std::vector<session_id>{a});
    m.set_reaches_leader(2, true);
    CHECK(m.can_step_server(2));
}

TEST_CASE("sim model: an expiry deletes every ephemeral of the session in one transaction, their watches fire")
{
    zk_model m(1);
    const auto a = m.open_session(0, 6s, t0);
    const auto b = m.open_session(0, 6s, t0);
    m.submit(a, 1, make(request::kind::create, "/e1", create_mode::ephemeral), t0);
    m.submit(a, 2, make(request::kind::create, "/e2", create_mode::ephemeral), t0);
    run(m, a);
    m.submit(b, 1, make(request::kind::exists, "/e1", create_mode::persistent, true), t0);
    m.submit(b, 2, make(request::kind::get_children, "/", create_mode::persistent, true), t0);
    run(m, b);
    const auto before = m.last_zxid();
    m.touch(b, t0 + 5s);
    CHECK(m.expire_due(t0 + 6s) == std::vector<session_id>{a});
    CHECK(m.last_zxid() == before + 1);
    CHECK(m.nodes() == std::vector<std::string>{"/"});
    CHECK_FALSE(m.alive(a));
    auto events = run(m, b);
    REQUIRE(events.size() == 2);
    CHECK(events[0].is_event);
    CHECK(events[0].e.type == event_type::deleted);
    CHECK(events[0].e.path == "/e1");
    CHECK(events[1].e.type == event_type::child);
    CHECK(events[1].e.path == "/");
}

TEST_CASE("sim model: a reconnect sets the watches again, and fires those whose node changed meanwhile")
{
    zk_model m(3);
    const auto a = m.open_session(1, 6s, t0);
    const auto b = m.open_session(0, 6s, t0);
    m.submit(b, 1, make(request::kind::create, "/w"), t0);
    m.submit(b, 2, make(request::kind::create, "/v"), t0);
    run(m, b);
    while (m.can_step_server(1)) m.step_server(1);
    m.submit(a, 1, make(request::kind::get_data, "/w", create_mode::persistent, true), t0);
    auto seen = run(m, a);
    REQUIRE(seen.size() == 1);
    const auto zxid = seen[0].r.zxid;
    m.disconnect(a);
    request del = make(request::kind::remove, "/w");
    m.submit(b, 3, del, t0);
    run(m, b);
    // A server behind what the client saw refuses it; the leader takes it and fires the watch.
    m.set_reaches_leader(2, false);
    CHECK_FALSE(m.reconnect(a, 2, zxid + 100, {"/w"}, {}, {}, t0).accepted);
    const auto r = m.reconnect(a, 0, zxid, {"/w", "/v"}, {"/nothing"}, {}, t0);
    CHECK(r.accepted);
    CHECK_FALSE(r.expired);
    auto ev = run(m, a);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].e.type == event_type::deleted);
    CHECK(ev[0].e.path == "/w");
    // /v is watched again: its change fires.
    request set = make(request::kind::set_data, "/v");
    m.submit(b, 4, set, t0);
    run(m, b);
    ev = run(m, a);
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].e.type == event_type::changed);
    // An expired session is told so.
    m.touch(b, t0 + 10s);
    m.expire_due(t0 + 10s);
    m.disconnect(a);
    CHECK(m.reconnect(a, 0, 0, {}, {}, {}, t0 + 10s).expired);
}
