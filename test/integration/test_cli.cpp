// The `zklock` command-line tool, driven as a real binary against a real ZooKeeper server.
//
// Every child process is started with PR_SET_PDEATHSIG (a crashed test leaves nothing running),
// killed by a guard at the end of its test case, and every wait is bounded.
#include "../common.hpp"
#include "server.hpp"
#include "support/failure.hpp"
#include "support/tls_certs.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
// Boost.JSON compiled into this test (its header-only mode), to read `zklock list --json`.
#include <boost/json/src.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#ifndef ZKLOCK_CLI_PATH
#error "ZKLOCK_CLI_PATH must name the zklock binary"
#endif

using namespace zklock;
using namespace zklock::test;
namespace fs = std::filesystem;

namespace {

using clock_type = std::chrono::steady_clock;

constexpr int st_usage = 64, st_unavailable = 69, st_not_acquired = 75, st_lost = 79, st_interrupted = 80,
              st_revoked = 81;

std::string slurp(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

/// A scratch directory for one test case (removed at the end unless a check failed).
struct scratch {
    fs::path dir;
    scratch()
    {
        std::string templ = (fs::temp_directory_path() / "zklock-cli.XXXXXX").string();
        REQUIRE(::mkdtemp(templ.data()) != nullptr);
        dir = templ;
    }
    ~scratch()
    {
        std::error_code ec;
        if (!should_keep_files()) fs::remove_all(dir, ec);
        else std::fprintf(stderr, "kept %s\n", dir.c_str());
    }
    std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

/// One process started by a test: stdout and stderr go to files.
struct process {
    pid_t pid = -1;
    std::string out_file, err_file;
    std::optional<int> status;  // the shell's convention: exit code, or 128+N for signal N
    clock_type::time_point started;

    std::string out() const { return slurp(out_file); }
    std::string err() const { return slurp(err_file); }

    bool poll()
    {
        if (status || pid <= 0) return true;
        int ws = 0;
        if (::waitpid(pid, &ws, WNOHANG) != pid) return false;
        status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
        return true;
    }
    void signal(int sig)
    {
        if (!poll()) ::kill(pid, sig);
    }
};

/// Kills (SIGKILL) and reaps whatever a test case leaves running, even when a REQUIRE throws.
struct process_guard {
    std::vector<process*> procs;
    ~process_guard()
    {
        for (auto* p : procs) {
            if (p->poll()) continue;
            ::kill(p->pid, SIGKILL);
            int ws;
            ::waitpid(p->pid, &ws, 0);
        }
    }
};

struct start_options {
    std::vector<std::string> env;  // "NAME=value" added to (or replacing in) the environment
    int controlling_tty = -1;      // a pty slave: the process becomes a session leader with it
};

/// fork + execve with everything prepared before the fork (the test process may have threads).
void start(process& p, const scratch& s, const std::string& name, const std::vector<std::string>& args,
           const start_options& so = {})
{
    p.out_file = s / (name + ".out");
    p.err_file = s / (name + ".err");
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) {
        std::string_view entry = *e;
        const auto key = entry.substr(0, entry.find('=') + 1);
        bool replaced = std::any_of(so.env.begin(), so.env.end(), [&](const std::string& x) { return x.starts_with(key); });
        if (!replaced && !entry.starts_with("ZK_SERVERS=")) env_strings.emplace_back(entry);
    }
    env_strings.insert(env_strings.end(), so.env.begin(), so.env.end());
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    const int out = ::open(p.out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err = ::open(p.err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(out >= 0);
    REQUIRE(err >= 0);
    REQUIRE(null >= 0);
    const pid_t parent = ::getpid();
    p.started = clock_type::now();
    p.pid = ::fork();
    if (p.pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(126);
        sigset_t none;
        ::sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        if (so.controlling_tty >= 0) {
            ::setsid();
            ::ioctl(so.controlling_tty, TIOCSCTTY, 0);
            ::dup2(so.controlling_tty, 0);
        } else {
            ::dup2(null, 0);
        }
        ::dup2(out, 1);
        ::dup2(err, 2);
        ::execve(argv[0], argv.data(), envp.data());
        ::_exit(127);
    }
    ::close(out);
    ::close(err);
    ::close(null);
    REQUIRE(p.pid > 0);
}

/// Waits (polling, so the io_context keeps serving the test's own session) until `p` exits.
awaitable<bool> wait_exit(process& p, std::chrono::milliseconds limit = 20s)
{
    const auto deadline = clock_type::now() + limit;
    while (!p.poll()) {
        if (clock_type::now() > deadline) co_return false;
        co_await sleep_for(10ms);
    }
    co_return true;
}

awaitable<bool> wait_file(const std::string& path, std::chrono::milliseconds limit = 20s)
{
    const auto deadline = clock_type::now() + limit;
    while (!fs::exists(path)) {
        if (clock_type::now() > deadline) co_return false;
        co_await sleep_for(10ms);
    }
    co_return true;
}

/// Starts one zklock (args without the program); see finish().
void launch(process& p, const scratch& s, const std::string& name, std::vector<std::string> args,
            const start_options& so = {})
{
    args.insert(args.begin(), ZKLOCK_CLI_PATH);
    start(p, s, name, args, so);
}

/// Waits (bounded) until `p` exits and returns its status. (Callers start processes in a
/// statement of its own: GCC 12 miscompiles braced lists in a full-expression with co_await.)
awaitable<int> finish(process& p, std::chrono::milliseconds limit = 20s)
{
    const bool exited = co_await wait_exit(p, limit);
    if (!exited) {
        ::kill(p.pid, SIGKILL);
        co_await wait_exit(p, 5s);
    }
    REQUIRE_MESSAGE(exited, p.err_file << ": did not exit within " << limit.count() << " ms; stderr: " << p.err());
    co_return *p.status;
}

std::vector<std::string> zklock_args(const std::string& servers, std::vector<std::string> rest)
{
    std::vector<std::string> a{ZKLOCK_CLI_PATH, "--servers", servers};
    a.insert(a.end(), rest.begin(), rest.end());
    return a;
}

double seconds_since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

/// A holder: `zklock PATH -- sh -c 'touch READY; exec sleep 60'`, started and waited for.
awaitable<void> start_holder(process& p, const scratch& s, const std::string& servers, const std::string& path,
                             const std::string& name, std::vector<std::string> extra = {})
{
    std::vector<std::string> args = zklock_args(servers, extra);
    const std::string ready = s / (name + ".ready");
    args.insert(args.end(), {path, "--", "sh", "-c", "touch " + ready + "; exec sleep 60"});
    start(p, s, name, args);
    REQUIRE_MESSAGE(co_await wait_file(ready), name << " did not get the lock; stderr: " << p.err());
}

/// A peer on 127.0.0.1 that is not ZooKeeper, served on the test's io_context: a silent one
/// accepts and never answers; an HTTP one answers whatever it reads with an HTTP error and keeps
/// the connection open, as a keep-alive HTTP server does. Destroying it closes everything.
class fake_peer {
public:
    fake_peer(asio::any_io_executor ex, bool http)
        : st_(std::make_shared<state>(asio::ip::tcp::acceptor(ex, {asio::ip::make_address("127.0.0.1"), 0}), http))
    {
        asio::co_spawn(ex, accept(st_), asio::detached);
    }
    ~fake_peer()
    {
        boost::system::error_code ec;
        st_->acceptor.close(ec);
        for (auto& c : st_->conns) c->close(ec);
    }
    fake_peer(const fake_peer&) = delete;
    fake_peer& operator=(const fake_peer&) = delete;

    std::string connect_string() const { return "127.0.0.1:" + std::to_string(st_->acceptor.local_endpoint().port()); }
    std::size_t connections() const { return st_->conns.size(); }

private:
    struct state {
        state(asio::ip::tcp::acceptor a, bool h) : acceptor(std::move(a)), http(h) {}
        asio::ip::tcp::acceptor acceptor;
        std::vector<std::shared_ptr<asio::ip::tcp::socket>> conns;
        bool http;
    };
    static awaitable<void> accept(std::shared_ptr<state> st)
    {
        for (;;) {
            auto sock = std::make_shared<asio::ip::tcp::socket>(st->acceptor.get_executor());
            auto [ec] = co_await st->acceptor.async_accept(*sock, tuple);
            if (ec) co_return;
            st->conns.push_back(sock);
            if (st->http) asio::co_spawn(st->acceptor.get_executor(), serve(sock), asio::detached);
        }
    }
    static awaitable<void> serve(std::shared_ptr<asio::ip::tcp::socket> sock)
    {
        static const std::string reply = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
        char buf[512];
        for (;;) {
            auto [ec, n] = co_await sock->async_read_some(asio::buffer(buf), tuple);
            if (ec) co_return;
            auto [wec, written] = co_await asio::async_write(*sock, asio::buffer(reply), tuple);
            if (wec) co_return;
        }
    }
    std::shared_ptr<state> st_;
};

/// Freezes a server (SIGSTOP: its sockets stay open, the kernel still accepts connections for it)
/// until thaw() or the end of the scope.
struct freeze {
    pid_t pid;
    explicit freeze(pid_t p) : pid(p)
    {
        REQUIRE(pid > 0);
        REQUIRE(::kill(pid, SIGSTOP) == 0);
    }
    ~freeze() { thaw(); }
    void thaw()
    {
        if (pid > 0) ::kill(std::exchange(pid, -1), SIGCONT);
    }
};

const char* signal_text(int sig) { return sig == SIGTERM ? "SIGTERM" : "SIGINT"; }

}  // namespace

namespace {

/// A command line zklock must refuse: status 64 and one "zklock: " line on stderr containing `message`.
struct usage_case {
    std::vector<std::string> args;
    std::string message;
};

/// Runs every case and checks its refusal.
awaitable<void> expect_usage_errors(scratch& s, const std::vector<usage_case>& cases)
{
    int n = 0;
    for (const auto& c : cases) {
        CAPTURE(n);
        process p;
        launch(p, s, "usage" + std::to_string(n++), c.args);
        const int st = co_await finish(p);
        CHECK(st == st_usage);
        const auto err = p.err();
        CHECK_MESSAGE(err.find(c.message) != std::string::npos, "stderr: " << err);
        CHECK(err.rfind("zklock: ", 0) == 0);
        CHECK(lines_of(err).size() == 1);  // one line
    }
}

}  // namespace

TEST_CASE("zklock cli: usage errors exit 64 with a one-line message, --help documents the statuses")
{
    run([]() -> awaitable<void> {
        scratch s;
        const std::vector<usage_case> cases{
            {{"--bogus", "/l", "true"}, "unknown option '--bogus'"},
            {{"-x", "/l", "true"}, "unknown option '-x'"},
            {{}, "missing LOCKPATH"},
            {{"--shared"}, "missing LOCKPATH"},
            {{"/l"}, "missing COMMAND"},
            {{"/l", "--"}, "missing COMMAND"},
            {{"relative/path", "true"}, "invalid lock path 'relative/path': the path is not absolute"},
            {{"/l/", "true"}, "invalid lock path '/l/': the path ends with '/'"},
            {{"/a/../b", "true"}, "invalid lock path '/a/../b': a component is '..'"},
            {{"/zookeeper/x", "true"}, "the path is under /zookeeper, which the server reserves"},
            {{"list", "/a//b"}, "invalid lock path '/a//b': a component is empty ('//')"},
            {{"--timeout", "soon", "/l", "true"}, "invalid duration 'soon' for --timeout"},
            {{"--timeout"}, "option '--timeout' needs a value"},
            {{"--kill-after=-1s", "/l", "true"}, "invalid duration '-1s' for --kill-after"},
            {{"--session-timeout", "0", "/l", "true"}, "--session-timeout must be greater than zero"},
            {{"--try", "--timeout", "1s", "/l", "true"}, "--try and --timeout exclude each other"},
            {{"--try=yes", "/l", "true"}, "option '--try' takes no value"},
            {{"--servers", "nohostport", "/l", "true"}, "The server list is empty or malformed"},
            {{"list"}, "missing LOCKPATH"},
            {{"list", "/l", "extra"}, "'zklock list' takes one LOCKPATH"},
            {{"list", "--shared", "/l"}, "option '--shared' does not apply to 'zklock list'"},
        };
        co_await expect_usage_errors(s, cases);

        process help;
        launch(help, s, "help", {"--help"});
        CHECK(co_await finish(help) == 0);
        const auto text = help.out();
        for (const char* section : {"SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT", "EXIT STATUS", "--kill-after",
                                    "ZKLOCK_FENCING_TOKEN", "ZKLOCK_NODE", "ZK_SERVERS"})
            CHECK_MESSAGE(text.find(section) != std::string::npos, section);
        for (const char* code : {"\n  64 ", "\n  69 ", "\n  75 ", "\n  79 ", "\n  80 ", "\n  126 ", "\n  127 "})
            CHECK_MESSAGE(text.find(code) != std::string::npos, code);
        co_return;
    });
}

TEST_CASE("zklock cli: no server within --connect-timeout exits 69")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto port = free_ports(1).front();  // nothing listens there
        process p;
        const auto t0 = clock_type::now();
        launch(p, s, "noserver",
                                        {"--servers", "127.0.0.1:" + std::to_string(port), "--connect-timeout", "1s", "/l",
                                         "--", "touch", s / "ran"});
        const int st = co_await finish(p);
        CHECK(st == st_unavailable);
        CHECK(seconds_since(t0) < 10);
        CHECK(p.err().find("no ZooKeeper server at 127.0.0.1:" + std::to_string(port) + " accepted a session within 1s") !=
              std::string::npos);
        CHECK(lines_of(p.err()).size() == 1);
        CHECK_FALSE(fs::exists(s / "ran"));
        process l;
        launch(l, s, "list-noserver",
                               {"list", "--servers", "127.0.0.1:" + std::to_string(port), "--connect-timeout", "500ms",
                                "/l"});
        CHECK(co_await finish(l) == st_unavailable);
    });
}

