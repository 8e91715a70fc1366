// TLS (session_config::tls) against real ZooKeeper servers with a secureClientPort (Netty), with
// certificates made at test time (support/tls_certs.hpp): the lock's core cases, a partition
// through the fault proxy, a restart, each handshake failure with its own error, certificate
// identities in ACLs, and certificate files read again when they change.
#include "fault_common.hpp"

#include "tls_common.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>

#include <array>
#include <filesystem>
#include <map>
#include <set>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

using namespace zklock;
using namespace zklock::test;


TEST_CASE("tls: over TLS the lock grants in queue order, and timed-out and cancelled waiters leave no node" * doctest::skip(!ZKLOCK_TEST_TLS))
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const auto servers = tls_server().tls_connect_string();
        // Four sessions over TLS with one certificate (its nodes are writable by it alone), and a
        // plaintext observer.
        session a{ex, tls_config(servers)}, b{ex, tls_config(servers)}, c{ex, tls_config(servers)}, d{ex, tls_config(servers)};
        session plain{ex, config_for(tls_server().connect_string())};
        const std::vector<session*> all{&a, &b, &c, &d, &plain};
        for (session* s : all) co_await connect(*s);
        CHECK(a.state() == session_state::connected);
        const auto path = unique_root("order") + "/lock";
        checker chk;
        chk.expect_queue_order(path);

        mutex ma{a, path};
        auto held = co_await ma.async_acquire(5s);
        REQUIRE(held.owns_lock());
        // A try from another session finds it taken.
        mutex mt{b, path};
        auto [tec, tl] = co_await mt.async_try_acquire(tuple);
        CHECK(tec == errc::would_block);

        // Waiters queue in this order: b, c, d; one more of c's times out, one of d's is cancelled.
        std::vector<std::string> order;
        int done = 0;
        auto waiter = [&](session& s, std::string name) -> awaitable<void> {
            mutex m{s, path};
            auto l = co_await m.async_acquire(30s);
            order.push_back(name);
            co_await critical_section(chk, path, name, l, 20ms);
            ++done;
        };
        std::size_t queued = 1;
        for (auto [s, name] : {std::pair{&b, "b"}, {&c, "c"}, {&d, "d"}}) {
            asio::co_spawn(ex, waiter(*s, name), asio::detached);
            ++queued;
            CHECK(co_await wait_children(plain, path, queued) == queued);
        }
        mutex mc{c, path};
        auto [toec, tol] = co_await mc.async_acquire(300ms, tuple);
        CHECK(toec == errc::timeout);
        asio::cancellation_signal cancel;
        bool cancelled = false;
        mutex md{d, path};
        md.async_acquire(30s, asio::bind_cancellation_slot(cancel.slot(), [&](error_code ec, lease) {
            CHECK(ec == asio::error::operation_aborted);
            cancelled = true;
        }));
        CHECK(co_await wait_children(plain, path, queued + 1) == queued + 1);
        cancel.emit(asio::cancellation_type::terminal);
        CHECK(co_await wait_until([&] { return cancelled; }, 10s));
        CHECK(co_await wait_children(plain, path, queued) == queued);  // both nodes gone, the timed-out one too

        co_await critical_section(chk, path, "a", held, 1ms);
        CHECK(co_await wait_until([&] { return done == 3; }, 20s));
        CHECK(order == std::vector<std::string>{"b", "c", "d"});
        CHECK(co_await wait_children(plain, path, 0) == 0);
        CHECK_MESSAGE(chk.ok(), chk.report());

        // The other recipes: readers together, a writer alone; a semaphore's permits.
        const auto rw = unique_root("rw") + "/lock";
        shared_mutex ra{a, rw}, rc{c, rw}, wd{d, rw};
        auto r1 = co_await ra.async_acquire_shared(5s);
        auto r2 = co_await rc.async_acquire_shared(5s);
        CHECK((r1.owns_lock() && r2.owns_lock()));
        auto [wec, wl] = co_await wd.async_try_acquire(tuple);
        CHECK(wec == errc::would_block);
        co_await r1.async_release();
        co_await r2.async_release();
        auto w = co_await wd.async_acquire(5s);
        CHECK(w.owns_lock());
        co_await w.async_release();
        const auto sp = unique_root("sem") + "/lock";
        semaphore sa{a, sp, 2}, sb{b, sp, 2}, sc{c, sp, 2};
        auto p1 = co_await sa.async_acquire(5s);
        auto p2 = co_await sb.async_acquire(5s);
        auto [sec, p3] = co_await sc.async_try_acquire(tuple);
        CHECK(sec == errc::would_block);
        co_await p1.async_release();
        co_await p2.async_release();
        for (session* s : all) co_await s->async_close();
    });
}

