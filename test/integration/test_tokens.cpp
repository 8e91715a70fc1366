// Every public operation with every kind of completion token Asio users write, against a real
// server: it must compile, complete once, complete where the token says (bind_executor), take its
// handler's memory from the handler's allocator and give it back before the handler runs
// (bind_allocator), and give async_initiate an initiation object with an executor.
#include "../common.hpp"
#include "server.hpp"

#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_future.hpp>

#include <atomic>
#include <future>
#include <thread>

using namespace zklock;
using namespace zklock::test;

namespace {

struct alloc_counts {
    std::size_t allocations = 0;
    std::size_t outstanding = 0;
};

template <class T> struct counting_allocator {
    using value_type = T;
    alloc_counts* counts;

    explicit counting_allocator(alloc_counts* c) noexcept : counts(c) {}
    template <class U> counting_allocator(const counting_allocator<U>& o) noexcept : counts(o.counts) {}

    T* allocate(std::size_t n)
    {
        ++counts->allocations;
        ++counts->outstanding;
        return std::allocator<T>{}.allocate(n);
    }
    void deallocate(T* p, std::size_t n)
    {
        --counts->outstanding;
        std::allocator<T>{}.deallocate(p, n);
    }
    template <class U> bool operator==(const counting_allocator<U>& o) const noexcept { return counts == o.counts; }
};

// Waits (bounded) until `done` is set by a callback.
awaitable<void> wait_for(const std::atomic<bool>& done)
{
    for (int i = 0; i < 1000 && !done; ++i) co_await sleep_for(std::chrono::milliseconds(5));
    REQUIRE_MESSAGE(done, "the operation did not complete within 5 s");
}

bool on_io_thread(const asio::any_io_executor& ex)
{
    return ex.target<asio::io_context::executor_type>()->running_in_this_thread();
}

// The initiation an operation gives async_initiate, caught by a token that only records it.
struct initiation_probe {
    bool has_executor = false;
};

}  // namespace

template <class Signature> struct boost::asio::async_result<initiation_probe, Signature> {
    template <class Initiation, class... Args>
    static void initiate(Initiation&& init, initiation_probe probe, Args&&...)
    {
        // An initiation object with an executor, as asio::cancel_after asks for one.
        using init_type = std::decay_t<Initiation>;
        if constexpr (requires(const init_type& i) { i.get_executor(); }) {
            (void)init.get_executor();
            probe.has_executor = true;
        }
        *probe_out() = probe;
    }
    static initiation_probe*& probe_out()
    {
        static initiation_probe* p = nullptr;
        return p;
    }
};