TEST_CASE("zklock cli: concurrent runs exclude each other")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        const auto path = unique_path("cli-mutex");
        const std::string log = s / "log";
        const std::string script = "echo start $$ >> " + log + "; sleep 0.3; echo end $$ >> " + log;
        const int n = 4;
        std::vector<process> procs(n);
        process_guard guard;
        for (int i = 0; i < n; ++i) {
            guard.procs.push_back(&procs[static_cast<std::size_t>(i)]);
            start(procs[static_cast<std::size_t>(i)], s, "run" + std::to_string(i),
                  zklock_args(servers, {path, "--", "sh", "-c", script}));
        }
        const auto t0 = clock_type::now();
        for (auto& p : procs) {
            REQUIRE(co_await wait_exit(p, 30s));
            CHECK(*p.status == 0);
        }
        CHECK(seconds_since(t0) >= 0.3 * n);  // serialised
        const auto lines = lines_of(slurp(log));
        REQUIRE(lines.size() == 2 * n);
        for (std::size_t i = 0; i < lines.size(); i += 2) {
            CAPTURE(slurp(log));
            REQUIRE(lines[i].rfind("start ", 0) == 0);
            CHECK(lines[i + 1] == "end " + lines[i].substr(6));  // never interleaved
        }
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(servers)};
        co_await connect(zk);
        CHECK((co_await children_of(zk, path)).empty());
    });
}

TEST_CASE("zklock cli: COMMAND's environment, fencing tokens, exit status and descriptors")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        const auto path = unique_path("cli-env");
        const std::string log = s / "env";
        const std::string script = "echo \"$ZKLOCK_FENCING_TOKEN $ZKLOCK_NODE\" >> " + log;
        // Three runs, one shared, the last with the server list from $ZK_SERVERS.
        process a, b, c;
        launch(a, s, "env1", {"--servers", servers, path, "sh", "-c", script});
        CHECK(co_await finish(a) == 0);
        launch(b, s, "env2", {"--servers", servers, "--shared", path, "--", "sh", "-c", script});
        CHECK(co_await finish(b) == 0);
        launch(c, s, "env3", {path, "sh", "-c", script}, {.env = {"ZK_SERVERS=" + servers}});
        CHECK(co_await finish(c) == 0);
        const auto lines = lines_of(slurp(log));
        REQUIRE(lines.size() == 3);
        std::vector<long long> tokens;
        for (std::size_t i = 0; i < lines.size(); ++i) {
            CAPTURE(lines[i]);
            const auto space = lines[i].find(' ');
            REQUIRE(space != std::string::npos);
            tokens.push_back(std::stoll(lines[i].substr(0, space)));
            const std::string node = lines[i].substr(space + 1);
            CHECK(node.rfind(path + (i == 1 ? "/r-" : "/x-"), 0) == 0);
            CHECK(detail::parse_queue_node(detail::base_name(node)).has_value());
        }
        CHECK(tokens[0] > 0);
        CHECK(tokens[1] > tokens[0]);
        CHECK(tokens[2] > tokens[1]);

        // COMMAND's status passes through; 128+N when signal N killed it; 127 / 126 when it
        // cannot be run.
        process st1, st2, st3, st4;
        launch(st1, s, "exit7", {"--servers", servers, path, "sh", "-c", "exit 7"});
        CHECK(co_await finish(st1) == 7);
        launch(st2, s, "killed", {"--servers", servers, path, "sh", "-c", "kill -USR1 $$"});
        CHECK(co_await finish(st2) == 128 + SIGUSR1);
        launch(st3, s, "notfound", {"--servers", servers, path, "no-such-command-zklock"});
        CHECK(co_await finish(st3) == 127);
        CHECK(st3.err().find("cannot run 'no-such-command-zklock'") != std::string::npos);
        launch(st4, s, "noexec", {"--servers", servers, path, "/dev/null"});
        CHECK(co_await finish(st4) == 126);

        // COMMAND gets our descriptors 0-2 (and whatever we inherited), not the ZooKeeper socket.
        process fds;
        launch(fds, s, "fds", {"--servers", servers, path, "sh", "-c", "ls -l /proc/$$/fd"});
        CHECK(co_await finish(fds) == 0);
        CAPTURE(fds.out());
        CHECK(fds.out().find("socket:") == std::string::npos);
        CHECK(fds.out().find("anon_inode") == std::string::npos);

        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(servers)};
        co_await connect(zk);
        CHECK((co_await children_of(zk, path)).empty());
    });
}

TEST_CASE("zklock cli: --try and --timeout exit 75 while another zklock holds the lock")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        const auto path = unique_path("cli-try");
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(servers)};
        co_await connect(zk);
        process holder;
        process_guard guard{{&holder}};
        co_await start_holder(holder, s, servers, path, "holder");

        process t;
        auto t0 = clock_type::now();
        launch(t, s, "try", {"--servers", servers, "--try", path, "--", "touch", s / "ran"});
        CHECK(co_await finish(t) ==
              st_not_acquired);
        CHECK(seconds_since(t0) < 5);
        CHECK(t.err().find("is taken (--try)") != std::string::npos);

        process w;
        t0 = clock_type::now();
        launch(w, s, "timeout", {"--servers", servers, "-w", "500ms", path, "touch", s / "ran"});
        CHECK(co_await finish(w) ==
              st_not_acquired);
        CHECK(seconds_since(t0) >= 0.5);
        CHECK(seconds_since(t0) < 8);
        CHECK(w.err().find("timed out after 500ms") != std::string::npos);

        // --shared does not get past an exclusive holder either; --timeout 0 means --try.
        process r;
        launch(r, s, "shared", {"--servers", servers, "--shared", "--timeout", "0", path, "touch", s / "ran"});
        CHECK(co_await finish(r) ==
              st_not_acquired);
        CHECK_FALSE(fs::exists(s / "ran"));
        CHECK((co_await children_of(zk, path)).size() == 1);  // only the holder's node is left

        // SIGTERM to the holder reaches `sleep`, whose death is the holder's status.
        holder.signal(SIGTERM);
        REQUIRE(co_await wait_exit(holder));
        CHECK(*holder.status == 128 + SIGTERM);
        CHECK((co_await children_of(zk, path)).empty());
    });
}

TEST_CASE("zklock cli: SIGTERM or SIGINT while waiting leaves the queue and exits 80")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        const auto path = unique_path("cli-interrupt");
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(servers)};
        co_await connect(zk);
        process holder;
        process_guard guard{{&holder}};
        co_await start_holder(holder, s, servers, path, "holder");

        const std::array<int, 2> signals{SIGTERM, SIGINT};
        for (int sig : signals) {
            CAPTURE(sig);
            process w;
            guard.procs.push_back(&w);
            start(w, s, "waiter" + std::to_string(sig), zklock_args(servers, {path, "--", "touch", s / "ran"}));
            REQUIRE(co_await wait_children(zk, path, 2) == 2);  // queued behind the holder
            w.signal(sig);
            REQUIRE(co_await wait_exit(w, 10s));
            CHECK(*w.status == st_interrupted);
            CHECK(w.err().find("interrupted by " + std::string(sig == SIGTERM ? "SIGTERM" : "SIGINT") +
                               " while waiting for " + path + "; left the queue") != std::string::npos);
            // The node is gone when zklock exits (the cancelled acquire deletes it first).
            auto kids = co_await children_of(zk, path);
            CHECK(kids.size() == 1);
            guard.procs.pop_back();
        }
        CHECK_FALSE(fs::exists(s / "ran"));
        holder.signal(SIGTERM);
        REQUIRE(co_await wait_exit(holder));
    });
}

TEST_CASE("zklock cli: SIGTERM while COMMAND runs is passed on to it")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        const auto path = unique_path("cli-forward");
        const std::string log = s / "log", ready = s / "ready";
        process p;
        process_guard guard{{&p}};
        start(p, s, "run",
              zklock_args(servers, {"-v", path, "--", "sh", "-c",
                                    "trap 'echo term >> " + log + "; exit 3' TERM; touch " + ready +
                                        "; while :; do sleep 0.05; done"}));
        REQUIRE(co_await wait_file(ready));
        p.signal(SIGTERM);
        REQUIRE(co_await wait_exit(p, 10s));
        CHECK(*p.status == 3);  // COMMAND's own status
        CHECK(slurp(log) == "term\n");
        CHECK(p.err().find("passing SIGTERM on to COMMAND") != std::string::npos);
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(servers)};
        co_await connect(zk);
        CHECK((co_await children_of(zk, path)).empty());
    });
}

TEST_CASE("zklock cli: ^C from the terminal reaches COMMAND once (not forwarded again)")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        const auto path = unique_path("cli-tty");
        // A pseudo-terminal whose foreground process group is zklock's (and so COMMAND's).
        const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        REQUIRE(master >= 0);
        REQUIRE(::grantpt(master) == 0);
        REQUIRE(::unlockpt(master) == 0);
        const int slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
        REQUIRE(slave >= 0);
        termios tio{};
        REQUIRE(::tcgetattr(slave, &tio) == 0);
        CHECK((tio.c_lflag & ISIG) != 0);

        const std::string log = s / "log", ready = s / "ready";
        process p;
        process_guard guard{{&p}};
        start(p, s, "run",
              zklock_args(servers, {"-v", path, "--", "sh", "-c",
                                    "trap 'echo int >> " + log + "; exit 4' INT; touch " + ready +
                                        "; while :; do sleep 0.05; done"}),
              {.controlling_tty = slave});
        REQUIRE(co_await wait_file(ready));
        REQUIRE(::write(master, "\x03", 1) == 1);  // the terminal's ^C: SIGINT to the foreground group
        REQUIRE(co_await wait_exit(p, 10s));
        ::close(slave);
        ::close(master);
        CHECK(*p.status == 4);
        CHECK(slurp(log) == "int\n");
        CHECK(p.err().find("passing SIGINT") == std::string::npos);  // COMMAND had it from the terminal
    });
}

TEST_CASE("zklock cli: a lost lock terminates COMMAND and exits 79")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(servers)};
        co_await connect(zk);

        // The holder's node is deleted by another session: COMMAND gets SIGTERM and obeys.
        {
            const auto path = unique_path("cli-lost");
            const std::string log = s / "log", ready = s / "ready";
            process p;
            process_guard guard{{&p}};
            start(p, s, "run",
                  zklock_args(servers, {path, "--", "sh", "-c",
                                        "trap 'echo term >> " + log + "; exit 0' TERM; touch " + ready +
                                            "; while :; do sleep 0.05; done"}));
            REQUIRE(co_await wait_file(ready));
            auto kids = co_await children_of(zk, path);
            REQUIRE(kids.size() == 1);
            co_await zk.async_remove(path + "/" + kids[0]);
            REQUIRE(co_await wait_exit(p, 10s));
            CHECK(*p.status == st_lost);
            CHECK(slurp(log) == "term\n");
            CHECK(p.err().find("lost the lock on " + path) != std::string::npos);
        }
        // COMMAND ignores SIGTERM: SIGKILL after --kill-after.
        {
            const auto path = unique_path("cli-lost-kill");
            const std::string ready = s / "ready2";
            process p;
            process_guard guard{{&p}};
            start(p, s, "run2",
                  zklock_args(servers, {"--kill-after", "1s", path, "--", "sh", "-c",
                                        "trap '' TERM; touch " + ready + "; while :; do sleep 0.05; done"}));
            REQUIRE(co_await wait_file(ready));
            auto kids = co_await children_of(zk, path);
            REQUIRE(kids.size() == 1);
            const auto t0 = clock_type::now();
            co_await zk.async_remove(path + "/" + kids[0]);
            REQUIRE(co_await wait_exit(p, 10s));
            CHECK(*p.status == st_lost);
            CHECK(seconds_since(t0) >= 0.9);
            CHECK(seconds_since(t0) < 6);
            CHECK(p.err().find("sending SIGKILL") != std::string::npos);
            CHECK(p.err().find("killed by SIGKILL after the lock was lost") != std::string::npos);
        }
    });
}

