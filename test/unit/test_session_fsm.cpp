// The session's state machine (src/port/session_fsm.hpp), driven without a server.
#include "port/session_fsm.hpp"

#include <doctest/doctest.h>

using namespace zklock;
using namespace zklock::detail;
using namespace std::chrono_literals;

namespace {

const auto t0 = std::chrono::steady_clock::time_point{} + 1h;

session_fsm connected_fsm(std::int64_t id = 0x11, bool reconnect = true)
{
    session_fsm f(4000ms, reconnect);
    f.on_handle_started();
    f.on_connected(id, 3000ms, t0);
    return f;
}

}  // namespace

TEST_CASE("session_fsm: connect, generations, and who is told")
{
    session_fsm f(4000ms, true);
    CHECK(f.state() == session_state::disconnected);
    CHECK(f.check_connected(0) == error_code(errc::not_connected));
    auto e = f.on_handle_started();
    CHECK(e.state_changed);
    CHECK(f.state() == session_state::connecting);
    CHECK_FALSE(f.check_connected(0).has_value());  // waits
    e = f.on_connected(0x11, 3000ms, t0);
    CHECK(f.state() == session_state::connected);
    CHECK(f.generation() == 1);
    CHECK(f.session_id() == 0x11);
    CHECK(f.negotiated_timeout() == 3000ms);
    CHECK(e.connects == error_code());
    CHECK(e.settle_waiters);
    CHECK(e.cancel_connect_timer);
    CHECK(f.check_connected(1) == error_code());
    CHECK(f.check_connected(0) == error_code());
    CHECK(f.check_connected(2) == error_code(errc::session_expired));  // not ours: another generation
}

TEST_CASE("session_fsm: cut off, the expiry is presumed a tenth of the timeout early, reconnecting in time keeps the generation")
{
    auto f = connected_fsm();
    f.on_heard(t0 + 500ms);
    auto e = f.on_connection_lost();
    CHECK(f.state() == session_state::suspended);
    CHECK(e.state_changed);
    REQUIRE(e.presume_at.has_value());
    CHECK(*e.presume_at == t0 + 500ms + 3000ms - 300ms);
    CHECK(f.session_id() == 0x11);                       // still ours while suspended
    CHECK_FALSE(f.check_connected(1).has_value());       // may come back
    CHECK_FALSE(f.on_presume_timer(t0 + 3199ms).presumed_expired);  // early: nothing yet
    CHECK(f.on_presume_timer(t0 + 3200ms).presumed_expired);
    e = f.on_connected(0x11, 3000ms, t0 + 4s);
    CHECK(f.generation() == 1);
    CHECK(e.cancel_presume);  // nothing engaged: no deadline while connected
    CHECK_FALSE(f.on_presume_timer(t0 + 9s).presumed_expired);  // a late timer says nothing once connected
    CHECK(f.on_connection_lost().state_changed);
    CHECK_FALSE(connected_fsm().on_connection_lost().presume_at == std::nullopt);
}

TEST_CASE("session_fsm: expiry fails the session's waiters, keeps those for any session, and restarts")
{
    auto f = connected_fsm();
    f.on_connection_lost();
    auto e = f.on_expired();
    CHECK(f.state() == session_state::expired);
    CHECK(e.settle_waiters);
    CHECK(e.fail_watches == error_code(errc::session_expired));
    CHECK(e.close_handle);
    CHECK(e.start_handle);
    CHECK(f.check_connected(1) == error_code(errc::session_expired));
    CHECK_FALSE(f.check_connected(0).has_value());
    CHECK(f.session_id() == 0);
    f.on_handle_started();
    e = f.on_connected(0x22, 3000ms, t0);
    CHECK(f.generation() == 2);
    CHECK(e.state_changed);
    CHECK(f.check_connected(1) == error_code(errc::session_expired));
    CHECK_FALSE(connected_fsm(0x11, false).on_expired().start_handle);  // reconnect_on_expiry = false
}