TEST_CASE("tls: a holder cut off (fault proxy) past the session timeout is told before the next grant, then recovers" * doctest::skip(!ZKLOCK_TEST_TLS))
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        // The proxy carries TLS bytes it cannot read: the session reaches 127.0.0.1, which the
        // server's certificate names.
        fault_proxy proxy{tls_server().tls_port()};
        session hs{ex, tls_config(proxy.connect_string(), "alice", 2000ms)};
        session ws{ex, tls_config(tls_server().tls_connect_string(), "alice", 6000ms)};
        co_await connect(hs);
        co_await connect(ws);
        REQUIRE(hs.negotiated_timeout() == 2000ms);
        checker c;
        const auto path = unique_root("partition") + "/lock";
        c.expect_queue_order(path);
        mutex mh{hs, path}, mw{ws, path};
        auto held = co_await mh.async_acquire(5s);
        c.granted(path, "holder", held.fencing_token(), seq_of(held.node()));
        bool w_granted = false, w_done = false;
        std::int64_t w_token = 0;
        asio::co_spawn(ex, [&]() -> awaitable<void> {
            auto l = co_await mw.async_acquire(60s);
            w_granted = true;
            w_token = l.fencing_token();
            co_await critical_section(c, path, "waiter", l, 200ms);
            w_done = true;
        }, asio::detached);
        CHECK(co_await wait_children(ws, path, 2) == 2);

        proxy.blackhole();
        auto t0 = std::chrono::steady_clock::now();
        auto [reason] = co_await held.async_wait_lost(tuple);
        c.released(path, "holder", "lost: " + reason.message());
        MESSAGE("holder told " << since(t0) << " s after the partition began: " << reason.message());
        CHECK(reason == errc::session_expired);
        CHECK(hs.generation() == 1);  // told by its own timer, still cut off
        CHECK(co_await wait_until([&] { return w_granted; }, 15s));
        CHECK(w_token > held.fencing_token());

        proxy.pass();
        CHECK(co_await wait_until([&] { return hs.state() == session_state::connected && hs.generation() == 2; }, 20s));
        CHECK(co_await wait_until([&] { return w_done; }, 10s));
        auto again = co_await mh.async_acquire(5s);
        CHECK(again.owns_lock());
        CHECK(again.fencing_token() > w_token);
        co_await critical_section(c, path, "holder-again", again, 1ms);
        CHECK(co_await wait_children(ws, path, 0) == 0);
        CHECK_MESSAGE(c.ok(), c.report());
        co_await hs.async_close();
        co_await ws.async_close();
    });
}

TEST_CASE("tls: the server restarts: the session reconnects over TLS and keeps its ZooKeeper session and lease" * doctest::skip(!ZKLOCK_TEST_TLS))
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        // 20 s sessions: the lease is presumed lost after 10 s without the server, and a JVM restart
        // on a loaded machine takes seconds.
        zk_server server{server_options{.tick_time = 200ms, .max_session_timeout_ms = 20000,
                                        .tls = shared_tls_certs().server_tls()}};
        blocking_runner runner;
        // A first host where nothing listens: it is skipped like a refused plaintext one.
        const auto dead = free_ports(1).front();
        session s{ex, tls_config("127.0.0.1:" + std::to_string(dead) + "," + server.tls_connect_string(), "alice", 20000ms)};
        co_await connect(s);
        const auto id = s.session_id();
        mutex m{s, unique_root("restart") + "/lock"};
        auto held = co_await m.async_acquire(5s);
        REQUIRE(held.owns_lock());
        co_await runner.run([&] { server.stop(); }, 30s);
        CHECK(co_await wait_until([&] { return s.state() != session_state::connected; }, 10s));
        co_await runner.run([&] { server.start(); }, 60s);
        CHECK(co_await wait_until([&] { return s.state() == session_state::connected; }, 20s));
        CHECK(s.session_id() == id);
        CHECK(s.generation() == 1);
        CHECK(held.status() == lease_status::held);
        co_await held.async_release();
        co_await s.async_close();
    });
}

