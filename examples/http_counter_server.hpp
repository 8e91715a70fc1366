// The HTTP service of examples/http_counter.cpp and examples/http_counter_pg.cpp: instances share
// one counter, kept in a store, guarded by a zklock mutex and protected by fencing. One io_context,
// one thread per process: Beast for HTTP, zklock for ZooKeeper, coroutines for every connection.
// Each program's main chooses its store (a file, a PostgreSQL row) and reads its own options;
// this header is the rest, the same for both.
//
//   POST /increment  200 "<new value>\n"  the lock was held and the write accepted
//                    503 + Retry-After: 1  the lock was not acquired within --lock-timeout-ms, or
//                                          the store could not answer (store_unavailable; the body
//                                          says which)
//                    409                   the write was fenced off: a newer holder had been there
//   GET  /value      200 "<value>\n"
//   GET  /metrics    200 the session's metrics in the Prometheus text format (zklock/metrics.hpp),
//                        in a program that serves them (options::metrics)
//
// Prints "NAME listening on ADDRESS:PORT" once it serves (--port 0: a free port).
// --hold-ms widens the critical section, between the read and the write, for the tests.
// Server list from --servers, else $ZK_SERVERS, else 127.0.0.1:2181. SIGINT/SIGTERM: stop.
#pragma once

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

#include <algorithm>
#include <charconv>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace http_counter {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::awaitable;
using asio::ip::tcp;

inline constexpr auto tuple = asio::as_tuple(asio::use_awaitable);

inline awaitable<void> pause(std::chrono::steady_clock::duration d)
{
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(tuple);
}

/// Thrown by a store that cannot answer now (its database down or too slow): the request gets
/// 503 with Retry-After, and what() as its body.
struct store_unavailable : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// The protected resource. Each operation is checked by the store itself, atomically with the
/// change, against the highest fence it has seen; the store says which of the lease's fences it
/// records (fencing_token(), or fence() when holders may share a node in cohort mode).
template <class S>
concept counter_store = requires(S& store, const zklock::lease& lease, std::int64_t value) {
    /// The value, and the holder's claim: nullopt (fenced off) if a newer fence has been seen;
    /// otherwise the stored fence becomes the lease's, which fences off every older holder.
    { store.fenced_read(lease) } -> std::same_as<awaitable<std::optional<std::int64_t>>>;
    /// Writes `value`: false (fenced off) if a newer fence has been claimed since our read.
    { store.fenced_write(value, lease) } -> std::same_as<awaitable<bool>>;
    /// The value, for GET /value and for the check made once before serving.
    { store.value() } -> std::same_as<awaitable<std::int64_t>>;
};

struct options {
    std::string name;      ///< the program: its output, its Server header, its metrics' app label
    bool metrics = false;  ///< serve GET /metrics
    std::string address = "127.0.0.1";
    unsigned short port = 0;
    std::string servers;
    std::string lock;
    bool cohort = false;  ///< acquire in cohort mode (zklock::lock_options::cohort)
    int hold_ms = 0;
    int lock_timeout_ms = 1000;
    int session_timeout_ms = 10'000;
};

/// Parses `v` whole as a number.
template <class T>
bool number(const char* v, T& out)
{
    auto [p, ec] = std::from_chars(v, v + std::strlen(v), out);
    return ec == std::errc{} && *p == '\0';
}

/// A command-line option of one program only: `take` gets its value (nullptr for a flag) and
/// says whether it is good.
struct extra_option {
    std::string_view name;
    std::function<bool(const char* value)> take;
    bool flag = false;
};

/// Reads the command line into `o`, and the program's own options through `extra`: false on an
/// unknown option, a missing or bad value.
inline bool parse(int argc, char** argv, options& o, std::initializer_list<extra_option> extra)
{
    const char* env = std::getenv("ZK_SERVERS");
    o.servers = env && *env ? env : "127.0.0.1:2181";
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        const auto own = std::find_if(extra.begin(), extra.end(), [&](const extra_option& e) { return e.name == a; });
        if (own != extra.end() && own->flag) {
            if (!own->take(nullptr)) return false;
            continue;
        }
        if (i + 1 >= argc) return false;
        const char* v = argv[++i];
        bool ok = true;
        if (own != extra.end()) ok = own->take(v);
        else if (a == "--address") o.address = v;
        else if (a == "--port") ok = number(v, o.port);
        else if (a == "--servers") o.servers = v;
        else if (a == "--lock") o.lock = v;
        else if (a == "--hold-ms") ok = number(v, o.hold_ms);
        else if (a == "--lock-timeout-ms") ok = number(v, o.lock_timeout_ms);
        else if (a == "--session-timeout-ms") ok = number(v, o.session_timeout_ms);
        else ok = false;
        if (!ok) return false;
    }
    return true;
}

