// The acquire on the fake port (fake_port.hpp): its start while disconnected, a lost create reply,
// a presumed expiry, cancellation, and its timeout on the port's clock, without a server.
#include "ops_fixtures.hpp"

#include "core/deadline.hpp"
#include "ops/lookahead_window.hpp"

#include <boost/asio/cancellation_signal.hpp>

using namespace zklock;
using namespace zklock::test;
using namespace zklock::test_ops;
namespace asio = boost::asio;

TEST_CASE("acquire: started while the connection is lost, it sends nothing until it is back")
{
    fake_fixture fx;
    auto& port = fx.port;
    port->set_state(session_state::suspended);
    acquired r;
    start_acquire(port, "/l", r);
    port->run();
    CHECK(port->log_of_requests().empty());
    port->set_state(session_state::connected);
    port->run();
    const std::string node = grant_alone(*port, "/l", 1);
    REQUIRE(r.ec);
    CHECK(!*r.ec);
    CHECK(r.l.node() == node);
}

TEST_CASE("acquire: after a lost create reply it syncs before it looks for its node")
{
    // Found by the simulation: reconnected to a follower that had not applied our create yet, the
    // listing showed no node of ours, and the acquire created a second one behind the first.
    fake_fixture fx;
    auto& port = fx.port;
    acquired r;
    start_acquire(port, "/l", r);
    port->run();
    const std::string prefix = port->pending().front().path;
    port->answer("create", prefix, {.ec = zk_errc::connection_loss});
    port->answer("list_children", "/l", {.ec = zk_errc::connection_loss});
    port->set_state(session_state::suspended);
    port->run();
    CHECK(port->pending().empty());  // nothing until the connection is back
    port->set_state(session_state::connected);
    port->run();
    REQUIRE(port->pending().size() == 1);
    CHECK(port->pending().front().op == "sync");
    port->answer("sync", "/l");
    port->run();
    REQUIRE(port->pending().size() == 1);
    CHECK(port->pending().front().op == "list_children");
    const std::string ours = prefix + "0000000003";
    port->answer("list_children", "/l", {.children = {std::string(detail::base_name(ours))}});
    port->run();
    REQUIRE(port->pending().size() == 1);
    CHECK(port->pending().front().op == "exists");  // ours, if our session owns it
    port->answer("exists", ours, {.exists = zklock::stat{.czxid = 3, .ephemeral_owner = port->session_id_}});
    port->run();
    // It is ours: listed again, and granted; one node, no second create.
    port->answer("list_children", "/l", {.children = {std::string(detail::base_name(ours))}});
    port->run();
    REQUIRE(r.ec);
    CHECK(!*r.ec);
    CHECK(r.l.node() == ours);
    CHECK(std::count_if(port->log_of_requests().begin(), port->log_of_requests().end(),
                        [](const std::string& m) { return m.starts_with("create "); }) == 1);
}

TEST_CASE("acquire: a waiter whose session is presumed expired is not granted on a late event")
{
    // Found by the simulation: a waiter's executor stalled past T/2 while the holder released;
    // at resume the presumption was told, then the deletion event queued before it granted a
    // lease that read suspended, while the leader had expired the session and granted another.
    fake_fixture fx;
    auto& port = fx.port;
    const auto T = port->session_timeout_;
    port->confirm_leader();
    acquired r;
    start_acquire(port, "/l", r);
    port->run();
    const std::string prefix = port->pending().front().path;
    const std::string ours = prefix + "0000000002";
    const std::string ahead = "/l/x-00000000000000ff-lock-0000000001";
    port->answer("create", prefix, {.path = ours, .stat = {.czxid = 2}});
    port->answer("list_children", "/l", {.children = {std::string(detail::base_name(ahead)), std::string(detail::base_name(ours))}});
    port->run();
    std::shared_ptr<detail::watch_state> w;
    while (!port->pending().empty()) {
        const std::string op = port->pending().front().op, path = port->pending().front().path;
        auto set = port->answer(op, path, {.data = "h:1"});
        if (path == ahead) w = set;
    }
    port->run();
    REQUIRE(w);
    port->advance(T / 2);  // the presumption: told from a posted handler
    port->run();
    CHECK_FALSE(r.ec);
    w->fire({}, {watch_event_type::deleted, ahead});
    port->run();
    for (int i = 0; i < 4 && !r.ec && !port->pending().empty(); ++i) {
        const std::string op = port->pending().front().op, path = port->pending().front().path;
        if (op == "list_children") port->answer(op, path, {.children = {std::string(detail::base_name(ours))}});
        else port->answer(op, path, {.data = "h:1"});
        port->run();
    }
    REQUIRE(r.ec);
    CHECK(*r.ec == errc::session_expired);
    CHECK_FALSE(r.l.owns_lock());
    // Its node is deleted, plainly.
    REQUIRE(port->pending().size() == 1);
    CHECK(port->pending().front().op == "remove");
    CHECK(port->pending().front().path == ours);
}

