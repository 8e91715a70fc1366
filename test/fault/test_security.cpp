// Security: digest authentication and creator-only ACLs. Hostile input from the server side:
// junk children under a lock path, thousands of names, names that do not parse.
#include "fault_common.hpp"

#include <algorithm>
#include <cstdio>

using namespace zklock;
using namespace zklock::test;

namespace {

session_config with_auth(const std::string& auth)
{
    auto cfg = config_for(fault_server().connect_string(), 6000ms);
    cfg.digest_auth = auth;
    return cfg;
}

// A root of its own, so creator-only directories of one test do not get in the way of another.
std::string unique_root(const std::string& name)
{
    static int counter = 0;
    return "/zklock-sec-" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

}  // namespace

TEST_CASE("security: with digest auth, other identities can neither queue in nor delete from a lock directory")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session alice{ex, with_auth("alice:secret")};
        session alice2{ex, with_auth("alice:secret")};    // the same identity, another session
        session mallory{ex, with_auth("mallory:secret")};  // another identity
        session anon{ex, config_for(fault_server().connect_string(), 6000ms)};
        const std::vector<session*> all{&alice, &alice2, &mallory, &anon};  // (built first: GCC 12)
        for (session* s : all) co_await connect(*s);
        const auto root = unique_root("acl");
        const auto path = root + "/orders";
        mutex ma{alice, path};
        auto held = co_await ma.async_acquire(5s);  // creates root and path as creator-only containers
        REQUIRE(held.owns_lock());

        const std::vector<session*> intruders{&mallory, &anon};
        for (session* intruder : intruders) {
            CAPTURE(intruder->config().digest_auth);
            // Queueing: the directory does not let them create.
            mutex mi{*intruder, path};
            auto [ec, l] = co_await mi.async_acquire(2s, tuple);
            CHECK(ec == zk_errc::no_auth);
            CHECK(std::string(ec.category().name()) == "zookeeper");
            CHECK(ec.message() == "Not authorised: the node's ACL does not allow this operation.");
            auto [tec, tl] = co_await mi.async_try_acquire(tuple);
            CHECK(tec == zk_errc::no_auth);
            // Deleting our node: ZooKeeper checks DELETE on the parent, the creator-only directory.
            auto [rec] = co_await intruder->async_remove(held.node(), -1, tuple);
            CHECK(rec == zk_errc::no_auth);
            // Deleting the directory itself (it is not empty anyway) or reading it.
            auto [dec] = co_await intruder->async_remove(path, -1, tuple);
            CHECK(dec == zk_errc::no_auth);
            auto [cec, kids] = co_await intruder->async_get_children(path, tuple);
            CHECK(cec == zk_errc::no_auth);
            // Reading our node, or writing a revocation request into it.
            auto [gec, data, st] = co_await intruder->async_get_data(held.node(), tuple);
            CHECK(gec == zk_errc::no_auth);
            auto [sec, sst] = co_await intruder->async_set_data(held.node(), std::string(revocation_request), -1, tuple);
            CHECK(sec == zk_errc::no_auth);
            // Another lock under our (creator-only) root.
            mutex other{*intruder, root + "/theirs"};
            auto [oec, ol] = co_await other.async_acquire(2s, tuple);
            CHECK(oec == zk_errc::no_auth);
        }
        CHECK(held.status() == lease_status::held);
        CHECK_FALSE(held.revocation_requested());
        auto kids = co_await alice.async_get_children(path);
        CHECK(kids.size() == 1);

