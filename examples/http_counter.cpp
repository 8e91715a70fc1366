// An HTTP service whose instances share one counter, kept in a file, guarded by a zklock mutex and
// protected by fencing tokens. One io_context, one thread per process: Beast for HTTP, zklock for
// ZooKeeper, coroutines for every connection.
//
//   http_counter --file F [--port P] [--address 127.0.0.1] [--servers H:P,...] [--lock /path]
//                [--hold-ms N] [--lock-timeout-ms N] [--session-timeout-ms N]
//
//   POST /increment  200 "<new value>\n"  the lock was held and the write accepted
//                    503 + Retry-After: 1  the lock was not acquired within --lock-timeout-ms
//                    409                   the write was fenced off: a newer holder had been there
//   GET  /value      200 "<value>\n"
//   GET  /metrics    200 the session's metrics in the Prometheus text format (zklock/metrics.hpp)
//
// Prints "http_counter listening on ADDRESS:PORT" once it serves (--port 0: a free port).
// --hold-ms widens the critical section, between the read and the write, for the tests.
// Server list from --servers, else $ZK_SERVERS, else 127.0.0.1:2181. SIGINT/SIGTERM: stop.
//
// Why fencing tokens, and not only the lock
// -----------------------------------------
// The lock alone does not make read-modify-write safe. A holder can be paused (a GC, SIGSTOP, a
// frozen VM, a long disk stall) for longer than its session timeout. ZooKeeper then expires its
// session, deletes its node and grants the lock to the next waiter, while the paused process
// still believes it holds the lock; it cannot find out before it writes, because the pause can
// fall between any check it makes and the write itself. When it resumes, it writes a value computed
// from a stale read: an update is lost.
//
// The fencing token (the holder's node creation zxid, lease::fencing_token()) strictly increases
// from one holder to the next. The resource remembers the highest token it has seen and refuses
// operations that carry a lower one: the paused holder's write carries its old token and is
// refused (409) however long it slept. Two things make that work:
//  * The check is made by the resource, atomically with the write (here: under an flock of the
//    counter's lock file, held for microseconds, never across a wait). A check made by the client
//    before writing would reopen the window it is meant to close.
//  * The token is recorded when the holder reads, not only when it writes. Otherwise a new holder
//    B could read, the paused A could then write with its old token (still newer than the stored
//    one, as B has not written yet), and B would overwrite A's increment with a value computed
//    before it.
// A real service keeps the counter in a store that can do this conditional update itself (a
// database row with a token column, an object store's conditional put); the file stands for it.
#include <zklock/zklock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::awaitable;
using asio::ip::tcp;
using namespace std::chrono_literals;

namespace {

constexpr auto tuple = asio::as_tuple(asio::use_awaitable);

awaitable<void> pause(std::chrono::steady_clock::duration d)
{
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(tuple);
}

// ---- the protected resource: "value token" in a file --------------------------------------------

struct counter_state {
    std::int64_t value = 0;
    std::int64_t token = 0;  ///< the highest fencing token the counter has seen
};

/// The counter file, with the fenced operations a real store would offer. Every operation takes
/// an flock of "<file>.lock" for its few microseconds (the data file itself is replaced by
/// rename, so that readers never see a half-written one, and cannot carry the lock).
class counter_file {
public:
    explicit counter_file(std::string path) : path_(std::move(path)) {}

    /// The value, and the holder's claim: refused (nullopt) if a newer token has been seen;
    /// otherwise the stored token becomes `token`, which fences off every older holder from now on.
    awaitable<std::optional<std::int64_t>> fenced_read(std::int64_t token)
    {
        auto guard = co_await lock();
        auto s = load();
        if (s.token > token) co_return std::nullopt;
        if (s.token < token) store({s.value, token});
        co_return s.value;
    }

    /// Writes `value`: refused (false) if a newer token has been seen since our read.
    awaitable<bool> fenced_write(std::int64_t value, std::int64_t token)
    {
        auto guard = co_await lock();
        if (load().token > token) co_return false;
        store({value, token});
        co_return true;
    }

    counter_state peek() const { return load(); }

private:
    struct unlock {
        void operator()(int* fd) const
        {
            ::flock(*fd, LOCK_UN);
            ::close(*fd);
            delete fd;
        }
    };
    using file_lock = std::unique_ptr<int, unlock>;

