// The requests on the fake port (fake_port.hpp): list_queue, create_containers, check_chroot, and
// async_list_queue's reads, with every answer, error and cancellation, without a server.
#include "fake_port.hpp"

#include "ops/requests.hpp"

#include <zklock/queue.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

using namespace zklock;
using namespace zklock::test;
namespace asio = boost::asio;

namespace {

/// A zklock queue node's name: a mutex's ('x'), a reader's ('r') or a semaphore's ('s').
std::string node(char kind, int seq)
{
    const std::string marker = kind == 'x' ? "lock-" : kind == 'r' ? "__READ__" : "";
    std::string s = std::to_string(seq);
    return std::string(1, kind) + "-000000000000000" + std::to_string(seq % 10) + "-" + marker + std::string(10 - s.size(), '0') + s;
}

struct listed {
    int calls = 0;
    error_code ec;
    std::shared_ptr<const detail::listing> l;
};

detail::listing_cb record(listed& out)
{
    return [&out](error_code ec, std::shared_ptr<const detail::listing> l) {
        ++out.calls;
        out.ec = ec;
        out.l = std::move(l);
    };
}

}  // namespace

TEST_CASE("list_queue: a lone listing goes at once, a burst shares one")
{
    fake_fixture fx;
    auto& port = fx.port;
    const detail::session_ptr s = port;
    listed a, b, c;
    detail::list_queue(s, "/l", record(a));
    REQUIRE(port->pending().size() == 1);  // nothing of /l in flight: sent in the call
    // While it is in flight, the next callers of the turn share one more listing, sent once the
    // turn's handlers have run.
    detail::list_queue(s, "/l", record(b));
    detail::list_queue(s, "/l", record(c));
    CHECK(port->pending().size() == 1);
    port->run();
    CHECK(port->pending().size() == 2);
    port->answer("list_children", "/l", {.children = {node('x', 1), "other", node('x', 2)}});
    port->answer("list_children", "/l", {.children = {node('x', 2)}});
    port->run();
    CHECK(a.calls == 1);
    CHECK(b.calls == 1);
    CHECK(c.calls == 1);
    REQUIRE(a.l);
    CHECK(a.l->children() == 3);
    CHECK(a.l->nodes().size() == 2);  // "other" is counted, not a queue node
    CHECK(a.l->name(a.l->nodes()[1]) == node('x', 2));
    CHECK(b.l == c.l);  // one listing, shared
    CHECK(b.l->children() == 1);
    CHECK(port->metrics().snapshot().listing_size.count == 2);
    // Nothing in flight again: the next one goes at once.
    listed d;
    detail::list_queue(s, "/l", record(d));
    CHECK(port->pending().size() == 1);
}

TEST_CASE("list_queue: paths are listed apart, an error gives an empty listing")
{
    fake_fixture fx;
    auto& port = fx.port;
    listed a, b;
    detail::list_queue(port, "/a", record(a));
    detail::list_queue(port, "/b", record(b));
    REQUIRE(port->pending().size() == 2);
    port->answer("list_children", "/a", {.ec = zk_errc::no_node});
    port->answer("list_children", "/b", {.children = {node('r', 7)}});
    port->run();
    CHECK(a.ec == zk_errc::no_node);
    REQUIRE(a.l);  // never null: the acquire reads it on an error too
    CHECK(a.l->children() == 0);
    CHECK(!b.ec);
    REQUIRE(b.l->nodes().size() == 1);
    CHECK(b.l->nodes()[0].kind == lock_kind::shared);
    CHECK(b.l->nodes()[0].seq == 7);
    CHECK(port->metrics().snapshot().listing_size.count == 1);  // only listings that came
}

TEST_CASE("list_queue: a burst not yet sent when the context shuts down is buried, not called")
{
    fake_fixture fx;
    auto& port = fx.port;
    listed a, b;
    detail::list_queue(port, "/l", record(a));
    detail::list_queue(port, "/l", record(b));  // waits for a posted send
    detail::graveyard g;
    port->shut_down_observers(g);
    CHECK(!g.empty());
    g.clear();
    port->run();  // the posted send finds nothing to send for
    CHECK(a.calls == 0);
    CHECK(b.calls == 0);
}