TEST_CASE("tls: each handshake failure is its own error, and none waits for the connect timeout" * doctest::skip(!ZKLOCK_TEST_TLS))
{
    const auto& certs = shared_tls_certs();
    using bad = tls_certs::bad_server;
    // Connects a session with `cfg` (a long connect timeout: a result before it came from the
    // failure itself) and returns the error and how long it took.
    const auto attempt = [](session_config cfg) {
        cfg.connect_timeout = 60s;
        error_code result;
        double took = 0;
        run([&]() -> awaitable<void> {
            session s{co_await asio::this_coro::executor, cfg};
            const auto t0 = std::chrono::steady_clock::now();
            std::tie(result) = co_await s.async_connect(tuple);
            took = since(t0);
            CHECK(s.state() != session_state::connected);
            co_await s.async_close();
        });
        MESSAGE("failed after " << took << " s: " << result.message());
        CHECK(took < 30.0);  // a hang would run into the 60 s connect timeout
        CHECK(std::string(result.category().name()) == "zklock");
        return result;
    };
    SUBCASE("a certificate from a CA the client does not trust")
    {
        zk_server server{server_options{.tick_time = 200ms, .tls = certs.server_tls(bad::untrusted)}};
        CHECK(attempt(tls_config(server.tls_connect_string())) == errc::tls_untrusted_certificate);
    }
    SUBCASE("the client trusts another CA than the server's")
    {
        auto cfg = tls_config(tls_server().tls_connect_string());
        cfg.tls.ca_file = certs.untrusted_ca_cert().string();
        CHECK(attempt(cfg) == errc::tls_untrusted_certificate);
    }
    SUBCASE("an expired certificate")
    {
        zk_server server{server_options{.tick_time = 200ms, .tls = certs.server_tls(bad::expired)}};
        CHECK(attempt(tls_config(server.tls_connect_string())) == errc::tls_certificate_expired);
    }
    SUBCASE("a certificate not valid yet")
    {
        zk_server server{server_options{.tick_time = 200ms, .tls = certs.server_tls(bad::not_yet_valid)}};
        CHECK(attempt(tls_config(server.tls_connect_string())) == errc::tls_certificate_expired);
    }
    SUBCASE("a certificate for another host: by IP address, and by name")
    {
        zk_server server{server_options{.tick_time = 200ms, .tls = certs.server_tls(bad::wrong_host)}};
        CHECK(attempt(tls_config(server.tls_connect_string())) == errc::tls_host_mismatch);
        CHECK(attempt(tls_config("localhost:" + std::to_string(server.tls_port()))) == errc::tls_host_mismatch);
        // Turned off, the chain alone is checked.
        auto cfg = tls_config(server.tls_connect_string());
        cfg.tls.verify_host = false;
        run([&]() -> awaitable<void> {
            session s{co_await asio::this_coro::executor, cfg};
            auto [ec] = co_await s.async_connect(tuple);
            CHECK_MESSAGE(!ec, ec.message());
            co_await s.async_close();
        });
    }
    SUBCASE("a server that wants a client certificate the session does not have")
    {
        zk_server server{server_options{.tick_time = 200ms,
                                        .tls = certs.server_tls(tls_server_options::client_auth::need)}};
        CHECK(attempt(tls_config(server.tls_connect_string(), "")) == errc::tls_client_certificate_refused);
        // With one, it connects.
        run([&]() -> awaitable<void> {
            session s{co_await asio::this_coro::executor, tls_config(server.tls_connect_string(), "bob")};
            auto [ec] = co_await s.async_connect(tuple);
            CHECK_MESSAGE(!ec, ec.message());
            co_await s.async_close();
        });
    }
    SUBCASE("a TLS server reached in plaintext: one, and a list of two")
    {
        CHECK(attempt(config_for(tls_server().tls_connect_string())) == errc::tls_required);
        zk_server second{server_options{.tick_time = 200ms, .tls = certs.server_tls()}};
        CHECK(attempt(config_for(tls_server().tls_connect_string() + "," + second.tls_connect_string())) ==
              errc::tls_required);
    }
    SUBCASE("a plaintext server reached over TLS: known only at the connect timeout")
    {
        // Its connection just ends: a server going down looks the same, so it is not final.
        auto cfg = tls_config(tls_server().connect_string());
        cfg.connect_timeout = 1500ms;
        error_code ec;
        run([&]() -> awaitable<void> {
            session s{co_await asio::this_coro::executor, cfg};
            std::tie(ec) = co_await s.async_connect(tuple);
            co_await s.async_close();
        });
        CHECK(ec == errc::tls_server_not_tls);
    }
    SUBCASE("files that cannot be used: tls_bad_config at once")
    {
        auto missing = tls_config(tls_server().tls_connect_string());
        missing.tls.ca_file = "/nonexistent/ca.pem";
        CHECK(attempt(missing) == errc::tls_bad_config);
        auto mismatched = tls_config(tls_server().tls_connect_string(), "alice");
        mismatched.tls.key_file = certs.client_key("bob").string();
        CHECK(attempt(mismatched) == errc::tls_bad_config);
        auto half = tls_config(tls_server().tls_connect_string(), "alice");
        half.tls.key_file.clear();
        CHECK(attempt(half) == errc::tls_bad_config);
    }
}

