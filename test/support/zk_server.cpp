#include "support/zk_server.hpp"

#include "support/failure.hpp"
#include "support/process_util.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace zklock::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

int sys_check(int r, const char* what)
{
    if (r < 0) throw std::system_error(errno, std::generic_category(), what);
    return r;
}

sockaddr_in loopback(std::uint16_t port)
{
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

bool executable(const fs::path& p) { return ::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p); }

std::string find_java()
{
    if (const char* home = std::getenv("JAVA_HOME"); home && *home && executable(fs::path(home) / "bin/java"))
        return (fs::path(home) / "bin/java").string();
    if (const char* path = std::getenv("PATH")) {
        std::istringstream dirs(path);
        for (std::string d; std::getline(dirs, d, ':');)
            if (!d.empty() && executable(fs::path(d) / "java")) return (fs::path(d) / "java").string();
    }
    return "/usr/bin/java";
}

// SLF4J bindings Debian may ship; without one ZooKeeper logs nothing at all (NOP logger).
struct log_binding {
    std::vector<std::string> jars;
    bool log4j;
};

const log_binding* find_log_binding()
{
    static const std::vector<log_binding> candidates = {
        {{"slf4j-log4j12.jar", "log4j-1.2.jar"}, true},
        {{"slf4j-reload4j.jar", "reload4j.jar"}, true},
        {{"slf4j-simple.jar"}, false},
    };
    for (const auto& c : candidates) {
        bool all = true;
        for (const auto& jar : c.jars) all = all && fs::exists(fs::path("/usr/share/java") / jar);
        if (all) return &c;
    }
    return nullptr;
}

// Waits until fd is ready for `events`; false on timeout or error.
bool wait_for(int fd, short events, clock_type::time_point deadline)
{
    for (;;) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
        if (left <= 0ms) return false;
        pollfd p{fd, events, 0};
        int r = ::poll(&p, 1, static_cast<int>(left.count()));
        if (r > 0) return true;
        if (r < 0 && errno != EINTR) return false;
    }
}

// A non-blocking TCP socket connected to address:port (a numeric IPv4 or IPv6 address), or -1.
int connect_within(const std::string& address, std::uint16_t port, clock_type::time_point deadline)
{
    sockaddr_storage a{};
    socklen_t a_len = 0;
    if (auto* v4 = reinterpret_cast<sockaddr_in*>(&a); ::inet_pton(AF_INET, address.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        a_len = sizeof *v4;
    } else if (auto* v6 = reinterpret_cast<sockaddr_in6*>(&a); ::inet_pton(AF_INET6, address.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        a_len = sizeof *v6;
    } else {
        return -1;
    }
    const int fd = ::socket(a.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), a_len) == 0;
    if (!ok && errno == EINPROGRESS && wait_for(fd, POLLOUT, deadline)) {
        int err = 0;
        socklen_t len = sizeof err;
        ok = ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    if (ok) return fd;
    ::close(fd);
    return -1;
}

std::string host_port(const std::string& host, std::uint16_t port)
{
    return (host.find(':') == std::string::npos ? host : "[" + host + "]") + ":" + std::to_string(port);
}

// ZooKeeper's TLS needs Netty (its NIO connection factory has no TLS). Debian's netty-all.jar is
// a manifest pointing at the parts, which a -cp list does not follow: the parts are listed.
std::string netty_classpath()
{
    static const char* const jars[] = {
        "netty-buffer.jar",  "netty-codec.jar",    "netty-common.jar",
        "netty-handler.jar", "netty-resolver.jar", "netty-transport.jar",
        "netty-transport-native-epoll.jar", "netty-transport-native-unix-common.jar",
    };
    std::string classpath;
    for (const char* jar : jars) {
        const fs::path path = fs::path("/usr/share/java") / jar;
        if (!fs::exists(path))
            throw std::runtime_error("ZooKeeper's TLS needs " + path.string() +
                                     " (Debian package libnetty-java, see scripts/install-deps.sh)");
        classpath += ":" + path.string();
    }
    return classpath;
}

constexpr const char* log4j_properties =
    "log4j.rootLogger=INFO, CONSOLE\n"
    "log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\n"
    "log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n"
    "log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t:%C{1}@%L] - %m%n\n";

}  // namespace

// Ports below the kernel's ephemeral range, which no outgoing connection is given: a server binds
// some of its ports long after they were picked (a quorum member its leader port only when it
// leads), and a port the kernel picked as free could meanwhile be given to any connection of the
// machine. Each process starts at its own place in the range (by its pid), and a port is taken
// only if it can be bound now.
std::vector<std::uint16_t> free_ports(std::size_t n)
{
    int ephemeral_low = 32768;
    if (std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range"); range) range >> ephemeral_low;
    constexpr int low = 10000;
    const int span = ephemeral_low - low;
    if (span < 1000) throw std::runtime_error("free_ports: the ephemeral range leaves too few ports below it");
    static std::mutex m;
    static int next = static_cast<int>((static_cast<unsigned>(::getpid()) * 2654435761u) % static_cast<unsigned>(span));
    std::lock_guard lock(m);
    std::vector<int> fds;
    std::vector<std::uint16_t> ports;
    try {
        for (int tries = 0; ports.size() < n && tries < span; ++tries) {
            const auto port = static_cast<std::uint16_t>(low + next);
            next = (next + 1) % span;
            int fd = sys_check(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), "socket");
            sockaddr_in a = loopback(port);
            if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
                ::close(fd);
                continue;
            }
            fds.push_back(fd);
            ports.push_back(port);
        }
    } catch (...) {
        for (int fd : fds) ::close(fd);
        throw;
    }
    for (int fd : fds) ::close(fd);
    if (ports.size() < n) throw std::runtime_error("free_ports: no free port below the ephemeral range");
    return ports;
}