using response = http::response<http::string_body>;

/// The HTTP side: one coroutine per connection, each request handled in turn.
template <counter_store Store>
class server {
public:
    server(const options& o, zklock::session& zk, zklock::mutex& lock, Store& store)
        : opts_(o), zk_(zk), lock_(lock), store_(store)
    {
        // "zklock-http-counter" for http_counter
        server_header_ = "zklock-" + o.name;
        std::replace(server_header_.begin(), server_header_.end(), '_', '-');
    }

    /// Accepts until the acceptor is closed; every connection runs detached, on its executor.
    awaitable<void> accept_loop(tcp::acceptor& acceptor)
    {
        for (;;) {
            auto [ec, socket] = co_await acceptor.async_accept(tuple);
            if (ec == asio::error::operation_aborted) co_return;  // closed: shutting down
            if (ec) continue;
            asio::co_spawn(acceptor.get_executor(), connection(std::move(socket)), asio::detached);
        }
    }

private:
    response reply(http::status status, std::string body, unsigned version) const
    {
        response res{status, version};
        res.set(http::field::server, server_header_);
        res.set(http::field::content_type, "text/plain");
        res.body() = std::move(body);
        return res;
    }

    response unavailable(std::string body, unsigned version) const
    {
        auto res = reply(http::status::service_unavailable, std::move(body), version);
        res.set(http::field::retry_after, "1");
        return res;
    }

    awaitable<response> increment(unsigned version)
    {
        auto [ec, lease] = co_await lock_.async_acquire(std::chrono::milliseconds(opts_.lock_timeout_ms), tuple);
        if (ec == zklock::errc::timeout || zklock::is_retryable(ec) || ec == zklock::errc::not_connected ||
            ec == zklock::errc::session_expired)
            co_return unavailable("lock busy: " + ec.message() + "\n", version);
        if (ec) co_return reply(http::status::internal_server_error, "lock: " + ec.message() + "\n", version);

        // (Checking lease.owns_lock() here would be a cheap early exit, and no protection: the pause
        // the fence guards against can come right after such a check.)
        const auto fenced_off = [&] {
            return reply(http::status::conflict, "fenced off: a newer lock holder has been here\n", version);
        };
        std::optional<response> res;
        try {
            if (auto value = co_await store_.fenced_read(lease); !value) {
                res = fenced_off();
            } else {
                if (opts_.hold_ms > 0) co_await pause(std::chrono::milliseconds(opts_.hold_ms));  // a slow computation
                if (co_await store_.fenced_write(*value + 1, lease))
                    res = reply(http::status::ok, std::to_string(*value + 1) + "\n", version);
                else
                    res = fenced_off();
            }
        } catch (const store_unavailable& e) {
            res = unavailable(std::string(e.what()) + "\n", version);
        } catch (const std::exception& e) {  // anything else still releases the lock before the reply
            res = reply(http::status::internal_server_error, std::string(e.what()) + "\n", version);
        }
        co_await lease.async_release(tuple);  // (if the lock was lost meanwhile, the node is gone: fine)
        co_return std::move(*res);
    }

    awaitable<response> handle(const http::request<http::string_body>& req)
    {
        if (req.target() == "/increment") {
            if (req.method() != http::verb::post) co_return reply(http::status::method_not_allowed, "use POST\n", req.version());
            co_return co_await increment(req.version());
        }
        if (opts_.metrics && req.target() == "/metrics") {
            if (req.method() != http::verb::get) co_return reply(http::status::method_not_allowed, "use GET\n", req.version());
            // Handlers run on the session's executor (one io_context, one thread): metrics() may be
            // called here. The label goes on every sample (a program with several sessions gives each
            // its own, with the vector overload of to_prometheus).
            //[metrics_page
            auto res = reply(http::status::ok, zklock::to_prometheus(zk_.metrics(), {{"app", opts_.name}}), req.version());
            res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
            //]
            co_return res;
        }
        if (req.target() == "/value") {
            if (req.method() != http::verb::get) co_return reply(http::status::method_not_allowed, "use GET\n", req.version());
            std::optional<std::int64_t> value;
            std::string failure;
            try {
                value = co_await store_.value();
            } catch (const store_unavailable& e) {
                failure = e.what();
            }
            if (!value) co_return unavailable(failure + "\n", req.version());
            co_return reply(http::status::ok, std::to_string(*value) + "\n", req.version());
        }
        co_return reply(http::status::not_found,
                        opts_.metrics ? "try POST /increment, GET /value or GET /metrics\n" : "try POST /increment or GET /value\n",
                        req.version());
    }