TEST_CASE("zklock cli: list shows holders and waiters in queue order")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(servers)};
        co_await connect(zk);
        const auto path = unique_path("cli-list");

        process missing;
        launch(missing, s, "missing", {"list", "--servers", servers, path});
        CHECK(co_await finish(missing) == 0);
        CHECK(missing.out().find("no such lock") != std::string::npos);

        process holder, reader, writer;
        process_guard guard{{&holder, &reader, &writer}};
        co_await start_holder(holder, s, servers, path, "holder");
        start(reader, s, "reader", zklock_args(servers, {"--shared", "--owner", "the reader", path, "true"}));
        REQUIRE(co_await wait_children(zk, path, 2) == 2);
        start(writer, s, "writer", zklock_args(servers, {"--owner", "the writer", path, "true"}));
        REQUIRE(co_await wait_children(zk, path, 3) == 3);
        // Two nodes as Apache Curator and Kazoo name theirs, queued behind.
        auto [cec, curator_node, cst] = co_await zk.async_create(path + "/_c_5e1c3b10-7f3a-4c4e-9a53-2f1d0c8a9b7e-lock-", "java",
                                                                 create_mode::ephemeral_sequential, tuple);
        REQUIRE_FALSE(cec);
        auto [kec, kazoo_node, kst] = co_await zk.async_create(path + "/4b1d3c1e2f8a4b6c9d0e1f2a3b4c5d6e__rlock__", "python",
                                                               create_mode::ephemeral_sequential, tuple);
        REQUIRE_FALSE(kec);

        process l;
        launch(l, s, "list", {"list", "--servers", servers, path});
        CHECK(co_await finish(l) == 0);
        auto lines = lines_of(l.out());
        CAPTURE(l.out());
        REQUIRE(lines.size() == 7);  // title, header, five nodes
        CHECK(lines[0] == path + ": 5 in the queue");
        auto row = [&](std::size_t i) {
            std::istringstream in(lines[i]);
            std::vector<std::string> f;
            for (std::string w; in >> w;) f.push_back(w);
            return f;
        };
        std::string host(256, '\0');
        ::gethostname(host.data(), host.size() - 1);
        host.resize(std::strlen(host.c_str()));
        auto r1 = row(2), r2 = row(3), r3 = row(4), r4 = row(5), r5 = row(6);
        REQUIRE(r1.size() == 8);
        CHECK(r1[0] == "1");
        CHECK(r1[1] == "holder");
        CHECK(r1[2] == "exclusive");
        CHECK(r1[3] == "zklock");
        CHECK(r1[4] == "mutex");
        CHECK(r1[5].rfind("x-", 0) == 0);
        CHECK(r1[7] == host + ":" + std::to_string(holder.pid));
        REQUIRE(r2.size() == 9);
        CHECK(r2[0] == "2");
        CHECK(r2[1] == "waiting");
        CHECK(r2[2] == "shared");
        CHECK(r2[4] == "shared_mutex");
        CHECK(r2[5].rfind("r-", 0) == 0);
        CHECK(lines[3].ends_with("the reader"));
        REQUIRE(r3.size() == 9);
        CHECK(r3[1] == "waiting");
        CHECK(r3[2] == "exclusive");
        CHECK(lines[4].ends_with("the writer"));
        CHECK(r1[6].ends_with("s"));  // an age
        REQUIRE(r4.size() == 8);
        CHECK(r4[1] == "waiting");
        CHECK(r4[2] == "exclusive");
        CHECK(r4[3] == "curator");
        CHECK(r4[4] == "mutex");
        CHECK(path + "/" + r4[5] == curator_node);
        CHECK(r4[7] == "java");
        REQUIRE(r5.size() == 8);
        CHECK(r5[2] == "shared");
        CHECK(r5[3] == "kazoo");
        CHECK(r5[4] == "shared_mutex");
        CHECK(path + "/" + r5[5] == kazoo_node);
        CHECK(r5[7] == "python");
        co_await zk.async_remove(curator_node, -1, tuple);
        co_await zk.async_remove(kazoo_node, -1, tuple);

        // Once the writer is gone, the holder hands over to the reader; shared holders together.
        holder.signal(SIGTERM);
        REQUIRE(co_await wait_exit(holder));
        REQUIRE(co_await wait_exit(reader));
        REQUIRE(co_await wait_exit(writer));
        const auto path2 = unique_path("cli-list-shared");
        process r_a, r_b, w2;
        guard.procs.insert(guard.procs.end(), {&r_a, &r_b, &w2});
        const std::vector<std::string> shared_flag{"--shared"};
        co_await start_holder(r_a, s, servers, path2, "ra", shared_flag);
        co_await start_holder(r_b, s, servers, path2, "rb", shared_flag);
        start(w2, s, "w2", zklock_args(servers, {path2, "true"}));
        REQUIRE(co_await wait_children(zk, path2, 3) == 3);
        process l2;
        launch(l2, s, "list2", {"list", "--servers", servers, path2});
        CHECK(co_await finish(l2) == 0);
        lines = lines_of(l2.out());
        CAPTURE(l2.out());
        REQUIRE(lines.size() == 5);
        CHECK(lines[2].find(" holder   shared ") != std::string::npos);
        CHECK(lines[3].find(" holder   shared ") != std::string::npos);
        CHECK(lines[4].find(" waiting  exclusive ") != std::string::npos);
        r_a.signal(SIGTERM);
        r_b.signal(SIGTERM);
        const std::array<process*, 3> all{&r_a, &r_b, &w2};
        for (auto* p : all) REQUIRE(co_await wait_exit(*p));
        CHECK(*w2.status == 0);

        process empty;
        launch(empty, s, "empty", {"list", "--servers", servers, path2});
        CHECK(co_await finish(empty) == 0);
        CHECK(empty.out().find(path2 + ": free") != std::string::npos);
    });
}

TEST_CASE("zklock cli: --verbose reports the waiter's place in the queue as it changes (plain lines off a terminal)")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        const auto path = unique_path("cli-verbose");
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(servers)};
        co_await connect(zk);
        process holder, first, second;
        process_guard guard{{&holder, &first, &second}};
        co_await start_holder(holder, s, servers, path, "holder");

        // first: 1 ahead (the holder); it holds for 2 s once granted, so that second, queued
        // behind both (2 ahead), sees its place become 1 by polling the queue.
        const std::string first_ready = s / "first.ready";
        start(first, s, "first", zklock_args(servers, {"--verbose", path, "--", "sh", "-c", "touch " + first_ready + "; sleep 2"}));
        REQUIRE(co_await wait_children(zk, path, 2) == 2);
        start(second, s, "second", zklock_args(servers, {"--verbose", path, "--", "true"}));
        REQUIRE(co_await wait_children(zk, path, 3) == 3);
        holder.signal(SIGTERM);
        REQUIRE(co_await wait_exit(holder));
        CHECK(co_await finish(first) == 0);
        CHECK(co_await finish(second) == 0);

        auto lines_until_acquired = [](const std::string& err) {
            std::vector<std::string> out;
            for (const auto& l : lines_of(err)) {
                if (l.find("waiting: ") != std::string::npos || l.find("zklock: acquired ") == 0) out.push_back(l);
                if (l.find("zklock: acquired ") == 0) break;
            }
            return out;
        };
        const auto e1 = first.err(), e2 = second.err();
        CAPTURE(e1);
        CAPTURE(e2);
        CHECK(e1.find('\r') == std::string::npos);  // stderr is a file here: no progress line
        CHECK(e2.find('\r') == std::string::npos);
        const auto l1 = lines_until_acquired(e1);
        REQUIRE(l1.size() == 2);
        CHECK(l1[0] == "zklock: waiting: 1 ahead");
        CHECK(l1[1].find("zklock: acquired " + path) == 0);
        const auto l2 = lines_until_acquired(e2);
        REQUIRE(l2.size() == 3);
        CHECK(l2[0] == "zklock: waiting: 2 ahead");
        CHECK(l2[1] == "zklock: waiting: 1 ahead");  // one line per change, none repeated
        CHECK(l2[2].find("zklock: acquired " + path) == 0);
        CHECK((co_await children_of(zk, path)).empty());
    });
}

TEST_CASE("zklock cli: an IPv6 server address in brackets works ([::1]:PORT)")
{
    if (!ipv6_loopback_available()) {
        WARN_MESSAGE(false, "not run: this host has no IPv6 loopback address (::1)");
        return;
    }
    zk_server v6{server_options{.tick_time = 200ms, .client_address = "::1"}};  // listens on ::1 only
    run([&]() -> awaitable<void> {
        scratch s;
        const auto servers = v6.connect_string();
        REQUIRE(servers.rfind("[::1]:", 0) == 0);
        const auto path = unique_path("cli-ipv6");
        process p;
        launch(p, s, "ipv6", {"--servers", servers, "-v", path, "--", "touch", s / "ran"});
        CHECK(co_await finish(p) == 0);
        CHECK_MESSAGE(fs::exists(s / "ran"), p.err());
        CHECK(p.err().find("zklock: connected to " + servers) != std::string::npos);
        process l;
        launch(l, s, "ipv6-list", {"list", "--servers", servers, path});
        CHECK(co_await finish(l) == 0);
        CHECK(l.out().rfind(path + ": ", 0) == 0);
    });
}

TEST_CASE("zklock cli: a host name that does not resolve, and a chroot that does not exist, are named")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto path = unique_path("cli-names");
        // ".invalid" never resolves (RFC 6761).
        process u, ul;
        launch(u, s, "unresolvable", {"--servers", "nonexistent.invalid:2181", path, "--", "touch", s / "ran"});
        CHECK(co_await finish(u) == st_unavailable);
        CHECK(u.err() == "zklock: cannot resolve host name: no host of nonexistent.invalid:2181 resolves to an address\n");
        launch(ul, s, "unresolvable-list", {"list", "--servers", "nonexistent.invalid:2181", path});
        CHECK(co_await finish(ul) == st_unavailable);
        CHECK(ul.err().find("cannot resolve host name") != std::string::npos);

        const std::string chroot = "/zklock-no-chroot-" + std::to_string(::getpid());
        const std::string servers = shared_server().connect_string() + chroot;
        process c, cl;
        launch(c, s, "chroot", {"--servers", servers, path, "--", "touch", s / "ran"});
        CHECK(co_await finish(c) == st_unavailable);
        CHECK(c.err() == "zklock: cannot acquire " + path + ": the chroot " + chroot + " of " + servers +
                             " does not exist on the server (zklock does not create it)\n");
        launch(cl, s, "chroot-list", {"list", "--servers", servers, path});
        CHECK(co_await finish(cl) == st_unavailable);
        CHECK(cl.out().empty());  // not "no such lock"
        CHECK(cl.err() == "zklock: cannot list " + path + ": the chroot " + chroot + " of " + servers +
                              " does not exist on the server (zklock does not create it)\n");
        CHECK_FALSE(fs::exists(s / "ran"));
    });
}

TEST_CASE("zklock cli: over TLS with --tls-ca, --tls-cert, --tls-key or their variables, refusals are named")
{
    const auto& certs = shared_tls_certs();
    zk_server server{server_options{.tick_time = 200ms,
                                    .tls = certs.server_tls(tls_server_options::client_auth::need)}};
    run([&]() -> awaitable<void> {
        scratch s;
        const auto servers = server.tls_connect_string();
        const auto path = unique_path("cli-tls");
        const std::string ca = certs.ca_cert().string(), cert = certs.client_cert("alice").string(),
                          key = certs.client_key("alice").string();
        process f;
        launch(f, s, "flags", {"--servers", servers, "--tls-ca", ca, "--tls-cert", cert, "--tls-key", key, "-v", path,
                                "--", "touch", s / "ran"});
        CHECK(co_await finish(f) == 0);
        CHECK_MESSAGE(fs::exists(s / "ran"), f.err());
        process e, el;
        const start_options env{{"ZKLOCK_TLS_CA=" + ca, "ZKLOCK_TLS_CERT=" + cert, "ZKLOCK_TLS_KEY=" + key}};
        launch(e, s, "env", {"--servers", servers, path, "--", "touch", s / "ran-env"}, env);
        CHECK(co_await finish(e) == 0);
        CHECK_MESSAGE(fs::exists(s / "ran-env"), e.err());
        launch(el, s, "env-list", {"list", "--servers", servers, path}, env);
        CHECK(co_await finish(el) == 0);

        // Refused: no client certificate; the system's CAs; a TLS-only port without --tls.
        process n, u, p;
        launch(n, s, "no-cert", {"--servers", servers, "--tls-ca", ca, path, "--", "true"});
        CHECK(co_await finish(n) == st_unavailable);
        CHECK(n.err().find("the server refused the client certificate (check --tls-cert and --tls-key)") != std::string::npos);
        launch(u, s, "system-ca", {"--servers", servers, "--tls", path, "--", "true"});
        CHECK(co_await finish(u) == st_unavailable);
        CHECK(u.err().find("not signed by a trusted CA (check --tls-ca)") != std::string::npos);
        launch(p, s, "plain", {"--servers", servers, path, "--", "true"});
        CHECK(co_await finish(p) == st_unavailable);
        CHECK(p.err().find("accepts only TLS on this port: add --tls") != std::string::npos);

        // Usage errors, before any connection.
        process m, h;
        launch(m, s, "missing", {"--servers", servers, "--tls-ca", s / "nonexistent.pem", path, "--", "true"});
        CHECK(co_await finish(m) == st_usage);
        CHECK(m.err().find("cannot read --tls-ca file") != std::string::npos);
        launch(h, s, "half", {"--servers", servers, "--tls-cert", cert, path, "--", "true"});
        CHECK(co_await finish(h) == st_usage);
        CHECK(h.err() == "zklock: --tls-cert needs --tls-key (or $ZKLOCK_TLS_KEY)\n");
    });
}