TEST_CASE("tls: certificate identities: another certificate lists the queue but can neither queue, write nor delete" * doctest::skip(!ZKLOCK_TEST_TLS))
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const auto servers = tls_server().tls_connect_string();
        session alice{ex, tls_config(servers, "alice")}, alice2{ex, tls_config(servers, "alice")},
            bob{ex, tls_config(servers, "bob")}, anon{ex, tls_config(servers, "")};
        session plain{ex, config_for(tls_server().connect_string())};
        const std::vector<session*> all{&alice, &alice2, &bob, &anon, &plain};
        for (session* s : all) co_await connect(*s);
        const auto root = unique_root("x509");
        const auto path = root + "/orders";
        mutex ma{alice, path};
        auto held = co_await ma.async_acquire(5s);
        REQUIRE(held.owns_lock());

        const std::vector<session*> others{&bob, &anon, &plain};
        for (session* other : others) {
            // Listing and reading: allowed.
            auto [lec, listing] = co_await async_list_queue(*other, path, tuple);
            CHECK_MESSAGE(!lec, lec.message());
            CHECK(listing.entries.size() == 1);
            auto [gec, data, st] = co_await other->async_get_data(held.node(), tuple);
            CHECK_FALSE(gec);
            // Queueing, writing a revocation request, deleting the node or the directory: not.
            mutex mo{*other, path};
            auto [aec, l] = co_await mo.async_acquire(2s, tuple);
            CHECK(aec == zk_errc::no_auth);
            auto [sec, sst] = co_await other->async_set_data(held.node(), std::string(revocation_request), -1, tuple);
            CHECK(sec == zk_errc::no_auth);
            auto [rec] = co_await other->async_remove(held.node(), -1, tuple);
            CHECK(rec == zk_errc::no_auth);
            auto [dec] = co_await other->async_remove(path, -1, tuple);
            CHECK(dec == zk_errc::no_auth);
        }
        CHECK(held.status() == lease_status::held);
        CHECK_FALSE(held.revocation_requested());

        // The same certificate in another session queues behind the holder, and is granted next.
        mutex ma2{alice2, path};
        bool granted = false;
        asio::co_spawn(ex, [&]() -> awaitable<void> {
            auto l = co_await ma2.async_acquire(10s);
            granted = l.owns_lock();
            co_await l.async_release();
        }, asio::detached);
        CHECK(co_await wait_children(plain, path, 2) == 2);
        co_await held.async_release();
        CHECK(co_await wait_until([&] { return granted; }, 10s));
        CHECK(co_await wait_children(plain, path, 0) == 0);
        for (session* s : all) co_await s->async_close();
    });
}