    awaitable<void> connection(tcp::socket socket)
    {
        using namespace std::chrono_literals;
        beast::tcp_stream stream(std::move(socket));
        beast::flat_buffer buffer;
        for (;;) {
            http::request<http::string_body> req;
            stream.expires_after(60s);  // an idle keep-alive connection
            auto [rec, n] = co_await http::async_read(stream, buffer, req, tuple);
            if (rec) break;  // end of stream, timeout, garbage
            stream.expires_never();  // the handler bounds its own waits (--lock-timeout-ms, the store's)
            response res;
            try {
                res = co_await handle(req);
            } catch (const std::exception& e) {  // the store failed outside a fenced operation
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

    const options& opts_;
    zklock::session& zk_;
    zklock::mutex& lock_;
    Store& store_;
    std::string server_header_;
};

/// Connects to ZooKeeper, checks the store once (a wrong address or a missing table is told
/// now, not at the first request), then serves until SIGINT or SIGTERM. Returns the exit status.
template <counter_store Store>
awaitable<int> run(options o, Store& store)
{
    auto ex = co_await asio::this_coro::executor;
    zklock::session_config config;  // (GCC 12: no braced temporary next to a co_await)
    config.servers = o.servers;
    config.session_timeout = std::chrono::milliseconds(o.session_timeout_ms);
    zklock::session zk{ex, config};
    if (auto [ec] = co_await zk.async_connect(tuple); ec) {
        std::fprintf(stderr, "%s: cannot connect to %s: %s\n", o.name.c_str(), o.servers.c_str(), ec.message().c_str());
        co_return 1;
    }
    bool reachable = true;
    try {
        co_await store.value();
    } catch (const store_unavailable& e) {
        std::fprintf(stderr, "%s: %s\n", o.name.c_str(), e.what());
        reachable = false;
    }
    if (!reachable) {
        co_await zk.async_close(tuple);
        co_return 1;
    }

    // Loopback by default; no resolver (asio's async_resolve would start a thread).
    const auto endpoint = tcp::endpoint(asio::ip::make_address(o.address), o.port);
    tcp::acceptor acceptor(ex, endpoint);
    std::printf("%s listening on %s:%u\n", o.name.c_str(), o.address.c_str(),
                static_cast<unsigned>(acceptor.local_endpoint().port()));
    std::fflush(stdout);

    // One mutex for every request: each acquire queues its own node (or, in cohort mode, the
    // requests of this process share one).
    zklock::lock_options lock_opts;
    lock_opts.cohort = o.cohort;
    zklock::mutex lock{zk, o.lock, lock_opts};
    server<Store> http_server{o, zk, lock, store};
    asio::signal_set stop(ex, SIGINT, SIGTERM);
    stop.async_wait([&](beast::error_code ec, int) {
        if (!ec) acceptor.close();
    });
    co_await http_server.accept_loop(acceptor);

    co_await zk.async_close(tuple);
    co_return 0;  // serve() stops the io_context: open connections are dropped with it
}

/// Runs the service on `ioc` (one thread: this one) until it stops; the exit status.
template <counter_store Store>
int serve(asio::io_context& ioc, const options& o, Store& store)
{
    int status = 1;
    asio::co_spawn(ioc, run(o, store), [&](std::exception_ptr e, int s) {
        try {
            if (e) std::rethrow_exception(e);
            status = s;
        } catch (const std::exception& err) {
            std::fprintf(stderr, "%s: %s\n", o.name.c_str(), err.what());
        }
        ioc.stop();
    });
    ioc.run();
    return status;
}

}  // namespace http_counter
