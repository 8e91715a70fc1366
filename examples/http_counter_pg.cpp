// examples/http_counter.cpp with its counter in PostgreSQL: the same HTTP service, its value and
// the highest fence it has seen in one row of a table, each fenced operation one SQL statement.
// One io_context, one thread per process: Beast for HTTP, zklock for ZooKeeper, libpq's
// non-blocking API for PostgreSQL (examples/pg_connection.hpp), coroutines for every connection.
//
//   http_counter_pg --pg CONNINFO [--port P] [--address 127.0.0.1] [--servers H:P,...] [--lock /path]
//                   [--cohort] [--hold-ms N] [--lock-timeout-ms N] [--session-timeout-ms N]
//                   [--db-timeout-ms N]
//
//   POST /increment  200 "<new value>\n"  the lock was held and the write accepted
//                    503 + Retry-After: 1  the lock was not acquired within --lock-timeout-ms, or
//                                          the database failed or did not answer within
//                                          --db-timeout-ms (the body says which)
//                    409                   the write was fenced off: a newer holder had been there
//   GET  /value      200 "<value>\n"
//
// CONNINFO is a libpq connection string ("host=127.0.0.1 port=5432 dbname=app"; a numeric address
// or a socket directory: libpq resolves a host name with a blocking getaddrinfo). The table must
// exist (docs/guide.md, "Fencing a PostgreSQL table", creates it):
//
//   counter (id integer PRIMARY KEY, value bigint, fence_zxid bigint, fence_local bigint), row id 1
//
// Prints "http_counter_pg listening on ADDRESS:PORT" once it serves (--port 0: a free port).
// --cohort acquires in cohort mode (zklock::lock_options::cohort). --hold-ms widens the critical
// section, between the read and the write, for the tests.
//
// The fence is lease::fence(), the pair {zxid, local}: in cohort mode the local holders of one
// node share its zxid and only the pair increases from holder to holder; without cohort mode
// local is 0 and the pair orders as fencing_token() does. SQL compares it as a row value.
//
// Why each statement is safe against a paused holder (see examples/http_counter.cpp for why the
// token is claimed when reading, not only when writing):
//  * kClaim reads the value and records our fence in one UPDATE, only if our fence is greater
//    than the one stored. kWrite writes only while the stored fence is still ours. Each runs
//    alone, in its own transaction (autocommit), at PostgreSQL's default READ COMMITTED.
//  * An UPDATE locks the row it changes until its transaction ends. If another transaction has
//    changed the row since our statement's snapshot, or is changing it now, our UPDATE waits for
//    that transaction and then evaluates its WHERE clause again against the newest committed
//    version of the row (PostgreSQL's EvalPlanQual re-check), not against its snapshot. So the
//    fence check always sees the latest fence, and no other writer can change the row between
//    the check and the write: a stale fence changes nothing, whatever runs beside it.
//  * No transaction is held open across the --hold-ms pause, so a paused holder holds no row
//    lock: the next holder is never blocked by it.
#include "pg_connection.hpp"

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

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// ---- the protected resource: one row of a PostgreSQL table ----------------------------------------

// $1, $2: the fence pair (zxid, local). docs/guide.md shows these two statements; a test checks
// that the guide and this file say the same.
constexpr const char* kClaim = R"(UPDATE counter SET fence_zxid = $1, fence_local = $2
 WHERE id = 1 AND (fence_zxid, fence_local) < ($1, $2)
RETURNING value)";
constexpr const char* kWrite = R"(UPDATE counter SET value = $3
 WHERE id = 1 AND (fence_zxid, fence_local) = ($1, $2))";
constexpr const char* kRead = "SELECT value FROM counter WHERE id = 1";

/// The counter's fenced operations, each one statement on a connection of a small pool: the
/// connections left idle by finished statements, a new one when none is idle. A connection whose
/// statement failed or timed out is closed, never reused.
class counter_table {
public:
    counter_table(asio::any_io_executor ex, std::string conninfo, std::chrono::milliseconds timeout)
        : ex_(std::move(ex)), conninfo_(std::move(conninfo)), timeout_(timeout)
    {
    }