namespace {

// Runs `op(token)` with each token, one after the other; `op` starts one operation that
// completes by itself.
template <class Signature, class Op> awaitable<void> with_every_token(const char* name, Op op)
{
    CAPTURE(name);
    auto ex = co_await asio::this_coro::executor;

    // use_awaitable (an error is thrown), as_tuple(use_awaitable), redirect_error, deferred awaited.
    try {
        co_await op(asio::use_awaitable);
    } catch (const boost::system::system_error&) {
    }
    co_await op(asio::as_tuple(asio::use_awaitable));
    error_code redirected;
    try {
        co_await op(asio::redirect_error(asio::use_awaitable, redirected));
    } catch (...) {
        FAIL("redirect_error threw");
    }
    co_await op(asio::as_tuple(asio::deferred));

    // A deferred operation, started later with a callback.
    {
        std::atomic<bool> done{false};
        auto d = op(asio::deferred);
        std::move(d)([&done](auto&&...) { done = true; });
        co_await wait_for(done);
    }
    // A plain callback: never run inside the initiating call.
    {
        std::atomic<bool> done{false}, inside{true};
        op([&](auto&&...) {
            // (An empty object's handler with no executor runs on system_executor's thread, at
            // any time: see the next test case.)
            if (on_io_thread(ex)) CHECK_MESSAGE(!inside, std::string(name) << " completed inside its initiating call");
            done = true;
        });
        inside = false;
        co_await wait_for(done);
    }
    // bind_executor: the handler runs on its strand.
    {
        std::atomic<bool> done{false};
        auto strand = asio::make_strand(ex);
        op(asio::bind_executor(strand, [&done, strand](auto&&...) {
            CHECK(strand.running_in_this_thread());
            done = true;
        }));
        co_await wait_for(done);
    }
    // bind_allocator: the handler's memory comes from its allocator, and is given back before it runs.
    {
        std::atomic<bool> done{false};
        alloc_counts counts;
        op(asio::bind_allocator(counting_allocator<void>(&counts), [&](auto&&...) {
            CHECK(counts.allocations > 0);
            CHECK(counts.outstanding == 0);
            done = true;
        }));
        co_await wait_for(done);
        CHECK(counts.outstanding == 0);
    }
    // use_future, polled (this thread runs the io_context).
    {
        auto f = op(asio::use_future);
        for (int i = 0; i < 1000 && f.wait_for(std::chrono::seconds(0)) != std::future_status::ready; ++i)
            co_await sleep_for(std::chrono::milliseconds(5));
        REQUIRE(f.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
        try {
            f.get();
        } catch (const boost::system::system_error&) {
        }
    }
    // The initiation object has an executor.
    {
        initiation_probe seen;
        asio::async_result<initiation_probe, Signature>::probe_out() = &seen;
        op(initiation_probe{});
        CHECK(seen.has_executor);
    }
}

}  // namespace

TEST_CASE("every operation takes every kind of completion token")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(shared_server().connect_string())};
        co_await with_every_token<void(error_code)>("session::async_connect", [&](auto&& t) { return zk.async_connect(t); });
        const auto dir = unique_path("tokens");
        co_await zk.async_create("/zklock-test", "", create_mode::persistent, tuple);
        co_await zk.async_create(dir, "", create_mode::persistent, tuple);
        const std::string node = dir + "/n";

        // The session's requests.
        co_await with_every_token<void(error_code, std::string, zklock::stat)>(
            "async_create", [&](auto&& t) { return zk.async_create(node, "x", create_mode::ephemeral_sequential, t); });
        co_await with_every_token<void(error_code, std::optional<zklock::stat>)>(
            "async_exists", [&](auto&& t) { return zk.async_exists(dir, t); });
        co_await with_every_token<void(error_code, std::optional<zklock::stat>, watch)>(
            "async_watch_exists", [&](auto&& t) { return zk.async_watch_exists(dir, t); });
        co_await with_every_token<void(error_code, std::string, zklock::stat)>(
            "async_get_data", [&](auto&& t) { return zk.async_get_data(dir, t); });
        co_await with_every_token<void(error_code, std::string, zklock::stat, watch)>(
            "async_watch_data", [&](auto&& t) { return zk.async_watch_data(dir, t); });
        co_await with_every_token<void(error_code, zklock::stat)>(
            "async_set_data", [&](auto&& t) { return zk.async_set_data(dir, "d", t); });
        co_await with_every_token<void(error_code, zklock::stat)>(
            "async_set_data(version)", [&](auto&& t) { return zk.async_set_data(dir, "d", -1, t); });
        co_await with_every_token<void(error_code, std::vector<std::string>)>(
            "async_get_children", [&](auto&& t) { return zk.async_get_children(dir, t); });
        co_await with_every_token<void(error_code, std::vector<std::string>, watch)>(
            "async_watch_children", [&](auto&& t) { return zk.async_watch_children(dir, t); });
        co_await with_every_token<void(error_code)>("async_remove",
                                                    [&](auto&& t) { return zk.async_remove(dir + "/missing", t); });
        co_await with_every_token<void(error_code)>(
            "async_remove(version)", [&](auto&& t) { return zk.async_remove(dir + "/missing", -1, t); });
        std::vector<multi_op> ops{multi_op::check(dir, -1)};
        co_await with_every_token<void(error_code, std::vector<multi_result>)>(
            "async_multi", [&](auto&& t) { return zk.async_multi(ops, t); });
        co_await with_every_token<void(error_code, queue_listing)>(
            "async_list_queue", [&](auto&& t) { return async_list_queue(zk, dir, t); });
        // A watch that has fired: each wait completes at once.
        auto [wec, wst, w] = co_await zk.async_watch_exists(dir + "/fires", tuple);
        co_await zk.async_create(dir + "/fires", "", create_mode::ephemeral, tuple);
        co_await with_every_token<void(error_code, watch_event)>("watch::async_wait", [&](auto&& t) { return w.async_wait(t); });

        // The locks: each grant's lease is dropped at once (released in the background).
        mutex m{zk, dir + "/mutex"};
        co_await with_every_token<void(error_code, lease)>("mutex::async_acquire(timeout)",
                                                           [&](auto&& t) { return m.async_acquire(std::chrono::seconds(5), t); });
        co_await with_every_token<void(error_code, lease)>("mutex::async_acquire", [&](auto&& t) { return m.async_acquire(t); });
        co_await with_every_token<void(error_code, lease)>("mutex::async_try_acquire",
                                                           [&](auto&& t) { return m.async_try_acquire(t); });
        shared_mutex rw{zk, dir + "/rw"};
        co_await with_every_token<void(error_code, lease)>(
            "shared_mutex::async_acquire_shared(timeout)", [&](auto&& t) { return rw.async_acquire_shared(std::chrono::seconds(5), t); });
        co_await with_every_token<void(error_code, lease)>("shared_mutex::async_acquire_shared",
                                                           [&](auto&& t) { return rw.async_acquire_shared(t); });
        co_await with_every_token<void(error_code, lease)>("shared_mutex::async_try_acquire_shared",
                                                           [&](auto&& t) { return rw.async_try_acquire_shared(t); });
        semaphore sem{zk, dir + "/sem", 2};
        co_await with_every_token<void(error_code, lease)>("semaphore::async_acquire",
                                                           [&](auto&& t) { return sem.async_acquire(std::chrono::seconds(5), t); });
        std::vector<lock_spec> specs{lock_spec::exclusive(dir + "/a"), lock_spec::exclusive(dir + "/b")};
        multi_lock ml{zk, specs};
        co_await with_every_token<void(error_code, std::vector<lease>)>(
            "multi_lock::async_acquire(timeout)", [&](auto&& t) { return ml.async_acquire(std::chrono::seconds(5), t); });
        co_await with_every_token<void(error_code, std::vector<lease>)>("multi_lock::async_acquire",
                                                                        [&](auto&& t) { return ml.async_acquire(t); });

        // A held lease's operations that complete by themselves.
        auto held = co_await m.async_acquire(std::chrono::seconds(5), asio::deferred);
        std::vector<multi_op> guarded{multi_op::set_data(dir, "g")};
        co_await with_every_token<void(error_code, std::vector<multi_result>)>(
            "lease::async_guarded_multi", [&](auto&& t) { return held.async_guarded_multi(guarded, t); });
        co_await with_every_token<void(error_code)>("lease::async_release", [&](auto&& t) { return held.async_release(t); });
        auto writer = co_await rw.async_acquire(std::chrono::seconds(5), asio::deferred);
        co_await with_every_token<void(error_code)>("lease::async_downgrade", [&](auto&& t) { return writer.async_downgrade(t); });
        // An empty lease: its waits complete at once (errc::already_released).
        lease empty;
        co_await with_every_token<void(error_code)>("lease::async_wait_lost", [&](auto&& t) { return empty.async_wait_lost(t); });
        co_await with_every_token<void(error_code)>("lease::async_wait_revocation",
                                                    [&](auto&& t) { return empty.async_wait_revocation(t); });
        co_await with_every_token<void(error_code, lease_status)>(
            "lease::async_wait_status_change", [&](auto&& t) { return empty.async_wait_status_change(t); });

        // The election.
        election e{zk, dir + "/election"};
        co_await with_every_token<void(error_code, leader_info)>("election::async_leader", [&](auto&& t) { return e.async_leader(t); });
        co_await with_every_token<void(error_code, leadership)>(
            "election::async_campaign(timeout)", [&](auto&& t) { return e.async_campaign("v", std::chrono::seconds(5), t); });
        co_await with_every_token<void(error_code, leadership)>("election::async_campaign",
                                                                [&](auto&& t) { return e.async_campaign("v", t); });
        co_await with_every_token<void(error_code, leadership)>("election::async_try_campaign",
                                                                [&](auto&& t) { return e.async_try_campaign("v", t); });
        auto lead = co_await e.async_campaign("v", std::chrono::seconds(5), asio::deferred);
        co_await with_every_token<void(error_code)>("leadership::async_proclaim",
                                                    [&](auto&& t) { return lead.async_proclaim("w", t); });
        co_await with_every_token<void(error_code)>("leadership::async_resign", [&](auto&& t) { return lead.async_resign(t); });
        // An observer delivers a change once: an empty observer completes at once (invalid_argument).
        election_observer no_observer;
        co_await with_every_token<void(error_code, leader_info)>("election_observer::async_next",
                                                                 [&](auto&& t) { return no_observer.async_next(t); });

        // A session's next change of state: another session's, which connects once the wait is on.
        co_await with_every_token<void(error_code, session_state)>("session::async_wait_state_change", [&](auto&& t) {
            auto other = std::make_shared<session>(ex, config_for(shared_server().connect_string()));
            asio::post(ex, [other] { other->async_connect(asio::detached); });
            return other->async_wait_state_change(t);
        });
        co_await with_every_token<void(error_code)>("session::async_close", [&](auto&& t) { return zk.async_close(t); });
    });
}

