// Self-test of the test-support layer: real ZooKeeper servers, an ensemble and the fault proxy.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "support/doctest_listener.hpp"
#include "support/doctest_run.hpp"
#include "support/fault_proxy.hpp"
#include "support/frame_scanner.hpp"
#include "support/process_util.hpp"
#include "support/tls_certs.hpp"
#include "support/zk_ensemble.hpp"
#include "support/zk_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string_view>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

using namespace std::chrono_literals;
using namespace zklock::test;
namespace fs = std::filesystem;
using steady = std::chrono::steady_clock;

namespace {

// ---- small blocking socket helpers; every wait is bounded ----

sockaddr_in loopback(std::uint16_t port)
{
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

bool wait_fd(int fd, short events, std::chrono::milliseconds timeout)
{
    pollfd p{fd, events, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) > 0;
}

void send_bytes(int fd, const std::string& data)
{
    REQUIRE(::send(fd, data.data(), data.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(data.size()));
}

struct read_result {
    std::string data;
    bool closed = false;  // EOF or error
    int error = 0;        // errno of the error, 0 for EOF
};

// Reads until `want` bytes arrived, the peer closed or `timeout` passed.
read_result read_for(int fd, std::size_t want, std::chrono::milliseconds timeout)
{
    read_result r;
    const auto deadline = steady::now() + timeout;
    while (r.data.size() < want) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
        if (left <= 0ms || !wait_fd(fd, POLLIN, left)) break;
        char buf[4096];
        const ssize_t n = ::read(fd, buf, std::min(sizeof buf, want - r.data.size()));
        if (n > 0) {
            r.data.append(buf, static_cast<std::size_t>(n));
        } else {
            r.closed = true;
            r.error = n < 0 ? errno : 0;
            break;
        }
    }
    return r;
}

struct client {
    int fd = -1;
    explicit client(std::uint16_t port)
    {
        fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        REQUIRE(fd >= 0);
        const int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        sockaddr_in a = loopback(port);
        REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    }
    ~client() { ::close(fd); }
    client(const client&) = delete;
    client& operator=(const client&) = delete;
    void send(const std::string& data) { send_bytes(fd, data); }
    read_result read(std::size_t want, std::chrono::milliseconds timeout = 5s) { return read_for(fd, want, timeout); }
};

// A loopback TCP server running handler(fd, stopping) on a thread per connection.
class tcp_server {
public:
    using handler = std::function<void(int fd, const std::atomic<bool>& stopping)>;

    explicit tcp_server(handler h, std::uint16_t port = 0) : handler_(std::move(h))
    {
        listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a = loopback(port);
        REQUIRE(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
        REQUIRE(::listen(listen_fd_, 16) == 0);
        socklen_t len = sizeof a;
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
        port_ = ntohs(a.sin_port);
        acceptor_ = std::thread([this] {
            while (!stopping_) {
                if (!wait_fd(listen_fd_, POLLIN, 50ms)) continue;
                const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
                if (fd < 0) continue;
                const int one = 1;
                ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                std::lock_guard lock(mutex_);
                workers_.emplace_back([this, fd] {
                    handler_(fd, stopping_);
                    ::close(fd);
                });
            }
        });
    }
    ~tcp_server()
    {
        stopping_ = true;
        acceptor_.join();
        for (auto& w : workers_) w.join();
        ::close(listen_fd_);
    }
    std::uint16_t port() const { return port_; }

private:
    handler handler_;
    int listen_fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::mutex mutex_;
    std::list<std::thread> workers_;
    std::thread acceptor_;
};

// Reads whatever comes within 50 ms; nullopt (and counts a reset) once the peer is gone.
std::optional<std::string> server_read(int fd, std::atomic<int>& resets)
{
    if (!wait_fd(fd, POLLIN, 50ms)) return std::string();
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n > 0) return std::string(buf, static_cast<std::size_t>(n));
    if (n < 0 && errno == ECONNRESET) ++resets;
    return std::nullopt;
}

// Echoes everything back, upper-cased if asked (to tell two servers apart).
struct echo_server {
    std::atomic<int> resets{0};
    tcp_server server;
    explicit echo_server(bool upper = false, std::uint16_t port = 0)
        : server(
              [this, upper](int fd, const std::atomic<bool>& stopping) {
                  while (!stopping) {
                      auto data = server_read(fd, resets);
                      if (!data) return;
                      if (upper)
                          for (char& c : *data) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
                      if (!data->empty() && ::send(fd, data->data(), data->size(), MSG_NOSIGNAL) < 0) return;
                  }
              },
              port)
    {
    }
    std::uint16_t port() const { return server.port(); }
};

// ---- ZooKeeper framing ----

void put32(std::string& s, std::uint32_t v)
{
    for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>((v >> shift) & 0xff));
}

std::uint32_t get32(const std::string& s, std::size_t at)
{
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(s[at + i]);
    return v;
}

std::string frame(const std::string& body)
{
    std::string s;
    put32(s, static_cast<std::uint32_t>(body.size()));
    return s + body;
}

std::string request(std::int32_t xid, std::int32_t type, const std::string& payload = "/some/path")
{
    std::string body;
    put32(body, static_cast<std::uint32_t>(xid));
    put32(body, static_cast<std::uint32_t>(type));
    return frame(body + payload);
}

std::string reply(std::int32_t xid, const std::string& payload = "data")
{
    std::string body;
    put32(body, static_cast<std::uint32_t>(xid));
    put32(body, 0);
    put32(body, 42);  // zxid
    put32(body, 0);   // err
    return frame(body + payload);
}

const std::string connect_request = frame(std::string(44, '\1'));
const std::string connect_response = frame(std::string(36, '\2'));

// Splits complete frames off the front of `buf`.
std::vector<std::string> take_frames(std::string& buf)
{
    std::vector<std::string> frames;
    while (buf.size() >= 4 && buf.size() >= 4 + get32(buf, 0)) {
        const std::size_t len = 4 + get32(buf, 0);
        frames.push_back(buf.substr(4, len - 4));
        buf.erase(0, len);
    }
    return frames;
}

// Reply xids in what a client read, frame by frame (the connect response first).
std::vector<std::int32_t> reply_xids(std::string data)
{
    std::vector<std::int32_t> xids;
    auto frames = take_frames(data);
    for (std::size_t i = 1; i < frames.size(); ++i) xids.push_back(static_cast<std::int32_t>(get32(frames[i], 0)));
    return xids;
}

// A fake ZooKeeper server: answers the ConnectRequest, then every request with a ReplyHeader of
// the same xid. A lone reply is written in two parts 30 ms apart (its header split), replies to
// requests that came together are written at once.
struct fake_zk {
    std::mutex mutex;
    std::vector<std::pair<std::int32_t, std::int32_t>> requests;  // (xid, type), as applied
    std::atomic<int> resets{0};
    tcp_server server;

