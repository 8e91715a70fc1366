// Sessions on strands of an io_context run by 4 threads: every session's work (and its locks')
// runs through its strand, many coroutines acquire and release at once; and the shape of
// `zklock_bench --threads` (sessions driven from another thread's coroutine, lock objects shared
// by a session's contenders, many lock paths, one io_context per thread). Built with
// ZKLOCK_SANITIZE=thread by scripts/test.sh (ZKLOCK_SANITIZERS=1) to look for data races.
#include "../common.hpp"
#include "support/checker.hpp"
#include "support/tls_certs.hpp"
#include "support/zk_server.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/strand.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <thread>

using namespace zklock;
using namespace zklock::test;

namespace {

zk_server& thread_server()
{
    static zk_server server{server_options{.tick_time = std::chrono::milliseconds(200)}};
    return server;
}

zk_server& tls_thread_server()
{
    static zk_server server{server_options{.tick_time = std::chrono::milliseconds(200),
                                           .tls = shared_tls_certs().server_tls()}};
    return server;
}

// Runs the io_context on `threads` threads until it runs out of work or `limit` passes; true if
// it ran out of work in time.
bool run_threads(asio::io_context& ioc, int threads, std::chrono::seconds limit)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) pool.emplace_back([&] { ioc.run_until(deadline); });
    for (auto& t : pool) t.join();
    return ioc.stopped();
}

std::int64_t seq_of(const lease& l)
{
    auto n = detail::parse_queue_node(detail::base_name(l.node()));
    return n ? n->seq : -1;
}

// Sessions made by `make_config` (plaintext or TLS), each on a strand, 16 coroutines each.
void contend_on_strands(const std::function<session_config()>& make_config)
{
    asio::io_context ioc;
    const auto path = unique_path("strands");
    checker c;
    c.expect_queue_order(path);
    const int sessions = 3, per_session = 16, cycles = 5;
    std::atomic<int> finished{0}, written{0}, timeouts{0}, cancelled{0};
    std::atomic<int> closed{0};
    std::vector<std::exception_ptr> errors(sessions);

    for (int si = 0; si < sessions; ++si) {
        auto strand = asio::make_strand(ioc);
        // The session's coroutine runs on the strand: connects, starts its waiters (on the same
        // strand), waits for them, closes.
        asio::co_spawn(strand, [&, si, strand]() -> awaitable<void> {
            session s{strand, make_config()};
            co_await s.async_connect(asio::deferred);
            std::atomic<int> mine{0};
            for (int w = 0; w < per_session; ++w) {
                asio::co_spawn(strand, [&, si, w, strand]() -> awaitable<void> {
                    using namespace asio::experimental::awaitable_operators;
                    mutex m{s, path};
                    for (int k = 0; k < cycles; ++k) {
                        const auto holder = "s" + std::to_string(si) + "w" + std::to_string(w) + "#" + std::to_string(k);
                        if (k == 2 && w % 4 == 0) {
                            // A short deadline, then the same through cancellation by a timer.
                            auto [ec, l] = co_await m.async_acquire(1ms, tuple);
                            if (ec == errc::timeout || ec == errc::would_block) ++timeouts;
                            else if (!ec) {
                                c.granted(path, holder, l.fencing_token(), seq_of(l));
                                c.write_counter(path, c.read_counter(path) + 1);
                                ++written;
                                c.released(path, holder);
                                co_await l.async_release();
                            }
                            asio::steady_timer t{strand, 2ms};
                            auto r = co_await (m.async_acquire(asio::use_awaitable) || t.async_wait(asio::use_awaitable));
                            if (r.index() == 1) ++cancelled;
                            else {
                                auto l2 = std::get<0>(std::move(r));
                                const auto h2 = holder + "b";
                                c.granted(path, h2, l2.fencing_token(), seq_of(l2));
                                c.write_counter(path, c.read_counter(path) + 1);
                                ++written;
                                c.released(path, h2);
                                co_await l2.async_release();
                            }
                            continue;
                        }
                        auto l = co_await m.async_acquire(60s);
                        c.granted(path, holder, l.fencing_token(), seq_of(l));
                        const auto v = c.read_counter(path);
                        co_await sleep_for(1ms);  // suspended in the critical section; other threads run
                        c.write_counter(path, v + 1);
                        ++written;
                        c.released(path, holder);
                        co_await l.async_release();
                    }
                    ++mine;
                    ++finished;
                }, asio::detached);
            }
            for (int i = 0; i < 6000 && mine < per_session; ++i) co_await sleep_for(10ms);
            co_await s.async_close();
            ++closed;
        }, [&, si](std::exception_ptr e) { errors[static_cast<std::size_t>(si)] = e; });
    }
    const bool in_time = run_threads(ioc, 4, std::chrono::seconds(150));
    CHECK(in_time);
    for (auto& e : errors)
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                FAIL("a session coroutine threw: " << ex.what());
            }
        }
    CHECK(finished == sessions * per_session);
    CHECK(closed == sessions);
    MESSAGE(written.load() << " critical sections, " << timeouts.load() << " timeouts, " << cancelled.load()
                           << " cancelled by the timer");
    CHECK(c.counter(path) == written.load());
    CHECK_MESSAGE(c.ok(), c.report());
}

}  // namespace

