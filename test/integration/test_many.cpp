// Many distinct locks on one session: lock directories made once and bottom-up, the server's
// container cleanup racing acquires, and the requests of one executor turn leaving together.
#include "server.hpp"

#include <zklock/mutex.hpp>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>

using namespace zklock;
using namespace zklock::test;

namespace {

/// Segments sent so far by this process's TCP sockets connected to `port` (TCP_INFO).
std::uint64_t segments_sent_to(std::uint16_t port)
{
    std::uint64_t total = 0;
    DIR* d = ::opendir("/proc/self/fd");
    REQUIRE(d);
    while (dirent* e = ::readdir(d)) {
        const int fd = std::atoi(e->d_name);
        if (fd <= 2) continue;
        sockaddr_in peer{};
        socklen_t len = sizeof peer;
        if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0 || peer.sin_family != AF_INET ||
            ntohs(peer.sin_port) != port)
            continue;
        // The kernel's struct tcp_info (linux/tcp.h, which clashes with glibc's shorter copy):
        // tcpi_segs_out is the u32 at offset 136 (Linux >= 4.2).
        unsigned char info[256] = {};
        socklen_t ilen = sizeof info;
        constexpr std::size_t segs_out_offset = 136;
        if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, info, &ilen) == 0 && ilen >= segs_out_offset + 4) {
            std::uint32_t segs = 0;
            std::memcpy(&segs, info + segs_out_offset, sizeof segs);
            total += segs;
        }
    }
    ::closedir(d);
    return total;
}

/// "/zklock-test", where unique_path()s live (each test process has a fresh server).
awaitable<void> ensure_root(session& s)
{
    auto [ec, p, st] = co_await s.async_create("/zklock-test", "", create_mode::persistent, tuple);
    REQUIRE((!ec || ec == zk_errc::node_exists));
}

}  // namespace

TEST_CASE("a lock under an existing parent makes only its own directory, once")
{
    run([]() -> awaitable<void> {
        auto ss = co_await open_sessions(1);
        session& s = ss[0];
        co_await ensure_root(s);
        const auto parent = unique_path("many-parent");
        auto [pec, p, pst] = co_await s.async_create(parent, "", create_mode::persistent, tuple);
        REQUIRE_FALSE(pec);
        const auto creates = [&] { return s.metrics().requests_of("create"); };
        const auto listings = [&] { return s.metrics().requests_of("get_children"); };

        // First use: the node's create finds no directory (so does the listing right behind it),
        // the directory is made with one create (not one per path component), then the node.
        mutex m{s, parent + "/lock-a"};
        auto c0 = creates(), l0 = listings();
        auto l = co_await m.async_acquire(5s);
        CHECK(creates() - c0 == 3);
        CHECK(listings() - l0 == 2);
        co_await l.async_release();
        // Second use: the directory is there; one create, one listing.
        c0 = creates();
        l0 = listings();
        l = co_await m.async_acquire(5s);
        CHECK(creates() - c0 == 1);
        CHECK(listings() - l0 == 1);
        co_await l.async_release();
        auto [sec, st] = co_await s.async_exists(parent + "/lock-a", tuple);
        REQUIRE(st);
        CHECK(st->ephemeral_owner == 0);
    });
}

TEST_CASE("missing parents of a lock are made bottom-up, each once")
{
    run([]() -> awaitable<void> {
        auto ss = co_await open_sessions(1);
        session& s = ss[0];
        co_await ensure_root(s);
        const auto top = unique_path("many-deep");
        const auto dir = top + "/a/b/c";
        mutex m{s, dir};
        const auto c0 = s.metrics().requests_of("create");
        auto l = co_await m.async_acquire(5s);
        CHECK(l.owns_lock());
        // The node (no directory), c, b, a, then top (its parent, /zklock-test, exists), a, b,
        // c made on the way back, and the node: each missing component tried at most twice.
        CHECK(s.metrics().requests_of("create") - c0 == 9);
        for (const auto& p : {top, top + "/a", top + "/a/b", dir}) {
            auto [ec, st] = co_await s.async_exists(p, tuple);
            CHECK_MESSAGE(st.has_value(), p);
        }
        co_await l.async_release();
    });
}