bool ipv6_loopback_available()
{
    const int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    ::close(fd);
    return ok;
}

std::string four_letter(std::uint16_t port, const std::string& cmd, std::chrono::milliseconds timeout)
{
    return four_letter("127.0.0.1", port, cmd, timeout);
}

std::string four_letter(const std::string& address, std::uint16_t port, const std::string& cmd,
                        std::chrono::milliseconds timeout)
{
    const auto deadline = clock_type::now() + timeout;
    const int fd = connect_within(address, port, deadline);
    if (fd < 0) return {};
    std::string reply;
    bool ok = true;
    std::size_t sent = 0;
    while (ok && sent < cmd.size()) {
        ssize_t n = ::send(fd, cmd.data() + sent, cmd.size() - sent, MSG_NOSIGNAL);
        if (n > 0)
            sent += static_cast<std::size_t>(n);
        else if (!(n < 0 && (errno == EAGAIN || errno == EINTR) && wait_for(fd, POLLOUT, deadline)))
            ok = false;
    }
    while (ok) {
        char buf[4096];
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n > 0)
            reply.append(buf, static_cast<std::size_t>(n));
        else if (!(n < 0 && (errno == EAGAIN || errno == EINTR) && wait_for(fd, POLLIN, deadline)))
            break;  // EOF (the server closes after replying), error or timeout
    }
    ::close(fd);
    return reply;
}

