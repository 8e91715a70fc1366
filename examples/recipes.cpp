// docs/guide.md's recipe examples (its regions shared_mutex, semaphore, multi_lock, revocation),
// each checked.
// Server list from $ZK_SERVERS (default 127.0.0.1:2181). Exits non-zero if anything is off.
#include <zklock/zklock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <cstdlib>
#include <iostream>
#include <stdexcept>

namespace asio = boost::asio;
using namespace std::chrono_literals;

static void expect(bool ok, const char* what)
{
    if (!ok) throw std::runtime_error(what);
    std::cout << "ok: " << what << "\n";
}

asio::awaitable<void> run()
{
    const char* env = std::getenv("ZK_SERVERS");
    auto ex = co_await asio::this_coro::executor;
    zklock::session zk{ex, {.servers = env ? env : "127.0.0.1:2181"}};
    co_await zk.async_connect();
    const std::string base = "/zklock-examples/" + std::to_string(::getpid());

    // Readers share; a writer waits for them and then holds alone.
    //[shared_mutex
    zklock::shared_mutex config_lock{zk, base + "/config"};
    auto r1 = co_await config_lock.async_acquire_shared(5s);
    auto r2 = co_await config_lock.async_acquire_shared(5s);  // a second reader gets in at once
    auto [busy, w0] = co_await config_lock.async_try_acquire(asio::as_tuple(asio::deferred));
    expect(busy == zklock::errc::would_block, "a writer cannot get in while readers hold");
    co_await r1.async_release();
    co_await r2.async_release();
    auto w = co_await config_lock.async_acquire(5s);
    expect(w.owns_lock(), "the writer holds once the readers are gone");
    //]
    co_await w.async_release();

    // At most 2 holders of "/.../workers" at a time.
    //[semaphore
    zklock::semaphore workers{zk, base + "/workers", 2};
    auto p1 = co_await workers.async_acquire(5s);
    auto p2 = co_await workers.async_acquire(5s);
    auto [full, p3] = co_await workers.async_acquire(200ms, asio::as_tuple(asio::deferred));
    expect(full == zklock::errc::timeout, "a third permit waits (and times out)");
    //]
    co_await p1.async_release();
    co_await p2.async_release();

    // Two accounts, all or nothing, one deadline, deadlock-free in any order.
    //[multi_lock
    zklock::multi_lock transfer{zk, {zklock::lock_spec::exclusive(base + "/acct-9"),
                                     zklock::lock_spec::exclusive(base + "/acct-1")}};
    auto both = co_await transfer.async_acquire(5s);  // std::vector<zklock::lease>
    expect(both.size() == 2 && both[0].owns_lock() && both[1].owns_lock(), "both accounts locked");
    //]
    for (auto& l : both) co_await l.async_release();

    // Ask a holder to give the lock up; the holder decides when.
    zklock::mutex report{zk, base + "/report"};
    auto holder = co_await report.async_acquire(5s);
    //[revocation
    // the holder
    asio::co_spawn(ex, [&]() -> asio::awaitable<void> {
        co_await holder.async_wait_revocation();  // someone asked
        co_await holder.async_release();          // this holder cooperates
    }, asio::detached);
    // anyone else
    co_await zk.async_set_data(holder.node(), std::string(zklock::revocation_request));
    //]
    auto next = co_await report.async_acquire(5s);
    expect(next.owns_lock(), "the lock changed hands after a revocation request");
    co_await next.async_release();

    co_await zk.async_close();
}

int main()
{
    asio::io_context ioc;
    int status = 1;
    asio::co_spawn(ioc, run(), [&](std::exception_ptr e) {
        try {
            if (e) std::rethrow_exception(e);
            status = 0;
        } catch (const std::exception& ex) {
            std::cerr << "recipes: " << ex.what() << "\n";
        }
    });
    ioc.run();
    return status;
}