    fake_zk()
        : server([this](int fd, const std::atomic<bool>& stopping) {
              std::string buf;
              bool connected = false;
              while (!stopping) {
                  auto data = server_read(fd, resets);
                  if (!data) return;
                  buf += *data;
                  std::string out;
                  for (const auto& body : take_frames(buf)) {
                      if (!connected) {
                          connected = true;
                          out += connect_response;
                          continue;
                      }
                      const auto xid = static_cast<std::int32_t>(get32(body, 0));
                      {
                          std::lock_guard lock(mutex);
                          requests.emplace_back(xid, static_cast<std::int32_t>(get32(body, 4)));
                      }
                      out += reply(xid);
                  }
                  if (out.size() == reply(0).size()) {
                      if (::send(fd, out.data(), 3, MSG_NOSIGNAL) < 0) return;
                      std::this_thread::sleep_for(30ms);
                      out.erase(0, 3);
                  }
                  if (!out.empty() && ::send(fd, out.data(), out.size(), MSG_NOSIGNAL) < 0) return;
              }
          })
    {
    }
    std::uint16_t port() const { return server.port(); }
    std::vector<std::pair<std::int32_t, std::int32_t>> applied()
    {
        std::lock_guard lock(mutex);
        return requests;
    }
};

// ---- ZooKeeper's leader-election handshake ----

void put64(std::string& s, std::uint64_t v)
{
    put32(s, static_cast<std::uint32_t>(v >> 32));
    put32(s, static_cast<std::uint32_t>(v));
}

// QuorumCnxManager's InitialMessage: protocol version, sid, address length, address(es).
std::string initial_message(std::int64_t version, std::int64_t sid, const std::string& address)
{
    std::string s;
    put64(s, static_cast<std::uint64_t>(version));
    put64(s, static_cast<std::uint64_t>(sid));
    put32(s, static_cast<std::uint32_t>(address.size()));
    return s + address;
}

// Records what a connection brings, and the size of every read.
struct recording_server {
    std::mutex mutex;
    std::string data;
    std::vector<std::size_t> reads;
    bool eof = false;
    std::atomic<int> resets{0};
    tcp_server server;

    recording_server()
        : server([this](int fd, const std::atomic<bool>& stopping) {
              while (!stopping) {
                  const auto got = server_read(fd, resets);
                  std::lock_guard lock(mutex);
                  if (!got) {
                      eof = true;
                      return;
                  }
                  if (got->empty()) continue;
                  data += *got;
                  reads.push_back(got->size());
              }
          })
    {
    }
    std::uint16_t port() const { return server.port(); }
    std::string received()
    {
        std::lock_guard lock(mutex);
        return data;
    }
    std::size_t first_read()
    {
        std::lock_guard lock(mutex);
        return reads.empty() ? 0 : reads.front();
    }
    bool closed()
    {
        std::lock_guard lock(mutex);
        return eof;
    }
};

// "leader" or "follower" from server i's `srvr`; "" if it does not serve (or does not answer).
std::string mode_of(const zk_ensemble& zk, int i)
{
    const std::string reply = zk.four_letter(i, "srvr");
    for (const char* mode : {"leader", "follower"})
        if (reply.find(std::string("Mode: ") + mode) != std::string::npos) return mode;
    return "";
}

// An ensemble whose server links can be cut, quick to notice it: tickTime 500 ms, syncLimit
// 5 ticks (2.5 s) instead of launch()'s 5 s, initLimit 20 ticks (10 s, as launch() sets it).
server_options partition_options()
{
    return {.tick_time = 500ms, .extra_config = {"initLimit=20", "syncLimit=5"}, .proxy_server_links = true};
}
constexpr auto partition_sync_limit = 2500ms;
constexpr auto partition_init_limit = 10s;

std::uintmax_t log_size(const zk_ensemble& zk, int i) { return fs::file_size(zk.server(i).dir() / "zookeeper.log"); }

// Leader-election messages from other servers that server i logged after the first `offset`
// bytes of its log (FastLeaderElection logs each one it receives: "Notification: ... n.sid:K,").
int notifications_from_others(const zk_ensemble& zk, int i, std::uintmax_t offset)
{
    std::ifstream log(zk.server(i).dir() / "zookeeper.log");
    log.seekg(static_cast<std::streamoff>(offset));
    int count = 0;
    for (std::string line; std::getline(log, line);) {
        const auto at = line.find("Notification:");
        const auto sid = line.find("n.sid:", at == std::string::npos ? line.size() : at);
        if (sid != std::string::npos && std::atoi(line.c_str() + sid + 6) != i + 1) ++count;
    }
    return count;
}

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout)
{
    const auto deadline = steady::now() + timeout;
    while (!pred()) {
        if (steady::now() > deadline) return false;
        std::this_thread::sleep_for(20ms);
    }
    return true;
}

long long ms_since(steady::time_point t)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - t).count();
}

bool process_gone(pid_t pid)
{
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    const auto paren = line.rfind(')');
    return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';  // zombie = dead
}

}  // namespace

// ---- zk_server ----