    /// flock without blocking the thread: try, and try again 1 ms later.
    awaitable<file_lock> lock()
    {
        const std::string lock_path = path_ + ".lock";
        const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) throw std::system_error(errno, std::generic_category(), "open " + lock_path);
        file_lock guard(new int(fd));
        while (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
            if (errno != EWOULDBLOCK && errno != EINTR) throw std::system_error(errno, std::generic_category(), "flock");
            co_await pause(1ms);
        }
        co_return guard;
    }

    counter_state load() const
    {
        counter_state s;
        if (FILE* f = std::fopen(path_.c_str(), "r")) {
            long long v = 0, t = 0;
            if (std::fscanf(f, "%lld %lld", &v, &t) == 2) s = {v, t};
            std::fclose(f);
        }
        return s;
    }

    void store(counter_state s) const
    {
        const std::string tmp = path_ + ".tmp." + std::to_string(::getpid());
        FILE* f = std::fopen(tmp.c_str(), "w");
        if (!f) throw std::system_error(errno, std::generic_category(), "open " + tmp);
        std::fprintf(f, "%lld %lld\n", static_cast<long long>(s.value), static_cast<long long>(s.token));
        if (std::fclose(f) != 0 || std::rename(tmp.c_str(), path_.c_str()) != 0)
            throw std::system_error(errno, std::generic_category(), "write " + path_);
    }

    std::string path_;
};

// ---- the service --------------------------------------------------------------------------------

struct options {
    std::string address = "127.0.0.1";
    unsigned short port = 0;
    std::string servers;
    std::string lock = "/zklock-examples/http-counter";
    std::string file;
    int hold_ms = 0;
    int lock_timeout_ms = 1000;
    int session_timeout_ms = 10'000;
};

struct service {
    options opts;
    zklock::session& zk;
    counter_file counter;
};

using response = http::response<http::string_body>;

response reply(http::status status, std::string body, unsigned version)
{
    response res{status, version};
    res.set(http::field::server, "zklock-http-counter");
    res.set(http::field::content_type, "text/plain");
    res.body() = std::move(body);
    return res;
}

awaitable<response> increment(service& svc, unsigned version)
{
    zklock::mutex m{svc.zk, svc.opts.lock};
    auto [ec, lease] = co_await m.async_acquire(std::chrono::milliseconds(svc.opts.lock_timeout_ms), tuple);
    if (ec == zklock::errc::timeout || zklock::is_retryable(ec) || ec == zklock::errc::not_connected ||
        ec == zklock::errc::session_expired) {
        auto res = reply(http::status::service_unavailable, "lock busy: " + ec.message() + "\n", version);
        res.set(http::field::retry_after, "1");
        co_return res;
    }
    if (ec) co_return reply(http::status::internal_server_error, "lock: " + ec.message() + "\n", version);

    const auto token = lease.fencing_token();
    // (Checking lease.owns_lock() here would be a cheap early exit, and no protection: the pause
    // the fencing token guards against can come right after such a check.)
    auto value = co_await svc.counter.fenced_read(token);
    std::optional<response> res;
    if (!value) {
        res = reply(http::status::conflict, "fenced off: a newer lock holder has been here\n", version);
    } else {
        if (svc.opts.hold_ms > 0) co_await pause(std::chrono::milliseconds(svc.opts.hold_ms));  // a slow computation
        if (co_await svc.counter.fenced_write(*value + 1, token))
            res = reply(http::status::ok, std::to_string(*value + 1) + "\n", version);
        else
            res = reply(http::status::conflict, "fenced off: a newer lock holder has been here\n", version);
    }
    co_await lease.async_release(tuple);  // (if the lock was lost meanwhile, the node is gone: fine)
    co_return std::move(*res);
}

awaitable<response> handle(service& svc, const http::request<http::string_body>& req)
{
    if (req.target() == "/increment") {
        if (req.method() != http::verb::post) co_return reply(http::status::method_not_allowed, "use POST\n", req.version());
        co_return co_await increment(svc, req.version());
    }
    if (req.target() == "/metrics") {
        if (req.method() != http::verb::get) co_return reply(http::status::method_not_allowed, "use GET\n", req.version());
        // Handlers run on the session's executor (one io_context, one thread): metrics() may be
        // called here. The label goes on every sample (a program with several sessions gives each
        // its own, with the vector overload of to_prometheus).
        auto res = reply(http::status::ok, zklock::to_prometheus(svc.zk.metrics(), {{"app", "http_counter"}}),
                         req.version());
        res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
        co_return res;
    }
    if (req.target() == "/value") {
        if (req.method() != http::verb::get) co_return reply(http::status::method_not_allowed, "use GET\n", req.version());
        co_return reply(http::status::ok, std::to_string(svc.counter.peek().value) + "\n", req.version());
    }
    co_return reply(http::status::not_found, "try POST /increment, GET /value or GET /metrics\n", req.version());
}