TEST_CASE("zklock cli: -v shows the session timeout the server granted, and warns when it was changed")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();  // tickTime 200 ms: it grants 400 ms to 4 s
        const auto path = unique_path("cli-session-timeout");
        const std::string raised = "zklock: warning: the server granted a session timeout of 400ms, not the 100ms asked "
                                   "for (--session-timeout)";
        process a, b, c, d, l;
        launch(a, s, "raised-v", {"--servers", servers, "-v", "--session-timeout", "100ms", path, "true"});
        CHECK(co_await finish(a) == 0);
        CAPTURE(a.err());
        CHECK(a.err().find("zklock: connected to " + servers + " (session 0x") != std::string::npos);
        CHECK(a.err().find(", session timeout 400ms)\n") != std::string::npos);
        CHECK(a.err().find(raised + "\n") != std::string::npos);

        // Asked for explicitly: the warning comes without -v too, and alone.
        launch(b, s, "raised", {"--servers", servers, "--session-timeout", "100ms", path, "true"});
        CHECK(co_await finish(b) == 0);
        CHECK(b.err() == raised + "\n");

        // Granted as asked: no warning.
        launch(c, s, "granted-v", {"--servers", servers, "-v", "--session-timeout", "2s", path, "true"});
        CHECK(co_await finish(c) == 0);
        CAPTURE(c.err());
        CHECK(c.err().find(", session timeout 2s)\n") != std::string::npos);
        CHECK(c.err().find("warning") == std::string::npos);

        // The default (10s, lowered to 4s here) nobody asked for: silent without -v.
        launch(d, s, "default", {"--servers", servers, path, "true"});
        CHECK(co_await finish(d) == 0);
        CHECK(d.err().empty());

        launch(l, s, "list-v", {"list", "-v", "--servers", servers, path});
        CHECK(co_await finish(l) == 0);
        CHECK(l.err().find(", session timeout 4s)\n") != std::string::npos);
    });
}

TEST_CASE("zklock cli: SIGTERM and SIGINT while connecting exit 80: a silent peer, an HTTP peer, a frozen server")
{
    zk_server server;  // started before the test's io_context runs
    run([&]() -> awaitable<void> {
        scratch s;
        auto ex = co_await asio::this_coro::executor;
        fake_peer silent{ex, false}, http{ex, true};
        freeze frozen{server.pid()};
        struct target {
            std::string name, servers;
            const fake_peer* peer;
        };
        const std::vector<target> targets{{"silent", silent.connect_string(), &silent},
                                          {"http", http.connect_string(), &http},
                                          {"frozen", server.connect_string(), nullptr}};
        const std::array<int, 2> signals{SIGTERM, SIGINT};
        process_guard guard;
        for (const auto& t : targets)
            for (int sig : signals) {
                CAPTURE(t.name);
                CAPTURE(sig);
                process p;
                guard.procs.push_back(&p);
                const std::size_t before = t.peer ? t.peer->connections() : 0;
                launch(p, s, t.name + std::to_string(sig),
                       {"--servers", t.servers, "--connect-timeout", "60s", "-v", "/l", "--", "touch", s / "ran"});
                if (t.peer) CHECK(co_await eventually([&] { return t.peer->connections() > before; }, 10s));
                co_await sleep_for(500ms);  // the HTTP peer has answered by now, and been refused
                REQUIRE_FALSE(p.poll());   // still connecting
                const auto signalled = clock_type::now();
                p.signal(sig);
                REQUIRE_MESSAGE(co_await wait_exit(p, 10s), "no exit 10 s after " << signal_text(sig) << "; stderr: " << p.err());
                MESSAGE(t.name << ", " << std::string(signal_text(sig)) << ": exited " << seconds_since(signalled) << " s after it");
                CHECK(*p.status == st_interrupted);
                CHECK(p.err() == "zklock: interrupted by " + std::string(signal_text(sig)) + " while connecting\n");
                guard.procs.pop_back();
            }
        CHECK_FALSE(fs::exists(s / "ran"));
    });
}

TEST_CASE("zklock cli: SIGTERM and SIGINT are answered while waiting and while holding, the server frozen")
{
    zk_server server;  // tickTime 2 s: the 20 s sessions below outlive the freeze
    run([&]() -> awaitable<void> {
        scratch s;
        const auto servers = server.connect_string();
        const auto path = unique_path("cli-frozen");
        auto ex = co_await asio::this_coro::executor;
        process h_term, h_int, w_term, w_int;
        process_guard guard{{&h_term, &h_int, &w_term, &w_int}};
        {
            session zk{ex, config_for(servers, 20000ms)};
            co_await connect(zk);
            // Two shared holders running COMMAND, two exclusive waiters queued behind them.
            const std::vector<std::string> opts{"--shared", "--session-timeout", "20s"};
            co_await start_holder(h_term, s, servers, path, "holder-term", opts);
            co_await start_holder(h_int, s, servers, path, "holder-int", opts);
            start(w_term, s, "waiter-term", zklock_args(servers, {"--session-timeout", "20s", path, "--", "touch", s / "ran"}));
            start(w_int, s, "waiter-int", zklock_args(servers, {"--session-timeout", "20s", path, "--", "touch", s / "ran"}));
            REQUIRE(co_await wait_children(zk, path, 4) == 4);
            co_await zk.async_close();
        }
        freeze frozen{server.pid()};
        struct phase {
            process* p;
            int sig;
            int status;
            std::string message;
        };
        const std::vector<phase> phases{
            {&w_term, SIGTERM, st_interrupted, "interrupted by SIGTERM while waiting for " + path + "; left the queue"},
            {&w_int, SIGINT, st_interrupted, "interrupted by SIGINT while waiting for " + path + "; left the queue"},
            {&h_term, SIGTERM, 128 + SIGTERM, ""},  // passed on to COMMAND (sleep), whose status it is
            {&h_int, SIGINT, 128 + SIGINT, ""},
        };
        for (const auto& ph : phases) {
            CAPTURE(ph.p->err_file);
            const auto signalled = clock_type::now();
            ph.p->signal(ph.sig);
            REQUIRE_MESSAGE(co_await wait_exit(*ph.p, 10s),
                            "no exit 10 s after " << signal_text(ph.sig) << "; stderr: " << ph.p->err());
            MESSAGE(ph.p->err_file << ": exited " << seconds_since(signalled) << " s after " << std::string(signal_text(ph.sig)));
            CHECK(*ph.p->status == ph.status);
            if (!ph.message.empty()) CHECK(ph.p->err().find(ph.message) != std::string::npos);
        }
        CHECK_FALSE(fs::exists(s / "ran"));

        // Thawed, the server finds their sessions closed (or expires them): nothing of theirs stays.
        frozen.thaw();
        session after{ex, config_for(servers, 20000ms)};
        co_await connect(after);
        const auto thawed = clock_type::now();
        CHECK(co_await wait_children(after, path, 0, 40s) == 0);
        MESSAGE("their nodes gone " << seconds_since(thawed) << " s after the thaw");
        co_await after.async_close();
    });
}

// ---- zklock elect, zklock leader -----------------------------------------------------------------

namespace {

/// `sh -c` text that marks `name` ready, waits until the test creates `name`.go, then logs `name` end.
std::string hold_until_go(const scratch& s, const std::string& name, const std::string& log)
{
    return "touch " + s / (name + ".ready") + "; while [ ! -e " + s / (name + ".go") + " ]; do sleep 0.05; done; echo " +
           name + "-end >> " + log;
}

void touch(const std::string& file) { std::ofstream{file}; }

/// The fields of a `zklock leader` line (whitespace-separated; VALUE, last, has none in these tests).
std::vector<std::string> fields_of(const std::string& line)
{
    std::istringstream in(line);
    std::vector<std::string> f;
    for (std::string w; in >> w;) f.push_back(w);
    return f;
}

/// Waits (bounded) until `p`'s stdout has at least `n` lines; returns them.
awaitable<std::vector<std::string>> wait_lines(const process& p, std::size_t n, std::chrono::milliseconds limit = 20s)
{
    std::vector<std::string> lines;
    co_await eventually([&] { return (lines = lines_of(p.out())).size() >= n; }, limit);
    co_return lines;
}

}  // namespace

TEST_CASE("zklock cli: elect and leader usage errors exit 64 naming the problem")
{
    run([]() -> awaitable<void> {
        scratch s;
        const std::vector<usage_case> cases{
            {{"elect"}, "missing election PATH; usage: zklock elect"},
            {{"elect", "relative/path", "true"}, "invalid election path 'relative/path': the path is not absolute"},
            {{"elect", "/e"}, "missing COMMAND to run while leading"},
            {{"elect", "/e", "--"}, "missing COMMAND to run while leading"},
            {{"elect", "--names", "zookeeper", "/e", "true"},
             "invalid --names 'zookeeper' (expected curator-latch, kazoo or curator-selector)"},
            {{"elect", "--names"}, "option '--names' needs a value (NAMES)"},
            {{"elect", "--try", "--timeout", "1s", "/e", "true"}, "--try and --timeout exclude each other"},
            {{"elect", "--timeout", "soon", "/e", "true"}, "invalid duration 'soon' for --timeout"},
            {{"elect", "--owner", "me", "/e", "true"}, "option '--owner' does not apply to 'zklock elect' (use --value)"},
            {{"elect", "--shared", "/e", "true"}, "option '--shared' does not apply to 'zklock elect'"},
            {{"elect", "--watch", "/e", "true"}, "option '--watch' does not apply to 'zklock elect'"},
            {{"leader"}, "missing election PATH; usage: zklock leader"},
            {{"leader", "relative"}, "invalid election path 'relative': the path is not absolute"},
            {{"leader", "/e", "true"}, "'zklock leader' takes one PATH; unexpected 'true'"},
            {{"leader", "--value", "v", "/e"}, "option '--value' does not apply to 'zklock leader'"},
            {{"leader", "--try", "/e"}, "option '--try' does not apply to 'zklock leader'"},
            {{"leader", "--watch=yes", "/e"}, "option '--watch' takes no value"},
            {{"--value", "v", "/l", "true"}, "option '--value' applies only to 'zklock elect'"},
            {{"--watch", "/l", "true"}, "option '--watch' applies only to 'zklock leader'"},
            {{"list", "--names", "kazoo", "/l"}, "option '--names' does not apply to 'zklock list'"},
        };
        co_await expect_usage_errors(s, cases);

        process help;
        launch(help, s, "help", {"--help"});
        CHECK(co_await finish(help) == 0);
        const auto text = help.out();
        for (const char* word : {"zklock elect [--value TEXT] [--names NAMES]", "zklock leader [--watch]", "--value TEXT",
                                 "--names NAMES", "curator-selector", "--watch", "'zklock leader': 0"})
            CHECK_MESSAGE(text.find(word) != std::string::npos, word);
    });
}