TEST_CASE("zk_server starts a real server that answers four-letter words")
{
    fs::path dir;
    {
        zk_server zk({.tick_time = 200ms, .max_session_timeout_ms = 3000});
        dir = zk.dir();
        CHECK(zk.running());
        CHECK(zk.pid() > 0);
        CHECK(zk.connect_string() == "127.0.0.1:" + std::to_string(zk.port()));
        CHECK(zk.four_letter("ruok") == "imok");
        CHECK(zk.four_letter("srvr").find("Mode: standalone") != std::string::npos);
        const std::string conf = zk.four_letter("conf");
        CHECK(conf.find("tickTime=200") != std::string::npos);
        CHECK(conf.find("maxSessionTimeout=3000") != std::string::npos);
        CHECK(zk.four_letter("mntr").find("zk_server_state\tstandalone") != std::string::npos);
        CHECK(zk.four_letter("srst").find("reset") != std::string::npos);
        CHECK(zk.four_letter("cons").find("127.0.0.1") != std::string::npos);  // our own connection
        CHECK(fs::exists(dir / "zoo.cfg"));
        CHECK(zk.log_tail().find("INFO") != std::string::npos);  // a real log, not SLF4J's NOP
        const std::string tail = zk.log_tail(3);
        CHECK(std::count(tail.begin(), tail.end(), '\n') == 3);
    }
    CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("zk_server stop/start and kill/start keep the port")
{
    zk_server zk({.tick_time = 200ms});
    const auto port = zk.port();
    zk.stop();
    CHECK_FALSE(zk.running());
    CHECK(zk.pid() == -1);
    CHECK(zk.four_letter("ruok").empty());
    zk.start();
    CHECK(zk.port() == port);
    CHECK(zk.four_letter("ruok") == "imok");
    zk.kill();
    CHECK_FALSE(zk.running());
    zk.start();
    CHECK(zk.port() == port);
    CHECK(zk.four_letter("ruok") == "imok");
}

TEST_CASE("zk_servers in parallel get their own ports and dirs")
{
    zk_server a({.tick_time = 200ms, .start = false});
    zk_server b({.tick_time = 200ms});
    a.start();
    CHECK(a.port() != b.port());
    CHECK(a.dir() != b.dir());
    CHECK(a.four_letter("ruok") == "imok");
    CHECK(b.four_letter("ruok") == "imok");
}

TEST_CASE("free_ports gives distinct, bindable ports below the ephemeral range")
{
    int ephemeral_low = 0;
    {
        std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
        REQUIRE(range);
        range >> ephemeral_low;
    }
    REQUIRE(ephemeral_low > 11000);
    // More than one call: later calls continue where the last one stopped, still below the range.
    std::set<std::uint16_t> seen;
    for (int round = 0; round < 3; ++round) {
        const auto ports = free_ports(8);
        REQUIRE(ports.size() == 8);
        for (const auto port : ports) {
            CHECK(port >= 10000);
            CHECK(port < ephemeral_low);
            CHECK(seen.insert(port).second);
            const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
            REQUIRE(fd >= 0);
            sockaddr_in a = loopback(port);
            CHECK(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
            ::close(fd);
        }
    }
}

TEST_CASE("zk_server throws with the log tail when the server cannot start")
{
    zk_server first({.tick_time = 200ms});
    std::string error;
    try {
        // The extra line overrides clientPort: every attempt collides with `first`.
        zk_server second({.extra_config = {"clientPort=" + std::to_string(first.port())}});
    } catch (const std::runtime_error& e) {
        error = e.what();
    }
    CHECK(error.find("Address already in use") != std::string::npos);
    const auto at = error.find(" dir ");
    REQUIRE(at != std::string::npos);
    const fs::path dir = error.substr(at + 5, error.find(';', at) - at - 5);
    CHECK(fs::exists(dir / "zookeeper.log"));  // kept for the post-mortem
    fs::remove_all(dir);
    CHECK(first.four_letter("ruok") == "imok");
}

TEST_CASE("zk_server keeps its files when asked, when unwinding or after a failure")
{
    fs::path kept, unwound;
    {
        zk_server zk({.start = false});
        kept = zk.dir();
        zk.keep_files();
    }
    try {
        zk_server zk({.start = false});
        unwound = zk.dir();
        throw std::runtime_error("test");
    } catch (const std::runtime_error&) {
    }
    fs::path failed;
    {
        zk_server zk({.start = false});
        failed = zk.dir();
        note_failure();  // what support/doctest_listener.hpp does on a failed CHECK
    }
    clear_failure();
    CHECK(fs::exists(kept));
    CHECK(fs::exists(unwound));
    CHECK(fs::exists(failed));
    for (const auto& dir : {kept, unwound, failed}) fs::remove_all(dir);
}

TEST_CASE("a test process that dies leaves no ZooKeeper behind")
{
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::close(fds[0]);
        try {
            zk_server zk({.tick_time = 200ms});
            const std::string msg = std::to_string(zk.pid()) + " " + zk.dir().string() + "\n";
            (void)!::write(fds[1], msg.data(), msg.size());
            ::kill(::getpid(), SIGKILL);  // dies with the server in scope: no destructor runs
        } catch (const std::exception& e) {
            std::fprintf(stderr, "child: %s\n", e.what());
        }
        ::_exit(1);
    }
    ::close(fds[1]);
    const read_result r = read_for(fds[0], 4096, 40s);
    ::close(fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    pid_t java = 0;
    std::string dir;
    std::istringstream(r.data) >> java >> dir;
    REQUIRE(java > 0);
    CHECK(eventually([&] { return process_gone(java); }, 10s));
    fs::remove_all(dir);
}

// ---- zk_ensemble ----

TEST_CASE("zk_ensemble elects a leader, survives losing it and takes it back")
{
    const auto t0 = steady::now();
    zk_ensemble zk(3, {.tick_time = 200ms});
    MESSAGE("ensemble up in " << ms_since(t0) << " ms");
    REQUIRE(zk.size() == 3);
    const int leader = zk.leader();
    REQUIRE(leader >= 0);
    std::set<std::uint16_t> ports;
    for (int i = 0; i < 3; ++i) {
        CHECK(zk.four_letter(i, "ruok") == "imok");
        CHECK(zk.pid(i) > 0);
        ports.insert(zk.port(i));
        CHECK(zk.connect_string().find(zk.connect_string(i)) != std::string::npos);
    }
    CHECK(ports.size() == 3);
    CHECK(zk.four_letter((leader + 1) % 3, "mntr").find("zk_server_state\tfollower") != std::string::npos);

    zk.kill(leader);
    CHECK_FALSE(zk.running(leader));
    const auto t1 = steady::now();
    REQUIRE(zk.wait_quorum(20s));
    MESSAGE("new leader after " << ms_since(t1) << " ms");
    const int second = zk.leader();
    CHECK(second >= 0);
    CHECK(second != leader);

    zk.start(leader);
    REQUIRE(zk.wait_quorum(20s));
    CHECK(zk.leader() == second);
    CHECK(zk.four_letter(leader, "srvr").find("Mode: follower") != std::string::npos);
}

TEST_CASE("zk_ensemble loses its quorum when a majority is stopped")
{
    zk_ensemble zk(3, {.tick_time = 200ms});
    const int leader = zk.leader();
    REQUIRE(leader >= 0);
    zk.stop((leader + 1) % 3);
    zk.stop((leader + 2) % 3);
    CHECK(eventually([&] { return zk.leader() == -1; }, 15s));
    CHECK_FALSE(zk.wait_quorum(500ms));
    zk.start((leader + 1) % 3);
    CHECK(zk.wait_quorum(20s));
}

// ---- fault_proxy ----

TEST_CASE("frame_scanner finds every header however the stream is cut")
{
    std::string stream = connect_request + request(1, zk_op::get_data) + request(2, zk_op::create, "") +
                         frame("") + request(-2, zk_op::ping) + request(77, zk_op::multi, std::string(20000, 'x'));
    const std::vector<std::pair<std::int32_t, std::int32_t>> expected = {
        {1, zk_op::get_data}, {2, zk_op::create}, {0, 0}, {-2, zk_op::ping}, {77, zk_op::multi}};
    for (std::size_t chunk : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5}, std::size_t{7},
                              std::size_t{13}, std::size_t{4096}, stream.size()}) {
        CAPTURE(chunk);
        frame_scanner scanner(8);
        std::vector<std::pair<std::int32_t, std::int32_t>> seen;
        int firsts = 0;
        for (std::size_t at = 0; at < stream.size(); at += chunk) {
            const std::string_view part = std::string_view(stream).substr(at, chunk);
            scanner.scan(std::span(reinterpret_cast<const std::uint8_t*>(part.data()), part.size()),
                         [&](const frame_header& h) {
                             if (h.first)
                                 ++firsts;
                             else
                                 seen.emplace_back(h.xid, h.type);
                             return false;
                         });
        }
        CHECK(firsts == 1);
        CHECK(seen == expected);
        CHECK(scanner.partial() == 0);
    }
}

