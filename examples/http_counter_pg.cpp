// examples/http_counter.cpp with its counter in PostgreSQL: the same HTTP service
// (examples/http_counter_server.hpp), its value and the highest fence it has seen in one row of a
// table, each fenced operation one SQL statement. One io_context, one thread per process: Beast for
// HTTP, zklock for ZooKeeper, libpq's non-blocking API for PostgreSQL (examples/pg_connection.hpp),
// coroutines for every connection. This file is its store, the counter table, and its main.
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
#include "http_counter_server.hpp"
#include "pg_connection.hpp"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace asio = boost::asio;
using http_counter::awaitable;

// ---- the protected resource: one row of a PostgreSQL table ----------------------------------------

// $1, $2: the fence pair (zxid, local). docs/guide.md shows these two statements; a test checks
// that the guide and this file say the same.
constexpr const char* kClaim = R"(UPDATE counter SET fence_zxid = $1, fence_local = $2
 WHERE id = 1 AND (fence_zxid, fence_local) < ($1, $2)
RETURNING value)";
constexpr const char* kWrite = R"(UPDATE counter SET value = $3
 WHERE id = 1 AND (fence_zxid, fence_local) = ($1, $2))";
constexpr const char* kRead = "SELECT value FROM counter WHERE id = 1";

/// The counter's fenced operations (the concept http_counter::counter_store), each one statement
/// on a connection of a small pool: the connections left idle by finished statements, a new one
/// when none is idle. A connection whose statement failed or timed out is closed, never reused;
/// the failure reaches the service as http_counter::store_unavailable. The fence it records is
/// the lease's fence(): in cohort mode only the pair increases from holder to holder.
class counter_table {
public:
    counter_table(asio::any_io_executor ex, std::string conninfo, std::chrono::milliseconds timeout)
        : ex_(std::move(ex)), conninfo_(std::move(conninfo)), timeout_(timeout)
    {
    }

    /// The value, and the holder's claim: refused (nullopt) unless the lease's fence is greater
    /// than every fence seen; otherwise the stored fence becomes the lease's, which fences off
    /// every older holder.
    awaitable<std::optional<std::int64_t>> fenced_read(const zklock::lease& lease)
    {
        const auto fence = lease.fence();
        const std::vector<std::string> params{std::to_string(fence.zxid), std::to_string(fence.local)};
        const auto r = co_await exec(kClaim, params);  // (GCC 12: no braced temporary next to a co_await)
        if (r.rows.empty()) co_return std::nullopt;
        co_return std::stoll(r.rows.front().front());
    }

    /// Writes `value`: refused (false) if a newer fence has been claimed since our read.
    awaitable<bool> fenced_write(std::int64_t value, const zklock::lease& lease)
    {
        const auto fence = lease.fence();
        const std::vector<std::string> params{std::to_string(fence.zxid), std::to_string(fence.local),
                                              std::to_string(value)};
        const auto r = co_await exec(kWrite, params);
        co_return r.affected == 1;
    }

    awaitable<std::int64_t> value()
    {
        const std::vector<std::string> none;
        const auto r = co_await exec(kRead, none);
        if (r.rows.empty()) throw http_counter::store_unavailable("database: the table counter has no row with id 1");
        co_return std::stoll(r.rows.front().front());
    }

private:
    awaitable<pg::result> exec(const char* sql, const std::vector<std::string>& params)
    {
        try {
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
            auto r = co_await c->async_exec(sql, params, timeout_);  // throws: c is closed on the way out
            idle_.push_back(std::move(c));
            co_return r;
        } catch (const pg::error& e) {
            throw http_counter::store_unavailable(e.what());
        }
    }

    asio::any_io_executor ex_;
    std::string conninfo_;
    std::chrono::milliseconds timeout_;
    std::vector<std::unique_ptr<pg::connection>> idle_;
};

}  // namespace

int main(int argc, char** argv)
{
    http_counter::options o;
    o.name = "http_counter_pg";
    o.lock = "/zklock-examples/http-counter-pg";
    std::string conninfo;
    int db_timeout_ms = 2000;
    const bool parsed = http_counter::parse(
        argc, argv, o,
        {{"--pg",
          [&](const char* v) {
              conninfo = v;
              return true;
          }},
         {"--db-timeout-ms", [&](const char* v) { return http_counter::number(v, db_timeout_ms) && db_timeout_ms > 0; }},
         {"--cohort",
          [&](const char*) {
              o.cohort = true;
              return true;
          },
          true}});
    if (!parsed || conninfo.empty()) {
        std::fprintf(stderr,
                     "usage: http_counter_pg --pg CONNINFO [--port P] [--address 127.0.0.1] [--servers H:P,...]\n"
                     "                       [--lock /path] [--cohort] [--hold-ms N] [--lock-timeout-ms N]\n"
                     "                       [--session-timeout-ms N] [--db-timeout-ms N]\n");
        return 64;
    }
    asio::io_context ioc{1};
    counter_table counter{ioc.get_executor(), conninfo, std::chrono::milliseconds(db_timeout_ms)};
    return http_counter::serve(ioc, o, counter);
}
