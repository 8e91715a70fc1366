// support/zk_server.hpp — a real, throwaway, standalone ZooKeeper server for tests.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace zklock::test {

class child_process;  // support/process_util.hpp

class zk_ensemble;

/// TLS for a standalone zk_server (server_options::tls): with a certificate, the server also
/// listens on a secureClientPort (zk_server::tls_port()) through Netty, the plaintext clientPort
/// staying as it is. Client certificates become ACL ids "x509:<subject>" (ZooKeeper's
/// X509AuthenticationProvider; see tls_certs::client_subject()). ZooKeeper 3.8 speaks TLSv1.2 only.
struct tls_server_options {
    /// ssl.clientAuth: whether the server asks the client for a certificate (want: asks, but a
    /// client without one is admitted), requires one (need), or does not ask (none).
    enum class client_auth { none, want, need };

    /// PEM certificate (then its chain, if any) the server presents; empty = no TLS.
    std::filesystem::path cert{};
    /// Its private key, unencrypted PKCS#8 PEM ("BEGIN PRIVATE KEY").
    std::filesystem::path key{};
    /// PEM CA certificate(s) the server trusts for client certificates.
    std::filesystem::path ca{};
    client_auth auth = client_auth::want;

    bool enabled() const { return !cert.empty(); }
};

/// Options of zk_server and zk_ensemble (an aggregate: designated initializers must follow this order).
struct server_options {
    /// ZooKeeper clamps session timeouts to [2, 20] x tickTime: use e.g. 200 ms for short sessions.
    std::chrono::milliseconds tick_time{2000};
    /// maxSessionTimeout in ms; 0 = ZooKeeper's default (20 x tickTime).
    int max_session_timeout_ms = 0;
    /// JVM -Xmx.
    std::string jvm_heap = "512m";
    /// JVM -XX:MaxDirectMemorySize; empty: the JVM's default (the heap's size). A Netty server
    /// (TLS, `netty`) holds every reply its clients have not read yet in direct memory.
    std::string direct_memory{};
    /// Start in the constructor (otherwise call start()).
    bool start = true;
    /// JVM flags for a fast start (serial GC, C1 only). Benchmarks turn this off: the protocol
    /// runs the server with its default JIT (only -Xmx512m).
    bool fast_start_jvm = true;
    /// Extra zoo.cfg lines ("key=value"); they come last, so they override earlier keys.
    std::vector<std::string> extra_config{};
    /// Extra JVM flags, e.g. "-Djute.maxbuffer=65536" (system properties the server reads).
    std::vector<std::string> jvm_flags{};
    /// zk_ensemble only: every link between two servers (quorum and election ports, both
    /// directions) goes through a fault_proxy, so that zk_ensemble::isolate() can cut them.
    bool proxy_server_links = false;
    /// zk_ensemble only: dynamic reconfiguration. reconfigEnabled=true, standaloneEnabled=false,
    /// the server lines (with each member's client address) in a dynamic config file, and ACLs
    /// skipped (-Dzookeeper.skipACL=yes) so that any client may reconfigure; enables
    /// zk_ensemble::add_server() and reconfig(). Not with proxy_server_links.
    bool dynamic_config = false;
    /// zk_server only: the address it listens on (clientPortAddress), a loopback address:
    /// "127.0.0.1", or "::1" (then connect_string() is "[::1]:PORT").
    std::string client_address = "127.0.0.1";
    /// zk_server only: a TLS port besides the plaintext one (see tls_server_options; the
    /// certificates of support/tls_certs.hpp make it, e.g. `.tls = certs.server_tls()`).
    tls_server_options tls{};
    /// zk_server only: serve the plaintext port with Netty (NettyServerCnxnFactory) instead of
    /// NIO, as a server with a TLS port always does.
    bool netty = false;
};

/// A standalone ZooKeeper server on 127.0.0.1 (or server_options::client_address) and a free port,
/// in its own temp dir, run as a java child process. Many instances can run in parallel (each has its own port and dir).
///
/// The destructor stops the server and removes the temp dir, unless keep_files() was called,
/// an exception is unwinding, a failure was noted (see support/failure.hpp) or the environment
/// sets ZKLOCK_TEST_KEEP_FILES; a kept dir is printed on stderr.
///
/// The java process gets SIGKILL when the thread that started it dies (PR_SET_PDEATHSIG), so
/// a crashed test leaves nothing running: start servers from a long-lived thread.
///
/// Runs `$JAVA_HOME/bin/java` or `java` from PATH with $ZOOKEEPER_JAR (default
/// /usr/share/java/zookeeper.jar) and Debian's SLF4J log4j binding; the log is dir()/zookeeper.log.
class zk_server {
public:
    explicit zk_server(server_options options = {});
    ~zk_server();
    zk_server(const zk_server&) = delete;
    zk_server& operator=(const zk_server&) = delete;