awaitable<void> connection(service& svc, tcp::socket socket)
{
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    for (;;) {
        http::request<http::string_body> req;
        stream.expires_after(60s);  // an idle keep-alive connection
        auto [rec, n] = co_await http::async_read(stream, buffer, req, tuple);
        if (rec) break;  // end of stream, timeout, garbage
        stream.expires_never();  // the handler bounds its own wait (--lock-timeout-ms)
        response res;
        try {
            res = co_await handle(svc, req);
        } catch (const std::exception& e) {  // the counter file could not be read or written
            res = reply(http::status::internal_server_error, std::string(e.what()) + "\n", req.version());
        }
        res.keep_alive(req.keep_alive());
        res.prepare_payload();
        stream.expires_after(30s);
        auto [wec, wn] = co_await http::async_write(stream, res, tuple);
        if (wec || !res.keep_alive()) break;
    }
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

awaitable<void> accept_loop(service& svc, tcp::acceptor& acceptor)
{
    for (;;) {
        auto [ec, socket] = co_await acceptor.async_accept(tuple);
        if (ec == asio::error::operation_aborted) co_return;  // closed: shutting down
        if (ec) continue;
        asio::co_spawn(acceptor.get_executor(), connection(svc, std::move(socket)), asio::detached);
    }
}

awaitable<int> run(options o)
{
    auto ex = co_await asio::this_coro::executor;
    zklock::session_config config;  // (GCC 12: no braced temporary next to a co_await)
    config.servers = o.servers;
    config.session_timeout = std::chrono::milliseconds(o.session_timeout_ms);
    zklock::session zk{ex, config};
    if (auto [ec] = co_await zk.async_connect(tuple); ec) {
        std::fprintf(stderr, "http_counter: cannot connect to %s: %s\n", o.servers.c_str(), ec.message().c_str());
        co_return 1;
    }

    // Loopback by default; no resolver (asio's async_resolve would start a thread).
    const auto endpoint = tcp::endpoint(asio::ip::make_address(o.address), o.port);
    tcp::acceptor acceptor(ex, endpoint);
    std::printf("http_counter listening on %s:%u\n", o.address.c_str(), static_cast<unsigned>(acceptor.local_endpoint().port()));
    std::fflush(stdout);

    service svc{o, zk, counter_file{o.file}};
    asio::signal_set stop(ex, SIGINT, SIGTERM);
    stop.async_wait([&](beast::error_code ec, int) {
        if (!ec) acceptor.close();
    });
    co_await accept_loop(svc, acceptor);

    co_await zk.async_close(tuple);
    co_return 0;  // main stops the io_context: open connections are dropped with it
}

bool parse(int argc, char** argv, options& o)
{
    const char* env = std::getenv("ZK_SERVERS");
    o.servers = env && *env ? env : "127.0.0.1:2181";
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (i + 1 >= argc) return false;
        const char* v = argv[++i];
        auto number = [&](auto& out) {
            auto [p, ec] = std::from_chars(v, v + std::strlen(v), out);
            return ec == std::errc{} && *p == '\0';
        };
        bool ok = true;
        if (a == "--address") o.address = v;
        else if (a == "--port") ok = number(o.port);
        else if (a == "--servers") o.servers = v;
        else if (a == "--lock") o.lock = v;
        else if (a == "--file") o.file = v;
        else if (a == "--hold-ms") ok = number(o.hold_ms);
        else if (a == "--lock-timeout-ms") ok = number(o.lock_timeout_ms);
        else if (a == "--session-timeout-ms") ok = number(o.session_timeout_ms);
        else ok = false;
        if (!ok) return false;
    }
    return !o.file.empty();
}

}  // namespace

int main(int argc, char** argv)
{
    options o;
    if (!parse(argc, argv, o)) {
        std::fprintf(stderr,
                     "usage: http_counter --file F [--port P] [--address 127.0.0.1] [--servers H:P,...] [--lock /path]\n"
                     "                    [--hold-ms N] [--lock-timeout-ms N] [--session-timeout-ms N]\n");
        return 64;
    }
    asio::io_context ioc{1};
    int status = 1;
    asio::co_spawn(ioc, run(o), [&](std::exception_ptr e, int s) {
        try {
            if (e) std::rethrow_exception(e);
            status = s;
        } catch (const std::exception& err) {
            std::fprintf(stderr, "http_counter: %s\n", err.what());
        }
        ioc.stop();
    });
    ioc.run();
    return status;
}
