// The README's quick start (the region quick_start): connect, take a lock, use its fencing token, release.
// Server list from $ZK_SERVERS (default 127.0.0.1:2181).
#include <zklock/zklock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdlib>
#include <iostream>

namespace asio = boost::asio;
using namespace std::chrono_literals;

//[quick_start
asio::awaitable<void> run()
{
    const char* servers = std::getenv("ZK_SERVERS");
    auto ex = co_await asio::this_coro::executor;  // (GCC 12: keep co_await out of the next line)
    zklock::session zk{ex, {.servers = servers ? servers : "127.0.0.1:2181"}};
    co_await zk.async_connect();

    zklock::mutex m{zk, "/locks/orders"};
    auto lease = co_await m.async_acquire(5s);  // suspends this coroutine, blocks no thread
    std::cout << "holding " << lease.node() << " with fencing token " << lease.fencing_token() << "\n";
    // ... write to the protected resource, passing lease.fencing_token() along ...
    co_await lease.async_release();

    co_await zk.async_close();
}
//]

int main()
{
    asio::io_context ioc;
    int status = 1;
    asio::co_spawn(ioc, run(), [&](std::exception_ptr e) {
        try {
            if (e) std::rethrow_exception(e);
            status = 0;
        } catch (const std::exception& ex) {
            std::cerr << "quick_start: " << ex.what() << "\n";
        }
    });
    ioc.run();
    return status;
}