TEST_CASE("tls: a CA file that changes is read again at the next connection" * doctest::skip(!ZKLOCK_TEST_TLS))
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const auto& certs = shared_tls_certs();
        const auto dir = std::filesystem::temp_directory_path() / ("zklock-tls-reload-" + std::to_string(::getpid()));
        std::filesystem::create_directories(dir);
        const auto ca = dir / "ca.pem";
        std::filesystem::copy_file(certs.untrusted_ca_cert(), ca, std::filesystem::copy_options::overwrite_existing);
        auto cfg = tls_config(tls_server().tls_connect_string());
        cfg.tls.ca_file = ca.string();
        session s{ex, cfg};
        auto [ec] = co_await s.async_connect(tuple);
        CHECK(ec == errc::tls_untrusted_certificate);
        // The right CA, written in place (a rotation): the same session connects.
        std::filesystem::copy_file(certs.ca_cert(), ca, std::filesystem::copy_options::overwrite_existing);
        auto [ec2] = co_await s.async_connect(tuple);
        CHECK_MESSAGE(!ec2, ec2.message());
        CHECK(s.state() == session_state::connected);
        co_await s.async_close();
        std::filesystem::remove_all(dir);
    });
}

TEST_CASE("tls: in a 3-server ensemble, the holder's server is killed: it moves over TLS, keeps session and lease" * doctest::skip(!ZKLOCK_TEST_TLS))
{
    zk_ensemble ens{3, server_options{.tick_time = 200ms, .max_session_timeout_ms = 20000,
                                      .tls = shared_tls_certs().server_tls()}};
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        blocking_runner runner;
        // The holder starts on server 0 alone, then gets the whole list (set_servers keeps it on
        // a server the list still has): it is known to be on server 0, which "cons" could not tell
        // (it lists the plaintext port's connections only).
        const auto first = "127.0.0.1:" + std::to_string(ens.server(0).tls_port());
        session h{ex, tls_config(first, "alice", 10000ms)}, w{ex, tls_config(ens.tls_connect_string(), "alice", 10000ms)};
        co_await connect(h);
        co_await connect(w);
        CHECK_FALSE(h.set_servers(ens.tls_connect_string()));
        const auto id = h.session_id();
        checker c;
        const auto path = unique_root("move") + "/lock";
        c.expect_queue_order(path);
        mutex mh{h, path}, mw{w, path};
        auto held = co_await mh.async_acquire(5s);
        REQUIRE(held.owns_lock());
        c.granted(path, "holder", held.fencing_token(), seq_of(held.node()));
        CHECK(h.metrics().reconnects == 0);  // still on server 0
        bool done = false;
        asio::co_spawn(ex, [&]() -> awaitable<void> {
            auto l = co_await mw.async_acquire(60s);
            co_await critical_section(c, path, "waiter", l, 5ms);
            done = true;
        }, asio::detached);
        CHECK(co_await wait_children(h, path, 2) == 2);

        co_await runner.run([&] { ens.kill(0); }, 30s);
        CHECK(co_await wait_until([&] { return h.metrics().reconnects >= 1 && h.state() == session_state::connected; }, 20s));
        CHECK(h.session_id() == id);
        CHECK(h.generation() == 1);
        CHECK(held.status() == lease_status::held);
        CHECK_FALSE(done);
        c.released(path, "holder");
        co_await held.async_release();
        CHECK(co_await wait_until([&] { return done; }, 20s));
        CHECK_MESSAGE(c.ok(), c.report());
        co_await h.async_close();
        co_await w.async_close();
    });
}