TEST_CASE("fault_proxy forwards, delays, blackholes, resets and retargets")
{
    echo_server echo;
    fault_proxy proxy(echo.port());
    CHECK(proxy.connect_string() == "127.0.0.1:" + std::to_string(proxy.port()));

    client a(proxy.port());
    a.send("hello");
    CHECK(a.read(5).data == "hello");

    SUBCASE("delay")
    {
        proxy.delay(300ms);
        auto t = steady::now();
        a.send("slow");
        CHECK(a.read(4).data == "slow");
        CHECK(steady::now() - t >= 550ms);  // delayed both ways
        proxy.pass();
        t = steady::now();
        a.send("fast");
        CHECK(a.read(4).data == "fast");
        CHECK(steady::now() - t < 250ms);
    }
    SUBCASE("blackhole holds traffic, also of new connections, until pass")
    {
        proxy.blackhole();
        a.send("held1");
        a.send("held2");
        client b(proxy.port());
        b.send("new");
        CHECK(a.read(1, 500ms).data.empty());
        CHECK(b.read(1, 100ms).data.empty());
        CHECK(eventually([&] { return proxy.connections_accepted() == 2; }, 2s));
        proxy.pass();
        CHECK(a.read(10).data == "held1held2");
        CHECK(b.read(3).data == "new");
    }
    SUBCASE("reset")
    {
        proxy.reset();
        const read_result r = a.read(1);
        CHECK(r.closed);
        CHECK(r.error == ECONNRESET);
        CHECK(eventually([&] { return echo.resets == 1; }, 2s));  // the server side got an RST too
        client b(proxy.port());
        b.send("again");
        CHECK(b.read(5).data == "again");
    }
    SUBCASE("set_target")
    {
        echo_server upper(true);
        proxy.set_target(upper.port());
        client b(proxy.port());
        b.send("abc");
        CHECK(b.read(3).data == "ABC");
        a.send("abc");  // an existing connection keeps its server
        CHECK(a.read(3).data == "abc");
    }
    CHECK(proxy.replies_dropped() == 0);
}

TEST_CASE("fault_proxy retry_connect holds a client until the server listens")
{
    const std::uint16_t port = free_ports(1).front();  // nothing listens there yet
    fault_proxy proxy(port);

    SUBCASE("off: the client is reset at once")
    {
        client c(proxy.port());
        const read_result r = c.read(1, 2s);
        CHECK(r.closed);
        CHECK(r.error == ECONNRESET);
    }
    SUBCASE("the server comes up within the window")
    {
        proxy.retry_connect(3s);
        client c(proxy.port());
        c.send("hello");
        CHECK(c.read(1, 300ms).data.empty());
        echo_server late(false, port);
        CHECK(c.read(5).data == "hello");
    }
    SUBCASE("it does not: the client is reset after the window")
    {
        proxy.retry_connect(300ms);
        const auto t = steady::now();
        client c(proxy.port());
        c.send("hello");
        const read_result r = c.read(1, 3s);
        CHECK(r.closed);
        CHECK(r.error == ECONNRESET);
        CHECK(steady::now() - t >= 250ms);
        CHECK(steady::now() - t < 2s);
    }
}

TEST_CASE("four-letter words of a real server go through the proxy")
{
    zk_server zk({.tick_time = 200ms});
    fault_proxy proxy(zk.port());
    CHECK(four_letter(proxy.port(), "ruok") == "imok");
    proxy.blackhole();
    CHECK(four_letter(proxy.port(), "ruok", 500ms).empty());
    proxy.pass();
    CHECK(four_letter(proxy.port(), "srvr").find("Mode: standalone") != std::string::npos);
    zk.stop();
    CHECK(four_letter(proxy.port(), "ruok", 2s).empty());  // upstream refused: the proxy resets
}

