// session_config::logger wired to spdlog: the ZooKeeper C client's lines about this session and
// zklock's own events (connected, lock granted, ...), each with its fields. spdlog is this
// example's dependency only (Debian's libspdlog-dev); zklock itself logs through the callable.
// Server list from $ZK_SERVERS (default 127.0.0.1:2181).
#include <zklock/zklock.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

namespace asio = boost::asio;
using namespace std::chrono_literals;

spdlog::level::level_enum to_spdlog(zklock::log_level l)
{
    switch (l) {
    case zklock::log_level::debug: return spdlog::level::debug;
    case zklock::log_level::info: return spdlog::level::info;
    case zklock::log_level::warning: return spdlog::level::warn;
    case zklock::log_level::error: return spdlog::level::err;
    }
    return spdlog::level::info;
}

// A thread-safe (_mt) logger: the C client's lines of a session's close come from zklock's close
// thread.
zklock::log_function to_spdlog(std::shared_ptr<spdlog::logger> log)
{
    return [log = std::move(log)](zklock::log_level level, std::string_view message, const zklock::log_fields& f) {
        if (f.path.empty())
            log->log(to_spdlog(level), "[{}] session={:#x} {}", f.source, f.session_id, message);
        else
            log->log(to_spdlog(level), "[{}] session={:#x} path={} node={} {}", f.source, f.session_id, f.path, f.node,
                     message);
    };
}

asio::awaitable<void> run()
{
    const char* servers = std::getenv("ZK_SERVERS");
    auto log = spdlog::stdout_logger_mt("zklock");
    log->set_pattern("%H:%M:%S.%e %-7l %v");
    zklock::session_config config;
    config.servers = servers ? servers : "127.0.0.1:2181";
    config.logger = to_spdlog(log);
    config.logger_level = zklock::log_level::info;
    auto ex = co_await asio::this_coro::executor;
    zklock::session zk{ex, config};
    co_await zk.async_connect();

    zklock::mutex m{zk, "/locks/spdlog-example"};
    auto lease = co_await m.async_acquire(5s);
    co_await lease.async_release();
    co_await zk.async_close();
}

int main()
{
    asio::io_context io;
    asio::co_spawn(io, run(), [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
    });
    io.run();
}
