// The child holder of `fault 4s`: takes the lock, then samples its lease every 20 ms on a timer of
// its executor, each sample on its own line: "<steady-clock ns> <status>". The test stops this
// process with SIGSTOP and reads what it sampled after SIGCONT.
//
// Usage: zklock_stall_holder SERVERS LOCK_PATH SESSION_TIMEOUT_MS SECONDS
#include <zklock/zklock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

long long ns(std::chrono::steady_clock::time_point t)
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

asio::awaitable<void> hold(std::string servers, std::string path, std::chrono::milliseconds timeout,
                           std::chrono::seconds length, int& rc)
{
    auto ex = co_await asio::this_coro::executor;
    zklock::session zk{ex, {.servers = servers, .session_timeout = timeout}};
    co_await zk.async_connect(asio::use_awaitable);
    zklock::mutex m{zk, path};
    auto lease = co_await m.async_acquire(10s, asio::use_awaitable);
    std::printf("held %lld\n", static_cast<long long>(lease.fencing_token()));
    std::fflush(stdout);
    asio::steady_timer tick(ex);
    const auto end = std::chrono::steady_clock::now() + length;
    while (std::chrono::steady_clock::now() < end) {
        tick.expires_after(20ms);
        co_await tick.async_wait(asio::use_awaitable);
        const auto now = std::chrono::steady_clock::now();
        std::printf("%lld %s\n", ns(now), zklock::to_string(lease.status()));
        std::fflush(stdout);
    }
    rc = 0;
}

}  // namespace

int main(int argc, char** argv)
{
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s SERVERS LOCK_PATH SESSION_TIMEOUT_MS SECONDS\n", argv[0]);
        return 2;
    }
    int rc = 1;
    asio::io_context io;
    asio::co_spawn(io, hold(argv[1], argv[2], std::chrono::milliseconds(std::atoi(argv[3])),
                            std::chrono::seconds(std::atoi(argv[4])), rc),
                   [](std::exception_ptr e) {
                       if (!e) return;
                       try {
                           std::rethrow_exception(e);
                       } catch (const std::exception& x) {
                           std::fprintf(stderr, "stall_holder: %s\n", x.what());
                       }
                   });
    io.run();
    return rc;
}