TEST_CASE("session_fsm: a connect that times out or is abandoned starts afresh next time")
{
    for (int how = 0; how < 3; ++how) {
        CAPTURE(how);
        session_fsm f(4000ms, true);
        f.on_handle_started();
        auto e = how == 0 ? f.on_connect_timeout() : how == 1 ? f.on_connect_abandoned() : f.on_auth_failed();
        CHECK(f.state() == session_state::disconnected);
        CHECK(e.close_handle);
        CHECK(e.settle_waiters);
        if (how == 0) CHECK(e.connects == error_code(errc::connect_timeout));
        if (how == 1) CHECK_FALSE(e.connects.has_value());  // the cancelled one completes by itself
        if (how == 2) {
            CHECK(e.connects == error_code(zk_errc::auth_failed));
            CHECK(e.waiters_error == error_code(zk_errc::auth_failed));
        }
        CHECK(f.check_connected(0) == error_code(errc::not_connected));
    }
    // Once connected, a timeout or an abandoned connect changes nothing.
    auto f = connected_fsm();
    f.on_connection_lost();
    auto e = f.on_connect_abandoned();
    CHECK_FALSE(e.close_handle);
    CHECK(f.state() == session_state::suspended);
}

TEST_CASE("session_fsm: close is final")
{
    auto f = connected_fsm();
    auto e = f.on_close();
    CHECK(f.state() == session_state::closed);
    CHECK(e.connects == error_code(errc::session_closed));
    CHECK(e.fail_watches == error_code(errc::session_closed));
    CHECK(e.cancel_presume);
    CHECK(f.check_connected(0) == error_code(errc::session_closed));
    CHECK(f.check_connected(1) == error_code(errc::session_closed));
    CHECK_FALSE(f.on_close().state_changed);
    CHECK_FALSE(f.on_connection_lost().state_changed);
}

TEST_CASE("session_fsm: engaged, the leader's evidence rules: doubt at T/3, presumed expired at T/2, while connected")
{
    auto f = connected_fsm();  // negotiated 3000 ms
    CHECK(f.probe_interval() == 500ms);
    auto e = f.on_engaged(true, t0 + 1s);
    CHECK(f.engaged());
    REQUIRE(e.presume_at.has_value());
    CHECK(*e.presume_at == t0 + 2s);  // the engagement's start counts as evidence, + T/3
    // A write sent at +1.2 s is answered: both deadlines move.
    e = f.on_leader_confirmed(t0 + 1200ms, t0 + 1300ms);
    REQUIRE(e.presume_at.has_value());
    CHECK(*e.presume_at == t0 + 2200ms);
    CHECK(f.on_leader_confirmed(t0 + 1100ms, t0 + 1400ms).presume_at == std::nullopt);  // older: nothing new
    // Our server keeps answering pings (connected), the leader confirms nothing more.
    e = f.on_presume_timer(t0 + 2200ms);
    CHECK(e.observers_changed);
    CHECK_FALSE(e.presumed_expired);
    CHECK(f.state() == session_state::connected);
    CHECK(f.observed_state() == session_state::suspended);
    REQUIRE(e.presume_at.has_value());
    CHECK(*e.presume_at == t0 + 2700ms);
    e = f.on_presume_timer(t0 + 2700ms);
    CHECK(e.presumed_expired);
    CHECK_FALSE(e.presume_at.has_value());  // presumed once on this evidence
    CHECK_FALSE(f.on_presume_timer(t0 + 5s).presumed_expired);
}

TEST_CASE("session_fsm: a doubt ends with fresh evidence, evidence too old to matter changes nothing")
{
    auto f = connected_fsm();
    f.on_engaged(true, t0);
    auto e = f.on_presume_timer(t0 + 1s);
    CHECK(f.observed_state() == session_state::suspended);
    // A sync sent during the doubt is answered: connected again, in the observers' eyes.
    e = f.on_leader_confirmed(t0 + 1100ms, t0 + 1200ms);
    CHECK(e.observers_changed);
    CHECK(f.observed_state() == session_state::connected);
    REQUIRE(e.presume_at.has_value());
    CHECK(*e.presume_at == t0 + 2100ms);
    // Presumed at +2.6 s; an answer to a request sent at +1.2 s arriving at +2.8 s does not undo it.
    f.on_presume_timer(t0 + 2100ms);
    CHECK(f.on_presume_timer(t0 + 2600ms).presumed_expired);
    e = f.on_leader_confirmed(t0 + 1200ms, t0 + 2800ms);
    CHECK_FALSE(e.observers_changed);
    CHECK(f.observed_state() == session_state::suspended);
    CHECK_FALSE(f.on_presume_timer(t0 + 2900ms).presumed_expired);
    // Evidence sent after the presumption is new: the session lives on for those who come next.
    e = f.on_leader_confirmed(t0 + 2700ms, t0 + 2800ms);
    CHECK(e.observers_changed);
    CHECK(f.observed_state() == session_state::connected);
    REQUIRE(e.presume_at.has_value());
    CHECK(*e.presume_at == t0 + 3700ms);
}