namespace {

// ZooKeeperMain against `server` with one command; `tls` adds its client's TLS options.
std::string run_cli(const std::string& server, const tls_client_files* tls, const std::vector<std::string>& command,
                    std::chrono::milliseconds timeout)
{
    const char* zk_jar = std::getenv("ZOOKEEPER_JAR");
    std::string classpath = zk_jar && *zk_jar ? zk_jar : "/usr/share/java/zookeeper.jar";
    // The CLI parses its commands' options with Apache Commons CLI (a dependency of Debian's zookeeper).
    if (fs::exists("/usr/share/java/commons-cli.jar")) classpath += ":/usr/share/java/commons-cli.jar";
    if (const log_binding* binding = find_log_binding())
        for (const auto& jar : binding->jars) classpath += ":/usr/share/java/" + jar;
    std::vector<std::string> args = {find_java(), "-Xmx64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                                     "-XX:-UsePerfData"};
    if (tls) {
        classpath += netty_classpath();
        args.insert(args.end(), {"-Dzookeeper.client.secure=true",
                                 "-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
                                 "-Dzookeeper.ssl.trustStore.location=" + tls->truststore.string(),
                                 "-Dzookeeper.ssl.trustStore.type=PEM"});
        if (!tls->keystore.empty())
            args.insert(args.end(), {"-Dzookeeper.ssl.keyStore.location=" + tls->keystore.string(),
                                     "-Dzookeeper.ssl.keyStore.type=PEM"});
    }
    args.insert(args.end(), {"-cp", classpath, "org.apache.zookeeper.ZooKeeperMain", "-server", server});
    args.insert(args.end(), command.begin(), command.end());
    // stdout and stderr on one pipe; its own process group, so that a timeout kills the whole JVM.
    int out[2];
    sys_check(::pipe2(out, O_CLOEXEC), "pipe2");
    child_process cli;
    try {
        cli.start(args, {.out = {.fd = out[1]},
                         .err = {.fd = out[1]},
                         .own_group = true,
                         .default_signals = true,
                         .close_other_fds = true});
    } catch (...) {
        ::close(out[0]);
        ::close(out[1]);
        throw;
    }
    ::close(out[1]);
    const auto deadline = clock_type::now() + timeout;
    std::string output;
    bool timed_out = false;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
        if (left <= 0ms) {
            timed_out = true;
            break;
        }
        pollfd p{out[0], POLLIN, 0};
        const int r = ::poll(&p, 1, static_cast<int>(left.count()));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) continue;
        char buf[4096];
        const ssize_t n = ::read(out[0], buf, sizeof buf);
        if (n > 0) output.append(buf, static_cast<std::size_t>(n));
        else if (n == 0 || errno != EINTR) break;  // the CLI closed its output: it is exiting
    }
    ::close(out[0]);
    // It exits right after its output ends; past the deadline it is killed.
    while (!cli.poll()) {
        if (timed_out || clock_type::now() >= deadline) {
            cli.kill_and_reap();
            break;
        }
        std::this_thread::sleep_for(20ms);
    }
    if (timed_out)
        throw std::runtime_error("zookeeper_cli: no answer within " + std::to_string(timeout.count()) + " ms; output:\n" +
                                 output);
    return output;
}

}  // namespace

std::string zookeeper_cli(std::uint16_t port, const std::vector<std::string>& command, std::chrono::milliseconds timeout)
{
    return run_cli("127.0.0.1:" + std::to_string(port), nullptr, command, timeout);
}

std::string zookeeper_cli_tls(std::uint16_t tls_port, const tls_client_files& tls,
                              const std::vector<std::string>& command, std::chrono::milliseconds timeout)
{
    return run_cli("127.0.0.1:" + std::to_string(tls_port), &tls, command, timeout);
}

zk_server::zk_server(server_options options)
    : options_(std::move(options)),
      dir_(detail::make_temp_dir("zklock-zk")),
      process_(std::make_unique<child_process>()),
      uncaught_(std::uncaught_exceptions())
{
    pick_ports();
    if (options_.start) {
        try {
            start();
        } catch (...) {
            std::fprintf(stderr, "zklock::test::zk_server: start failed, kept %s\n", dir_.c_str());
            throw;
        }
    }
}

zk_server::zk_server(member_tag, fs::path dir, std::uint16_t port, const server_options& options, std::uint16_t tls_port)
    : options_(options), dir_(std::move(dir)), port_(port), tls_port_(tls_port),
      process_(std::make_unique<child_process>()), member_(true), uncaught_(std::uncaught_exceptions())
{
}