TEST_CASE("threads: sessions on strands, io_context run by 4 threads, many coroutines acquiring through the strands")
{
    const auto servers = thread_server().connect_string();
    contend_on_strands([&] { return config_for(servers); });
}

TEST_CASE("threads: the same over TLS: the bridge's relays run on the sessions' strands" * doctest::skip(!ZKLOCK_TEST_TLS))
{
    const auto servers = tls_thread_server().tls_connect_string();
    contend_on_strands([&] {
        auto c = config_for(servers);
        const auto& certs = shared_tls_certs();
        c.tls.enabled = true;
        c.tls.ca_file = certs.ca_cert().string();
        c.tls.cert_file = certs.client_cert("alice").string();
        c.tls.key_file = certs.client_key("alice").string();
        return c;
    });
}

namespace {

// Sessions that connect, then go out of scope, and their io_context right after: each session's
// destructor hands its connected handle to the close thread, and the context's shutdown then
// shuts the sessions down while that thread sends their close requests through their sockets.
void destroy_while_closing(const std::function<session_config()>& make_config)
{
    const int sessions = 4;
    int connected = 0;
    {
        asio::io_context ioc;
        std::vector<std::unique_ptr<session>> ss;
        for (int i = 0; i < sessions; ++i) ss.push_back(std::make_unique<session>(ioc.get_executor(), make_config()));
        for (auto& s : ss)
            s->async_connect([&](error_code ec) {
                if (!ec) ++connected;
            });
        for (int i = 0; i < 3000 && connected < sessions; ++i) ioc.run_for(10ms);
        REQUIRE(connected == sessions);
        // A request in flight each, so that the close has a reply to wait behind.
        for (auto& s : ss) s->async_exists("/", asio::detached);
        ss.clear();
    }
    // A fresh session on a fresh context still connects: the closes finished, nothing was corrupted.
    asio::io_context ioc;
    session s{ioc.get_executor(), make_config()};
    error_code result = errc::timeout;
    s.async_connect([&](error_code ec) { result = ec; });
    for (int i = 0; i < 3000 && result == errc::timeout; ++i) ioc.run_for(10ms);
    CHECK(!result);
}

}  // namespace

TEST_CASE("threads: a context destroyed while the close thread closes its sessions")
{
    const auto servers = thread_server().connect_string();
    destroy_while_closing([&] { return config_for(servers); });
}

TEST_CASE("threads: a context destroyed while the close thread closes its sessions over TLS" * doctest::skip(!ZKLOCK_TEST_TLS))
{
    const auto servers = tls_thread_server().tls_connect_string();
    destroy_while_closing([&] {
        auto c = config_for(servers);
        const auto& certs = shared_tls_certs();
        c.tls.enabled = true;
        c.tls.ca_file = certs.ca_cert().string();
        c.tls.cert_file = certs.client_cert("alice").string();
        c.tls.key_file = certs.client_key("alice").string();
        return c;
    });
}

namespace {

// The worker side of `zklock_bench --threads` (bench/threads.cpp): one io_context run by
// `threads` threads, each session on a strand of it, or one io_context per thread, session i on
// context i mod threads.
struct workers {
    workers(int threads, bool per_thread, std::chrono::steady_clock::time_point deadline) : per_thread(per_thread)
    {
        for (int i = 0; i < (per_thread ? threads : 1); ++i) {
            contexts.push_back(std::make_unique<asio::io_context>());
            guards.push_back(asio::make_work_guard(*contexts.back()));
        }
        for (int t = 0; t < threads; ++t)
            pool.emplace_back([ctx = contexts[per_thread ? static_cast<std::size_t>(t) : 0].get(), deadline] {
                ctx->run_until(deadline);
            });
    }
    asio::any_io_executor session_executor(int i)
    {
        if (per_thread) return contexts[static_cast<std::size_t>(i) % contexts.size()]->get_executor();
        return asio::make_strand(*contexts.front());
    }
    // Lets the contexts run out of work (the sessions' closes) and joins the threads; true if
    // every context ran out of work before the deadline.
    bool join()
    {
        guards.clear();
        for (auto& t : pool) t.join();
        return std::all_of(contexts.begin(), contexts.end(), [](auto& c) { return c->stopped(); });
    }