    /// "127.0.0.1:PORT" ("[::1]:PORT" for a server on ::1).
    std::string connect_string() const;
    /// Fixed once the server first came up (before that, a start() that finds the port taken
    /// by someone else picks another one).
    std::uint16_t port() const { return port_; }
    /// With server_options::tls: the secureClientPort, on the same address, fixed as port() is.
    /// 0 without TLS.
    std::uint16_t tls_port() const { return tls_port_; }
    /// "127.0.0.1:TLSPORT" ("[::1]:TLSPORT"); throws std::logic_error without TLS.
    std::string tls_connect_string() const;
    /// PID of the java process, -1 when not running.
    pid_t pid() const;

    /// Starts the server (same port and data as before a stop) and waits (30 s at most) until
    /// it serves, and with TLS until its TLS port accepts connections too; throws
    /// std::runtime_error with the log tail if it does not. (Waiting for "ruok" alone is not
    /// enough: the server answers it before it accepts sessions.)
    void start();
    /// SIGTERM, then SIGKILL if still alive after 5 s; waits for the process to exit.
    void stop();
    /// SIGKILL (a crash: no clean shutdown); waits for the process to exit.
    void kill();
    bool running() const;

    /// Sends a four-letter word ("ruok", "srvr", "mntr", "stat", "cons", "srst", ...) and returns
    /// the reply, or "" if the server is unreachable (3 s at most).
    std::string four_letter(const std::string& cmd) const;

    /// Do not delete the temp dir (printed on stderr by the destructor).
    void keep_files() { keep_ = true; }
    std::filesystem::path dir() const { return dir_; }
    /// The last lines of the server log (it survives restarts).
    std::string log_tail(std::size_t lines = 80) const;

private:
    friend class zk_ensemble;
    struct member_tag {};
    // For zk_ensemble: a quorum member whose dir (already holding zoo.cfg) the ensemble owns; it
    // runs with the ensemble's JVM options.
    zk_server(member_tag, std::filesystem::path dir, std::uint16_t port, const server_options& options,
              std::uint16_t tls_port = 0);

    std::filesystem::path log_path() const;
    std::filesystem::path tls_keystore_path() const;
    void pick_ports();
    bool accepts(std::uint16_t port) const;  // a TCP connect succeeds
    std::string four_letter_within(const std::string& cmd, std::chrono::milliseconds timeout) const;
    void write_config() const;
    void spawn();
    void terminate();  // SIGTERM without waiting
    void wait_up(std::chrono::steady_clock::time_point deadline);
    bool reap(bool block) const;

    server_options options_;
    std::filesystem::path dir_;
    std::uint16_t port_ = 0;
    std::uint16_t tls_port_ = 0;
    std::unique_ptr<child_process> process_;  // the java process
    bool member_ = false;   // of a zk_ensemble, which writes zoo.cfg and owns the dir
    bool started_ = false;  // once up, the port is fixed
    bool keep_ = false;
    int uncaught_ = 0;
};

/// Free TCP ports on 127.0.0.1, all distinct (bound together, then released).
std::vector<std::uint16_t> free_ports(std::size_t n);

/// Whether this host has the IPv6 loopback address (a TCP socket can be bound to [::1]:0): the
/// tests of IPv6 addresses need it, and some containers run with IPv6 disabled.
bool ipv6_loopback_available();

/// Sends a four-letter word to 127.0.0.1:port; returns the reply, "" if unreachable.
std::string four_letter(std::uint16_t port, const std::string& cmd,
                        std::chrono::milliseconds timeout = std::chrono::seconds(3));
/// The same to address:port (a numeric IPv4 or IPv6 address).
std::string four_letter(const std::string& address, std::uint16_t port, const std::string& cmd,
                        std::chrono::milliseconds timeout = std::chrono::seconds(3));

/// The files ZooKeeper's Java client needs for TLS (zookeeper_cli_tls).
struct tls_client_files {
    /// PEM key then certificate chain (tls_certs::client_keystore()); empty = no client certificate.
    std::filesystem::path keystore{};
    /// PEM CA certificate(s) the client trusts for the server's certificate (tls_certs::ca_cert()).
    std::filesystem::path truststore{};
};

/// Runs ZooKeeper's own command-line client once (org.apache.zookeeper.ZooKeeperMain, what zkCli.sh
/// runs) against 127.0.0.1:port with one command, e.g. {"reconfig", "-remove", "1"}, and returns
/// what it printed (stdout and stderr). Killed after `timeout` (then std::runtime_error). Takes a
/// JVM start, about a second.
std::string zookeeper_cli(std::uint16_t port, const std::vector<std::string>& command,
                          std::chrono::milliseconds timeout = std::chrono::seconds(60));

/// The same over TLS to 127.0.0.1:tls_port (a zk_server's tls_port()): the Netty client with
/// zookeeper.client.secure=true and PEM key and trust stores. It checks the server's certificate
/// against the host 127.0.0.1. E.g. {"whoami"} prints the session's ids, "x509: <subject>" among
/// them when the server took the client's certificate.
std::string zookeeper_cli_tls(std::uint16_t tls_port, const tls_client_files& tls,
                              const std::vector<std::string>& command,
                              std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace zklock::test
