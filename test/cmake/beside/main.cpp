// A program that uses the system's ZooKeeper C client and zklock side by side: the system client
// creates a node and reads it back, zklock takes a lock beside it and sees that node, whatever the
// link order (test/cmake/beside_client_test.sh links it every way). With -DTHREADED it uses the
// multi-threaded client's synchronous calls (libzookeeper_mt); with -DZKLOCK_ONLY it links no
// system client and defines a create_hashtable of its own, a name the C client uses inside.
#include <zklock/zklock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <poll.h>
#include <unistd.h>

#ifndef ZKLOCK_ONLY
#include <zookeeper/zookeeper.h>
#endif

namespace asio = boost::asio;
using namespace std::chrono_literals;

#ifdef ZKLOCK_ONLY
extern "C" int create_hashtable(int size) { return size + 1; }
#else
namespace {

#ifndef THREADED
// Runs the single-threaded client until `*flag` is set; false after 15 s.
bool drive(zhandle_t* zh, const bool* flag)
{
    for (int i = 0; i < 1500 && !*flag; ++i) {
        int fd = -1, interest = 0;
        struct timeval tv {};
        int events = 0;
        if (zookeeper_interest(zh, &fd, &interest, &tv) == ZOK && fd != -1) {
            pollfd p{fd, static_cast<short>(((interest & ZOOKEEPER_READ) ? POLLIN : 0) | ((interest & ZOOKEEPER_WRITE) ? POLLOUT : 0)), 0};
            if (::poll(&p, 1, 10) > 0) {
                if (p.revents & (POLLIN | POLLHUP | POLLERR)) events |= ZOOKEEPER_READ;
                if (p.revents & POLLOUT) events |= ZOOKEEPER_WRITE;
            }
        } else {
            ::usleep(10000);
        }
        zookeeper_process(zh, events);
    }
    return *flag;
}

struct result {
    bool done = false;
    int rc = 0;
    std::string data;
};
#endif

// Creates `path` with `data` (or reads it back into `data`) with the system's client.
bool system_client(const std::string& servers, const std::string& path, std::string& data, bool create)
{
    zhandle_t* zh = zookeeper_init(servers.c_str(), nullptr, 10000, nullptr, nullptr, 0);
    if (!zh) return false;
    bool ok = false;
#ifdef THREADED
    if (create) {
        ok = zoo_create(zh, path.c_str(), data.data(), static_cast<int>(data.size()), &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0) == ZOK;
    } else {
        char buf[256];
        int len = sizeof buf;
        ok = zoo_get(zh, path.c_str(), 0, buf, &len, nullptr) == ZOK;
        if (ok) data.assign(buf, static_cast<std::size_t>(len));
    }
#else
    result r;
    if (create) {
        zoo_acreate(zh, path.c_str(), data.data(), static_cast<int>(data.size()), &ZOO_OPEN_ACL_UNSAFE, 0,
                    [](int rc, const char*, const void* d) {
                        auto* r = static_cast<result*>(const_cast<void*>(d));
                        r->rc = rc;
                        r->done = true;
                    },
                    &r);
    } else {
        zoo_aget(zh, path.c_str(), 0,
                 [](int rc, const char* v, int len, const struct Stat*, const void* d) {
                     auto* r = static_cast<result*>(const_cast<void*>(d));
                     r->rc = rc;
                     if (rc == ZOK && len >= 0) r->data.assign(v, static_cast<std::size_t>(len));
                     r->done = true;
                 },
                 &r);
    }
    ok = drive(zh, &r.done) && r.rc == ZOK;
    if (ok && !create) data = r.data;
#endif
    zookeeper_close(zh);
    return ok;
}

}  // namespace
#endif

int main()
{
    const char* env = std::getenv("ZK_SERVERS");
    if (!env) {
        std::fprintf(stderr, "ZK_SERVERS is not set\n");
        return 2;
    }
    const std::string servers = env;
    const std::string root = "/beside-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand());
#ifndef ZKLOCK_ONLY
    std::string data = "written by the system's C client";
    if (!system_client(servers, root, data, true)) {
        std::fprintf(stderr, "the system's C client could not create %s\n", root.c_str());
        return 1;
    }
#else
    if (create_hashtable(41) != 42) return 1;
#endif
    asio::io_context ioc;
    bool ok = false;
    asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
        auto ex = co_await asio::this_coro::executor;  // (GCC 12: keep co_await out of the next line)
        zklock::session zk{ex, {.servers = servers}};
        co_await zk.async_connect(asio::use_awaitable);
        zklock::mutex m{zk, root + "/lock"};
        auto lease = co_await m.async_acquire(5s, asio::use_awaitable);
        const auto st = co_await zk.async_exists(root, asio::use_awaitable);
        ok = lease.owns_lock() && st.has_value();
        co_await lease.async_release(asio::use_awaitable);
        co_await zk.async_close(asio::use_awaitable);
    }, [&](std::exception_ptr e) {
        if (!e) return;
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& x) {
            std::fprintf(stderr, "zklock: %s\n", x.what());
        }
    });
    ioc.run_for(30s);
    if (!ok) {
        std::fprintf(stderr, "zklock did not take the lock beside the system's C client\n");
        return 1;
    }
#ifndef ZKLOCK_ONLY
    std::string back;
    if (!system_client(servers, root, back, false) || back != data) {
        std::fprintf(stderr, "the system's C client read back \"%s\"\n", back.c_str());
        return 1;
    }
#endif
    std::puts("ok");
    return 0;
}