TEST_CASE("acquires keep working while the server's container cleanup removes their directories")
{
    // A server whose container cleanup runs every 20 ms: an empty lock directory (and its empty
    // parent) goes between two cycles, or between a parent's creation and the node's.
    zk_server server{server_options{.tick_time = std::chrono::milliseconds(200),
                                    .jvm_flags = {"-Dznode.container.checkIntervalMs=20"}}};
    run([&]() -> awaitable<void> {
        auto ss = co_await open_sessions(server.connect_string(), 2);
        const auto parent = unique_path("many-reaped");
        constexpr int locks = 4, rounds = 40;
        std::vector<std::unique_ptr<mutex>> ms;
        for (int i = 0; i < locks; ++i) ms.push_back(std::make_unique<mutex>(ss[i], parent + "/" + std::to_string(i)));
        int failures = 0, cycles = 0;
        const auto c0 = ss[0].metrics().requests_of("create") + ss[1].metrics().requests_of("create");
        const auto deadline = std::chrono::steady_clock::now() + 60s;
        for (int r = 0; r < rounds && std::chrono::steady_clock::now() < deadline; ++r) {
            for (auto& m : ms) {
                auto [ec, l] = co_await m->async_acquire(5s, tuple);
                if (ec) {
                    ++failures;
                    MESSAGE("acquire failed: " << ec.message());
                    continue;
                }
                ++cycles;
                co_await l.async_release();
            }
            co_await sleep_for(30ms);  // the cleanup runs meanwhile
        }
        CHECK(failures == 0);
        CHECK(cycles == locks * rounds);
        // Directories really went: more creates than one per cycle (the test saw the race).
        const auto creates = ss[0].metrics().requests_of("create") + ss[1].metrics().requests_of("create") - c0;
        CHECK(creates > static_cast<std::uint64_t>(cycles) + locks);
        auto [ec, st] = co_await ss[0].async_exists(parent, tuple);
        CHECK_FALSE(ec);
    });
}

TEST_CASE("the requests of one executor turn leave in a few segments, all answered in order")
{
    run([]() -> awaitable<void> {
        auto ss = co_await open_sessions(1);
        session& s = ss[0];
        const auto dir = unique_path("many-batch");
        co_await ensure_root(s);
        auto [dec, d, dst] = co_await s.async_create(dir, "", create_mode::persistent, tuple);
        REQUIRE_FALSE(dec);
        const std::uint16_t port = shared_server().port();
        // 200 requests in one turn (more than one batch part), then wait for all.
        constexpr int n = 200;
        std::vector<int> order;
        int left = n;
        asio::steady_timer done(co_await asio::this_coro::executor, std::chrono::steady_clock::time_point::max());
        const auto segs0 = segments_sent_to(port);
        for (int i = 0; i < n; ++i)
            s.async_create(dir + "/n-" + std::to_string(i), "x", create_mode::persistent,
                           [&, i](error_code ec, std::string, zklock::stat) {
                               CHECK_FALSE(ec);
                               order.push_back(i);
                               if (--left == 0) done.cancel();
                           });
        const auto segs_in_turn = segments_sent_to(port) - segs0;
        co_await done.async_wait(tuple);
        REQUIRE(left == 0);
        // The batch left in parts of many requests (and the replies' ACKs), not one segment per
        // request.
        CHECK(segs_in_turn < n / 4);
        std::vector<int> expected(n);
        for (int i = 0; i < n; ++i) expected[static_cast<std::size_t>(i)] = i;
        CHECK(order == expected);
        // A lone request afterwards is not held back either.
        auto [ec, st] = co_await s.async_exists(dir + "/n-0", tuple);
        CHECK(st.has_value());
        for (int i = 0; i < n; ++i) co_await s.async_remove(dir + "/n-" + std::to_string(i), tuple);
        co_await s.async_remove(dir, tuple);
    });
}
