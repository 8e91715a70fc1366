// The session's state machine (src/session_fsm.hpp), driven without a server.
#include "session_fsm.hpp"

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

TEST_CASE("session_fsm: cut off, the expiry is presumed a tenth of the timeout early; reconnecting in time keeps the generation")
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
    CHECK(f.on_presume_timer().presumed_expired);
    e = f.on_connected(0x11, 3000ms, t0 + 2s);
    CHECK(f.generation() == 1);
    CHECK(e.cancel_presume);
    CHECK_FALSE(f.on_presume_timer().presumed_expired);  // a late timer says nothing once connected
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