TEST_CASE("create_containers: the directory first, then missing parents bottom-up")
{
    fake_fixture fx;
    auto& port = fx.port;
    std::optional<error_code> done;
    detail::create_containers(port, "/a/b/c", [&](error_code ec) { done = ec; });
    port->answer("create", "/a/b/c", {.ec = zk_errc::no_node});
    port->run();
    port->answer("create", "/a/b", {.ec = zk_errc::no_node});
    port->run();
    port->answer("create", "/a", {.path = "/a"});
    port->run();
    port->answer("create", "/a/b", {.ec = zk_errc::node_exists});  // made by someone else meanwhile: fine
    port->run();
    CHECK(!done);
    REQUIRE(port->pending().size() == 1);
    CHECK(port->pending().front().mode == create_mode::container);
    port->answer("create", "/a/b/c", {.path = "/a/b/c"});
    port->run();
    REQUIRE(done);
    CHECK(!*done);
    CHECK(port->pending().empty());
}

TEST_CASE("create_containers: a missing first component is a missing chroot, errors end it")
{
    fake_fixture fx;
    auto& port = fx.port;
    std::optional<error_code> done;
    detail::create_containers(port, "/a", [&](error_code ec) { done = ec; });
    port->answer("create", "/a", {.ec = zk_errc::no_node});
    port->run();
    REQUIRE(done);
    CHECK(*done == errc::chroot_missing);

    done.reset();
    detail::create_containers(port, "/a/b", [&](error_code ec) { done = ec; });
    port->answer("create", "/a/b", {.ec = zk_errc::no_auth});
    port->run();
    REQUIRE(done);
    CHECK(*done == zk_errc::no_auth);
    CHECK(port->pending().empty());
}

TEST_CASE("create_containers: a parent that keeps vanishing ends after bounded attempts")
{
    fake_fixture fx;
    auto& port = fx.port;
    std::optional<error_code> done;
    detail::create_containers(port, "/a/b", [&](error_code ec) { done = ec; });
    // The server's container cleanup removes /a each time before /a/b is made.
    int requests = 0;
    while (!done && requests < 100) {
        REQUIRE(port->pending().size() == 1);
        const auto& r = port->pending().front();
        port->answer("create", r.path, r.path == "/a" ? fake_reply{.path = "/a"} : fake_reply{.ec = zk_errc::no_node});
        port->run();
        ++requests;
    }
    REQUIRE(done);
    CHECK(*done == zk_errc::no_node);
    CHECK(requests < 20);  // 2 per component plus 4, in requests of /a/b and /a
}

TEST_CASE("check_chroot: exists(\"/\") tells")
{
    fake_fixture fx;
    auto& port = fx.port;
    std::vector<error_code> got;
    for (int i = 0; i < 3; ++i) detail::check_chroot(*port, [&](error_code ec) { got.push_back(ec); });
    port->answer("exists", "/", {.exists = zklock::stat{}});
    port->answer("exists", "/", {});
    port->answer("exists", "/", {.ec = zk_errc::connection_loss});
    port->run();
    REQUIRE(got.size() == 3);
    CHECK(!got[0]);
    CHECK(got[1] == errc::chroot_missing);
    CHECK(got[2] == zk_errc::connection_loss);
}

namespace {

struct listing_result {
    std::optional<error_code> ec;
    queue_listing out;
};

void start_list(const std::shared_ptr<fake_port>& port, const std::string& path, listing_result& r,
                asio::cancellation_slot slot = {})
{
    detail::initiate_list_queue(port, path, asio::bind_cancellation_slot(slot, [&r](error_code ec, queue_listing l) {
                                    r.ec = ec;
                                    r.out = std::move(l);
                                }));
}

}  // namespace