TEST_CASE("acquire: cancelled while the connection is lost, it completes at once, nothing sent")
{
    fake_fixture fx;
    auto& port = fx.port;
    port->set_state(session_state::suspended);
    asio::cancellation_signal sig;
    acquired r;
    start_acquire(port, "/l", r, sig.slot());
    port->run();
    sig.emit(asio::cancellation_type::terminal);
    port->run();
    REQUIRE(r.ec);
    CHECK(*r.ec == asio::error::operation_aborted);
    port->set_state(session_state::connected);
    port->run();
    CHECK(port->log_of_requests().empty());
    CHECK(port->metrics().snapshot().background_cleanups == 0);
}

// ---- time: the fake's manual clock ---------------------------------------------------------------

TEST_CASE("acquire: its timeout on the port's clock takes the node away, a silent server is left behind at the grace")
{
    for (const bool server_answers : {true, false}) {
        CAPTURE(server_answers);
        fake_fixture fx;
        auto& port = fx.port;
        acquired r;
        auto req = mutex_request("/l");
        req.timeout = std::chrono::seconds(5);
        start_acquire(port, std::move(req), r);
        // Someone holds it: the acquire waits on that node.
        const std::string prefix = port->pending().front().path;
        const std::string ours = prefix + "0000000002";
        port->answer("create", prefix, {.path = ours, .stat = {.czxid = 2}});
        port->answer("list_children", "/l", {.children = {"x-00000000000000ff-lock-0000000001", std::string(detail::base_name(ours))}});
        port->run();
        while (!port->pending().empty()) port->answer_next({.data = "h:1"});
        port->run();
        port->advance(std::chrono::milliseconds(4999));
        port->run();
        CHECK_FALSE(r.ec);
        CHECK(port->pending().empty());
        port->advance(std::chrono::milliseconds(1));
        port->run();
        REQUIRE(port->pending().size() == 1);
        CHECK(port->pending().front().op == "remove");
        CHECK(port->pending().front().path == ours);
        CHECK_FALSE(r.ec);  // not before the node is gone, or the grace has passed
        if (server_answers) {
            port->answer("remove", ours);
            port->run();
            REQUIRE(r.ec);
            CHECK(*r.ec == errc::timeout);
            CHECK(port->metrics().snapshot().background_cleanups == 0);
            CHECK(port->timers_running() == 0);
            continue;
        }
        port->advance(detail::cleanup_grace);
        port->run();
        REQUIRE(r.ec);
        CHECK(*r.ec == errc::timeout);
        CHECK(port->metrics().snapshot().background_cleanups == 1);
        CHECK(port->metrics().snapshot().background_cleanups_pending == 1);
        port->answer("remove", ours);  // the deletion goes on, and ends
        port->run();
        CHECK(port->metrics().snapshot().background_cleanups_pending == 0);
    }
}

TEST_CASE("acquire: a cancellation during its timeout's grace does not move the completion later")
{
    // Found by the simulation: a timeout, then the user's cancellation while the server has not
    // confirmed the delete; the second one started the grace again.
    fake_fixture fx;
    auto& port = fx.port;
    acquired r;
    asio::cancellation_signal cancel;
    auto req = mutex_request("/l");
    req.timeout = std::chrono::seconds(1);
    start_acquire(port, std::move(req), r, cancel.slot());
    port->run();
    REQUIRE(port->pending().size() >= 1);
    CHECK(port->pending().front().op == "create");  // never answered: the server is silent
    port->advance(std::chrono::seconds(1));
    port->run();
    CHECK_FALSE(r.ec);
    port->advance(std::chrono::milliseconds(100));
    cancel.emit(asio::cancellation_type::terminal);
    port->run();
    CHECK_FALSE(r.ec);
    port->advance(detail::cleanup_grace - std::chrono::milliseconds(100));
    port->run();
    REQUIRE(r.ec);
    CHECK(*r.ec == errc::timeout);  // the first reason, at the deadline's grace
}

