// The seam between zklock and the C client it carries (src/bridge/client_io.hpp), against real
// servers: the system's own C client (libzookeeper_st, linked into this program beside libzklock)
// and the test's own sockets share the process with zklock's sessions, TLS and plaintext, and
// never lose or gain a byte, whatever descriptor numbers the sessions leave behind.
#include "fault_common.hpp"
#include "tls_common.hpp"

#include <zookeeper/zookeeper.h>  // the system's C client, not zklock's sealed copy

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace zklock;
using namespace zklock::test;

namespace {

// A handle of the system's single-threaded C client, driven by poll() on the calling thread.
class raw_client {
public:
    explicit raw_client(const std::string& servers)
        : zh_(zookeeper_init(servers.c_str(), nullptr, 10000, nullptr, nullptr, 0))
    {
    }
    ~raw_client()
    {
        if (zh_) zookeeper_close(zh_);
    }
    raw_client(const raw_client&) = delete;
    raw_client& operator=(const raw_client&) = delete;

    zhandle_t* get() const { return zh_; }
    bool connected() const { return zh_ && zoo_state(zh_) == ZOO_CONNECTED_STATE; }

    /// Runs the client until `done()` or `limit`; whether done.
    template <class Pred> bool drive_until(Pred done, std::chrono::milliseconds limit)
    {
        const auto end = std::chrono::steady_clock::now() + limit;
        while (!done()) {
            if (!zh_ || std::chrono::steady_clock::now() >= end) return false;
            int fd = -1, interest = 0;
            struct timeval tv {};
            const int rc = zookeeper_interest(zh_, &fd, &interest, &tv);
            int wait_ms = static_cast<int>(std::min<long>(tv.tv_sec * 1000 + tv.tv_usec / 1000, 20));
            int events = 0;
            if (rc == ZOK && fd != -1) {
                pollfd p{fd, 0, 0};
                if (interest & ZOOKEEPER_READ) p.events |= POLLIN;
                if (interest & ZOOKEEPER_WRITE) p.events |= POLLOUT;
                if (::poll(&p, 1, wait_ms) > 0) {
                    if (p.revents & (POLLIN | POLLHUP | POLLERR)) events |= ZOOKEEPER_READ;
                    if (p.revents & POLLOUT) events |= ZOOKEEPER_WRITE;
                }
            } else {
                ::usleep(static_cast<useconds_t>(std::max(wait_ms, 1)) * 1000);
            }
            zookeeper_process(zh_, events);
        }
        return true;
    }

private:
    zhandle_t* zh_;
};

// What a burst of reads through a raw client found: each reply is checked against the node asked.
struct read_tally {
    int sent = 0;
    int answered = 0;
    int wrong = 0;  // an error, or data of another node
    std::string first_wrong;
};

struct read_ctx {
    read_tally* t;
    std::string expect;
};

void on_read(int rc, const char* value, int len, const struct Stat*, const void* data)
{
    std::unique_ptr<read_ctx> c(static_cast<read_ctx*>(const_cast<void*>(data)));
    ++c->t->answered;
    if (rc != ZOK || len < 0 || std::string(value, static_cast<std::size_t>(len)) != c->expect) {
        if (c->t->wrong++ == 0)
            c->t->first_wrong = "rc " + std::to_string(rc) + " for a read expecting " + c->expect;
    }
}

void on_created(int rc, const char*, const void* data)
{
    auto* t = static_cast<read_tally*>(const_cast<void*>(data));
    ++t->answered;
    if (rc != ZOK && rc != ZNODEEXISTS && t->wrong++ == 0) t->first_wrong = "create: rc " + std::to_string(rc);
}

// Creates `nodes` nodes under `root` (which it creates) with distinct data, then reads them
// `reads` times in all, `window` at a time, checking every answer.
read_tally read_many(raw_client& c, const std::string& root, int nodes, int reads, int window,
                     std::chrono::milliseconds limit)
{
    read_tally setup;
    const auto node = [&](int i) { return root + "/n" + std::to_string(i); };
    const auto value = [&](int i) { return "value of " + node(i) + std::string(static_cast<std::size_t>(i % 37), 'x'); };
    for (std::size_t at = root.find('/', 1);; at = root.find('/', at + 1)) {  // root and its parents
        const std::string dir = root.substr(0, at);
        zoo_acreate(c.get(), dir.c_str(), "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, &on_created, &setup);
        ++setup.sent;
        if (at == std::string::npos) break;
    }
    for (int i = 0; i < nodes; ++i) {
        const auto v = value(i);
        zoo_acreate(c.get(), node(i).c_str(), v.data(), static_cast<int>(v.size()), &ZOO_OPEN_ACL_UNSAFE, 0,
                    &on_created, &setup);
        ++setup.sent;
    }
    if (!c.drive_until([&] { return setup.answered == setup.sent; }, limit) || setup.wrong) return setup;
    read_tally t;
    const auto end = std::chrono::steady_clock::now() + limit;
    while (t.answered < reads && std::chrono::steady_clock::now() < end) {
        while (t.sent < reads && t.sent - t.answered < window) {
            const int i = t.sent % nodes;
            if (zoo_aget(c.get(), node(i).c_str(), 0, &on_read, new read_ctx{&t, value(i)}) != ZOK) {
                ++t.wrong;
                return t;
            }
            ++t.sent;
        }
        const int before = t.answered;
        c.drive_until([&] { return t.answered > before; }, std::chrono::milliseconds(2000));
        if (t.answered == before) break;  // no answer for 2 s: the handle is stuck
    }
    return t;
}

// The system client's log, to a file of the test's, for what it says of its replies.
class client_log_file {
public:
    client_log_file() : f_(std::tmpfile())
    {
        zoo_set_log_stream(f_);
        zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
    }
    ~client_log_file()
    {
        zoo_set_log_stream(nullptr);
        std::fclose(f_);
    }
    std::string text() const
    {
        std::fflush(f_);
        std::rewind(f_);
        std::string s;
        char buf[4096];
        for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f_)) > 0;) s.append(buf, n);
        return s;
    }