TEST_CASE("zklock cli: elect runs COMMAND while leading, in campaign order, and leader prints the leader")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        const auto path = unique_path("cli-elect");
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(servers)};
        co_await connect(zk);
        const std::string log = s / "log", first_node = s / "first.node";

        // first leads (its COMMAND records its node, then holds until first.go); second
        // campaigns behind it.
        process first, second;
        process_guard guard{{&first, &second}};
        start(first, s, "first",
              zklock_args(servers, {"elect", "--value", "first", path, "--", "sh", "-c",
                                    "echo \"$ZKLOCK_NODE $ZKLOCK_FENCING_TOKEN\" > " + first_node + "; " +
                                        hold_until_go(s, "first", log)}));
        REQUIRE_MESSAGE(co_await wait_file(s / "first.ready"), first.err());
        start(second, s, "second",
              zklock_args(servers, {"elect", "--value", "second", path, "sh", "-c", "echo second-start >> " + log + "; exit 3"}));
        REQUIRE(co_await wait_children(zk, path, 2) == 2);

        // The leader, as `zklock leader` sees it: first's value and node.
        process l;
        launch(l, s, "leader", {"leader", "--servers", servers, path});
        CHECK(co_await finish(l) == 0);
        CAPTURE(l.out());
        const auto lines = lines_of(l.out());
        REQUIRE(lines.size() == 2);
        CHECK(fields_of(lines[0]) == std::vector<std::string>{"NODE", "LIBRARY", "AGE", "VALUE"});
        const auto row = fields_of(lines[1]);
        REQUIRE(row.size() == 4);
        const auto recorded = fields_of(slurp(first_node));
        REQUIRE(recorded.size() == 2);
        CHECK(path + "/" + row[0] == recorded[0]);  // ZKLOCK_NODE: our candidate node
        CHECK(row[0].find("-lock-") != std::string::npos);  // Curator LeaderSelector's names by default
        CHECK(row[1] == "zklock");
        CHECK(row[2].ends_with("s"));
        CHECK(row[3] == "first");
        CHECK(std::stoll(recorded[1]) > 0);  // ZKLOCK_FENCING_TOKEN

        // --try (and --timeout 0) while someone leads: 75, and COMMAND does not run.
        process t, t0;
        launch(t, s, "try", {"elect", "--servers", servers, "--try", path, "touch", s / "ran"});
        CHECK(co_await finish(t) == st_not_acquired);
        CHECK(t.err() == "zklock: " + path + " has a leader (--try)\n");
        launch(t0, s, "timeout", {"elect", "--servers", servers, "-w", "300ms", path, "touch", s / "ran"});
        CHECK(co_await finish(t0) == st_not_acquired);
        CHECK(t0.err() == "zklock: timed out after 300ms campaigning for " + path + "\n");
        CHECK_FALSE(fs::exists(s / "ran"));

        // second's COMMAND has not started; it starts once first's has ended, and its status
        // is second's.
        co_await sleep_for(300ms);
        CHECK(slurp(log).empty());
        touch(s / "first.go");
        CHECK(co_await finish(first) == 0);
        CHECK(co_await finish(second) == 3);
        CHECK(slurp(log) == "first-end\nsecond-start\n");
        CHECK((co_await children_of(zk, path)).empty());  // both resigned
    });
}

TEST_CASE("zklock cli: leader with no candidate exits 75 and says nobody leads")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        const auto path = unique_path("cli-no-leader");
        // No such path yet; then the path left empty by a campaign that ended.
        process missing, ran, empty;
        launch(missing, s, "missing", {"leader", "--servers", servers, path});
        CHECK(co_await finish(missing) == st_not_acquired);
        CHECK(missing.out().empty());
        CHECK(missing.err() == "zklock: " + path + " has no leader (nobody is campaigning)\n");
        launch(ran, s, "ran", {"elect", "--servers", servers, path, "true"});
        CHECK(co_await finish(ran) == 0);
        launch(empty, s, "empty", {"leader", "--servers", servers, path});
        CHECK(co_await finish(empty) == st_not_acquired);
        CHECK(empty.out().empty());
        CHECK(empty.err() == "zklock: " + path + " has no leader (nobody is campaigning)\n");

        // A chroot that does not exist is an error (69), not "no leader".
        const std::string chroot = "/zklock-no-chroot-" + std::to_string(::getpid());
        process c, w;
        launch(c, s, "chroot", {"leader", "--servers", servers + chroot, path});
        CHECK(co_await finish(c) == st_unavailable);
        CHECK(c.err().find("the chroot " + chroot + " of " + servers + chroot + " does not exist") != std::string::npos);
        launch(w, s, "chroot-watch", {"leader", "--watch", "--servers", servers + chroot, path});
        CHECK(co_await finish(w) == st_unavailable);
        CHECK(w.out().empty());
        CHECK(w.err().find("the chroot " + chroot + " of " + servers + chroot + " does not exist") != std::string::npos);
    });
}

TEST_CASE("zklock cli: leader --watch prints each change of leader at once, SIGINT or SIGTERM end it with 0")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        const auto path = unique_path("cli-watch");
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(servers)};
        co_await connect(zk);
        const std::string log = s / "log";

        process first, second, watch_int, watch_term;
        process_guard guard{{&first, &second, &watch_int, &watch_term}};
        start(first, s, "first", zklock_args(servers, {"elect", "--value", "first", path, "sh", "-c", hold_until_go(s, "first", log)}));
        REQUIRE_MESSAGE(co_await wait_file(s / "first.ready"), first.err());
        start(watch_int, s, "watch-int", zklock_args(servers, {"leader", "--watch", path}));
        start(watch_term, s, "watch-term", zklock_args(servers, {"leader", "--watch", path}));
        const std::array<process*, 2> watchers{&watch_int, &watch_term};
        // At once: the leader now.
        for (auto* w : watchers) {
            const auto lines = co_await wait_lines(*w, 1);
            CAPTURE(w->out());
            REQUIRE(lines.size() == 1);
            const auto f = fields_of(lines[0]);
            REQUIRE(f.size() == 5);  // TIME NODE LIBRARY AGE VALUE
            CHECK(f[0].size() >= 23);
            CHECK(f[1].find("-lock-") != std::string::npos);
            CHECK(f[2] == "zklock");
            CHECK(f[4] == "first");
        }

        // first's COMMAND ends: second leads, and the watchers say so (stdout is a file here:
        // each line is flushed as it is printed).
        start(second, s, "second",
              zklock_args(servers, {"elect", "--value", "second", "--names", "kazoo", path, "sh", "-c",
                                    hold_until_go(s, "second", log)}));
        REQUIRE(co_await wait_children(zk, path, 2) == 2);
        touch(s / "first.go");
        CHECK(co_await finish(first) == 0);
        REQUIRE_MESSAGE(co_await wait_file(s / "second.ready"), second.err());
        for (auto* w : watchers) {
            const auto lines = co_await wait_lines(*w, 2);
            CAPTURE(w->out());
            REQUIRE(lines.size() == 2);
            const auto f = fields_of(lines[1]);
            REQUIRE(f.size() == 5);
            CHECK(f[1].find("__lock__") != std::string::npos);  // --names kazoo
            CHECK(f[4] == "second");
        }

        // Nobody left: a "no leader" line.
        touch(s / "second.go");
        CHECK(co_await finish(second) == 0);
        for (auto* w : watchers) {
            const auto lines = co_await wait_lines(*w, 3);
            CAPTURE(w->out());
            REQUIRE(lines.size() == 3);
            CHECK(fields_of(lines[2]) == std::vector<std::string>{fields_of(lines[2])[0], "-", "-", "-", "(no", "leader)"});
        }

        // Nothing changes: no more lines; a signal ends the watch with status 0 and nothing on stderr.
        co_await sleep_for(300ms);
        watch_int.signal(SIGINT);
        watch_term.signal(SIGTERM);
        for (auto* w : watchers) {
            CHECK(co_await finish(*w) == 0);
            CHECK(lines_of(w->out()).size() == 3);
            CHECK(w->err().empty());
        }
        CHECK(slurp(log) == "first-end\nsecond-end\n");
    });
}

TEST_CASE("zklock cli: a lost leadership terminates COMMAND and exits 79, SIGTERM while campaigning exits 80")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(servers)};
        co_await connect(zk);
        const auto path = unique_path("cli-elect-lost");
        const std::string log = s / "log", ready = s / "ready";

        // A leader, and a candidate behind it.
        process leader, waiter;
        process_guard guard{{&leader, &waiter}};
        start(leader, s, "leader",
              zklock_args(servers, {"elect", "--kill-after", "2s", path, "--", "sh", "-c",
                                    "trap 'echo term >> " + log + "; exit 0' TERM; touch " + ready +
                                        "; while :; do sleep 0.05; done"}));
        REQUIRE(co_await wait_file(ready));
        start(waiter, s, "waiter", zklock_args(servers, {"elect", path, "--", "touch", s / "ran"}));
        REQUIRE(co_await wait_children(zk, path, 2) == 2);

        // SIGTERM to the candidate: it withdraws (its node goes) and exits 80.
        waiter.signal(SIGTERM);
        CHECK(co_await finish(waiter, 10s) == st_interrupted);
        CHECK(waiter.err() == "zklock: interrupted by SIGTERM while campaigning for " + path + "; withdrew our candidate\n");
        auto kids = co_await children_of(zk, path);
        REQUIRE(kids.size() == 1);

        // The leader's node is deleted by another session: COMMAND gets SIGTERM, zklock exits 79.
        co_await zk.async_remove(path + "/" + kids[0]);
        CHECK(co_await finish(leader, 10s) == st_lost);
        CHECK(slurp(log) == "term\n");
        CHECK(leader.err().find("lost the leadership of " + path) != std::string::npos);
        CHECK(leader.err().find("sending SIGTERM to COMMAND") != std::string::npos);
        CHECK_FALSE(fs::exists(s / "ran"));
    });
}

// ---- --version, -E, -c, --semaphore -------------------------------------------------------------

namespace {

/// A value of the build's CMakeCache.txt ("CMAKE_COMMAND", "CMAKE_HOME_DIRECTORY", ...), from the
/// build tree the zklock binary is in; empty if not found.
std::string cmake_cache(const std::string& key)
{
    for (fs::path dir = fs::path(ZKLOCK_CLI_PATH).parent_path(); dir.has_relative_path(); dir = dir.parent_path()) {
        if (!fs::exists(dir / "CMakeCache.txt")) continue;
        for (const auto& line : lines_of(slurp(dir / "CMakeCache.txt"))) {
            const auto colon = line.find(':'), eq = line.find('=');
            if (colon != std::string::npos && eq != std::string::npos && colon < eq && line.substr(0, colon) == key)
                return line.substr(eq + 1);
        }
        return {};
    }
    return {};
}

std::string upper(std::string text)
{
    for (auto& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return text;
}

}  // namespace

TEST_CASE("zklock cli: --version, -E, --semaphore, -c, revoke and --json usage errors exit 64")
{
    run([]() -> awaitable<void> {
        scratch s;
        const std::vector<usage_case> cases{
            {{"-E", "256", "/l", "true"}, "invalid --conflict-exit-code '256' (expected a number from 0 to 255)"},
            {{"--conflict-exit-code=-1", "/l", "true"}, "invalid --conflict-exit-code '-1'"},
            {{"-E", "3x", "/l", "true"}, "invalid --conflict-exit-code '3x'"},
            {{"-E"}, "option '-E' needs a value (N)"},
            {{"--semaphore", "0", "/l", "true"}, "invalid --semaphore '0' (expected a number of permits, 1 or more)"},
            {{"--semaphore", "4294967296", "/l", "true"}, "invalid --semaphore '4294967296'"},
            {{"--semaphore", "2", "--shared", "/l", "true"}, "--shared and --semaphore exclude each other"},
            {{"elect", "--semaphore", "2", "/e", "true"},
             "option '--semaphore' does not apply to 'zklock elect' (leadership is exclusive)"},
            {{"list", "--semaphore", "2", "/l"}, "option '--semaphore' does not apply to 'zklock list'"},
            {{"/l", "-c", "echo a", "extra"},
             "-c takes the whole shell command as one argument: quote it (unexpected 'extra')"},
            {{"-c"}, "option '-c' needs a value (CMDLINE)"},
            {{"-c", "true"}, "missing LOCKPATH"},
            {{"list", "-c", "true", "/l"}, "option '--command' does not apply to 'zklock list'"},
            {{"--json", "/l", "true"}, "option '--json' applies only to 'zklock list'"},
            {{"leader", "--json", "/e"}, "option '--json' does not apply to 'zklock leader'"},
            {{"revoke"}, "missing LOCKPATH; usage: zklock revoke [OPTIONS] LOCKPATH"},
            {{"revoke", "/l", "extra"}, "'zklock revoke' takes one LOCKPATH; unexpected 'extra'"},
            {{"revoke", "relative"}, "invalid lock path 'relative': the path is not absolute"},
            {{"revoke", "--try", "/l"}, "option '--try' does not apply to 'zklock revoke'"},
            {{"revoke", "--session-timeout", "1s", "/l"}, "option '--session-timeout' does not apply to 'zklock revoke'"},
        };
        co_await expect_usage_errors(s, cases);

        // --version and -V: the project's version, on stdout, status 0, whatever else is given.
        const std::string version = cmake_cache("CMAKE_PROJECT_VERSION");
        REQUIRE_FALSE(version.empty());
        const std::vector<std::vector<std::string>> version_args{
            {"--version"}, {"-V"}, {"list", "--version", "/l"}, {"--servers", "nohostport", "--version"}};
        int n = 0;
        for (const auto& args : version_args) {
            process v;
            launch(v, s, "version" + std::to_string(n++), args);
            CHECK(co_await finish(v) == 0);
            CHECK(v.out() == "zklock " + version + "\n");
            CHECK(v.err().empty());
        }

        process help;
        launch(help, s, "help", {"--help"});
        CHECK(co_await finish(help) == 0);
        const auto text = help.out();
        for (const char* word : {"zklock [OPTIONS] LOCKPATH -c CMDLINE", "zklock revoke [--servers H:P,...]",
                                 "zklock list [--json]", "-E, --conflict-exit-code N", "--semaphore N",
                                 "-c, --command CMDLINE", "-V, --version", "--json", "\n  81 ",
                                 "'zklock revoke': 0 (every holder asked), 75 (no holder to ask), 64, 69."})
            CHECK_MESSAGE(text.find(word) != std::string::npos, word);
    });
}

TEST_CASE("zklock cli: -E sets the status of a lock not acquired, -c runs a command line with /bin/sh")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        const auto path = unique_path("cli-conflict");
        process holder;
        process_guard guard{{&holder}};
        co_await start_holder(holder, s, servers, path, "holder");