    bool per_thread;
    std::vector<std::unique_ptr<asio::io_context>> contexts;
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
    std::vector<std::thread> pool;
};

// A contender of the hot path: `cycles` acquire → critical section → release on a mutex object
// it shares with the other contenders of its session.
awaitable<void> hot_contender(mutex& m, checker& c, const std::string& path, std::string who, int cycles,
                              std::atomic<int>& written)
{
    for (int k = 0; k < cycles; ++k) {
        auto l = co_await m.async_acquire(60s);
        const auto holder = who + "#" + std::to_string(k);
        c.granted(path, holder, l.fencing_token(), seq_of(l));
        const auto v = c.read_counter(path);
        co_await sleep_for(0ms);  // suspended in the critical section; the other threads run
        c.write_counter(path, v + 1);
        ++written;
        c.released(path, holder);
        co_await l.async_release();
    }
}

// A contender of its own path (one mutex object each, as M's): `cycles` acquire → release.
awaitable<void> own_contender(mutex& m, checker& c, std::string path, int cycles)
{
    for (int k = 0; k < cycles; ++k) {
        auto l = co_await m.async_acquire(60s);
        const auto holder = path + "#" + std::to_string(k);
        c.granted(path, holder, l.fencing_token(), seq_of(l));
        c.write_counter(path, c.read_counter(path) + 1);
        c.released(path, holder);
        co_await l.async_release();
    }
}

// What `zklock_bench --threads 4` does, as C64 and M<N>x<S> at once: the sessions are made,
// connected (through their executors) and their lock objects made by a coroutine on another
// thread's io_context; the C64 part shares one mutex object per session among its contenders on
// one path, the M part has a mutex object per path on many paths; the contenders are spawned on
// their sessions' executors and counted back, done, on the orchestrating context; the sessions
// are destroyed on their own executors.
void bench_shape(bool per_thread)
{
    const int threads = 4, sessions = 4, per_session = 8, hot_cycles = 20, own_per_session = 16, own_cycles = 5;
    const auto servers = thread_server().connect_string();
    const auto hot = unique_path("bench-shape-hot");
    const auto many = unique_path("bench-shape-many");
    checker c;
    c.expect_queue_order(hot);
    std::atomic<int> written{0};
    int finished = 0;  // only touched on the orchestrating context
    std::vector<std::string> errors;  // the same
    workers w(threads, per_thread, std::chrono::steady_clock::now() + 150s);
    {
        asio::io_context main_ctx;
        bool orchestrated = false;
        asio::co_spawn(main_ctx, [&]() -> awaitable<void> {
            auto here = co_await asio::this_coro::executor;
            std::vector<std::shared_ptr<session>> ss;
            for (int i = 0; i < sessions; ++i) {
                ss.emplace_back(new session(w.session_executor(i), config_for(servers)), [](session* s) {
                    auto ex = s->get_executor();
                    asio::post(ex, [s] { delete s; });
                });
                auto* s = ss.back().get();
                // (A named closure: GCC 12 destroys one made inside a co_await expression twice.)
                auto connect = [s]() -> awaitable<void> { co_await s->async_connect(); };
                co_await asio::co_spawn(s->get_executor(), std::move(connect), asio::deferred);
            }
            std::vector<std::unique_ptr<mutex>> shared, own;
            for (auto& s : ss) shared.push_back(std::make_unique<mutex>(*s, hot));
            for (int i = 0; i < sessions * own_per_session; ++i)
                own.push_back(std::make_unique<mutex>(*ss[static_cast<std::size_t>(i % sessions)], many + "/" + std::to_string(i)));
            int running = 0;
            asio::steady_timer wake(here, std::chrono::steady_clock::time_point::max());
            // A fresh binder per spawn: Asio 1.26 moves the handler out of a bound token given as an lvalue.
            auto count = [&](std::exception_ptr e) {
                if (e) {
                    try {
                        std::rethrow_exception(e);
                    } catch (const std::exception& x) {
                        errors.push_back(x.what());
                    }
                } else {
                    ++finished;
                }
                if (--running == 0) wake.cancel();
            };
            for (int i = 0; i < sessions * per_session; ++i) {
                auto& m = *shared[static_cast<std::size_t>(i % sessions)];
                ++running;
                asio::co_spawn(m.get_executor(), hot_contender(m, c, hot, "c" + std::to_string(i), hot_cycles, written),
                               asio::bind_executor(here, count));
            }
            for (std::size_t i = 0; i < own.size(); ++i) {
                ++running;
                asio::co_spawn(own[i]->get_executor(), own_contender(*own[i], c, many + "/" + std::to_string(i), own_cycles),
                               asio::bind_executor(here, count));
            }
            co_await wake.async_wait(tuple);
            orchestrated = running == 0;
        }, [&](std::exception_ptr e) {
            if (e) errors.push_back("the orchestrating coroutine threw");
        });
        main_ctx.run_for(150s);
        CHECK(orchestrated);
    }
    CHECK(w.join());
    for (const auto& e : errors) FAIL_CHECK("a contender threw: " << e);
    CHECK(finished == sessions * per_session + sessions * own_per_session);
    CHECK(written.load() == sessions * per_session * hot_cycles);
    CHECK(c.counter(hot) == written.load());
    for (int i = 0; i < sessions * own_per_session; ++i) CHECK(c.counter(many + "/" + std::to_string(i)) == own_cycles);
    CHECK_MESSAGE(c.ok(), c.report());
}

}  // namespace

TEST_CASE("threads: the bench's shape: sessions on strands of one io_context run by 4 threads, made and counted from another")
{
    bench_shape(false);
}

TEST_CASE("threads: the bench's shape: one io_context per thread, 4 threads, sessions spread over them")
{
    bench_shape(true);
}
