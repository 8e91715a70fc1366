// The examples' HTTP counter (examples/http_counter_server.hpp: http_counter, http_counter_pg) as a
// process, and a Beast client for it: what test_http_example.cpp and test_pg_fencing.cpp share.
#pragma once

#include "../common.hpp"
#include "support/process_util.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

#include <signal.h>

namespace zklock::test {

/// One example server process (support/process_util.hpp: killed when the test ends however it ends).
struct example_server : child_process {
    std::string program_name;  // its executable's file name, which it prints: "NAME listening on ..."
    unsigned short port = 0;

    /// Threads of the process now (/proc/PID/task entries).
    int threads() const
    {
        namespace fs = std::filesystem;
        int n = 0;
        std::error_code ec;
        for (auto it = fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec); !ec && it != fs::directory_iterator();
             it.increment(ec))
            ++n;
        return n;
    }
};

/// Starts `program` --port 0 --address 127.0.0.1 `extra`..., its output in `dir`/NAME.out and NAME.err.
inline void start(example_server& s, const std::string& program, const scratch_dir& dir, const std::string& name,
                  const std::vector<std::string>& extra)
{
    std::vector<std::string> args{program, "--port", "0", "--address", "127.0.0.1"};
    args.insert(args.end(), extra.begin(), extra.end());
    s.program_name = std::filesystem::path(program).filename().string();
    s.start(args, dir / (name + ".out"), dir / (name + ".err"));
}

/// Waits for "NAME listening on 127.0.0.1:PORT" and sets `port`; fails if it exits or takes longer than `limit`.
inline awaitable<void> wait_listening(example_server& s, std::chrono::milliseconds limit = 20s)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    const std::string prefix = s.program_name + " listening on 127.0.0.1:";
    for (;;) {
        const auto out = s.out();
        if (auto at = out.find(prefix); at != std::string::npos && out.find('\n', at) != std::string::npos) {
            s.port = static_cast<unsigned short>(std::stoi(out.substr(at + prefix.size())));
            co_return;
        }
        REQUIRE_MESSAGE(!s.poll(), s.program_name << " exited with " << *s.status << ": " << s.err());
        REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, s.program_name << " did not start: " << s.err());
        co_await sleep_for(10ms);
    }
}

/// SIGTERM, then a bounded wait; SIGKILL (and a failed check) if it does not stop. The exit status.
inline awaitable<int> stop(example_server& s, std::chrono::milliseconds limit = 10s)
{
    s.signal(SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!s.poll() && std::chrono::steady_clock::now() < deadline) co_await sleep_for(10ms);
    if (!s.poll()) {
        s.kill_and_reap();
        FAIL_CHECK(s.program_name << " did not stop on SIGTERM within " << limit.count() << " ms");
    }
    co_return *s.status;
}

struct http_reply {
    int status = 0;  // 0: no answer (transport error)
    std::string retry_after, body, error;
};

/// One request at a time on a keep-alive connection (connected on first use), bounded in time (20 s).
struct http_client {
    http_client(asio::any_io_executor ex, unsigned short p) : stream(std::move(ex)), port(p) {}
    boost::beast::tcp_stream stream;
    unsigned short port;
    bool connected = false;
    boost::beast::flat_buffer buffer;

    awaitable<http_reply> request(boost::beast::http::verb verb, std::string target)
    {
        namespace beast = boost::beast;
        namespace http = beast::http;
        http_reply r;
        stream.expires_after(20s);
        if (!connected) {
            const asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port);
            auto [cec] = co_await stream.async_connect(ep, tuple);
            if (cec) {
                r.error = "connect: " + cec.message();
                co_return r;
            }
            connected = true;
        }
        http::request<http::empty_body> req(verb, target, 11);
        req.set(http::field::host, "127.0.0.1");
        req.keep_alive(true);
        auto [wec, wn] = co_await http::async_write(stream, req, tuple);
        http::response<http::string_body> res;
        if (!wec) {
            auto [rec, rn] = co_await http::async_read(stream, buffer, res, tuple);
            if (rec) r.error = "read: " + rec.message();
        } else {
            r.error = "write: " + wec.message();
        }
        if (!r.error.empty() || !res.keep_alive()) {
            beast::error_code ignored;
            stream.socket().close(ignored);
            connected = false;
            buffer.clear();
            if (!r.error.empty()) co_return r;
        }
        r.status = static_cast<int>(res.result_int());
        r.retry_after = std::string(res[http::field::retry_after]);
        r.body = res.body();
        co_return r;
    }
};

/// One request from a coroutine of its own, on a connection of its own: `into` holds the reply
/// once it has come (the caller polls it, and keeps it alive until then).
inline void request_detached(asio::any_io_executor ex, unsigned short port, boost::beast::http::verb verb,
                             std::string target, std::optional<http_reply>& into)
{
    asio::co_spawn(
        ex,
        [ex, port, verb, target = std::move(target), &into]() -> awaitable<void> {
            http_client c(ex, port);
            into = co_await c.request(verb, target);
        },
        asio::detached);
}

/// Sends until the answer is not 503 (the server not ready yet, e.g. its session being renewed),
/// 50 times at most, 100 ms apart; the last reply.
inline awaitable<http_reply> request_until_served(http_client& c, boost::beast::http::verb verb, std::string target)
{
    http_reply r;
    for (int i = 0; i < 50; ++i) {
        r = co_await c.request(verb, target);
        if (r.status != 503) break;
        co_await sleep_for(100ms);
    }
    co_return r;
}

}  // namespace zklock::test