        // --try and --timeout with -E: its status instead of 75, the message as before.
        process t, t0, w, d;
        launch(t, s, "try-E3", {"--servers", servers, "-n", "-E", "3", path, "touch", s / "ran"});
        CHECK(co_await finish(t) == 3);
        CHECK(t.err() == "zklock: " + path + " is taken (--try)\n");
        launch(t0, s, "try-E0", {"--servers", servers, "--try", "--conflict-exit-code=0", path, "touch", s / "ran"});
        CHECK(co_await finish(t0) == 0);
        launch(w, s, "timeout-E1", {"--servers", servers, "-E1", "-w", "300ms", path, "touch", s / "ran"});
        CHECK(co_await finish(w) == 1);
        CHECK(w.err() == "zklock: timed out after 300ms waiting for " + path + "\n");
        launch(d, s, "try-default", {"--servers", servers, "-n", path, "touch", s / "ran"});
        CHECK(co_await finish(d) == st_not_acquired);
        CHECK_FALSE(fs::exists(s / "ran"));

        // elect: someone leads.
        const auto election = unique_path("cli-conflict-elect");
        process leader, e;
        guard.procs.push_back(&leader);
        const std::string leading = s / "leading";
        start(leader, s, "leader", zklock_args(servers, {"elect", election, "-c", "touch " + leading + "; exec sleep 60"}));
        REQUIRE_MESSAGE(co_await wait_file(leading), leader.err());
        launch(e, s, "elect-E9", {"elect", "--servers", servers, "-n", "-E", "9", election, "touch", s / "ran"});
        CHECK(co_await finish(e) == 9);
        CHECK(e.err() == "zklock: " + election + " has a leader (--try)\n");
        leader.signal(SIGTERM);
        CHECK(co_await finish(leader) == 128 + SIGTERM);  // -c: sh exec'd sleep, which SIGTERM killed

        // -c CMDLINE: /bin/sh -c, with the environment, status passed on; options after it too.
        const std::string out = s / "c.out";
        process c, c2;
        launch(c, s, "command",
               {"--servers", servers, path + "-c", "-c",
                "echo \"$0 $ZKLOCK_NODE\" | tr a-z A-Z > " + out + " && test -s " + out + "; exit 4"});
        CHECK(co_await finish(c) == 4);
        const auto written = slurp(out);
        CAPTURE(written);
        CHECK(written.rfind("/BIN/SH " + upper(path + "-c/"), 0) == 0);
        launch(c2, s, "command-long", {"--command=exit 5", "--servers", servers, path + "-c"});
        CHECK(co_await finish(c2) == 5);
        holder.signal(SIGTERM);
        CHECK(co_await finish(holder) == 128 + SIGTERM);
    });
}

TEST_CASE("zklock cli: --semaphore N runs N holders at once, in queue order, and names a mismatch")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        const auto path = unique_path("cli-semaphore");
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(servers)};
        co_await connect(zk);

        // Two permits: two holders at once.
        process a, b, third, waiter;
        process_guard guard{{&a, &b, &third, &waiter}};
        const std::vector<std::string> two{"--semaphore", "2"};
        co_await start_holder(a, s, servers, path, "a", two);
        co_await start_holder(b, s, servers, path, "b", two);

        // A third: --try finds no permit free (75, or -E's status).
        process t;
        launch(t, s, "try", {"--servers", servers, "--semaphore", "2", "-n", path, "touch", s / "ran"});
        CHECK(co_await finish(t) == st_not_acquired);
        CHECK(t.err() == "zklock: " + path + " has no free permit (--try)\n");

        // Another count, or a lock on the semaphore's path: refused (69), the reason named.
        process m, l;
        launch(m, s, "mismatch", {"--servers", servers, "--semaphore", "3", path, "touch", s / "ran"});
        CHECK(co_await finish(m) == st_unavailable);
        CHECK(m.err() == "zklock: cannot acquire " + path + ": it is a semaphore of 2 permits, not 3 (--semaphore)\n");
        launch(l, s, "lock", {"--servers", servers, "--try", path, "touch", s / "ran"});
        CHECK(co_await finish(l) == st_unavailable);
        CHECK(l.err() == "zklock: cannot acquire " + path + ": it is a semaphore (add --semaphore N)\n");
        CHECK_FALSE(fs::exists(s / "ran"));

        // list: two permit holders.
        process list;
        launch(list, s, "list", {"list", "--servers", servers, path});
        CHECK(co_await finish(list) == 0);
        CAPTURE(list.out());
        const auto rows = lines_of(list.out());
        REQUIRE(rows.size() == 4);
        for (std::size_t i = 2; i < 4; ++i) {
            const auto f = fields_of(rows[i]);
            REQUIRE(f.size() >= 6);
            CHECK(f[1] == "holder");
            CHECK(f[2] == "permit");
            CHECK(f[4] == "semaphore");
        }

        // A third holder waits for a permit, -v saying so, and gets one when a holder ends.
        const std::string third_ready = s / "third.ready";
        start(third, s, "third",
              zklock_args(servers, {"-v", "--semaphore", "2", path, "-c", "touch " + third_ready + "; exec sleep 60"}));
        REQUIRE(co_await wait_children(zk, path, 3) == 3);
        co_await sleep_for(300ms);
        CHECK_FALSE(fs::exists(third_ready));
        a.signal(SIGTERM);
        CHECK(co_await finish(a) == 128 + SIGTERM);
        REQUIRE_MESSAGE(co_await wait_file(third_ready), third.err());
        CHECK(third.err().find("zklock: waiting for one of the 2 permits of " + path) != std::string::npos);
        CHECK(third.err().find("zklock: waiting: 2 ahead\n") != std::string::npos);
        const std::array<process*, 2> rest{&b, &third};
        for (auto* p : rest) {
            p->signal(SIGTERM);
            CHECK(co_await finish(*p) == 128 + SIGTERM);
        }
        CHECK((co_await children_of(zk, path)).empty());
    });
}

// ---- zklock revoke ------------------------------------------------------------------------------

TEST_CASE("zklock cli: revoke asks every holder to let go, a holder ends COMMAND and exits 81")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(servers)};
        co_await connect(zk);

        // An exclusive holder whose COMMAND cleans up on SIGTERM, and a waiter behind it.
        const auto path = unique_path("cli-revoke");
        const std::string log = s / "log", ready = s / "ready";
        process holder, waiter;
        process_guard guard{{&holder, &waiter}};
        start(holder, s, "holder",
              zklock_args(servers, {"--owner", "the holder", path, "--", "sh", "-c",
                                    "trap 'echo term >> " + log + "; exit 0' TERM; touch " + ready +
                                        "; while :; do sleep 0.05; done"}));
        REQUIRE(co_await wait_file(ready));
        start(waiter, s, "waiter", zklock_args(servers, {path, "-c", "echo waiter >> " + log}));
        REQUIRE(co_await wait_children(zk, path, 2) == 2);
        const auto kids = co_await children_of(zk, path);
        const auto holder_node = *std::min_element(kids.begin(), kids.end(), [](const std::string& x, const std::string& y) {
            return queue_sequence(x).value_or(0) < queue_sequence(y).value_or(0);
        });

        process r;
        launch(r, s, "revoke", {"revoke", "--servers", servers, path});
        CHECK(co_await finish(r) == 0);
        CHECK(r.out() == path + ": asked " + holder_node + " (the holder) to let go\n");
        CHECK(r.err().empty());
        CHECK(co_await finish(holder, 10s) == st_revoked);
        CHECK(co_await finish(waiter, 10s) == 0);
        CHECK(slurp(log) == "term\nwaiter\n");  // COMMAND ended, then the waiter held
        CAPTURE(holder.err());
        CHECK(holder.err().find("zklock: revocation of the lock on " + path + " requested; sending SIGTERM to COMMAND (pid ") == 0);
        CHECK(holder.err().find("COMMAND exited with status 0 after the revocation request; released " + path) !=
              std::string::npos);

        // Shared holders: every one is asked, and the writer waiting behind them gets the lock.
        const auto shared = unique_path("cli-revoke-shared");
        process r1, r2, writer;
        guard.procs.insert(guard.procs.end(), {&r1, &r2, &writer});
        const std::vector<std::string> shared_flag{"--shared"};
        co_await start_holder(r1, s, servers, shared, "r1", shared_flag);
        co_await start_holder(r2, s, servers, shared, "r2", shared_flag);
        start(writer, s, "writer", zklock_args(servers, {shared, "true"}));
        REQUIRE(co_await wait_children(zk, shared, 3) == 3);
        process rs;
        launch(rs, s, "revoke-shared", {"revoke", "--servers", servers, shared});
        CHECK(co_await finish(rs) == 0);
        CAPTURE(rs.out());
        const auto asked = lines_of(rs.out());
        REQUIRE(asked.size() == 2);
        for (const auto& line : asked) CHECK(line.find(": asked r-") != std::string::npos);
        CHECK(co_await finish(r1, 10s) == st_revoked);
        CHECK(co_await finish(r2, 10s) == st_revoked);
        CHECK(co_await finish(writer, 10s) == 0);

        // A COMMAND that ignores SIGTERM gets SIGKILL after --kill-after.
        const auto stubborn_path = unique_path("cli-revoke-kill");
        const std::string stubborn_ready = s / "stubborn.ready";
        process stubborn;
        guard.procs.push_back(&stubborn);
        start(stubborn, s, "stubborn",
              zklock_args(servers, {"--kill-after", "1s", stubborn_path, "-c",
                                    "trap '' TERM; touch " + stubborn_ready + "; while :; do sleep 0.05; done"}));
        REQUIRE(co_await wait_file(stubborn_ready));
        process rk;
        launch(rk, s, "revoke-kill", {"revoke", "--servers", servers, stubborn_path});
        CHECK(co_await finish(rk) == 0);
        const auto t0 = clock_type::now();
        CHECK(co_await finish(stubborn, 10s) == st_revoked);
        CHECK(seconds_since(t0) >= 0.9);
        CHECK(stubborn.err().find("sending SIGKILL") != std::string::npos);
        CHECK(stubborn.err().find("COMMAND killed by SIGKILL after the revocation request") != std::string::npos);
        CHECK((co_await children_of(zk, stubborn_path)).empty());
    });
}