    /// The value, and the holder's claim: refused (nullopt) unless `fence` is greater than every
    /// fence seen; otherwise the stored fence becomes `fence`, which fences off every older holder.
    awaitable<std::optional<std::int64_t>> fenced_read(zklock::fence_token fence)
    {
        const std::vector<std::string> params{std::to_string(fence.zxid), std::to_string(fence.local)};
        const auto r = co_await exec(kClaim, params);  // (GCC 12: no braced temporary next to a co_await)
        if (r.rows.empty()) co_return std::nullopt;
        co_return std::stoll(r.rows.front().front());
    }

    /// Writes `value`: refused (false) if a newer fence has been claimed since our read.
    awaitable<bool> fenced_write(std::int64_t value, zklock::fence_token fence)
    {
        const std::vector<std::string> params{std::to_string(fence.zxid), std::to_string(fence.local),
                                              std::to_string(value)};
        const auto r = co_await exec(kWrite, params);
        co_return r.affected == 1;
    }

    awaitable<std::int64_t> value()
    {
        const std::vector<std::string> none;
        const auto r = co_await exec(kRead, none);
        if (r.rows.empty()) throw pg::error("database: the table counter has no row with id 1");
        co_return std::stoll(r.rows.front().front());
    }

private:
    awaitable<pg::result> exec(const char* sql, const std::vector<std::string>& params)
    {
        std::unique_ptr<pg::connection> c;
        while (!idle_.empty() && !c) {
            c = std::move(idle_.back());
            idle_.pop_back();
            if (!c->usable()) c.reset();
        }
        if (!c) {
            c = std::make_unique<pg::connection>(ex_);
            co_await c->async_connect(conninfo_, timeout_);
        }
        auto r = co_await c->async_exec(sql, params, timeout_);  // throws: c is closed with this frame
        idle_.push_back(std::move(c));
        co_return r;
    }

    asio::any_io_executor ex_;
    std::string conninfo_;
    std::chrono::milliseconds timeout_;
    std::vector<std::unique_ptr<pg::connection>> idle_;
};

// ---- the service --------------------------------------------------------------------------------

struct options {
    std::string address = "127.0.0.1";
    unsigned short port = 0;
    std::string servers;
    std::string lock = "/zklock-examples/http-counter-pg";
    std::string pg;
    bool cohort = false;
    int hold_ms = 0;
    int lock_timeout_ms = 1000;
    int session_timeout_ms = 10'000;
    int db_timeout_ms = 2000;
};

struct service {
    options opts;
    zklock::mutex& lock;
    counter_table& counter;
};

using response = http::response<http::string_body>;

response reply(http::status status, std::string body, unsigned version)
{
    response res{status, version};
    res.set(http::field::server, "zklock-http-counter-pg");
    res.set(http::field::content_type, "text/plain");
    res.body() = std::move(body);
    return res;
}

response unavailable(std::string body, unsigned version)
{
    auto res = reply(http::status::service_unavailable, std::move(body), version);
    res.set(http::field::retry_after, "1");
    return res;
}

