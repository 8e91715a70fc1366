// async_list_queue and the public path helpers, against a real server.
#include "../common.hpp"
#include "server.hpp"

#include <zklock/queue.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>

using namespace zklock;
using namespace zklock::test;

TEST_CASE("async_list_queue: holders and waiters in queue order, with kind, library, owner and permits")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session s{ex, config_for(shared_server().connect_string())};
        co_await connect(s);
        const auto path = unique_path("list-queue");

        auto [nec, none] = co_await async_list_queue(s, path, tuple);
        CHECK(nec == zk_errc::no_node);
        auto [bec, bad] = co_await async_list_queue(s, "no/slash", tuple);
        CHECK(bec == errc::invalid_path);

        // (Named objects, no temporaries in co_await: GCC 12, see session.hpp.)
        lock_options o1, o2, o3;
        o1.owner_info = "reader-1";
        o2.owner_info = "reader-2";
        o3.owner_info = "writer";
        shared_mutex rw1{s, path, o1}, rw2{s, path, o2};
        mutex m{s, path, o3};
        auto r1 = co_await rw1.async_acquire_shared(5s);
        auto r2 = co_await rw2.async_acquire_shared(5s);
        std::optional<lease> w;
        m.async_acquire(10s, [&](error_code ec, lease l) {
            CHECK_FALSE(ec);
            w = std::move(l);
        });
        CHECK(co_await wait_children(s, path, 3) == 3);
        // A foreign child is counted, not listed.
        const std::string foreign = path + "/not-a-lock-node";
        co_await s.async_create(foreign, "", create_mode::ephemeral, tuple);

        auto [ec, q] = co_await async_list_queue(s, path, tuple);
        REQUIRE_FALSE(ec);
        REQUIRE(q.entries.size() == 3);
        CHECK(q.other_children == 1);
        CHECK(q.permits == 0);
        using st = queue_entry::state;
        CHECK(q.entries[0].status == st::holder);
        CHECK(q.entries[0].kind == lock_kind::shared);
        CHECK(q.entries[0].recipe == "shared_mutex");
        CHECK(q.entries[0].data == "reader-1");
        CHECK(q.entries[1].status == st::holder);
        CHECK(q.entries[1].data == "reader-2");
        CHECK(q.entries[2].status == st::waiting);
        CHECK(q.entries[2].kind == lock_kind::exclusive);
        CHECK(q.entries[2].library == lock_library::zklock);
        CHECK(q.entries[2].data == "writer");
        CHECK(q.entries[2].stat.ephemeral_owner == s.session_id());
        CHECK(q.entries[0].sequence < q.entries[1].sequence);
        CHECK(q.entries[1].sequence < q.entries[2].sequence);
        CHECK(queue_sequence(r1.node()) == q.entries[0].sequence);
        const std::string third = path + "/" + q.entries[2].name;
        CHECK(queue_sequence(third) == q.entries[2].sequence);
        CHECK_FALSE(queue_sequence("not-a-lock-node").has_value());

        co_await r1.async_release();
        co_await r2.async_release();
        CHECK(co_await eventually([&] { return w.has_value(); }));
        auto [ec2, q2] = co_await async_list_queue(s, path, tuple);
        REQUIRE(q2.entries.size() == 1);
        CHECK(q2.entries[0].status == st::holder);
        co_await w->async_release();

        // A semaphore's count is reported, and decides who holds.
        const auto spath = unique_path("list-queue-sem");
        semaphore sem{s, spath, 1};
        auto p1 = co_await sem.async_acquire(5s);
        std::optional<lease> p2;
        sem.async_acquire(10s, [&](error_code, lease l) { p2 = std::move(l); });
        CHECK(co_await wait_children(s, spath, 2) == 2);
        auto [sec, sq] = co_await async_list_queue(s, spath, tuple);
        REQUIRE_FALSE(sec);
        CHECK(sq.permits == 1);
        REQUIRE(sq.entries.size() == 2);
        CHECK(sq.entries[0].kind == lock_kind::permit);
        CHECK(sq.entries[0].status == st::holder);
        CHECK(sq.entries[1].status == st::waiting);
        co_await p1.async_release();
        CHECK(co_await eventually([&] { return p2.has_value(); }));
        co_await p2->async_release();

        // Cancellation: at once, with operation_aborted.
        asio::cancellation_signal sig;
        bool done = false;
        error_code cec;
        async_list_queue(s, spath, asio::bind_cancellation_slot(sig.slot(), [&](error_code e, queue_listing) {
            cec = e;
            done = true;
        }));
        sig.emit(asio::cancellation_type::partial);
        CHECK(co_await eventually([&] { return done; }));
        CHECK(cec == asio::error::operation_aborted);
        co_await s.async_close();
    });
}

TEST_CASE("validate_lock_path and validate_servers are the rules the acquires apply")
{
    CHECK_FALSE(validate_lock_path("/locks/a"));
    CHECK(validate_lock_path("/") == errc::invalid_path);
    CHECK(validate_lock_path("/a/") == errc::invalid_path);
    CHECK(validate_lock_path("/a/../b") == errc::invalid_path);
    CHECK(validate_lock_path("/zookeeper/x") == errc::invalid_path);
    // The rule broken, named (every rule: unit test "lock paths: each refusal names the rule ...").
    CHECK(explain_lock_path("/a/../b") == "a component is '..'");
    CHECK(explain_lock_path("/a/") == "the path ends with '/'");
    CHECK(explain_lock_path("/locks/a").empty());
    CHECK_FALSE(validate_servers("127.0.0.1:2181,[::1]:2182/chroot"));
    CHECK(validate_servers("127.0.0.1:0") == errc::invalid_servers);
}