TEST_CASE("fault_proxy drop_reply cuts the connection at the matched reply")
{
    fake_zk server;
    fault_proxy proxy(server.port());

    SUBCASE("frames split across reads")
    {
        client c(proxy.port());
        for (char byte : connect_request) {  // one byte per segment
            c.send(std::string(1, byte));
            std::this_thread::sleep_for(1ms);
        }
        CHECK(c.read(connect_response.size()).data == connect_response);
        c.send(request(1, zk_op::get_data));
        CHECK(reply_xids(connect_response + c.read(reply(1).size()).data) == std::vector<std::int32_t>{1});

        proxy.drop_reply_to_next(zk_op::create);
        c.send(request(2, zk_op::get_data));
        CHECK(reply_xids(connect_response + c.read(reply(2).size()).data) == std::vector<std::int32_t>{2});
        const std::string create = request(3, zk_op::create);
        c.send(create.substr(0, 6));
        std::this_thread::sleep_for(20ms);
        c.send(create.substr(6));
        const read_result r = c.read(1000);
        CHECK(r.data.empty());
        CHECK(r.closed);
        CHECK(r.error == ECONNRESET);
        CHECK(proxy.replies_dropped() == 1);
        CHECK(eventually([&] { return server.resets == 1; }, 2s));
        CHECK(server.applied().back() == std::pair{3, zk_op::create});  // the server did apply it

        client again(proxy.port());  // one shot: the next create is answered
        again.send(connect_request + request(4, zk_op::create));
        CHECK(reply_xids(again.read(connect_response.size() + reply(4).size()).data) == std::vector<std::int32_t>{4});
    }
    SUBCASE("several frames per read")
    {
        client c(proxy.port());
        proxy.drop_reply([](std::int32_t xid, std::int32_t) { return xid == 12; });
        c.send(connect_request + request(10, zk_op::get_data) + request(11, zk_op::exists) +
               request(12, zk_op::set_data) + request(13, zk_op::get_data));
        const read_result r = c.read(100000);
        CHECK(r.closed);
        CHECK(r.error == ECONNRESET);
        // Replies before the dropped one are forwarded (Linux lets the client read them before the RST).
        CHECK(reply_xids(r.data) == std::vector<std::int32_t>{10, 11});
        CHECK(proxy.replies_dropped() == 1);
        const auto applied = server.applied();
        CHECK(std::find(applied.begin(), applied.end(), std::pair{12, zk_op::set_data}) != applied.end());
    }
}

TEST_CASE("fault_proxy rewrite_election_address rewrites ZooKeeper's InitialMessage however it is cut")
{
    recording_server server;
    fault_proxy proxy(server.port());
    const std::string announced = "127.0.0.1:4242";
    const std::string after = std::string("\0\0\0\x2c", 4) + std::string(44, '\7');  // a first vote, say
    std::string sent, expected;
    std::size_t rewritten = 0;  // size of the rewritten message, which reaches the server in one read

    SUBCASE("version 1, byte by byte, then more")
    {
        proxy.rewrite_election_address(announced);
        client c(proxy.port());
        sent = initial_message(-65536, 2, "127.0.0.1:33333") + after;
        expected = initial_message(-65536, 2, announced) + after;
        rewritten = expected.size() - after.size();
        for (std::size_t i = 0; i + after.size() < sent.size(); ++i) {
            c.send(sent.substr(i, 1));
            std::this_thread::sleep_for(1ms);
        }
        c.send(after);
    }
    SUBCASE("version 2 with several addresses, cut inside the length, with more in the same write")
    {
        proxy.rewrite_election_address(announced);
        client c(proxy.port());
        sent = initial_message(-65535, 3, "localhost:1|127.0.0.1:65000|[::1]:7") + after;
        expected = initial_message(-65535, 3, announced) + after;
        rewritten = expected.size() - after.size();
        c.send(sent.substr(0, 18));
        std::this_thread::sleep_for(20ms);
        c.send(sent.substr(18));
    }
    SUBCASE("a longer address than announced")
    {
        proxy.rewrite_election_address(announced);
        client c(proxy.port());
        sent = initial_message(-65536, 1, "1.2.3.4:5");
        expected = initial_message(-65536, 1, announced);
        rewritten = expected.size();
        c.send(sent);
    }
    SUBCASE("no InitialMessage but an old server's bare sid: passes unchanged")
    {
        proxy.rewrite_election_address(announced);
        client c(proxy.port());
        put64(sent, 2);
        sent += after;
        expected = sent;
        c.send(sent);
    }
    SUBCASE("an address length ZooKeeper refuses: passes unchanged")
    {
        proxy.rewrite_election_address(announced);
        client c(proxy.port());
        sent = initial_message(-65536, 2, std::string(2049, 'x'));
        expected = sent;
        c.send(sent);
    }
    SUBCASE("an incomplete one is forwarded unchanged when the client closes")
    {
        proxy.rewrite_election_address(announced);
        client c(proxy.port());
        sent = initial_message(-65536, 2, "127.0.0.1:33333").substr(0, 25);
        expected = sent;
        c.send(sent);
        std::this_thread::sleep_for(20ms);
        ::shutdown(c.fd, SHUT_WR);
        CHECK(eventually([&] { return server.closed(); }, 5s));
    }
    SUBCASE("off by default, and for connections accepted before it was set")
    {
        client before(proxy.port());
        sent = initial_message(-65536, 2, "127.0.0.1:33333");
        expected = sent;
        CHECK(eventually([&] { return proxy.connections_accepted() == 1; }, 2s));
        proxy.rewrite_election_address(announced);
        before.send(sent);
    }

    CHECK(eventually([&] { return server.received().size() >= expected.size(); }, 5s));
    std::this_thread::sleep_for(20ms);  // nothing more comes
    CHECK(server.received() == expected);
    if (rewritten > 0) CHECK(server.first_read() >= rewritten);
    CHECK_THROWS_AS(proxy.rewrite_election_address(std::string(2049, 'x')), std::invalid_argument);
}

// ---- zk_ensemble partitions ----

