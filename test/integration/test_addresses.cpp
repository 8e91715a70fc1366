// Server lists as users write them: IPv6 literals, host names that do not resolve, a chroot that
// does not exist. Against real servers on loopback (127.0.0.1 and ::1).
#include "../common.hpp"
#include "server.hpp"

#include <unistd.h>

using namespace zklock;
using namespace zklock::test;

TEST_CASE("addresses: an IPv6 address in brackets ([::1]:PORT) connects, locks and lists")
{
    if (!ipv6_loopback_available()) {
        WARN_MESSAGE(false, "not run: this host has no IPv6 loopback address (::1)");
        return;
    }
    // A server that listens on ::1 only: nothing but the IPv6 address can reach it.
    zk_server v6{server_options{.tick_time = 200ms, .client_address = "::1"}};
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const auto servers = v6.connect_string();
        REQUIRE(servers.rfind("[::1]:", 0) == 0);
        CHECK_FALSE(validate_servers(servers));

        session s{ex, config_for(servers)};
        auto [ec] = co_await s.async_connect(tuple);
        REQUIRE_MESSAGE(!ec, ec.message());
        CHECK(s.state() == session_state::connected);
        const auto path = unique_path("ipv6");
        mutex m{s, path};
        auto [aec, l] = co_await m.async_acquire(5s, tuple);
        REQUIRE_MESSAGE(!aec, aec.message());
        CHECK(l.owns_lock());
        auto [lec, listing] = co_await async_list_queue(s, path, tuple);
        CHECK_FALSE(lec);
        CHECK(listing.entries.size() == 1);
        co_await l.async_release();

        // Next to another address, behind a chroot, with a port written with a leading zero.
        session root{ex, config_for(servers)};
        co_await connect(root);
        const std::string chroot = "/zklock-v6-" + std::to_string(::getpid());
        co_await root.async_create(chroot, "", create_mode::persistent);
        const std::string port = servers.substr(servers.rfind(':') + 1);
        session c{ex, config_for("[::1]:0" + port + ",[0:0:0:0:0:0:0:1]:" + port + chroot)};
        auto [cec] = co_await c.async_connect(tuple);
        REQUIRE_MESSAGE(!cec, cec.message());
        mutex mc{c, "/in-chroot"};
        auto [acec, lc] = co_await mc.async_acquire(5s, tuple);
        REQUIRE_MESSAGE(!acec, acec.message());
        CHECK((co_await children_of(root, chroot + "/in-chroot")).size() == 1);
        co_await lc.async_release();
        co_await c.async_close();
        co_await root.async_close();
        co_await s.async_close();
    });
}

TEST_CASE("addresses: a bracketed host must be an IPv6 address")
{
    for (const char* bad : {"[nonexistent.invalid]:2181", "[127.0.0.1]:2181", "[::1%]:2181", "[]:2181", "[::1:2181",
                            "::1]:2181", "[::g]:2181"}) {
        CAPTURE(bad);
        CHECK(validate_servers(bad) == errc::invalid_servers);
    }
    CHECK_FALSE(validate_servers("[fe80::1%lo]:2181"));
    CHECK_FALSE(validate_servers("[::ffff:127.0.0.1]:2181"));
}

TEST_CASE("addresses: a host name that does not resolve is errc::unresolvable_host, not a malformed list")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        // ".invalid" never resolves (RFC 6761).
        for (std::string servers : {"nonexistent.invalid:2181", "a.invalid:2181,b.invalid:2182/app"}) {
            CAPTURE(servers);
            CHECK_FALSE(validate_servers(servers));
            session s{ex, config_for(servers)};
            auto [ec] = co_await s.async_connect(tuple);
            CHECK(ec == errc::unresolvable_host);
            CHECK(ec.message().find("resolve host name") != std::string::npos);
            CHECK(s.state() == session_state::disconnected);
            // An acquire says the session is not connected; nothing hangs.
            mutex m{s, "/locks/a"};
            auto [aec, l] = co_await m.async_acquire(1s, tuple);
            CHECK(aec == errc::not_connected);
        }
        // A name that does not resolve next to an address that does: the session uses the address.
        session s{ex, config_for("nonexistent.invalid:2181," + shared_server().connect_string())};
        auto [ec] = co_await s.async_connect(tuple);
        CHECK_MESSAGE(!ec, ec.message());
        co_await s.async_close();
    });
}

TEST_CASE("addresses: a chroot that does not exist is errc::chroot_missing for acquires and listings")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const auto server = shared_server().connect_string();
        const std::string chroot = "/zklock-chroot-" + std::to_string(::getpid());
        session root{ex, config_for(server)};
        co_await connect(root);
        session s{ex, config_for(server + chroot)};
        auto [cec] = co_await s.async_connect(tuple);  // ZooKeeper itself does not check the chroot
        REQUIRE_FALSE(cec);

        mutex m{s, "/locks/a"};
        auto [ec1, l1] = co_await m.async_acquire(2s, tuple);
        CHECK(ec1 == errc::chroot_missing);
        auto [ec2, l2] = co_await m.async_try_acquire(tuple);
        CHECK(ec2 == errc::chroot_missing);
        shared_mutex sm{s, "/locks/b"};
        auto [ec3, l3] = co_await sm.async_acquire_shared(2s, tuple);
        CHECK(ec3 == errc::chroot_missing);
        semaphore sem{s, "/locks/c", 2};  // reads its permit count first
        auto [ec4, l4] = co_await sem.async_acquire(2s, tuple);
        CHECK(ec4 == errc::chroot_missing);
        auto [lec, listing] = co_await async_list_queue(s, "/locks/a", tuple);
        CHECK(lec == errc::chroot_missing);
        CHECK(error_code(errc::chroot_missing).message().find("chroot") != std::string::npos);
        auto [xec, st] = co_await root.async_exists(chroot, tuple);
        CHECK_FALSE(xec);
        CHECK_FALSE(st.has_value());  // zklock did not create it

        // Once it exists: a missing lock is no_node again, and the locks work under it.
        co_await root.async_create(chroot, "", create_mode::persistent);
        auto [lec2, listing2] = co_await async_list_queue(s, "/locks/a", tuple);
        CHECK(lec2 == zk_errc::no_node);
        auto [ec5, l5] = co_await m.async_acquire(2s, tuple);
        REQUIRE_MESSAGE(!ec5, ec5.message());
        CHECK((co_await children_of(root, chroot + "/locks/a")).size() == 1);
        co_await l5.async_release();
        co_await s.async_close();
        co_await root.async_close();
    });
}