TEST_CASE("tls: a TLS session opens one socket, to the server, closed on exec, and listens on none" * doctest::skip(!ZKLOCK_TEST_TLS))
{
    // TLS runs on the C client's own socket: no loopback listener, no socket pair, nothing a
    // child started by exec could inherit.
    const auto sockets = [] {
        std::map<int, bool> out;  // fd -> listening
        for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
            std::error_code ec;
            const auto target = std::filesystem::read_symlink(e.path(), ec);
            if (ec || target.string().rfind("socket:", 0) != 0) continue;
            const int fd = std::stoi(e.path().filename().string());
            int listening = 0;
            socklen_t len = sizeof listening;
            out[fd] = ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening;
        }
        return out;
    };
    const auto before = sockets();
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session s{ex, tls_config(tls_server().tls_connect_string())};
        co_await connect(s);
        auto held = co_await mutex{s, unique_root("one-socket") + "/lock"}.async_acquire(5s);
        CHECK(held.owns_lock());
        std::vector<int> added;
        for (const auto& [fd, listening] : sockets()) {
            if (before.contains(fd)) continue;
            CAPTURE(fd);
            CHECK_FALSE(listening);
            CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
            added.push_back(fd);
        }
        CHECK(added.size() == 1);  // the C client's socket
        if (added.size() == 1) {
            sockaddr_in peer{};
            socklen_t len = sizeof peer;
            REQUIRE(::getpeername(added[0], reinterpret_cast<sockaddr*>(&peer), &len) == 0);
            CHECK(ntohs(peer.sin_port) == tls_server().tls_port());
        }
        co_await held.async_release();
        co_await s.async_close();
    });
}

TEST_CASE("tls: the connection is TLS from its first byte: the ConnectRequest never crosses in the clear" * doctest::skip(!ZKLOCK_TEST_TLS))
{
    // A listener of the test's own stands in for the server and reads what the session sends
    // first: a TLS record (a ClientHello), never the C client's ConnectRequest with its password.
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        asio::ip::tcp::acceptor listener{ex, {asio::ip::address_v4::loopback(), 0}};
        const auto port = listener.local_endpoint().port();
        auto cfg = tls_config("127.0.0.1:" + std::to_string(port));
        cfg.connect_timeout = 3s;
        session s{ex, cfg};
        bool connect_done = false;
        asio::co_spawn(ex, [&]() -> awaitable<void> {
            auto [ec] = co_await s.async_connect(tuple);
            CHECK(ec);  // nobody answers the handshake
            connect_done = true;
        }, asio::detached);
        auto peer = co_await listener.async_accept(asio::deferred);
        std::array<unsigned char, 64> first{};
        std::size_t got = 0;
        while (got < 5) got += co_await peer.async_read_some(asio::buffer(first.data() + got, first.size() - got), asio::deferred);
        CHECK(first[0] == 0x16);  // a TLS handshake record
        CHECK(first[1] == 0x03);  // of TLS 1.x
        // A ConnectRequest would start with its length (44 or 45) and protocol version 0.
        CHECK_FALSE((first[0] == 0 && first[1] == 0 && first[2] == 0 && (first[3] == 44 || first[3] == 45)));
        peer.close();
        CHECK(co_await wait_until([&] { return connect_done; }, 10s));
        co_await s.async_close();
    });
}

TEST_CASE("tls: a session destroyed with its io_context still ends its ZooKeeper session at once" * doctest::skip(!ZKLOCK_TEST_TLS))
{
    // Its close request goes out over TLS on the close thread, as a plaintext session's does: its
    // node goes at once, not at the session timeout (20 s).
    const auto path = unique_root("destroyed") + "/lock";
    {
        asio::io_context ioc;
        bool held = false;
        asio::co_spawn(ioc, [&]() -> awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            session s{ex, tls_config(tls_server().tls_connect_string(), "alice", 20000ms)};
            co_await connect(s);
            auto l = co_await mutex{s, path}.async_acquire(5s);
            held = l.owns_lock();
            co_await sleep_for(1h);  // pending when the io_context goes
        }, asio::detached);
        const auto t0 = std::chrono::steady_clock::now();
        while (!held && since(t0) < 20) ioc.run_for(10ms);
        REQUIRE(held);
    }  // ~io_context with the session open
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session observer{ex, config_for(tls_server().connect_string())};
        co_await connect(observer);
        const auto t0 = std::chrono::steady_clock::now();
        bool gone = false;
        while (!gone && since(t0) < 8) {
            auto [ec, kids] = co_await observer.async_get_children(path, tuple);
            gone = (!ec && kids.empty()) || ec == zk_errc::no_node;
            if (!gone) co_await sleep_for(20ms);
        }
        CHECK(gone);
        MESSAGE("the TLS session's node went " << since(t0) << " s after its io_context was destroyed");
        co_await observer.async_close();
    });
}
