// PostgreSQL from an Asio program without blocking its executor: libpq's non-blocking API
// (PQconnectStart/PQconnectPoll, PQsendQueryParams, PQflush, PQconsumeInput, PQisBusy), its socket
// waited on through an asio::posix::stream_descriptor on the caller's executor. Used by
// examples/http_counter_pg.cpp; a few lines of glue, not a client library.
//
// Every operation is bounded by a timeout (a server that stops answering is an error, not a hang)
// and throws pg::error on failure. A statement that timed out has an unknown outcome: it may have
// reached the server, which runs it when it wakes up. A connection that failed or timed out must not be used again:
// its protocol state is unknown (usable() says so); destroy it and connect another.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <libpq-fe.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace pg {

namespace asio = boost::asio;

/// A failure to reach the database or to run a statement; what() says which, in libpq's words.
struct error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// What a statement returned: its rows (text format; NULL as ""), and the number of rows it
/// affected (PQcmdTuples: an UPDATE's count).
struct result {
    std::vector<std::vector<std::string>> rows;
    long affected = 0;
};

class connection {
public:
    using executor_type = asio::any_io_executor;

    explicit connection(executor_type ex) : socket_(std::move(ex)) {}
    ~connection()
    {
        if (socket_.is_open()) socket_.release();  // libpq owns the descriptor and closes it
        if (conn_) PQfinish(conn_);
    }
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    executor_type get_executor() { return socket_.get_executor(); }
    bool usable() const { return conn_ && usable_ && PQstatus(conn_) == CONNECTION_OK; }

    /// Connects with a libpq connection string ("host=127.0.0.1 port=5432 dbname=app"). Give a
    /// numeric address (host=, hostaddr=) or a socket directory: libpq resolves a host name with
    /// getaddrinfo, which blocks the thread.
    asio::awaitable<void> async_connect(const std::string& conninfo, std::chrono::steady_clock::duration timeout)
    {
        conn_ = PQconnectStart(conninfo.c_str());
        if (!conn_) throw error("database: out of memory");
        if (PQstatus(conn_) == CONNECTION_BAD) throw error("database: " + message());
        co_await bounded(timeout, handshake());
        if (PQsetnonblocking(conn_, 1) != 0) throw error("database: " + message());
        usable_ = true;
    }

    /// Runs one statement with text parameters ($1, $2, ...; their types inferred by the server).
    asio::awaitable<result> async_exec(const char* sql, const std::vector<std::string>& params,
                                       std::chrono::steady_clock::duration timeout)
    {
        if (!usable()) throw error("database: the connection is not usable");
        usable_ = false;  // until the statement has completed
        std::vector<const char*> values;
        for (const auto& p : params) values.push_back(p.c_str());
        if (!PQsendQueryParams(conn_, sql, static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0))
            throw error("database: " + message());
        auto r = co_await bounded(timeout, exchange());
        usable_ = true;
        co_return r;
    }

private:
    using wait_type = asio::posix::stream_descriptor::wait_type;

    std::string message() const
    {
        std::string m = conn_ ? PQerrorMessage(conn_) : "no connection";
        while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
        return m;
    }

    /// `op`, or pg::error once `timeout` has passed (the op is cancelled: its wait ends). The op's
    /// own failure is caught and rethrown here: awaitable_operators' `||` waits for the first
    /// *success*, and would otherwise wait out the timer.
    asio::awaitable<result> bounded(std::chrono::steady_clock::duration timeout, asio::awaitable<result> op)
    {
        using namespace asio::experimental::awaitable_operators;
        using outcome = std::pair<std::exception_ptr, result>;
        auto caught = [](asio::awaitable<result> op) -> asio::awaitable<outcome> {
            try {
                co_return outcome{nullptr, co_await std::move(op)};
            } catch (...) {
                co_return outcome{std::current_exception(), {}};
            }
        };
        asio::steady_timer timer(socket_.get_executor(), timeout);
        auto r = co_await (caught(std::move(op)) || timer.async_wait(asio::use_awaitable));
        if (r.index() == 1) {
            usable_ = false;
            throw error("database: no answer within " +
                        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) +
                        " ms (what was sent may still be applied)");
        }
        auto& [failure, value] = std::get<0>(r);
        if (failure) std::rethrow_exception(failure);
        co_return std::move(value);
    }

    asio::awaitable<void> wait(wait_type what) { co_await socket_.async_wait(what, asio::use_awaitable); }

    /// PQconnectPoll until it says OK, waiting for what it asks. libpq may close its socket and
    /// open another one (another address of the host, an SSL retry) under the same number: the
    /// descriptor is handed to the reactor afresh before every wait.
    asio::awaitable<result> handshake()
    {
        for (auto status = PGRES_POLLING_WRITING;;) {
            if (status == PGRES_POLLING_OK) co_return result{};
            if (status == PGRES_POLLING_FAILED || PQsocket(conn_) < 0) throw error("database: " + message());
            if (socket_.is_open()) socket_.release();
            socket_.assign(PQsocket(conn_));
            co_await wait(status == PGRES_POLLING_READING ? wait_type::wait_read : wait_type::wait_write);
            status = PQconnectPoll(conn_);
        }
    }

    /// Sends what libpq has queued, then reads until the last result has come.
    asio::awaitable<result> exchange()
    {
        using namespace asio::experimental::awaitable_operators;
        // PQflush: 1 while output remains. The server may be sending meanwhile: read too, or
        // both sides could wait for each other.
        for (;;) {
            const int f = PQflush(conn_);
            if (f < 0) throw error("database: " + message());
            if (f == 0) break;
            co_await (wait(wait_type::wait_write) || wait(wait_type::wait_read));
            if (!PQconsumeInput(conn_)) throw error("database: " + message());
        }
        result out;
        std::string failure;
        for (;;) {
            while (PQisBusy(conn_)) {
                co_await wait(wait_type::wait_read);
                if (!PQconsumeInput(conn_)) throw error("database: " + message());
            }
            PGresult* res = PQgetResult(conn_);
            if (!res) break;
            const auto status = PQresultStatus(res);
            if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) {
                for (int i = 0; i < PQntuples(res); ++i) {
                    auto& row = out.rows.emplace_back();
                    for (int j = 0; j < PQnfields(res); ++j) row.emplace_back(PQgetvalue(res, i, j));
                }
                out.affected = std::atol(PQcmdTuples(res));
            } else if (failure.empty()) {
                failure = PQresultErrorMessage(res);
                while (!failure.empty() && failure.back() == '\n') failure.pop_back();
            }
            PQclear(res);
        }
        if (!failure.empty()) throw error("database: " + failure);
        co_return out;
    }

    PGconn* conn_ = nullptr;
    bool usable_ = false;
    asio::posix::stream_descriptor socket_;
};

}  // namespace pg