TEST_CASE("async_list_queue: the path's data, the listing, then every node's data, pipelined")
{
    fake_fixture fx;
    auto& port = fx.port;
    listing_result r;
    start_list(port, "/l", r);
    REQUIRE(port->pending().size() == 2);
    port->answer("get_data", "/l", {.data = "zklock-semaphore permits=2"});
    port->answer("get_children", "/l", {.children = {node('s', 3), node('s', 1), "x", node('s', 2)}});
    port->run();
    CHECK(!r.ec);
    REQUIRE(port->pending().size() == 3);  // in queue order
    port->answer("get_data", "/l/" + node('s', 1), {.data = "h:1"});
    port->answer("get_data", "/l/" + node('s', 2), {.ec = zk_errc::no_node});
    port->answer("get_data", "/l/" + node('s', 3), {.data = "h:3"});
    port->run();
    REQUIRE(r.ec);
    CHECK(!*r.ec);
    CHECK(r.out.permits == 2);
    CHECK(r.out.other_children == 1);
    REQUIRE(r.out.entries.size() == 3);
    CHECK(r.out.entries[0].data == "h:1");
    CHECK(r.out.entries[1].gone);
    CHECK(r.out.entries[0].status == queue_entry::state::holder);
    CHECK(r.out.entries[1].status == queue_entry::state::holder);  // 2 permits: the first two hold
    CHECK(r.out.entries[2].status == queue_entry::state::waiting);
}

TEST_CASE("async_list_queue: no such path asks whether the chroot is missing")
{
    fake_fixture fx;
    auto& port = fx.port;
    for (const bool chroot_there : {true, false}) {
        CAPTURE(chroot_there);
        listing_result r;
        start_list(port, "/l", r);
        port->answer("get_data", "/l", {.ec = zk_errc::no_node});
        port->answer("get_children", "/l", {.ec = zk_errc::no_node});
        port->run();
        CHECK(!r.ec);
        port->answer("exists", "/", chroot_there ? fake_reply{.exists = zklock::stat{}} : fake_reply{});
        port->run();
        REQUIRE(r.ec);
        CHECK(*r.ec == (chroot_there ? error_code(zk_errc::no_node) : error_code(errc::chroot_missing)));
    }
}

TEST_CASE("async_list_queue: an invalid path sends nothing, a node's read error fails it")
{
    fake_fixture fx;
    auto& port = fx.port;
    listing_result bad;
    start_list(port, "l/", bad);
    port->run();
    REQUIRE(bad.ec);
    CHECK(*bad.ec == errc::invalid_path);
    CHECK(port->log_of_requests().empty());

    listing_result r;
    start_list(port, "/l", r);
    port->answer("get_data", "/l", {});
    port->answer("get_children", "/l", {.children = {node('x', 1), node('x', 2)}});
    port->run();
    port->answer("get_data", "/l/" + node('x', 1), {.ec = zk_errc::no_auth});
    port->run();
    REQUIRE(r.ec);
    CHECK(*r.ec == zk_errc::no_auth);
    CHECK(r.out.entries.empty());
    port->answer("get_data", "/l/" + node('x', 2), {});  // comes after the end: dropped
    port->run();
}

TEST_CASE("async_list_queue: cancellation completes at once, in any step")
{
    for (const int step : {0, 1}) {
        CAPTURE(step);
        fake_fixture fx;
        auto& port = fx.port;
        asio::cancellation_signal sig;
        listing_result r;
        start_list(port, "/l", r, sig.slot());
        if (step == 1) {
            port->answer("get_data", "/l", {});
            port->answer("get_children", "/l", {.children = {node('x', 1)}});
            port->run();
            REQUIRE(port->pending().size() == 1);
        }
        sig.emit(asio::cancellation_type::terminal);
        port->run();
        REQUIRE(r.ec);
        CHECK(*r.ec == asio::error::operation_aborted);
        while (!port->pending().empty()) port->answer_next();  // late answers are dropped
        port->run();
    }
}