private:
    std::FILE* f_;
};

// One pass of byte checks over the test's own sockets: each of `pairs` socket pairs carries a
// pattern one way and back, and must hold nothing more. Returns what went wrong ("" if nothing).
std::string check_own_sockets(int pairs, unsigned seed)
{
    std::vector<std::array<int, 2>> sp(static_cast<std::size_t>(pairs));
    for (auto& p : sp)
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p.data()) != 0) return "socketpair failed";
    std::string err;
    for (std::size_t k = 0; k < sp.size() && err.empty(); ++k) {
        std::string out(4096, '\0');
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>((seed + k * 131 + i * 7) & 0xff);
        if (::send(sp[k][0], out.data(), out.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(out.size())) {
            err = "a send on the test's own socket " + std::to_string(sp[k][0]) + " failed";
            break;
        }
        std::string in;
        char buf[8192];
        while (in.size() < out.size()) {
            const ssize_t n = ::recv(sp[k][1], buf, sizeof buf, 0);
            if (n <= 0) break;
            in.append(buf, static_cast<std::size_t>(n));
        }
        const ssize_t extra = ::recv(sp[k][1], buf, sizeof buf, MSG_DONTWAIT);
        if (in != out || extra > 0) err = "the test's own socket " + std::to_string(sp[k][1]) + " lost or gained bytes";
    }
    for (auto& p : sp) {
        ::close(p[0]);
        ::close(p[1]);
    }
    return err;
}

}  // namespace

TEST_CASE("seam: after a TLS session closed, the system's C client in the same process makes 10 000 requests without an error" * doctest::skip(!ZKLOCK_TEST_TLS))
{
    // Once, a TLS session's routing outlived its socket and took the next plain client's replies
    // (the bench's raw floor after --tls completed 29 of 10 000 acquisitions).
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session s{ex, tls_config(tls_server().tls_connect_string())};
        co_await connect(s);
        auto held = co_await mutex{s, unique_root("seam") + "/lock"}.async_acquire(5s);
        CHECK(held.owns_lock());
        co_await held.async_release();
        co_await s.async_close();
    });
    client_log_file log;
    raw_client c(tls_server().connect_string());
    REQUIRE(c.get());
    REQUIRE(c.drive_until([&] { return c.connected(); }, 15s));
    const auto t = read_many(c, unique_path("seam-raw"), 100, 10000, 100, 120s);
    CHECK_MESSAGE(t.wrong == 0, t.first_wrong);
    CHECK(t.answered == 10000);
    const auto text = log.text();
    CHECK_MESSAGE(text.find("unexpected server response") == std::string::npos, text.substr(0, 2000));
}