TEST_CASE("zklock cli: revoke with nobody to ask exits 75, other libraries' holders are left alone, a leader resigns")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(servers)};
        co_await connect(zk);

        // No such path; a path with nobody in it.
        const auto path = unique_path("cli-revoke-none");
        co_await zk.async_create(path.substr(0, path.rfind('/')), "", create_mode::persistent, tuple);  // may exist
        process missing, empty;
        launch(missing, s, "missing", {"revoke", "--servers", servers, path});
        CHECK(co_await finish(missing) == st_not_acquired);
        CHECK(missing.out().empty());
        CHECK(missing.err() == "zklock: " + path + " has no holder (no such lock); nothing to revoke\n");
        auto [pec, created, pst] = co_await zk.async_create(path, "", create_mode::persistent, tuple);
        REQUIRE_FALSE(pec);
        launch(empty, s, "empty", {"revoke", "--servers", servers, path});
        CHECK(co_await finish(empty) == st_not_acquired);
        CHECK(empty.err() == "zklock: " + path + " has no holder; nothing to revoke\n");

        // A Kazoo holder: not written to (its data stays), 75.
        auto [kec, kazoo_node, kst] =
            co_await zk.async_create(path + "/4b1d3c1e2f8a4b6c9d0e1f2a3b4c5d6e__lock__", "python", create_mode::ephemeral_sequential, tuple);
        REQUIRE_FALSE(kec);
        process foreign;
        launch(foreign, s, "foreign", {"revoke", "--servers", servers, path});
        CHECK(co_await finish(foreign) == st_not_acquired);
        CHECK(foreign.out().empty());
        CHECK(foreign.err().find("a kazoo node), which does not take zklock's revocation requests; left alone") !=
              std::string::npos);
        auto [gec, data, gst] = co_await zk.async_get_data(kazoo_node, tuple);
        REQUIRE_FALSE(gec);
        CHECK(data == "python");
        co_await zk.async_remove(kazoo_node, -1, tuple);
        co_await zk.async_remove(path, -1, tuple);

        // An election's leader is asked to resign: COMMAND ends, the next candidate leads.
        const auto election = unique_path("cli-revoke-elect");
        const std::string log = s / "log", ready = s / "leader.ready";
        process leader, next;
        process_guard guard{{&leader, &next}};
        start(leader, s, "leader",
              zklock_args(servers, {"elect", "--value", "first", election, "-c",
                                    "trap 'echo term >> " + log + "; exit 0' TERM; touch " + ready +
                                        "; while :; do sleep 0.05; done"}));
        REQUIRE(co_await wait_file(ready));
        start(next, s, "next", zklock_args(servers, {"elect", election, "-c", "echo next >> " + log}));
        REQUIRE(co_await wait_children(zk, election, 2) == 2);
        process r;
        launch(r, s, "revoke-leader", {"revoke", "--servers", servers, election});
        CHECK(co_await finish(r) == 0);
        CHECK(r.out().find(": asked ") != std::string::npos);
        CHECK(r.out().find(" (first) to let go\n") != std::string::npos);
        CHECK(co_await finish(leader, 10s) == st_revoked);
        CHECK(co_await finish(next, 10s) == 0);
        CHECK(slurp(log) == "term\nnext\n");
        CHECK(leader.err().find("revocation of the leadership of " + election + " requested") != std::string::npos);
        CHECK(leader.err().find("after the revocation request; resigned " + election) != std::string::npos);
    });
}

// ---- list --json, columns sized from the data, -v -----------------------------------------------

namespace {

/// A JSON string's text.
std::string str(const boost::json::value& v)
{
    const auto& s = v.as_string();
    return std::string(s.data(), s.size());
}

/// The column each header word of `header` starts at ("POS STATE ..."), by word.
std::map<std::string, std::size_t> column_starts(const std::string& header)
{
    std::map<std::string, std::size_t> at;
    for (std::size_t i = 0; i < header.size(); ++i)
        if (header[i] != ' ' && (i == 0 || header[i - 1] == ' ')) at[header.substr(i, header.find(' ', i) - i)] = i;
    return at;
}

/// Whether `line` has a cell starting at column `c`: a space before it (or the line's start) and
/// a non-space there.
bool cell_at(const std::string& line, std::size_t c)
{
    return c < line.size() && line[c] != ' ' && (c == 0 || line[c - 1] == ' ');
}

}  // namespace

TEST_CASE("zklock cli: list --json, and columns that stay aligned with long foreign node names")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(servers)};
        co_await connect(zk);
        const auto path = unique_path("cli-json");

        const std::vector<std::string> owner{"--owner", "the holder"}, three_permits{"--semaphore", "3"};

        // Missing: exists false, no entries, status 0.
        process missing;
        launch(missing, s, "missing", {"list", "--json", "--servers", servers, path});
        CHECK(co_await finish(missing) == 0);
        CAPTURE(missing.out());
        const auto none = boost::json::parse(missing.out()).as_object();
        CHECK(str(none.at("path")) == path);
        CHECK(none.at("exists").as_bool() == false);
        CHECK(none.at("entries").as_array().empty());
        CHECK(lines_of(missing.out()).size() == 1);

        // A zklock holder, a shared zklock waiter, a Kazoo reader (a 50-character name) and a
        // Curator writer behind them.
        process holder, reader;
        process_guard guard{{&holder, &reader}};
        co_await start_holder(holder, s, servers, path, "holder", owner);
        start(reader, s, "reader", zklock_args(servers, {"--shared", "--owner", "a \"quoted\"\treader", path, "true"}));
        REQUIRE(co_await wait_children(zk, path, 2) == 2);
        auto [kec, kazoo_node, kst] = co_await zk.async_create(path + "/4b1d3c1e2f8a4b6c9d0e1f2a3b4c5d6e__rlock__", "python",
                                                               create_mode::ephemeral_sequential, tuple);
        REQUIRE_FALSE(kec);
        auto [cec, curator_node, cst] = co_await zk.async_create(
            path + "/_c_5e1c3b10-7f3a-4c4e-9a53-2f1d0c8a9b7e-__WRIT__", "java", create_mode::ephemeral_sequential, tuple);
        REQUIRE_FALSE(cec);

        process j;
        launch(j, s, "json", {"list", "--json", "--servers", servers, path});
        CHECK(co_await finish(j) == 0);
        CAPTURE(j.out());
        REQUIRE(lines_of(j.out()).size() == 1);
        const auto doc = boost::json::parse(j.out()).as_object();
        CHECK(doc.at("exists").as_bool());
        CHECK(doc.at("permits").is_null());
        CHECK(doc.at("other_children").as_int64() == 0);
        const auto& entries = doc.at("entries").as_array();
        REQUIRE(entries.size() == 4);
        const auto e = [&](std::size_t i) -> const boost::json::object& { return entries[i].as_object(); };
        for (std::size_t i = 0; i < 4; ++i) {
            CHECK(e(i).at("position").as_int64() == static_cast<std::int64_t>(i + 1));
            CHECK(e(i).at("age_ms").as_int64() >= 0);
            CHECK(e(i).at("created_ms").as_int64() > 0);
            CHECK(str(e(i).at("session")).rfind("0x", 0) == 0);
            CHECK(e(i).at("gone").as_bool() == false);
            CHECK(e(i).at("revocation_requested").as_bool() == false);
            if (i > 0) CHECK(e(i).at("sequence").as_int64() > e(i - 1).at("sequence").as_int64());
        }
        CHECK(str(e(0).at("state")) == "holder");
        CHECK(str(e(0).at("kind")) == "exclusive");
        CHECK(str(e(0).at("library")) == "zklock");
        CHECK(str(e(0).at("recipe")) == "mutex");
        CHECK(str(e(0).at("node")).rfind("x-", 0) == 0);
        CHECK(str(e(0).at("owner")) == "the holder");
        CHECK(str(e(1).at("state")) == "waiting");
        CHECK(str(e(1).at("kind")) == "shared");
        CHECK(str(e(1).at("recipe")) == "shared_mutex");
        CHECK(str(e(1).at("owner")) == "a \"quoted\"\treader");  // as stored, escaped by JSON
        CHECK(str(e(2).at("library")) == "kazoo");
        CHECK(path + "/" + str(e(2).at("node")) == kazoo_node);
        CHECK(str(e(2).at("owner")) == "python");
        CHECK(str(e(3).at("library")) == "curator");
        CHECK(str(e(3).at("kind")) == "exclusive");
        CHECK(path + "/" + str(e(3).at("node")) == curator_node);

        // The table: every column starts where its header does, however long the names.
        process t;
        launch(t, s, "table", {"list", "--servers", servers, path});
        CHECK(co_await finish(t) == 0);
        CAPTURE(t.out());
        const auto rows = lines_of(t.out());
        REQUIRE(rows.size() == 6);
        const auto at = column_starts(rows[1]);
        REQUIRE(at.size() == 8);
        for (std::size_t i = 2; i < rows.size(); ++i) {
            CAPTURE(rows[i]);
            for (const auto& [column, c] : at) CHECK_MESSAGE(cell_at(rows[i], c), column);
        }
        CHECK(rows[4].find(kazoo_node.substr(path.size() + 1) + " ") != std::string::npos);
        CHECK(rows[3].ends_with("a \"quoted\"?reader"));  // a control character shown as '?'

        // A revocation request in a node (the Curator one: nobody watches it, so it stays):
        // owner null, revocation_requested true; the table says so in the owner column.
        auto [rec, rst] = co_await zk.async_set_data(curator_node, std::string(zklock::revocation_request), -1, tuple);
        REQUIRE_FALSE(rec);
        process j2, t2;
        launch(j2, s, "json-revoked", {"list", "--json", "--servers", servers, path});
        CHECK(co_await finish(j2) == 0);
        CAPTURE(j2.out());
        const auto doc2 = boost::json::parse(j2.out()).as_object();
        const auto& last = doc2.at("entries").as_array().at(3).as_object();
        CHECK(last.at("revocation_requested").as_bool());
        CHECK(last.at("owner").is_null());
        launch(t2, s, "table-revoked", {"list", "--servers", servers, path});
        CHECK(co_await finish(t2) == 0);
        CHECK(lines_of(t2.out()).at(5).ends_with(" (revocation requested)"));
        holder.signal(SIGTERM);
        CHECK(co_await finish(holder, 10s) == 128 + SIGTERM);
        co_await zk.async_remove(kazoo_node, -1, tuple);
        co_await zk.async_remove(curator_node, -1, tuple);
        CHECK(co_await finish(reader, 10s) == 0);

        // A semaphore's listing: its permit count.
        const auto sem = unique_path("cli-json-semaphore");
        process ps, js;
        guard.procs.push_back(&ps);
        co_await start_holder(ps, s, servers, sem, "permit", three_permits);
        launch(js, s, "json-semaphore", {"list", "--json", "--servers", servers, sem});
        CHECK(co_await finish(js) == 0);
        const auto doc3 = boost::json::parse(js.out()).as_object();
        CHECK(doc3.at("permits").as_int64() == 3);
        CHECK(str(doc3.at("entries").as_array().at(0).as_object().at("kind")) == "permit");
        ps.signal(SIGTERM);
        CHECK(co_await finish(ps) == 128 + SIGTERM);

        // `zklock leader`: a Kazoo-named candidate (37 characters) keeps its columns aligned too.
        const auto election = unique_path("cli-json-elect");
        const std::string leading = s / "leading";
        process leader, l;
        guard.procs.push_back(&leader);
        start(leader, s, "leader",
              zklock_args(servers, {"elect", "--names", "kazoo", "--value", "v", election, "-c",
                                    "touch " + leading + "; exec sleep 60"}));
        REQUIRE_MESSAGE(co_await wait_file(leading), leader.err());
        launch(l, s, "leader-table", {"leader", "--servers", servers, election});
        CHECK(co_await finish(l) == 0);
        CAPTURE(l.out());
        const auto leader_rows = lines_of(l.out());
        REQUIRE(leader_rows.size() == 2);
        CHECK(fields_of(leader_rows[1])[0].size() > 36);
        for (const auto& [column, c] : column_starts(leader_rows[0])) CHECK_MESSAGE(cell_at(leader_rows[1], c), column);
        leader.signal(SIGTERM);
        CHECK(co_await finish(leader) == 128 + SIGTERM);
    });
}