        // The same identity in another session shares the lock fairly (queue order, exclusion).
        checker c;
        c.expect_queue_order(path);
        c.granted(path, "held", held.fencing_token(), seq_of(held.node()));
        mutex ma2{alice2, path};
        const int n = 6;
        std::vector<int> order;
        task_group tasks{ex};
        for (int i = 0; i < n; ++i) {
            tasks.spawn([&, i]() -> awaitable<void> {
                mutex& m = i % 2 ? ma : ma2;
                auto l = co_await m.async_acquire(30s);
                order.push_back(i);
                co_await critical_section(c, path, "w" + std::to_string(i), l, 2ms);
            });
            CHECK(co_await wait_children(alice, path, static_cast<std::size_t>(i + 2)) == static_cast<std::size_t>(i + 2));
        }
        c.released(path, "held");
        co_await held.async_release();
        CHECK(co_await wait_until([&] { return order.size() == n; }, 20s));
        CHECK(order == std::vector<int>{0, 1, 2, 3, 4, 5});
        CHECK(co_await wait_children(alice, path, 0) == 0);
        CHECK(co_await tasks.join());
        CHECK_MESSAGE(c.ok(), c.report());
        // What the same identity can do, another session of it can do too: it may delete the
        // directory (and so may alice's own cleanup); nobody else could.
        auto [mec] = co_await mallory.async_remove(path, -1, tuple);
        CHECK(mec == zk_errc::no_auth);
        co_await alice2.async_remove(path);
        co_await alice.async_remove(root);
    });
}

TEST_CASE("security: without digest auth the lock directory is open (documented): anyone may delete a node")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session s{ex, config_for(fault_server().connect_string(), 6000ms)};
        session other{ex, with_auth("mallory:secret")};
        co_await connect(s);
        co_await connect(other);
        const auto path = unique_path("open-acl");
        mutex m{s, path};
        auto l = co_await m.async_acquire(5s);
        auto [ec] = co_await other.async_remove(l.node(), -1, tuple);
        CHECK_FALSE(ec);  // no ACL: this is why digest_auth exists
        auto [reason] = co_await l.async_wait_lost(tuple);
        CHECK(reason == errc::lock_lost);
    });
}

TEST_CASE("hostile input: junk children under the lock path are ignored")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session s{ex, config_for(fault_server().connect_string(), 6000ms)};
        session junk{ex, config_for(fault_server().connect_string(), 6000ms)};
        co_await connect(s);
        co_await connect(junk);
        const auto path = unique_path("junk");
        co_await junk.async_create("/zklock-test", "", create_mode::persistent, tuple);
        co_await junk.async_create(path, "", create_mode::persistent);
        // Names that are not queue nodes, though some come close.
        const std::vector<std::string> names = {
            "readme", "x", "x-", "lock", "x-zzzzzzzzzzzzzzzz-0000000001", "x-0123456789abcdef-",
            "x-0123456789abcdef-12", "x-0123456789ABCDEF-0000000001", "q-0123456789abcdef-0000000001",
            "x-0123456789abcdef-99999999999999999999", "x-0123456789abcdef-0000000001-extra",
            "x_0123456789abcdef_0000000001", "x-0123456789abcdef-+000000001", "x-0123456789abcdef- 000000001",
            "x-0123456789abcdef-000000001a", "x-0123456789abcdef-0x00000001", "x-0123456789abcde-00000000001",
            "x--0123456789abcdef-000000001", std::string(200, 'x'), "\xc3\xa9t\xc3\xa9", "-", "0000000001",
            "x-0123456789abcdef-0000000001\xe2\x80\x8b"};
        for (const auto& n : names) {
            auto [ec, p, st] = co_await junk.async_create(path + "/" + n, "junk", create_mode::persistent, tuple);
            CAPTURE(n);
            CHECK_FALSE(ec);
        }
        // A child with children of its own, an ephemeral one, sequential ones that are no lock
        // contender of any library (Curator's semaphore leases; Curator's and Kazoo's lock nodes
        // are contenders: see test_interop.cpp).
        co_await junk.async_create(path + "/sub", "", create_mode::persistent);
        co_await junk.async_create(path + "/sub/x-0123456789abcdef-0000000001", "", create_mode::persistent);
        co_await junk.async_create(path + "/ephemeral-junk", "", create_mode::ephemeral);
        for (int i = 0; i < 3; ++i) co_await junk.async_create(path + "/_c_1234-lease-", "", create_mode::ephemeral_sequential);
        const auto junk_count = (co_await children_of(s, path)).size();
        CHECK(junk_count == names.size() + 5);

        checker c;
        c.expect_queue_order(path);
        mutex m{s, path}, mj{junk, path};
        auto l = co_await m.async_acquire(5s);
        CHECK(l.owns_lock());
        CHECK(detail::parse_queue_node(detail::base_name(l.node())).has_value());
        c.granted(path, "first", l.fencing_token(), seq_of(l.node()));
        bool second = false;
        task_group tasks{ex};
        tasks.spawn([&]() -> awaitable<void> {
            auto l2 = co_await mj.async_acquire(10s);
            second = true;
            co_await critical_section(c, path, "second", l2, 1ms);
        });
        CHECK(co_await wait_children(s, path, junk_count + 2) == junk_count + 2);
        co_await sleep_for(100ms);
        CHECK_FALSE(second);
        c.released(path, "first");
        co_await l.async_release();
        CHECK(co_await wait_until([&] { return second; }, 5s));
        CHECK(co_await wait_children(s, path, junk_count) == junk_count);  // the junk is left alone
        CHECK(co_await tasks.join());
        auto t = co_await m.async_try_acquire();
        CHECK(t.owns_lock());
        co_await critical_section(c, path, "try", t, 0ms);
        CHECK_MESSAGE(c.ok(), c.report());
    });
}