TEST_CASE("an empty lease, watch or observer completes through the handler's executor, or else posted")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto strand = asio::make_strand(ex);
        lease empty;
        watch no_watch;
        election_observer no_observer;
        int on_strand = 0;
        auto count = [&](auto&&...) { on_strand += strand.running_in_this_thread() ? 1 : 0; };
        empty.async_release(asio::bind_executor(strand, count));
        no_watch.async_wait(asio::bind_executor(strand, count));
        no_observer.async_next(asio::bind_executor(strand, count));
        for (int i = 0; i < 200 && on_strand < 3; ++i) co_await sleep_for(std::chrono::milliseconds(5));
        CHECK(on_strand == 3);

        // With no executor of its own, the handler runs on asio::system_executor's thread (an
        // empty object has no session, hence no executor of its own): never inside the call,
        // which runs on this thread.
        std::atomic<bool> done{false}, on_this_thread{false};
        error_code seen;
        const auto caller = std::this_thread::get_id();
        empty.async_release([&](error_code ec) {
            seen = ec;
            on_this_thread = std::this_thread::get_id() == caller;
            done = true;
        });
        for (int i = 0; i < 200 && !done; ++i) co_await sleep_for(std::chrono::milliseconds(5));
        REQUIRE(done);
        CHECK(seen == errc::already_released);
        CHECK_FALSE(on_this_thread);
    });
}

