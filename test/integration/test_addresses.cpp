// Server lists as users write them: IPv6 literals, host names that do not resolve, a chroot that
// does not exist. Against real servers on loopback (127.0.0.1 and ::1).
#include "../common.hpp"
#include "server.hpp"

#include <boost/asio/ip/udp.hpp>

#include <sys/mount.h>
#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

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

namespace {

/// A DNS server on loopback that never answers, in this process's own mount namespace: its
/// /etc/resolv.conf names only 127.83.83.83, where a UDP socket takes every query and answers none.
/// Unavailable without the rights to make a mount namespace (root); the mount goes with the object.
class silent_dns {
public:
    explicit silent_dns(asio::io_context& ctx) : sock_(ctx)
    {
        if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
            why_ = std::string("no mount namespace: ") + std::strerror(errno);
            return;
        }
        boost::system::error_code ec;
        sock_.open(asio::ip::udp::v4(), ec);
        if (!ec) sock_.bind({asio::ip::make_address_v4("127.83.83.83"), 53}, ec);
        if (ec) {
            why_ = "no socket on 127.83.83.83:53: " + ec.message();
            return;
        }
        conf_ = std::filesystem::temp_directory_path() / ("zklock-resolv-" + std::to_string(::getpid()));
        std::ofstream(conf_) << "nameserver 127.83.83.83\noptions timeout:4 attempts:1\n";
        if (::mount(conf_.c_str(), "/etc/resolv.conf", nullptr, MS_BIND, nullptr) != 0) {
            why_ = std::string("cannot bind /etc/resolv.conf: ") + std::strerror(errno);
            return;
        }
        mounted_ = true;
    }
    ~silent_dns()
    {
        if (mounted_) ::umount2("/etc/resolv.conf", MNT_DETACH);
        if (!conf_.empty()) std::filesystem::remove(conf_);
    }
    silent_dns(const silent_dns&) = delete;
    silent_dns& operator=(const silent_dns&) = delete;
    /// Empty when the silent server is in place.
    const std::string& unavailable() const { return why_; }

private:
    asio::ip::udp::socket sock_;
    std::filesystem::path conf_;
    std::string why_;
    bool mounted_ = false;
};

/// An async_connect started now (not when awaited, as an awaitable would be).
struct started_connect {
    bool done = false;
    error_code ec;
    awaitable<error_code> wait()
    {
        for (int i = 0; i < 1000 && !done; ++i) co_await sleep_for(10ms);
        REQUIRE(done);
        co_return ec;
    }
};
std::shared_ptr<started_connect> start_connect(session& s)
{
    auto c = std::make_shared<started_connect>();
    s.async_connect([c](error_code ec) {
        c->ec = ec;
        c->done = true;
    });
    return c;
}

/// Ticks every 20 ms on the executor it runs on and records the worst lateness, until `stop`.
awaitable<void> ticker(std::chrono::steady_clock::duration& worst, const bool& stop)
{
    asio::steady_timer t(co_await asio::this_coro::executor);
    while (!stop) {
        const auto due = std::chrono::steady_clock::now() + 20ms;
        t.expires_at(due);
        co_await t.async_wait(asio::deferred);
        worst = std::max(worst, std::chrono::steady_clock::now() - due);
    }
}

}  // namespace

TEST_CASE("name resolution: a resolver that never answers does not hold the executor up")
{
    asio::io_context ctx;
    silent_dns dns(ctx);
    if (!dns.unavailable().empty()) {
        WARN_MESSAGE(false, ("not run: " + dns.unavailable()));
        return;
    }
    const std::string name = "zklock-silent-dns.test";
    // The server first: starting it (a JVM, in this process if no server was given) blocks, and
    // would count as the executor's lateness.
    const std::string servers = shared_server().connect_string();
    std::chrono::steady_clock::duration worst{};
    bool stop = false;
    asio::co_spawn(ctx, ticker(worst, stop), asio::detached);
    asio::co_spawn(ctx, [&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        // async_connect: the lookup runs elsewhere; the connect ends at its own timeout, 1.5 s,
        // while the lookup (4 s) still waits.
        auto cfg = config_for(name + ":2181");
        cfg.connect_timeout = 1500ms;
        session s{ex, cfg};
        const auto t0 = std::chrono::steady_clock::now();
        auto connecting = start_connect(s);
        CHECK(std::chrono::steady_clock::now() - t0 < 500ms);  // the initiation did not wait for DNS
        CHECK(s.state() == session_state::connecting);
        const auto ec = co_await connecting->wait();
        CHECK(ec == errc::connect_timeout);
        CHECK(std::chrono::steady_clock::now() - t0 < 3s);
        CHECK(s.state() == session_state::disconnected);

        // set_servers on a connected session: returns at once, the session stays on its server,
        // and (no host resolving) keeps the list it has.
        session c{ex, config_for(servers)};
        co_await connect(c);
        const auto before = c.config().servers;
        const auto t1 = std::chrono::steady_clock::now();
        CHECK_FALSE(c.set_servers(name + ":2181"));
        CHECK(std::chrono::steady_clock::now() - t1 < 500ms);
        mutex m{c, unique_path("silent-dns")};
        auto [aec, l] = co_await m.async_acquire(5s, tuple);  // requests go on meanwhile
        CHECK_MESSAGE(!aec, aec.message());
        co_await l.async_release(tuple);
        co_await sleep_for(4500ms);  // the lookup gives up
        CHECK(c.state() == session_state::connected);
        CHECK(c.config().servers == before);
        co_await c.async_close(tuple);
        stop = true;
    }, [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
    ctx.run();
    // A lookup that held the executor would have made a tick 4 s late.
    CHECK(worst < 1s);
    MESSAGE("worst tick lateness: " << std::chrono::duration_cast<std::chrono::milliseconds>(worst).count() << " ms");
}

TEST_CASE("name resolution: a host name is looked up off the executor and connects")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const auto port = std::to_string(shared_server().port());
        // "localhost" comes from /etc/hosts, by way of the resolver's thread.
        session s{ex, config_for("localhost:" + port)};
        auto connecting = start_connect(s);
        CHECK(s.state() == session_state::connecting);
        const auto ec = co_await connecting->wait();
        REQUIRE_MESSAGE(!ec, ec.message());
        mutex m{s, unique_path("localhost")};
        auto [aec, l] = co_await m.async_acquire(5s, tuple);
        CHECK_MESSAGE(!aec, aec.message());
        co_await l.async_release(tuple);

        // A new list with a name: taken once looked up; the session stays on its server.
        const std::string next = "localhost:" + port + ",127.0.0.1:1";
        CHECK_FALSE(s.set_servers(next));
        for (int i = 0; i < 100 && s.config().servers != next; ++i) co_await sleep_for(20ms);
        CHECK(s.config().servers == next);
        CHECK(s.state() == session_state::connected);

        // Closed while looking up: the connect completes, nothing is left behind.
        session t{ex, config_for("localhost:" + port)};
        auto pending = start_connect(t);
        co_await t.async_close(tuple);
        CHECK(co_await pending->wait());
        co_await s.async_close(tuple);
    });
}
