// An HTTP service whose instances share one counter, kept in a file, guarded by a zklock mutex and
// protected by fencing tokens. The HTTP service is examples/http_counter_server.hpp (the same for
// examples/http_counter_pg.cpp); this file is its store, the counter file, and its main.
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
#include "http_counter_server.hpp"

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <system_error>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace {

using http_counter::awaitable;
using namespace std::chrono_literals;

// ---- the protected resource: "value token" in a file --------------------------------------------

struct counter_state {
    std::int64_t value = 0;
    std::int64_t token = 0;  ///< the highest fencing token the counter has seen
};

/// The counter file, with the fenced operations a real store would offer (the concept
/// http_counter::counter_store). Every operation takes an flock of "<file>.lock" for its few
/// microseconds (the data file itself is replaced by rename, so that readers never see a
/// half-written one, and cannot carry the lock). The token it records is the lease's
/// fencing_token(): this program acquires without cohort mode, where it strictly increases from
/// one holder to the next (in cohort mode, record lease.fence(), as http_counter_pg does).
class counter_file {
public:
    explicit counter_file(std::string path) : path_(std::move(path)) {}

    /// The value, and the holder's claim: refused (nullopt) if a newer token has been seen;
    /// otherwise the stored token becomes the lease's, which fences off every older holder from
    /// now on.
    awaitable<std::optional<std::int64_t>> fenced_read(const zklock::lease& lease)
    {
        const auto token = lease.fencing_token();
        auto guard = co_await lock();
        auto s = load();
        if (s.token > token) co_return std::nullopt;
        if (s.token < token) store({s.value, token});
        co_return s.value;
    }

    /// Writes `value`: refused (false) if a newer token has been seen since our read.
    awaitable<bool> fenced_write(std::int64_t value, const zklock::lease& lease)
    {
        const auto token = lease.fencing_token();
        auto guard = co_await lock();
        if (load().token > token) co_return false;
        store({value, token});
        co_return true;
    }

    awaitable<std::int64_t> value() const { co_return load().value; }

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
            co_await http_counter::pause(1ms);
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

}  // namespace

int main(int argc, char** argv)
{
    http_counter::options o;
    o.name = "http_counter";
    o.metrics = true;
    o.lock = "/zklock-examples/http-counter";
    std::string file;
    const bool parsed = http_counter::parse(argc, argv, o, {{"--file", [&](const char* v) {
                                                                 file = v;
                                                                 return true;
                                                             }}});
    if (!parsed || file.empty()) {
        std::fprintf(stderr,
                     "usage: http_counter --file F [--port P] [--address 127.0.0.1] [--servers H:P,...] [--lock /path]\n"
                     "                    [--hold-ms N] [--lock-timeout-ms N] [--session-timeout-ms N]\n");
        return 64;
    }
    boost::asio::io_context ioc{1};
    counter_file counter{file};
    return http_counter::serve(ioc, o, counter);
}