namespace {

// Another session's node of /l with sequence number `seq`.
std::string foreign_node(int seq)
{
    char b[64];
    std::snprintf(b, sizeof b, "x-%016x-lock-%010d", 0x10000 + seq, seq);
    return std::string(b);
}

// Starts an acquire of /l and answers its create with sequence number `seq` (at least 1000).
std::string created_at(const std::shared_ptr<test::fake_port>& port, int seq, acquired& r,
                       asio::cancellation_slot slot = {})
{
    start_acquire(port, "/l", r, slot);
    port->run();
    REQUIRE(port->pending().size() == 2);
    const std::string node = port->pending().front().path + "000000" + std::to_string(seq);
    port->answer("create", port->pending().front().path, {.path = node, .stat = {.czxid = seq}});
    return node;
}

// Cancels a waiting acquire and answers what it sends until it completes: a wait left behind
// holds itself through its watch.
void cancel_waiting(test::fake_port& port, asio::cancellation_signal& cancel, acquired& r)
{
    cancel.emit(asio::cancellation_type::terminal);
    port.run();
    for (int i = 0; i < 8 && !r.ec && !port.pending().empty(); ++i) {
        port.answer_next();
        port.run();
    }
    REQUIRE(r.ec);
    CHECK(*r.ec == asio::error::operation_aborted);
}

}  // namespace

TEST_CASE("acquire: a waiter far back sets its look-ahead watch once a grant on its session brings it near")
{
    // W10000's shape: the look-ahead's watch (on the node before our predecessor) goes out at once
    // only within lookahead_window::span places of the head; further back it is deferred, and a
    // grant of the same session's, as the queue drains, brings it out.
    static_assert(detail::lookahead_window<int>::span == 1024);
    fake_fixture fx;
    auto& port = fx.port;
    asio::cancellation_signal cancel_b;
    // A at 2500 with 1 500 nodes before it, B at 3000 with 2 000: both set their predecessor's
    // watch and defer the look-ahead.
    acquired ra, rb;
    const std::string a = created_at(port, 2500, ra);
    std::vector<std::string> queue;
    for (int s = 1000; s < 2500; ++s) queue.push_back(foreign_node(s));
    queue.push_back(std::string(detail::base_name(a)));
    port->answer("list_children", "/l", {.children = queue});
    port->run();
    REQUIRE(port->pending().size() == 1);
    auto wa = port->answer("get_data", "/l/" + foreign_node(2499), {.data = "h:1"});
    port->run();
    CHECK(port->pending().empty());  // not the look-ahead's watch on 2498
    const std::string b = created_at(port, 3000, rb, cancel_b.slot());
    for (int s = 2501; s < 3000; ++s) queue.push_back(foreign_node(s));
    queue.push_back(std::string(detail::base_name(b)));
    port->answer("list_children", "/l", {.children = queue});
    port->run();
    REQUIRE(port->pending().size() == 1);
    port->answer("get_data", "/l/" + foreign_node(2999), {.data = "h:1"});
    port->run();
    CHECK(port->pending().empty());  // not the look-ahead's watch on 2998
    // A's predecessor goes, and A finds itself at the head (the nodes before it gone): granted.
    REQUIRE(wa);
    wa->fire({}, {watch_event_type::deleted, "/l/" + foreign_node(2499)});
    port->run();
    std::vector<std::string> rest{std::string(detail::base_name(a))};
    for (int s = 2501; s < 3000; ++s) rest.push_back(foreign_node(s));
    rest.push_back(std::string(detail::base_name(b)));
    for (int i = 0; i < 6 && !ra.ec && !port->pending().empty(); ++i) {
        const auto& next = port->pending().front();
        if (next.op == "list_children") port->answer("list_children", "/l", {.children = rest});
        else if (next.op == "exists") port->answer("exists", next.path, {.exists = zklock::stat{.czxid = 2500}});
        else port->answer(next.op, next.path);
        port->run();
    }
    REQUIRE(ra.ec);
    CHECK(!*ra.ec);
    CHECK(ra.l.node() == a);
    // B is now 500 places from the head: its look-ahead's watch goes out.
    port->run();
    const bool ahead_watched = std::any_of(port->pending().begin(), port->pending().end(), [&](const auto& r) {
        return r.op == "get_data" && r.path == "/l/" + foreign_node(2998) && r.watch;
    });
    CHECK(ahead_watched);
    CHECK_FALSE(rb.ec);
    cancel_waiting(*port, cancel_b, rb);
}

