// A holder whose only executor thread stalls past its session's life, against a real server: what
// it reads at resume, before any handler runs, and what its first guarded write does.
#include "../common.hpp"
#include "server.hpp"

#include <atomic>
#include <functional>
#include <thread>

using namespace zklock;
using namespace zklock::test;

namespace {

using clock_type = std::chrono::steady_clock;
using acquire_fn = std::function<awaitable<lease>(session&, const std::string& path)>;

/// A contender in a session of its own, on a thread of its own: it waits for the lock while the
/// holder's thread is blocked, and records when it was granted.
class other_contender {
public:
    other_contender(std::string servers, std::string path, acquire_fn acquire)
    {
        asio::co_spawn(io_, [this, servers = std::move(servers), path = std::move(path),
                             acquire = std::move(acquire)]() -> awaitable<void> {
            session s{co_await asio::this_coro::executor, config_for(servers)};
            co_await connect(s);
            queued_ = true;
            auto l = co_await acquire(s, path);
            granted_at_ = clock_type::now().time_since_epoch().count();
            co_await l.async_release();
            co_await s.async_close();
        }, asio::detached);
        thread_ = std::thread([this] { io_.run_for(60s); });
    }
    ~other_contender()
    {
        io_.stop();
        thread_.join();
    }
    bool queued() const { return queued_; }
    /// When it was granted, if it was.
    std::optional<clock_type::time_point> granted_at() const
    {
        const auto t = granted_at_.load();
        if (t == 0) return std::nullopt;
        return clock_type::time_point(clock_type::duration(t));
    }

private:
    asio::io_context io_;
    std::atomic<bool> queued_{false};
    std::atomic<clock_type::rep> granted_at_{0};
    std::thread thread_;
};

/// The holder (session timeout T = 1 s) takes the lock with `take`; a contender in another
/// session queues with `contend`; then the holder blocks its only thread for 2.5 T, during which
/// the server expires its session and the contender is granted. At resume, with nothing run in
/// between, every query says lost, the guarded write sends nothing, and the lease's deadline was
/// no later than the contender's grant.
void stalled_holder(const std::string& name, acquire_fn take, acquire_fn contend)
{
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const auto servers = shared_server().connect_string();
        const auto T = 1000ms;
        session hs{ex, config_for(servers, T)};
        co_await connect(hs);
        REQUIRE(hs.negotiated_timeout() == T);
        const auto path = unique_path(name);
        auto held = co_await take(hs, path);
        REQUIRE(held.owns_lock());
        std::optional<error_code> told;
        asio::co_spawn(ex, [&]() -> awaitable<void> {
            auto [ec] = co_await held.async_wait_lost(tuple);
            told = ec;
        }, asio::detached);

        other_contender other{servers, path, contend};
        CHECK(co_await eventually([&] { return other.queued(); }));
        session watcher{ex, config_for(servers)};
        co_await connect(watcher);
        CHECK(co_await wait_children(watcher, path, 2) == 2);
        co_await sleep_for(T / 4);  // a few answers of the leader move the deadline on

        // The critical section blocks the thread: no handler of this process runs.
        const auto valid_until = held.valid_until();
        CHECK(held.status() == lease_status::held);
        CHECK(valid_until > clock_type::now());
        std::this_thread::sleep_for(T * 5 / 2);

        // Resumed, nothing run since: the lease reads lost.
        const auto resumed = clock_type::now();
        const auto status = held.status();
        const bool owns = held.owns_lock();
        const auto reason = held.lost_reason();
        const auto until = held.valid_until();
        const bool told_at_resume = told.has_value();
        const auto multis = hs.metrics().requests_of("multi");
        // (GCC 12: no string literal in a co_await expression)
        const std::string written = path + "-written";
        std::vector<multi_op> write{multi_op::create(written)};
        auto [write_ec, results] = co_await held.async_guarded_multi(std::move(write), tuple);

        MESSAGE(name << ": at resume status " << std::string(to_string(status)) << "; guarded write: " << write_ec.message());
        CHECK(status == lease_status::lost);
        CHECK_FALSE(owns);
        CHECK(reason == errc::session_expired);
        CHECK(until == clock_type::time_point::min());
        CHECK(write_ec == errc::lock_lost);
        CHECK(hs.metrics().requests_of("multi") == multis);  // nothing was sent
        CHECK_FALSE(told_at_resume);  // the reads did not wait for the handlers
        // The contender was granted during the stall, and not before the holder's deadline.
        const auto granted = other.granted_at();
        REQUIRE(granted.has_value());
        CHECK(*granted < resumed);
        CHECK(*granted >= valid_until);
        MESSAGE(name << ": contender granted "
                     << std::chrono::duration<double>(*granted - valid_until).count()
                     << " s after the holder's deadline, " << std::chrono::duration<double>(resumed - *granted).count()
                     << " s before it resumed");

        // The handlers run: the waiter is told the same, and the lease stays lost.
        CHECK(co_await eventually([&] { return told.has_value(); }, 10s));
        CHECK(*told == errc::session_expired);
        CHECK(held.status() == lease_status::lost);
        auto [exists_ec, st] = co_await watcher.async_exists(written, tuple);
        CHECK_FALSE(st.has_value());  // nothing was written
        (void)exists_ec;
        co_await held.async_release(tuple);
        co_await hs.async_close(tuple);
        CHECK(co_await wait_children(watcher, path, 0) == 0);
    }, 120s);
}

awaitable<lease> exclusive(session& s, const std::string& path)
{
    mutex m{s, path};
    co_return co_await m.async_acquire(30s);
}

}  // namespace

TEST_CASE("stall: a mutex holder blocked past its session reads lost at resume, its guarded write sends nothing")
{
    stalled_holder("stall-mutex", exclusive, exclusive);
}

TEST_CASE("stall: a cohort's local holder blocked past its session reads lost at resume")
{
    stalled_holder("stall-cohort", [](session& s, const std::string& path) -> awaitable<lease> {
        mutex m{s, path, lock_options{.cohort = true}};
        co_return co_await m.async_acquire(30s);
    }, exclusive);
}

TEST_CASE("stall: a shared lock's reader blocked past its session reads lost at resume, the writer was granted")
{
    stalled_holder("stall-shared", [](session& s, const std::string& path) -> awaitable<lease> {
        shared_mutex m{s, path};
        co_return co_await m.async_acquire_shared(30s);
    }, [](session& s, const std::string& path) -> awaitable<lease> {
        shared_mutex m{s, path};
        co_return co_await m.async_acquire(30s);
    });
}