TEST_CASE("seam: sessions opened and ended every way while other sockets reuse their numbers lose no byte")
{
    // A thread of the test's own churns descriptors the whole time: socket pairs that carry a
    // pattern, and handles of the system's C client that read nodes back and check each answer.
    // Meanwhile sessions, TLS and plaintext, connect, lose their connection (the fault proxy
    // drops it, so they reopen a socket while the numbers are being reused), take a lock, and end:
    // closed, expired, or destroyed with their io_context.
    auto& server = tls_server();
    std::atomic<bool> stop{false};
    std::atomic<int> checks{0}, raw_reads{0};
    std::string churn_error;
    std::thread churn([&] {
        client_log_file log;
        for (unsigned round = 0; !stop.load() && churn_error.empty(); ++round) {
            churn_error = check_own_sockets(8, round);
            ++checks;
            if (round % 8 == 0 && churn_error.empty()) {
                raw_client c(server.connect_string());
                if (!c.drive_until([&] { return c.connected(); }, 10s)) {
                    churn_error = "a raw client did not connect";
                    break;
                }
                const auto t = read_many(c, unique_path("seam-churn"), 10, 200, 50, 20s);
                raw_reads += t.answered;
                if (t.wrong) churn_error = "raw client: " + t.first_wrong;
                else if (t.answered != 200) churn_error = "raw client: " + std::to_string(t.answered) + " of 200 reads answered";
            }
        }
        const auto text = log.text();
        if (churn_error.empty() && text.find("unexpected server response") != std::string::npos)
            churn_error = "the raw clients' log: " + text.substr(0, 2000);
    });
    struct stop_churn {
        std::atomic<bool>& stop;
        std::thread& t;
        ~stop_churn()
        {
            stop = true;
            if (t.joinable()) t.join();
        }
    } joiner{stop, churn};

    enum class ending { close, expire, destroy };
    for (const bool tls : {false, true}) {
        for (const ending how : {ending::close, ending::expire, ending::destroy}) {
            CAPTURE(tls);
            CAPTURE(static_cast<int>(how));
            fault_proxy proxy{tls ? server.tls_port() : server.port()};
            const auto servers = proxy.connect_string();
            const auto timeout = how == ending::expire ? 1500ms : 4000ms;
            auto cfg = tls ? tls_config(servers, "alice", timeout) : config_for(servers, timeout);
            cfg.reconnect_on_expiry = false;
            const auto path = (tls ? unique_root("seam-tls") : unique_path("seam-plain")) + "/lock";
            asio::io_context ioc;
            bool done = false;
            asio::co_spawn(ioc, [&]() -> awaitable<void> {
                auto ex = co_await asio::this_coro::executor;  // (GCC 12: not in the next line)
                session s{ex, cfg};
                co_await connect(s);
                for (int i = 0; i < 3; ++i) {
                    auto l = co_await mutex{s, path}.async_acquire(10s);
                    CHECK(l.owns_lock());
                    co_await l.async_release();
                    proxy.reset();  // the C client closes its socket and opens another
                    CHECK(co_await wait_until([&] { return s.state() == session_state::connected; }, 10s));
                }
                if (how == ending::expire) {
                    proxy.blackhole();  // past the session timeout: the server expires it
                    co_await sleep_for(2 * timeout);
                    proxy.pass();
                    CHECK(co_await wait_until([&] { return s.state() == session_state::expired; }, 15s));
                } else if (how == ending::close) {
                    co_await s.async_close();
                }
                done = true;
                // destroy: the session lives in this frame, which ~io_context destroys.
                if (how == ending::destroy) co_await sleep_for(1h);
            }, [](std::exception_ptr e) {
                if (e) std::rethrow_exception(e);
            });
            const auto t0 = std::chrono::steady_clock::now();
            while (!done && since(t0) < 60) ioc.run_for(20ms);
            CHECK(done);
            if (how != ending::destroy) ioc.run_for(200ms);
        }  // destroy: ~io_context with the session open (then ~session)
    }
    stop = true;
    churn.join();
    CHECK_MESSAGE(churn_error.empty(), churn_error);
    CHECK(checks.load() > 0);
    CHECK(raw_reads.load() > 0);
    MESSAGE(checks.load() << " passes over the test's own sockets, " << raw_reads.load() << " raw reads checked");
}