TEST_CASE("session_fsm: cut off while engaged, the leader's evidence comes before the connection rule")
{
    auto f = connected_fsm();
    f.on_engaged(true, t0);
    f.on_leader_confirmed(t0 + 1s, t0 + 1100ms);
    f.on_heard(t0 + 1400ms);
    auto e = f.on_connection_lost();
    REQUIRE(e.presume_at.has_value());
    CHECK(*e.presume_at == t0 + 2s);  // doubt: evidence + T/3 (the lease is suspended already)
    CHECK(f.on_presume_timer(t0 + 2s).presume_at == t0 + 2500ms);  // evidence + T/2, not heard + 9/10 T
    CHECK(f.on_presume_timer(t0 + 2500ms).presumed_expired);
    // Back on the same session, with no new evidence: still doubtful, and presumed on that evidence.
    e = f.on_connected(0x11, 3000ms, t0 + 2800ms);
    CHECK(f.observed_state() == session_state::suspended);
    CHECK(e.cancel_presume);
    // A new session starts afresh.
    f.on_connection_lost();
    f.on_expired();
    f.on_handle_started();
    e = f.on_connected(0x22, 3000ms, t0 + 4s);
    CHECK(f.observed_state() == session_state::connected);
    REQUIRE(e.presume_at.has_value());
    CHECK(*e.presume_at == t0 + 5s);
}

TEST_CASE("session_fsm: nothing engaged, nothing is probed or presumed while connected, disengaging ends a doubt")
{
    auto f = connected_fsm();
    CHECK_FALSE(f.engaged());
    CHECK_FALSE(f.on_presume_timer(t0 + 1h).presumed_expired);
    f.on_engaged(true, t0);
    f.on_presume_timer(t0 + 1s);
    CHECK(f.observed_state() == session_state::suspended);
    auto e = f.on_engaged(false, t0 + 1100ms);
    CHECK(e.observers_changed);
    CHECK(e.cancel_presume);
    CHECK(f.observed_state() == session_state::connected);
    CHECK_FALSE(f.on_presume_timer(t0 + 1h).presumed_expired);
}

TEST_CASE("session_fsm: what a read at any instant sees: the deadline, and a doubt or presumption due")
{
    auto f = connected_fsm();  // T = 3 s
    CHECK(f.valid_until() == std::chrono::steady_clock::time_point::min());  // nothing engaged: no rule
    f.on_engaged(true, t0 + 1s);
    CHECK(f.valid_until() == t0 + 1s + 1500ms);
    CHECK_FALSE(f.due(t0 + 1s + 999ms));
    CHECK(f.due(t0 + 2s));  // T/3: a doubt is due
    auto e = f.on_presume_timer(t0 + 2s);
    CHECK(e.observers_changed);
    CHECK(f.observed_state() == session_state::suspended);
    CHECK_FALSE(f.due(t0 + 2s + 499ms));
    f.on_leader_confirmed(t0 + 1500ms, t0 + 2100ms);  // an answer to a request sent at +1.5 s
    CHECK(f.valid_until() == t0 + 3s);
    CHECK(f.observed_state() == session_state::connected);
    CHECK(f.due(t0 + 3s));  // T/2 after the send: the presumption (and the doubt before it)
    e = f.on_presume_timer(t0 + 3s);
    CHECK(e.presumed_expired);
    CHECK(f.valid_until() == std::chrono::steady_clock::time_point::min());
    CHECK_FALSE(f.due(t0 + 10s));  // presumed once
    // Evidence too old to stop the presumption does not undo it.
    f.on_leader_confirmed(t0 + 1600ms, t0 + 3100ms);
    CHECK(f.valid_until() == std::chrono::steady_clock::time_point::min());
    // A newer answer is new evidence: the deadline comes back, for what is held from now on.
    f.on_leader_confirmed(t0 + 3050ms, t0 + 3100ms);
    CHECK(f.valid_until() == t0 + 3050ms + 1500ms);
}