awaitable<response> increment(service& svc, unsigned version)
{
    auto [ec, lease] = co_await svc.lock.async_acquire(std::chrono::milliseconds(svc.opts.lock_timeout_ms), tuple);
    if (ec == zklock::errc::timeout || zklock::is_retryable(ec) || ec == zklock::errc::not_connected ||
        ec == zklock::errc::session_expired)
        co_return unavailable("lock busy: " + ec.message() + "\n", version);
    if (ec) co_return reply(http::status::internal_server_error, "lock: " + ec.message() + "\n", version);

    const auto fence = lease.fence();
    const auto fenced_off = [&] {
        return reply(http::status::conflict, "fenced off: a newer lock holder has been here\n", version);
    };
    std::optional<response> res;
    try {
        if (auto value = co_await svc.counter.fenced_read(fence); !value) {
            res = fenced_off();
        } else {
            if (svc.opts.hold_ms > 0) co_await pause(std::chrono::milliseconds(svc.opts.hold_ms));  // a slow computation
            if (co_await svc.counter.fenced_write(*value + 1, fence))
                res = reply(http::status::ok, std::to_string(*value + 1) + "\n", version);
            else
                res = fenced_off();
        }
    } catch (const pg::error& e) {
        res = unavailable(std::string(e.what()) + "\n", version);
    } catch (const std::exception& e) {  // anything else still releases the lock before the reply
        res = reply(http::status::internal_server_error, std::string(e.what()) + "\n", version);
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
    if (req.target() == "/value") {
        if (req.method() != http::verb::get) co_return reply(http::status::method_not_allowed, "use GET\n", req.version());
        std::optional<std::int64_t> value;
        std::string failure;
        try {
            value = co_await svc.counter.value();
        } catch (const pg::error& e) {
            failure = e.what();
        }
        if (!value) co_return unavailable(failure + "\n", req.version());
        co_return reply(http::status::ok, std::to_string(*value) + "\n", req.version());
    }
    co_return reply(http::status::not_found, "try POST /increment or GET /value\n", req.version());
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
        stream.expires_never();  // the handler bounds its own waits (--lock-timeout-ms, --db-timeout-ms)
        response res;
        try {
            res = co_await handle(svc, req);
        } catch (const std::exception& e) {
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
        std::fprintf(stderr, "http_counter_pg: cannot connect to %s: %s\n", o.servers.c_str(), ec.message().c_str());
        co_return 1;
    }
    // The database is checked once before serving: a wrong CONNINFO or a missing table is told now.
    counter_table counter{ex, o.pg, std::chrono::milliseconds(o.db_timeout_ms)};
    bool reachable = true;
    try {
        co_await counter.value();
    } catch (const pg::error& e) {
        std::fprintf(stderr, "http_counter_pg: %s\n", e.what());
        reachable = false;
    }
    if (!reachable) {
        co_await zk.async_close(tuple);
        co_return 1;
    }

    // Loopback by default; no resolver (asio's async_resolve would start a thread).
    const auto endpoint = tcp::endpoint(asio::ip::make_address(o.address), o.port);
    tcp::acceptor acceptor(ex, endpoint);
    std::printf("http_counter_pg listening on %s:%u\n", o.address.c_str(), static_cast<unsigned>(acceptor.local_endpoint().port()));
    std::fflush(stdout);

    zklock::lock_options lock_opts;
    lock_opts.cohort = o.cohort;
    zklock::mutex lock{zk, o.lock, lock_opts};
    service svc{o, lock, counter};
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
        if (a == "--cohort") {
            o.cohort = true;
            continue;
        }
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
        else if (a == "--pg") o.pg = v;
        else if (a == "--hold-ms") ok = number(o.hold_ms);
        else if (a == "--lock-timeout-ms") ok = number(o.lock_timeout_ms);
        else if (a == "--session-timeout-ms") ok = number(o.session_timeout_ms);
        else if (a == "--db-timeout-ms") ok = number(o.db_timeout_ms) && o.db_timeout_ms > 0;
        else ok = false;
        if (!ok) return false;
    }
    return !o.pg.empty();
}

}  // namespace

int main(int argc, char** argv)
{
    options o;
    if (!parse(argc, argv, o)) {
        std::fprintf(stderr,
                     "usage: http_counter_pg --pg CONNINFO [--port P] [--address 127.0.0.1] [--servers H:P,...]\n"
                     "                       [--lock /path] [--cohort] [--hold-ms N] [--lock-timeout-ms N]\n"
                     "                       [--session-timeout-ms N] [--db-timeout-ms N]\n");
        return 64;
    }
    asio::io_context ioc{1};
    int status = 1;
    asio::co_spawn(ioc, run(o), [&](std::exception_ptr e, int s) {
        try {
            if (e) std::rethrow_exception(e);
            status = s;
        } catch (const std::exception& err) {
            std::fprintf(stderr, "http_counter_pg: %s\n", err.what());
        }
        ioc.stop();
    });
    ioc.run();
    return status;
}