TEST_CASE("zk_ensemble with proxy_server_links gives each server its own view of the others")
{
    zk_ensemble zk(3, {.start = false, .proxy_server_links = true});
    std::vector<std::vector<std::string>> lines(3);  // lines[i][k]: "server.k+1=..." in server i's zoo.cfg
    for (int i = 0; i < 3; ++i) {
        std::ifstream cfg(zk.dir() / ("s" + std::to_string(i + 1)) / "zoo.cfg");
        REQUIRE(cfg);
        std::string line;
        while (std::getline(cfg, line))
            if (line.rfind("server.", 0) == 0) lines[i].push_back(line);
        REQUIRE(lines[i].size() == 3);
    }
    std::set<std::string> all;
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k) {
            CHECK(lines[i][k].rfind("server." + std::to_string(k + 1) + "=127.0.0.1:", 0) == 0);
            all.insert(lines[i][k].substr(lines[i][k].find('=')));
        }
    CHECK(all.size() == 9);  // each server's own entry, and the proxies of the 6 pairs (i -> k)
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k)
            if (i != k) CHECK(lines[i][k] != lines[k][k]);

    zk_ensemble direct(3, {.start = false});
    CHECK_THROWS_AS(direct.isolate(0), std::logic_error);
    CHECK_THROWS_AS(direct.heal(), std::logic_error);
}

// Server `low` (not the leader) restarts. Coming up, it connects to every other server for the
// election; one with a higher id drops that connection and connects back to the election
// address `low` announced. The proxies must then have announced the proxy towards `low`, or
// that connection bypasses them and a partition between the two leaks.
void restart_follower(zk_ensemble& zk, int low, bool crash)
{
    const auto t = steady::now();
    if (crash)
        zk.kill(low);
    else
        zk.stop(low);
    zk.start(low);
    REQUIRE(zk.wait_quorum(30s));
    MESSAGE("server " << low + 1 << std::string(crash ? " killed" : " stopped") << " and back in the quorum after "
                      << ms_since(t) << " ms");
}

TEST_CASE("zk_ensemble isolate: a cut-off leader is replaced by the others and stops serving until heal")
{
    auto t = steady::now();
    zk_ensemble zk(3, partition_options());
    MESSAGE("ensemble with proxied server links up in " << ms_since(t) << " ms");
    const int old_leader = zk.leader();
    REQUIRE(old_leader >= 0);
    // The follower with the lowest id gets a connection from the leader if its id is lower.
    const int low = old_leader == 0 ? 1 : 0;
    if (low < old_leader) restart_follower(zk, low, false);
    const int a = (old_leader + 1) % 3, b = (old_leader + 2) % 3;
    REQUIRE(notifications_from_others(zk, old_leader, 0) > 0);  // the log shows them at all
    const auto log_at_isolate = log_size(zk, old_leader);

    t = steady::now();
    zk.isolate(old_leader);
    long long elected_ms = -1, stepped_down_ms = -1;
    const bool settled = eventually(
        [&] {
            if (stepped_down_ms < 0 && mode_of(zk, old_leader).empty()) stepped_down_ms = ms_since(t);
            const std::string ma = mode_of(zk, a), mb = mode_of(zk, b);
            if (elected_ms < 0 && ((ma == "leader" && mb == "follower") || (ma == "follower" && mb == "leader")))
                elected_ms = ms_since(t);
            return stepped_down_ms >= 0 && elected_ms >= 0;
        },
        30s);
    MESSAGE("cut-off leader stopped serving after " << stepped_down_ms << " ms, the others had a new leader after "
                                                    << elected_ms << " ms");
    REQUIRE(settled);
    // Through a leaking partition the others elect the old leader again and give up on it only
    // after initLimit; and it hears their election messages.
    CHECK(elected_ms < std::chrono::milliseconds(partition_sync_limit + partition_init_limit).count());
    const int new_leader = mode_of(zk, a) == "leader" ? a : b;
    const int follower = a + b - new_leader;

    // It stays so, and the cut-off server still answers its clients, as not serving.
    bool stable = true;
    for (const auto until = steady::now() + 1500ms; steady::now() < until;) {
        stable = stable && mode_of(zk, new_leader) == "leader" && mode_of(zk, follower) == "follower" &&
                 mode_of(zk, old_leader).empty();
        std::this_thread::sleep_for(100ms);
    }
    CHECK(stable);
    CHECK(zk.four_letter(old_leader, "srvr").find("not currently serving requests") != std::string::npos);
    CHECK(notifications_from_others(zk, old_leader, log_at_isolate) == 0);

    t = steady::now();
    zk.heal();
    REQUIRE(zk.wait_quorum(30s));
    MESSAGE("all three serve again " << ms_since(t) << " ms after heal");
    CHECK(zk.leader() == new_leader);
    CHECK(mode_of(zk, old_leader) == "follower");
}

TEST_CASE("zk_ensemble isolate: a cut-off follower stops serving, the others keep their leader, heal")
{
    auto t = steady::now();
    zk_ensemble zk(3, partition_options());
    MESSAGE("ensemble with proxied server links up in " << ms_since(t) << " ms");
    const int leader = zk.leader();
    REQUIRE(leader >= 0);
    const int cut = leader == 0 ? 1 : 0;  // the follower with the lowest id
    const int other = 3 - leader - cut;
    restart_follower(zk, cut, true);  // gets connections from the others with higher ids
    REQUIRE(notifications_from_others(zk, cut, 0) > 0);
    const auto log_at_isolate = log_size(zk, cut);

    t = steady::now();
    zk.isolate(cut);
    bool kept = true;
    const bool stopped = eventually(
        [&] {
            kept = kept && mode_of(zk, leader) == "leader" && mode_of(zk, other) == "follower";
            return mode_of(zk, cut).empty();
        },
        30s);
    MESSAGE("cut-off follower stopped serving after " << ms_since(t) << " ms");
    CHECK(stopped);
    CHECK(kept);
    CHECK(zk.four_letter(cut, "srvr").find("not currently serving requests") != std::string::npos);
    // Through a leaking partition the cut-off follower, now looking for a leader, would hear
    // the others' election replies at once.
    std::this_thread::sleep_for(500ms);
    CHECK(notifications_from_others(zk, cut, log_at_isolate) == 0);

    t = steady::now();
    zk.heal();
    REQUIRE(zk.wait_quorum(30s));
    MESSAGE("all three serve again " << ms_since(t) << " ms after heal");
    CHECK(zk.leader() == leader);
}