TEST_CASE("hostile input: thousands of children, none of them lock nodes, do not slow a lock down much")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session s{ex, config_for(fault_server().connect_string(), 6000ms)};
        session other{ex, config_for(fault_server().connect_string(), 6000ms)};
        co_await connect(s);
        co_await connect(other);
        const auto path = unique_path("thousands");
        co_await s.async_create("/zklock-test", "", create_mode::persistent, tuple);
        co_await s.async_create(path, "", create_mode::persistent);
        const int total = 5000, batch = 250;
        for (int b = 0; b < total / batch; ++b) {
            std::vector<multi_op> ops;
            for (int i = b * batch; i < (b + 1) * batch; ++i) {
                char name[64];
                // Close to queue nodes, and not quite: a short id, a bad letter, a short sequence.
                switch (i % 4) {
                case 0: std::snprintf(name, sizeof name, "junk-%06d", i); break;
                case 1: std::snprintf(name, sizeof name, "x-%015x-%010d", static_cast<unsigned>(i), i); break;
                case 2: std::snprintf(name, sizeof name, "y-%016x-%010d", static_cast<unsigned>(i), i); break;
                default: std::snprintf(name, sizeof name, "x-%016x-%09d", static_cast<unsigned>(i), i); break;
                }
                ops.push_back(multi_op::create(path + "/" + name));
            }
            error_code ec;  // (not a structured binding: clang 14 cannot capture those in REQUIRE_MESSAGE)
            std::vector<multi_result> results;
            std::tie(ec, results) = co_await s.async_multi(std::move(ops), tuple);
            REQUIRE_MESSAGE(!ec, ec.message());
        }
        CHECK((co_await children_of(s, path)).size() == total);
        checker c;
        c.expect_queue_order(path);
        mutex m{s, path}, mo{other, path};
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 10; ++i) {
            auto l = co_await (i % 2 ? mo : m).async_acquire(10s);
            co_await critical_section(c, path, "r" + std::to_string(i), l, 0ms);
        }
        const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        MESSAGE("10 acquire/release cycles over " << total << " junk children took " << took << " s");
        CHECK(took < 10.0);
        // Contended handoffs among the junk.
        auto h = co_await m.async_acquire(5s);
        c.granted(path, "h", h.fencing_token(), seq_of(h.node()));
        int done = 0;
        for (int i = 0; i < 4; ++i)
            asio::co_spawn(ex, [&, i]() -> awaitable<void> {
                auto l = co_await (i % 2 ? mo : m).async_acquire(20s);
                co_await critical_section(c, path, "c" + std::to_string(i), l, 1ms);
                ++done;
            }, asio::detached);
        CHECK(co_await wait_children(s, path, total + 5) == total + 5);
        c.released(path, "h");
        co_await h.async_release();
        CHECK(co_await wait_until([&] { return done == 4; }, 20s));
        CHECK(co_await wait_children(s, path, total) == total);
        CHECK_MESSAGE(c.ok(), c.report());
    }, std::chrono::seconds(180));
}