// The default token is Asio's default_completion_token_t of the executor type, deferred where
// that is void (Boost 1.81's any_io_executor): a bare co_await works, and the operation starts
// when awaited.
static_assert(std::is_same_v<zklock::detail::default_token_t<asio::any_io_executor>,
                             std::conditional_t<std::is_void_v<asio::default_completion_token_t<asio::any_io_executor>>,
                                                asio::deferred_t, asio::default_completion_token_t<asio::any_io_executor>>>);
static_assert(std::is_same_v<zklock::detail::default_token_t<asio::use_awaitable_t<>::executor_with_default<asio::any_io_executor>>,
                             asio::use_awaitable_t<>>);

TEST_CASE("tokens: the default token defers the operation until it is awaited")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session s{ex, config_for(shared_server().connect_string())};
        co_await connect(s);
        mutex m{s, unique_path("default-token")};
        const auto creates = s.metrics().requests_of("create");
        auto op = m.async_acquire(5s);
        static_assert(asio::is_deferred<decltype(op)>::value);
        co_await sleep_for(100ms);
        CHECK(s.metrics().requests_of("create") == creates);  // nothing sent before the co_await
        auto l = co_await std::move(op);
        CHECK(l.owns_lock());
        co_await l.async_release();
        co_await s.async_close();
    });
}