// ---- TLS: certificates and a server with a secure port ----

namespace {

// openssl's exit status and its stdout and stderr together.
std::pair<int, std::string> run_openssl(std::vector<std::string> args)
{
    args.insert(args.begin(), "openssl");
    const auto r = zklock::test::detail::run_process(args, 20s);
    REQUIRE_FALSE(r.timed_out);
    return {r.status, r.out + r.err};
}

std::pair<int, std::string> verify(const fs::path& ca, const fs::path& cert, std::vector<std::string> extra = {})
{
    std::vector<std::string> args = {"verify", "-CAfile", ca.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(cert.string());
    return run_openssl(args);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A TLS handshake by `openssl s_client` that checks the server's certificate for 127.0.0.1.
std::pair<int, std::string> s_client(std::uint16_t port, const fs::path& ca, const std::string& client = "")
{
    std::vector<std::string> args = {"s_client", "-connect", "127.0.0.1:" + std::to_string(port),
                                     "-CAfile", ca.string(), "-verify_return_error", "-verify_ip", "127.0.0.1",
                                     "-brief"};
    if (!client.empty())
        args.insert(args.end(), {"-cert", shared_tls_certs().client_cert(client).string(), "-key",
                                 shared_tls_certs().client_key(client).string()});
    return run_openssl(args);
}

// What a peer that does not speak the port's protocol gets: the bytes the server sent before it
// closed, and how it closed.
std::string probe(std::uint16_t port, const std::string& data)
{
    client c(port);
    const auto t = steady::now();
    c.send(data);
    const read_result r = c.read(1 << 16, 5s);
    std::ostringstream out;
    out << r.data.size() << " bytes back, then ";
    if (!r.closed)
        out << "nothing (still open after 5 s)";
    else if (r.error == 0)
        out << "EOF";
    else
        out << std::strerror(r.error);
    out << " after " << ms_since(t) << " ms";
    return out.str();
}

// The 48 bytes a ZooKeeper client sends first: a ConnectRequest frame (protocol version 0, no
// zxid seen, 30 s timeout, no session, a 16-byte empty password).
std::string zk_connect_request()
{
    std::string body;
    put32(body, 0);
    put64(body, 0);
    put32(body, 30000);
    put64(body, 0);
    put32(body, 16);
    body.append(16, '\0');
    return frame(body);
}

// A minimal TLS 1.2 ClientHello record (one cipher suite, no extensions).
std::string client_hello()
{
    std::string hello = "\x03\x03";                             // client_version TLS 1.2
    hello.append(32, '\x2a');                                   // random
    hello += std::string("\x00\x00\x02\xc0\x2b\x01\x00", 7);    // no session id; one suite; null compression
    std::string handshake = "\x01";                             // ClientHello
    handshake += std::string{'\0', '\0', static_cast<char>(hello.size())} + hello;
    std::string record = "\x16\x03\x01";                        // handshake record, TLS 1.0 record version
    record += std::string{'\0', static_cast<char>(handshake.size())} + handshake;
    return record;
}

}  // namespace

TEST_CASE("tls_certs makes a CA, server and client certificates and the bad ones")
{
    const auto t = steady::now();
    const tls_certs& certs = shared_tls_certs();
    MESSAGE("certificates made in " << ms_since(t) << " ms, in " << certs.dir());
    for (const auto& p : {certs.ca_cert(), certs.server_cert(), certs.server_key(), certs.expired_server_cert(),
                          certs.not_yet_valid_server_cert(), certs.wrong_host_server_cert(),
                          certs.untrusted_server_cert(), certs.untrusted_ca_cert()})
        CHECK(fs::file_size(p) > 0);
    CHECK_THROWS_AS(certs.client_cert("carol"), std::invalid_argument);

    // Valid for the loopback names, from now for about two days.
    auto [status, out] = verify(certs.ca_cert(), certs.server_cert(), {"-verify_ip", "127.0.0.1"});
    CHECK_MESSAGE(status == 0, out);
    CHECK(verify(certs.ca_cert(), certs.server_cert(), {"-verify_ip", "::1"}).first == 0);
    CHECK(verify(certs.ca_cert(), certs.server_cert(), {"-verify_hostname", "localhost"}).first == 0);
    std::tie(status, out) = run_openssl({"x509", "-in", certs.server_cert().string(), "-noout", "-subject", "-ext",
                                         "subjectAltName,extendedKeyUsage", "-nameopt", "RFC2253"});
    CHECK(contains(out, "subject=CN=localhost,OU=zklock-test,O=zklock"));
    CHECK(contains(out, "IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, DNS:localhost"));
    CHECK(contains(out, "TLS Web Server Authentication"));
    CHECK(run_openssl({"x509", "-in", certs.server_cert().string(), "-noout", "-checkend", "86400"}).first == 0);
    CHECK(run_openssl({"x509", "-in", certs.server_cert().string(), "-noout", "-checkend", "259200"}).first != 0);

    for (const auto& name : tls_certs::client_names()) {
        CAPTURE(name);
        CHECK(verify(certs.ca_cert(), certs.client_cert(name), {"-purpose", "sslclient"}).first == 0);
        std::tie(status, out) = run_openssl(
            {"x509", "-in", certs.client_cert(name).string(), "-noout", "-subject", "-nameopt", "RFC2253"});
        CHECK(out == "subject=" + tls_certs::client_subject(name) + "\n");
        const std::string keystore = zklock::test::detail::read_file_from(certs.client_keystore(name));
        CHECK(keystore.rfind("-----BEGIN PRIVATE KEY-----", 0) == 0);
        CHECK(contains(keystore, "-----BEGIN CERTIFICATE-----"));
    }
    CHECK(tls_certs::client_subject("alice") == "CN=alice,OU=zklock-test,O=zklock");

    std::tie(status, out) = verify(certs.ca_cert(), certs.expired_server_cert());
    CHECK(status != 0);
    CHECK_MESSAGE(contains(out, "certificate has expired"), out);
    std::tie(status, out) = verify(certs.ca_cert(), certs.not_yet_valid_server_cert());
    CHECK(status != 0);
    CHECK_MESSAGE(contains(out, "certificate is not yet valid"), out);
    std::tie(status, out) = verify(certs.ca_cert(), certs.untrusted_server_cert());
    CHECK(status != 0);
    CHECK_MESSAGE(contains(out, "unable to get local issuer certificate"), out);
    CHECK(verify(certs.untrusted_ca_cert(), certs.untrusted_server_cert()).first == 0);
    // Signed by the CA but for another host only.
    CHECK(verify(certs.ca_cert(), certs.wrong_host_server_cert()).first == 0);
    std::tie(status, out) = verify(certs.ca_cert(), certs.wrong_host_server_cert(), {"-verify_ip", "127.0.0.1"});
    CHECK(status != 0);
    CHECK_MESSAGE(contains(out, "IP address mismatch"), out);
    std::tie(status, out) = run_openssl(
        {"x509", "-in", certs.wrong_host_server_cert().string(), "-noout", "-ext", "subjectAltName"});
    CHECK(contains(out, "DNS:wrong.example"));
    CHECK_FALSE(contains(out, "IP Address"));
}

TEST_CASE("zk_server with TLS: the secure port takes client certificates as x509 ids")
{
    const tls_certs& certs = shared_tls_certs();
    auto t = steady::now();
    zk_server zk({.tick_time = 200ms, .tls = certs.server_tls()});
    MESSAGE("TLS server up in " << ms_since(t) << " ms");
    REQUIRE(zk.tls_port() != 0);
    CHECK(zk.tls_port() != zk.port());
    CHECK(zk.tls_connect_string() == "127.0.0.1:" + std::to_string(zk.tls_port()));
    CHECK(zk.four_letter("ruok") == "imok");  // the plaintext port still serves

    auto [status, out] = s_client(zk.tls_port(), certs.ca_cert(), "alice");
    CHECK_MESSAGE(status == 0, out);
    CHECK(contains(out, "Verification: OK"));
    CHECK_MESSAGE(contains(out, "Protocol version: TLSv1.2"), out);

    // ZooKeeper's own client over TLS: the session carries the certificate's subject as its x509 id.
    t = steady::now();
    out = zookeeper_cli_tls(zk.tls_port(), {.keystore = certs.client_keystore("alice"), .truststore = certs.ca_cert()},
                            {"whoami"});
    MESSAGE("zookeeper_cli_tls whoami in " << ms_since(t) << " ms:\n" << out);
    CHECK(contains(out, "x509: " + tls_certs::client_subject("alice") + "\n"));
    // clientAuth=want: a client without a certificate is admitted, without an x509 id.
    out = zookeeper_cli_tls(zk.tls_port(), {.truststore = certs.ca_cert()}, {"whoami"});
    CHECK_MESSAGE(contains(out, "ip: 127.0.0.1"), out);
    CHECK_FALSE(contains(out, "x509:"));

    const auto port = zk.port(), tls_port = zk.tls_port();
    zk.stop();
    zk.start();
    CHECK(zk.port() == port);
    CHECK(zk.tls_port() == tls_port);
    CHECK(s_client(zk.tls_port(), certs.ca_cert(), "bob").first == 0);
}

TEST_CASE("zk_server with TLS and clientAuth=need turns away a client without a certificate")
{
    const tls_certs& certs = shared_tls_certs();
    zk_server zk({.tick_time = 200ms, .tls = certs.server_tls(tls_server_options::client_auth::need)});
    CHECK(s_client(zk.tls_port(), certs.ca_cert(), "bob").first == 0);
    // TLS 1.2: the server's alert comes within the handshake, so s_client fails.
    auto [status, out] = s_client(zk.tls_port(), certs.ca_cert());
    MESSAGE("s_client without a certificate:\n" << out);
    CHECK(status != 0);
}

TEST_CASE("zk_server with TLS and a bad certificate starts, and clients refuse it")
{
    const tls_certs& certs = shared_tls_certs();
    zk_server zk({.tick_time = 200ms, .tls = certs.server_tls(tls_certs::bad_server::expired)});
    auto [status, out] = s_client(zk.tls_port(), certs.ca_cert(), "alice");
    CHECK(status != 0);
    CHECK_MESSAGE(contains(out, "certificate has expired"), out);
}

TEST_CASE("TLS probe: plaintext on the TLS port and a ClientHello on plaintext ports are closed")
{
    const tls_certs& certs = shared_tls_certs();
    zk_server tls_zk({.tick_time = 200ms, .tls = certs.server_tls()});
    zk_server plain_zk({.tick_time = 200ms});
    REQUIRE(zk_connect_request().size() == 48);

    // What a library's error message can rely on: no byte comes back, the server just closes.
    const std::string plain_on_tls = probe(tls_zk.tls_port(), zk_connect_request());
    MESSAGE("ConnectRequest to the TLS port (Netty): " << plain_on_tls);
    CHECK(plain_on_tls.rfind("0 bytes back, then ", 0) == 0);
    CHECK_FALSE(contains(plain_on_tls, "still open"));

    const std::string hello_on_netty = probe(tls_zk.port(), client_hello());
    MESSAGE("ClientHello to the plaintext port of the TLS server (Netty): " << hello_on_netty);
    CHECK(hello_on_netty.rfind("0 bytes back, then ", 0) == 0);
    CHECK_FALSE(contains(hello_on_netty, "still open"));

    const std::string hello_on_nio = probe(plain_zk.port(), client_hello());
    MESSAGE("ClientHello to a plaintext server (NIO): " << hello_on_nio);
    CHECK(hello_on_nio.rfind("0 bytes back, then ", 0) == 0);
    CHECK_FALSE(contains(hello_on_nio, "still open"));

    // And what OpenSSL makes of it.
    auto [status, out] = s_client(plain_zk.port(), certs.ca_cert(), "alice");
    MESSAGE("s_client to a plaintext server:\n" << out);
    CHECK(status != 0);
}

int main(int argc, char** argv)
{
    doctest::Context ctx;
    ctx.applyCommandLine(argc, argv);
    return zklock::test::run_doctest(ctx, argc, argv);
}