zk_server::~zk_server()
{
    try {
        stop();
    } catch (...) {
    }
    if (member_) return;
    if (keep_ || std::uncaught_exceptions() > uncaught_ || should_keep_files()) {
        std::fprintf(stderr, "zklock::test::zk_server: kept %s\n", dir_.c_str());
    } else {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
}

std::string zk_server::connect_string() const { return host_port(options_.client_address, port_); }

std::string zk_server::tls_connect_string() const
{
    if (!options_.tls.enabled()) throw std::logic_error("zk_server::tls_connect_string(): TLS is not enabled");
    return host_port(options_.client_address, tls_port_);
}

void zk_server::pick_ports()
{
    const auto ports = free_ports(options_.tls.enabled() ? 2 : 1);
    port_ = ports[0];
    if (options_.tls.enabled()) tls_port_ = ports[1];
}

pid_t zk_server::pid() const { return running() ? process_->pid : -1; }

void zk_server::write_config() const
{
    std::ostringstream cfg;
    cfg << "tickTime=" << options_.tick_time.count() << "\n"
        << "dataDir=" << (dir_ / "data").string() << "\n"
        << "clientPort=" << port_ << "\n"
        << "clientPortAddress=" << options_.client_address << "\n"
        << "forceSync=no\n"
        << "maxClientCnxns=0\n"
        << "admin.enableServer=false\n"
        << "4lw.commands.whitelist=*\n";
    if (options_.max_session_timeout_ms > 0) cfg << "maxSessionTimeout=" << options_.max_session_timeout_ms << "\n";
    if (options_.tls.enabled()) {
        cfg << "secureClientPort=" << tls_port_ << "\n"
            << "secureClientPortAddress=" << options_.client_address << "\n";
        for (const auto& file : {options_.tls.cert, options_.tls.key, options_.tls.ca})
            if (!file.empty() && !fs::is_regular_file(file))
                throw std::runtime_error("zk_server: TLS file " + file.string() + " does not exist");
        // ZooKeeper's PEM key store is one file: the key, then the certificate chain.
        detail::write_file(tls_keystore_path(), detail::read_file_from(options_.tls.key) +
                                                    detail::read_file_from(options_.tls.cert));
    }
    for (const auto& line : options_.extra_config) cfg << line << "\n";
    detail::write_file(dir_ / "zoo.cfg", cfg.str());
}

void zk_server::start()
{
    if (running()) return;
    for (int attempt = 0;; ++attempt) {
        if (!member_) write_config();
        const auto log_size_before = fs::exists(log_path()) ? fs::file_size(log_path()) : 0;
        spawn();
        try {
            wait_up(clock_type::now() + 30s);
            started_ = true;
            return;
        } catch (const std::runtime_error&) {
            // The port was free when picked but another process may have taken it since.
            bool bind_failed = detail::read_file_from(log_path(), log_size_before).find("Address already in use")
                               != std::string::npos;
            if (member_ || started_ || !bind_failed || attempt >= 3) throw;
            pick_ports();
        }
    }
}

void zk_server::spawn()
{
    std::vector<std::string> args = {find_java(), "-Xmx" + options_.jvm_heap, "-XX:-UsePerfData",
                                     "-Djava.awt.headless=true"};
    if (!options_.direct_memory.empty()) args.push_back("-XX:MaxDirectMemorySize=" + options_.direct_memory);
    if (options_.fast_start_jvm) {
        // Faster JVM start and fewer threads: test servers are small and short-lived. Not for
        // benchmarks: C1-only code is slower once warm.
        args.insert(args.begin() + 2, {"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"});
    }
    const char* zk_jar = std::getenv("ZOOKEEPER_JAR");
    std::string classpath = zk_jar && *zk_jar ? zk_jar : "/usr/share/java/zookeeper.jar";
    if (const auto& tls = options_.tls; tls.enabled()) {
        // Java system properties (the admin guide's names for them; zoo.cfg would pass its unknown
        // keys on as "zookeeper."-prefixed properties too). The x509 provider makes a client
        // certificate an ACL id; the server's TLS handshake looks it up by that name.
        const char* auth = tls.auth == tls_server_options::client_auth::none   ? "none"
                           : tls.auth == tls_server_options::client_auth::need ? "need"
                                                                               : "want";
        args.insert(args.end(),
                    {"-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
                     "-Dzookeeper.ssl.keyStore.location=" + tls_keystore_path().string(),
                     "-Dzookeeper.ssl.keyStore.type=PEM", "-Dzookeeper.ssl.clientAuth=" + std::string(auth),
                     "-Dzookeeper.authProvider.x509=org.apache.zookeeper.server.auth.X509AuthenticationProvider"});
        if (!tls.ca.empty())
            args.insert(args.end(), {"-Dzookeeper.ssl.trustStore.location=" + tls.ca.string(),
                                     "-Dzookeeper.ssl.trustStore.type=PEM"});
        classpath += netty_classpath();
    } else if (options_.netty) {
        args.push_back("-Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory");
        classpath += netty_classpath();
    }
    args.insert(args.end(), options_.jvm_flags.begin(), options_.jvm_flags.end());  // last: they win
    if (const log_binding* binding = find_log_binding()) {
        for (const auto& jar : binding->jars) classpath += ":/usr/share/java/" + jar;
        if (binding->log4j) {
            detail::write_file(dir_ / "log4j.properties", log4j_properties);
            args.push_back("-Dlog4j.configuration=file:" + (dir_ / "log4j.properties").string());
        } else {
            args.push_back("-Dorg.slf4j.simpleLogger.showDateTime=true");
        }
    }
    args.insert(args.end(), {"-cp", classpath, "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                             (dir_ / "zoo.cfg").string()});

    // stdout and stderr appended to the log, after a line that says which start this is.
    std::ofstream(log_path(), std::ios::app) << "---- zklock::test: starting " << args.front() << " on port " << port_ << "\n";
    process_->start(args, {.out = {.file = log_path().string(), .append = true},
                          .err = {.file = log_path().string(), .append = true},
                          .own_group = true,
                          .default_signals = true,
                          .close_other_fds = true});
}

void zk_server::wait_up(clock_type::time_point deadline)
{
    const auto failure = [&](const std::string& what) {
        return std::runtime_error("ZooKeeper on port " + std::to_string(port_) + " " + what + "; dir " +
                                  dir_.string() + "; log tail:\n" + log_tail(40));
    };
    for (;;) {
        if (reap(false)) throw failure("exited during startup");
        // "ruok" answers before the server serves ("srvr" then says "not currently serving
        // requests", clients are turned away); quorum members only serve once there is a leader.
        if (four_letter_within("ruok", 1s) == "imok" &&
            (member_ || four_letter_within("srvr", 1s).find("Mode: ") != std::string::npos) &&
            (!options_.tls.enabled() || accepts(tls_port_)))
            return;
        if (clock_type::now() > deadline) {
            kill();
            throw failure("did not come up in time");
        }
        std::this_thread::sleep_for(50ms);
    }
}

bool zk_server::reap(bool block) const
{
    if (block) process_->wait();
    return process_->poll();
}

bool zk_server::running() const { return !reap(false); }

void zk_server::terminate()
{
    process_->signal(SIGTERM);
}

void zk_server::stop()
{
    if (reap(false)) return;
    terminate();
    const auto deadline = clock_type::now() + 5s;
    while (clock_type::now() < deadline) {
        if (reap(false)) return;
        std::this_thread::sleep_for(20ms);
    }
    kill();
}

void zk_server::kill()
{
    process_->kill_and_reap();
}

std::string zk_server::four_letter(const std::string& cmd) const { return four_letter_within(cmd, 3s); }

std::string zk_server::four_letter_within(const std::string& cmd, std::chrono::milliseconds timeout) const
{
    return zklock::test::four_letter(options_.client_address, port_, cmd, timeout);
}

bool zk_server::accepts(std::uint16_t port) const
{
    const int fd = connect_within(options_.client_address, port, clock_type::now() + 1s);
    if (fd < 0) return false;
    ::close(fd);
    return true;
}

std::filesystem::path zk_server::log_path() const { return dir_ / "zookeeper.log"; }

std::filesystem::path zk_server::tls_keystore_path() const { return dir_ / "tls-keystore.pem"; }

std::string zk_server::log_tail(std::size_t lines) const
{
    return detail::tail_lines(detail::read_file_from(log_path()), lines);
}

}  // namespace zklock::test