TEST_CASE("zklock cli: -v says waiting only when the acquire waits, and shows the session timeout granted")
{
    run([]() -> awaitable<void> {
        scratch s;
        const auto servers = shared_server().connect_string();
        const auto path = unique_path("cli-verbose-grant");
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(servers)};
        co_await connect(zk);

        // Granted at once: connected (with the granted timeout), acquired, released; no "waiting".
        process free_lock, free_shared, free_permit;
        launch(free_lock, s, "free", {"--servers", servers, "-v", "--session-timeout", "2s", path, "true"});
        CHECK(co_await finish(free_lock) == 0);
        launch(free_shared, s, "free-shared", {"--servers", servers, "-v", "-s", path, "true"});
        CHECK(co_await finish(free_shared) == 0);
        launch(free_permit, s, "free-permit", {"--servers", servers, "-v", "--semaphore", "2", path + "-sem", "true"});
        CHECK(co_await finish(free_permit) == 0);
        const std::array<process*, 3> free_runs{&free_lock, &free_shared, &free_permit};
        for (auto* p : free_runs) {
            const auto err = p->err();
            CAPTURE(err);
            CHECK(err.find("waiting") == std::string::npos);
            CHECK(err.find("zklock: acquired " + path) != std::string::npos);
            CHECK(err.find("; released " + path) != std::string::npos);
        }
        CHECK(free_lock.err().rfind("zklock: connected to " + servers + " (session 0x", 0) == 0);
        CHECK(free_lock.err().find(", session timeout 2s)\n") != std::string::npos);

        // Behind a holder: it says what it waits for and where it stands, then acquires.
        process holder, waiter;
        process_guard guard{{&holder, &waiter}};
        co_await start_holder(holder, s, servers, path, "holder");
        start(waiter, s, "waiter", zklock_args(servers, {"-v", "--shared", path, "true"}));
        REQUIRE(co_await wait_children(zk, path, 2) == 2);
        holder.signal(SIGTERM);
        CHECK(co_await finish(holder) == 128 + SIGTERM);
        CHECK(co_await finish(waiter) == 0);
        const auto lines = lines_of(waiter.err());
        CAPTURE(waiter.err());
        const auto waiting = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.find("waiting") != std::string::npos; });
        REQUIRE(lines.end() - waiting >= 3);
        CHECK(waiting[0].rfind("zklock: waiting for a shared lock on " + path + " (node r-", 0) == 0);
        CHECK(waiting[1] == "zklock: waiting: 1 ahead");
        CHECK(waiting[2].rfind("zklock: acquired " + path, 0) == 0);

        // elect: campaigning, and waiting only behind a leader.
        const auto election = unique_path("cli-verbose-elect");
        process alone, leader, candidate;
        guard.procs.insert(guard.procs.end(), {&leader, &candidate});
        launch(alone, s, "alone", {"elect", "--servers", servers, "-v", election, "true"});
        CHECK(co_await finish(alone) == 0);
        CHECK(alone.err().find("waiting") == std::string::npos);
        CHECK(alone.err().find("zklock: campaigning for " + election) != std::string::npos);
        CHECK(alone.err().find("zklock: leading " + election) != std::string::npos);
        const std::string leading = s / "leading";
        start(leader, s, "leader", zklock_args(servers, {"elect", election, "-c", "touch " + leading + "; exec sleep 60"}));
        REQUIRE_MESSAGE(co_await wait_file(leading), leader.err());
        start(candidate, s, "candidate", zklock_args(servers, {"elect", "-v", election, "true"}));
        REQUIRE(co_await wait_children(zk, election, 2) == 2);
        co_await eventually([&] { return candidate.err().find("waiting: 1 ahead") != std::string::npos; }, 10s);
        leader.signal(SIGTERM);
        CHECK(co_await finish(leader) == 128 + SIGTERM);
        CHECK(co_await finish(candidate) == 0);
        CAPTURE(candidate.err());
        CHECK(candidate.err().find("zklock: waiting for the leadership of " + election + " (node x-") != std::string::npos);
        CHECK(candidate.err().find("zklock: waiting: 1 ahead\n") != std::string::npos);
    });
}

// ---- bash completion, man page ------------------------------------------------------------------

namespace {

/// The build tree the zklock binary is in (the one holding CMakeCache.txt).
fs::path build_tree()
{
    for (fs::path dir = fs::path(ZKLOCK_CLI_PATH).parent_path(); dir.has_relative_path(); dir = dir.parent_path())
        if (fs::exists(dir / "CMakeCache.txt")) return dir;
    return {};
}

fs::path source_tree() { return cmake_cache("CMAKE_HOME_DIRECTORY"); }

/// Runs `sh -c script` with `env` added, to its end; its status (stdout and stderr in `p`).
awaitable<int> shell(process& p, const scratch& s, const std::string& name, const std::string& script,
                     std::vector<std::string> env = {})
{
    start_options so;
    so.env = std::move(env);
    const std::vector<std::string> args{"/bin/sh", "-c", script};
    start(p, s, name, args, so);
    co_return co_await finish(p, 60s);
}

/// The long options `zklock --help` lists, each with its value's name ("" for a flag) and its
/// short name (0: none), in the order listed.
struct help_option {
    std::string name, value;
    char short_name = 0;
};
std::vector<help_option> help_options(const std::string& help)
{
    std::vector<help_option> out;
    bool in_options = false;
    for (const auto& line : lines_of(help)) {
        if (line == "OPTIONS") in_options = true;
        else if (!line.empty() && line[0] != ' ') in_options = false;
        if (!in_options) continue;
        // "  -w, --timeout DURATION      Give up ..." or "      --servers H:P,...       ZooKeeper ..."
        const auto dashes = line.find("--");
        if (line.rfind("  -", 0) != 0 && line.rfind("      --", 0) != 0) continue;
        if (dashes == std::string::npos || dashes > 6) continue;
        help_option o;
        if (line[2] == '-' && line[3] != '-') o.short_name = line[3];
        const auto name_end = line.find_first_of(" =", dashes);
        o.name = line.substr(dashes + 2, name_end - dashes - 2);
        if (name_end != std::string::npos && line.size() > name_end + 1 && line[name_end + 1] != ' ')
            o.value = line.substr(name_end + 1, line.find(' ', name_end + 1) - name_end - 1);
        out.push_back(o);
    }
    return out;
}

}  // namespace

TEST_CASE("zklock cli: the bash completion offers the subcommands and the options each one takes")
{
    run([]() -> awaitable<void> {
        scratch s;
        const fs::path completion = source_tree() / "tools/zklock.bash-completion";
        REQUIRE_MESSAGE(fs::exists(completion), completion);

        // The options --help lists, and which subcommand takes each, as the binary itself says: an
        // option it refuses is "does not apply" or "applies only", any other outcome (a bad path
        // here) means it took the option.
        process help;
        launch(help, s, "help", {"--help"});
        REQUIRE(co_await finish(help) == 0);
        const auto options = help_options(help.out());
        REQUIRE(options.size() >= 20);
        const std::map<std::string, std::string> sample{{"DURATION", "1s"}, {"N", "1"},        {"FILE", "/dev/null"},
                                                        {"TEXT", "x"},      {"NAMES", "kazoo"}, {"H:P,...", "127.0.0.1:1"},
                                                        {"CMDLINE", "true"}};
        const std::vector<std::string> modes{"", "list", "elect", "leader", "revoke"};
        std::map<std::string, std::set<std::string>> takes;
        int n = 0;
        for (const auto& mode : modes)
            for (const auto& o : options) {
                std::vector<std::string> args;
                if (!mode.empty()) args.push_back(mode);
                args.push_back("--" + o.name);
                if (!o.value.empty()) {
                    REQUIRE_MESSAGE(sample.contains(o.value), o.value);
                    args.push_back(sample.at(o.value));
                }
                args.push_back("relative");
                process p;
                launch(p, s, "takes" + std::to_string(n++), args);
                co_await finish(p);
                const auto err = p.err();
                if (err.find("does not apply") == std::string::npos && err.find("applies only") == std::string::npos)
                    takes[mode].insert("--" + o.name);
            }
        CHECK(takes[""].contains("--semaphore"));
        CHECK_FALSE(takes["elect"].contains("--semaphore"));
        CHECK(takes["list"].contains("--json"));

        // The completion, asked as bash asks it: one line per case, the words offered after a tab.
        const std::string script =
            "source '" + completion.string() + "' || exit 9\n"
            "t() { COMP_WORDS=(\"$@\"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _zklock;"
            " printf '%s\\n' \"${COMPREPLY[*]}\"; }\n"
            "complete -p zklock | grep -q -- '-F _zklock' || exit 8\n"
            "t zklock ''\n"
            "t zklock l\n"
            "t zklock --\n"
            "t zklock list --\n"
            "t zklock elect --\n"
            "t zklock leader --\n"
            "t zklock revoke --\n"
            "t zklock elect --names ''\n"
            "t zklock elect --names = ku\n"
            "t zklock -w 5s /l ech\n"
            "t zklock -sn /l -- ech\n"
            "t zklock /l -\n"
            "t zklock --servers h:1 -c ''\n";
        process b;
        start(b, s, "bash", {"/bin/bash", "--norc", "--noprofile", "-c", script});
        REQUIRE(co_await finish(b) == 0);
        CAPTURE(b.out());
        CAPTURE(b.err());
        CHECK(b.err().empty());
        const auto out = lines_of(b.out());
        REQUIRE(out.size() == 13);
        auto words = [](const std::string& line) {
            std::set<std::string> w;
            std::istringstream in(line);
            for (std::string x; in >> x;) w.insert(x);
            return w;
        };
        CHECK(words(out[0]) == std::set<std::string>{"list", "elect", "leader", "revoke"});
        CHECK(words(out[1]) == std::set<std::string>{"list", "leader"});
        CHECK(words(out[2]) == takes[""]);
        CHECK(words(out[3]) == takes["list"]);
        CHECK(words(out[4]) == takes["elect"]);
        CHECK(words(out[5]) == takes["leader"]);
        CHECK(words(out[6]) == takes["revoke"]);
        CHECK(words(out[7]) == std::set<std::string>{"curator-selector", "curator-latch", "kazoo"});
        CHECK(words(out[8]).empty());  // "ku" matches none
        CHECK(words(out[9]).contains("echo"));  // COMMAND, after the lock path
        CHECK(words(out[10]).contains("echo"));
        CHECK(words(out[11]) == takes[""]);  // options may still come after LOCKPATH
        CHECK(words(out[12]).contains("echo"));  // -c: a command line, starting with a command
    });
}

TEST_CASE("zklock cli: the man page installs, renders, lints clean and documents every option and status")
{
    run([]() -> awaitable<void> {
        scratch s;
        const fs::path page = source_tree() / "docs/zklock.1";
        REQUIRE_MESSAGE(fs::exists(page), page);
        process which;
        const int man_found = co_await shell(which, s, "which-man", "command -v man && command -v groff");
        REQUIRE_MESSAGE(man_found == 0, "man or groff is missing: scripts/install-deps.sh --test installs man-db");

        // Installed (the whole project, into a scratch prefix) where man finds it, with the completion.
        const std::string cmake = cmake_cache("CMAKE_COMMAND");
        REQUIRE_FALSE(cmake.empty());
        const std::string prefix = s / "prefix";
        process install;
        start(install, s, "install", {cmake, "--install", build_tree().string(), "--prefix", prefix});
        REQUIRE_MESSAGE(co_await finish(install, 60s) == 0, install.err());
        const std::string man_dir = prefix + "/share/man";
        CHECK(fs::exists(man_dir + "/man1/zklock.1"));
        CHECK(fs::exists(prefix + "/share/bash-completion/completions/zklock"));
        CHECK(fs::exists(prefix + "/bin/zklock"));
        process where, render;
        const std::vector<std::string> man_env{"MANPATH=" + man_dir, "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat"};
        CHECK(co_await shell(where, s, "man-w", "man -w zklock", man_env) == 0);
        CHECK(where.out() == man_dir + "/man1/zklock.1\n");
        CHECK(co_await shell(render, s, "man", "man zklock", man_env) == 0);
        const auto text = render.out();
        CAPTURE(render.err());
        for (const char* section : {"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT", "EXIT STATUS", "EXAMPLES"})
            CHECK_MESSAGE(text.find("\n" + std::string(section) + "\n") != std::string::npos, section);
        CHECK(text.find("zklock revoke") != std::string::npos);

        // The lint: groff's warnings, none.
        process lint;
        const std::vector<std::string> lint_env{"LC_ALL=C.UTF-8", "MANROFFSEQ=", "MANWIDTH=80"};
        const std::string lint_script = "man --warnings -E UTF-8 -l '" + page.string() + "' 2>&1 >/dev/null";
        CHECK(co_await shell(lint, s, "lint", lint_script, lint_env) == 0);
        CHECK_MESSAGE(lint.out().empty(), lint.out());

        // --help and the man page agree: every option (with its short name), every exit status,
        // every environment variable, and the version.
        process help, version;
        launch(help, s, "help", {"--help"});
        REQUIRE(co_await finish(help) == 0);
        const auto options = help_options(help.out());
        REQUIRE(options.size() >= 20);
        for (const auto& o : options) {
            CHECK_MESSAGE(text.find("--" + o.name) != std::string::npos, o.name);
            if (o.short_name)
                CHECK_MESSAGE(text.find("-" + std::string(1, o.short_name) + ", --" + o.name) != std::string::npos, o.name);
        }
        int codes = 0;
        for (const auto& line : lines_of(help.out()))
            if (line.size() > 4 && line.rfind("  ", 0) == 0 && std::isdigit(static_cast<unsigned char>(line[2]))) {
                const std::string code = line.substr(2, line.find(' ', 2) - 2);
                if (code.find('-') != std::string::npos) continue;  // "0-255": an en dash in the page
                ++codes;
                CHECK_MESSAGE(text.find("\n       " + code + " ") != std::string::npos, code);
            }
        CHECK(codes >= 10);
        for (const char* var : {"ZK_SERVERS", "ZKLOCK_TLS_CA", "ZKLOCK_TLS_CERT", "ZKLOCK_TLS_KEY", "ZKLOCK_FENCING_TOKEN",
                                "ZKLOCK_NODE"})
            CHECK_MESSAGE(text.find(var) != std::string::npos, var);
        launch(version, s, "version", {"--version"});
        REQUIRE(co_await finish(version) == 0);
        const auto first_lines = lines_of(slurp(page));
        const auto th = std::find_if(first_lines.begin(), first_lines.end(), [](const std::string& l) { return l.rfind(".TH ", 0) == 0; });
        REQUIRE(th != first_lines.end());
        CHECK_MESSAGE(th->find("\"" + lines_of(version.out()).at(0) + "\"") != std::string::npos, *th);
    });
}