TEST_CASE("acquire: a deferred waiter whose new listing shows it near sets its look-ahead watch at once")
{
    // No grant on its session: its predecessor leaves (the waiter is not armed), it lists, and the
    // listing shows it 5 places from the head.
    fake_fixture fx;
    auto& port = fx.port;
    acquired r;
    asio::cancellation_signal cancel;
    const std::string b = created_at(port, 3000, r, cancel.slot());
    std::vector<std::string> queue;
    for (int s = 1000; s < 3000; ++s) queue.push_back(foreign_node(s));
    queue.push_back(std::string(detail::base_name(b)));
    port->answer("list_children", "/l", {.children = queue});
    port->run();
    auto w = port->answer("get_data", "/l/" + foreign_node(2999), {.data = "h:1"});
    port->run();
    CHECK(port->pending().empty());  // deferred: no look-ahead read of 2998
    REQUIRE(w);
    w->fire({}, {watch_event_type::deleted, "/l/" + foreign_node(2999)});
    port->run();
    std::vector<std::string> near;
    for (int s = 2990; s < 2995; ++s) near.push_back(foreign_node(s));
    near.push_back(std::string(detail::base_name(b)));
    bool watched_pred = false;
    for (int i = 0; i < 6 && !watched_pred && !port->pending().empty(); ++i) {
        const std::string op = port->pending().front().op, path = port->pending().front().path;
        if (op == "list_children") port->answer(op, path, {.children = near});
        else if (op == "exists") port->answer(op, path, {.exists = zklock::stat{.czxid = 3000}});
        else if (op == "get_data" && path == "/l") port->answer(op, path);  // no handoff mark
        else if (op == "get_data" && path == "/l/" + foreign_node(2994)) {
            port->answer(op, path, {.data = "h:1"});
            watched_pred = true;
        } else port->answer(op, path, {.data = "h:1"});
        port->run();
    }
    REQUIRE(watched_pred);
    const bool ahead_watched = std::any_of(port->pending().begin(), port->pending().end(), [](const auto& q) {
        return q.op == "get_data" && q.path == "/l/" + foreign_node(2993) && q.watch;
    });
    CHECK(ahead_watched);
    CHECK_FALSE(r.ec);
    cancel_waiting(*port, cancel, r);
}

TEST_CASE("lookahead_window: near by its listing's place or the latest grant, which promotes in order, once")
{
    struct waiter {
        std::vector<int>* log;
        int id;
        void promote() { log->push_back(id); }
    };
    using window = detail::lookahead_window<waiter>;
    constexpr auto span = window::span;
    std::vector<int> log;
    window w;
    const std::string d = "/l", other = "/m";
    CHECK(w.near(d, 5000, static_cast<std::size_t>(span)));       // its listing says it is near
    CHECK_FALSE(w.near(d, 5000, static_cast<std::size_t>(span) + 1));
    waiter w1{&log, 1}, w2{&log, 2}, w3{&log, 3}, w4{&log, 4};
    w.defer(d, 3000, &w2);
    w.defer(d, 2000, &w1);
    w.defer(d, 2000 + span + 500, &w3);
    w.defer(other, 2100, &w4);
    CHECK(w.deferred() == 4);
    CHECK_FALSE(w.near(d, 3000, 5000));  // no grant heard yet
    w.note_grant(d, 1000);  // 2000 is exactly span away: promoted; 3000 is not
    CHECK(log == std::vector<int>{1});
    CHECK(w.near(d, 1000 + span, 5000));
    CHECK_FALSE(w.near(d, 1001 + span, 5000));
    w.note_grant(d, 900);  // an older grant moves nothing back
    CHECK(w.near(d, 1000 + span, 5000));
    w.remove(d, 3000, &w2);  // finished meanwhile: never promoted
    w.note_grant(d, 2400);
    CHECK(log == std::vector<int>{1});
    w.note_grant(d, 2000 + 500);  // 2000 + span + 500 is within span of 2500
    CHECK(log == std::vector<int>{1, 3});
    CHECK(w.deferred() == 1);  // /m's waiter: grants on /l do not touch it
    w.note_grant(other, 2000);
    CHECK(log == std::vector<int>{1, 3, 4});
    CHECK(w.deferred() == 0);
    // With nothing deferred, a path is forgotten: near again only by the listing's place.
    CHECK_FALSE(w.near(d, 2600, 5000));
}
