// Helpers of the fault tests: a server per test process, the safety checker, a checked critical
// section, a helper thread for blocking server control, soak settings.
#pragma once

#include "../common.hpp"
#include "support/checker.hpp"
#include "support/fault_proxy.hpp"
#include "support/zk_ensemble.hpp"
#include "support/zk_server.hpp"

#include <boost/asio/experimental/awaitable_operators.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <optional>
#include <thread>

namespace zklock::test {

/// One standalone server per test process (ctest runs every case in its own process). tickTime
/// 200 ms and maxSessionTimeout 20 s: session timeouts from 0.4 s to 20 s.
inline zk_server& fault_server()
{
    static zk_server server{server_options{.tick_time = std::chrono::milliseconds(200), .max_session_timeout_ms = 20000}};
    return server;
}

/// The soak length in seconds: --soak[=N] on the command line (see fault/main.cpp) or the
/// environment variable ZKLOCK_SOAK_SECONDS; `fallback` when neither is given.
int soak_seconds(int fallback);

/// The queue sequence number of a lock node path, -1 if it does not parse.
inline std::int64_t seq_of(const std::string& node)
{
    auto n = detail::parse_queue_node(detail::base_name(node));
    return n ? n->seq : -1;
}

/// Seconds since t0, for the MESSAGE lines that say how long a scenario took.
inline double since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Polls `pred` every 10 ms until true or `limit` passes; returns its last value.
template <class Pred>
awaitable<bool> wait_until(Pred pred, std::chrono::milliseconds limit)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= deadline) co_return pred();
        co_await sleep_for(10ms);
    }
    co_return true;
}

/// Polls the server's watch table ("wchp": paths with watches) until `node` is watched by some
/// session, or `limit` passes; returns whether it is. Tests use it instead of a sleep before an
/// event that a waiter must see through its watch.
inline awaitable<bool> wait_watched(const zk_server& server, const std::string& node, std::chrono::milliseconds limit = 10s)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        const std::string table = server.four_letter("wchp");
        if (table.find(node + "\n") != std::string::npos || table.ends_with(node)) co_return true;
        if (std::chrono::steady_clock::now() >= deadline) co_return false;
        co_await sleep_for(20ms);
    }
}

/// The critical section every fault test runs under a granted lease: records the grant, reads the
/// shared counter, suspends for `hold`, writes it back (unless the lease was lost meanwhile, which is
/// then recorded at the moment the holder was told), records the release, releases.
/// Returns true if the counter was written.
inline awaitable<bool> critical_section(checker& c, const std::string& lock, const std::string& holder, lease& l,
                                        std::chrono::steady_clock::duration hold)
{
    using namespace asio::experimental::awaitable_operators;
    // The pair token: a cohort's local holders share their node's zxid (plain leases: local 0).
    c.granted(lock, holder, l.fence().zxid, l.fence().local, seq_of(l.node()));
    const auto value = c.read_counter(lock);
    bool lost = false;
    if (hold > std::chrono::steady_clock::duration::zero()) {
        auto ex = co_await asio::this_coro::executor;
        asio::steady_timer t{ex, hold};
        auto r = co_await (t.async_wait(asio::as_tuple(asio::use_awaitable)) ||
                           l.async_wait_lost(asio::as_tuple(asio::use_awaitable)));
        if (r.index() == 1) {
            auto [ec] = std::get<1>(r);
            lost = ec != asio::error::operation_aborted;
            if (lost) c.released(lock, holder, "lost: " + ec.message());
        }
    } else if (!l.owns_lock()) {
        lost = true;
        c.released(lock, holder, "lost: " + l.lost_reason().message());
    }
    if (lost) {
        co_await l.async_release(asio::as_tuple(asio::deferred));
        co_return false;
    }
    c.write_counter(lock, value + 1);
    c.released(lock, holder);
    auto [ec] = co_await l.async_release(asio::as_tuple(asio::deferred));
    (void)ec;  // the node is gone either way (release retries until it is, or the session ended)
    co_return true;
}

/// A long-lived thread for blocking calls (stopping and starting servers) so the io_context keeps
/// running meanwhile. Servers started from here are killed when this thread ends (PR_SET_PDEATHSIG),
/// so it lives as long as the test.
class blocking_runner {
public:
    blocking_runner() : thread_([this] { loop(); }) {}
    ~blocking_runner()
    {
        {
            std::lock_guard g(m_);
            stop_ = true;
        }
        cv_.notify_all();
        thread_.join();
    }

    /// Runs f on the helper thread; the coroutine polls for its end (at most `limit`).
    /// Rethrows what f threw; throws std::runtime_error on time-out.
    awaitable<void> run(std::function<void()> f, std::chrono::milliseconds limit = 60s)
    {
        auto task = std::make_shared<std::packaged_task<void()>>(std::move(f));
        auto fut = task->get_future();
        {
            std::lock_guard g(m_);
            tasks_.push_back([task] { (*task)(); });
        }
        cv_.notify_all();
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (fut.wait_for(0s) != std::future_status::ready) {
            if (std::chrono::steady_clock::now() >= deadline) throw std::runtime_error("blocking_runner: task timed out");
            co_await sleep_for(20ms);
        }
        fut.get();
    }

private:
    void loop()
    {
        for (;;) {
            std::function<void()> t;
            {
                std::unique_lock g(m_);
                cv_.wait(g, [&] { return stop_ || !tasks_.empty(); });
                if (tasks_.empty()) return;
                t = std::move(tasks_.front());
                tasks_.pop_front();
            }
            t();
        }
    }

    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> tasks_;
    bool stop_ = false;
    std::thread thread_;
};

/// The session id ZooKeeper's `cons` shows ("sid=0x..."), to find the server a session is on.
inline std::string sid_text(std::int64_t id)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "sid=0x%llx", static_cast<unsigned long long>(id));
    return buf;
}

/// Index of the ensemble member a session is connected to (-1 if none lists it).
inline int server_of(const zk_ensemble& e, std::int64_t session_id)
{
    const auto sid = sid_text(session_id);
    for (int i = 0; i < e.size(); ++i) {
        if (!e.running(i)) continue;
        const auto cons = e.four_letter(i, "cons");
        // "sid=0x1000a2b3c4d0001," : the id is followed by a comma or a closing parenthesis.
        for (auto pos = cons.find(sid); pos != std::string::npos; pos = cons.find(sid, pos + 1)) {
            const char next = pos + sid.size() < cons.size() ? cons[pos + sid.size()] : ',';
            if (next == ',' || next == ')') return i;
        }
    }
    return -1;
}

}  // namespace zklock::test
