#include "support/pg_server.hpp"

#include "support/failure.hpp"
#include "support/process_util.hpp"
#include "support/zk_server.hpp"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace zklock::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

/// $ZKLOCK_PG_BINDIR, else the newest /usr/lib/postgresql/N/bin with an initdb.
fs::path find_bindir()
{
    if (const char* env = std::getenv("ZKLOCK_PG_BINDIR"); env && *env) return env;
    fs::path best;
    int best_version = -1;
    std::error_code ec;
    for (auto it = fs::directory_iterator("/usr/lib/postgresql", ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
        const auto name = it->path().filename().string();
        const int version = std::atoi(name.c_str());
        if (version > best_version && fs::exists(it->path() / "bin" / "initdb")) {
            best_version = version;
            best = it->path() / "bin";
        }
    }
    if (best.empty())
        throw std::runtime_error("pg_server: no PostgreSQL server found under /usr/lib/postgresql (Debian's package "
                                 "postgresql; scripts/install-deps.sh --test installs it) and ZKLOCK_PG_BINDIR is not set");
    return best;
}

/// Whom the server runs as: nobody else if we are not root, the user "postgres" if we are.
struct run_as {
    bool drop = false;
    uid_t uid = 0;
    gid_t gid = 0;
};

run_as server_user()
{
    if (::geteuid() != 0) return {};
    const passwd* pw = ::getpwnam("postgres");
    if (!pw)
        throw std::runtime_error("pg_server: running as root, and there is no user \"postgres\" to run PostgreSQL as "
                                 "(PostgreSQL refuses root; Debian's postgresql package creates that user)");
    return {true, pw->pw_uid, pw->pw_gid};
}

/// fork + exec of argv[0] (a path) as `who`, stdout and stderr to `log` (appended), stdin
/// /dev/null, SIGKILL when the calling thread dies. Everything is prepared before the fork.
pid_t spawn(const std::vector<std::string>& args, const fs::path& log, const run_as& who)
{
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (out < 0 || null < 0) {
        const int e = errno;
        if (out >= 0) ::close(out);
        if (null >= 0) ::close(null);
        throw std::system_error(e, std::generic_category(), "open " + log.string());
    }
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(126);
        sigset_t none;
        ::sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        if (who.drop && (::setgroups(0, nullptr) != 0 || ::setgid(who.gid) != 0 || ::setuid(who.uid) != 0)) ::_exit(125);
        ::dup2(null, 0);
        ::dup2(out, 1);
        ::dup2(out, 2);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    const int fork_errno = errno;
    ::close(out);
    ::close(null);
    if (pid < 0) throw std::system_error(fork_errno, std::generic_category(), "fork");
    return pid;
}

/// The exit status of `pid` (128 + N for signal N), waiting for it.
int wait_for(pid_t pid)
{
    int ws = 0;
    while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

}  // namespace

bool psql_available()
{
    const char* path = std::getenv("PATH");
    std::string dirs = path ? path : "/usr/bin:/bin";
    for (std::size_t start = 0; start <= dirs.size();) {
        const auto end = std::min(dirs.find(':', start), dirs.size());
        if (::access((dirs.substr(start, end - start) + "/psql").c_str(), X_OK) == 0) return true;
        start = end + 1;
    }
    return false;
}

pg_server::pg_server() : dir_(detail::make_temp_dir("zklock-pg")), bindir_(find_bindir())
{
    const run_as who = server_user();
    if (who.drop && ::chown(dir_.c_str(), who.uid, who.gid) != 0)
        throw std::system_error(errno, std::generic_category(), "chown " + dir_.string());
    const fs::path log = dir_ / "postgresql.log";
    const std::string data = (dir_ / "data").string();
    const int initdb = wait_for(spawn({(bindir_ / "initdb").string(), "-D", data, "-U", "zklock", "--auth=trust",
                                       "--no-sync", "--encoding=UTF8", "--locale=C"},
                                      log, who));
    if (initdb != 0)
        throw std::runtime_error("pg_server: initdb exited with " + std::to_string(initdb) + ":\n" + log_tail());

    // A port that someone else takes between free_ports() and the server's bind: try another.
    for (int attempt = 0;; ++attempt) {
        port_ = free_ports(1).front();
        const auto offset = fs::exists(log) ? fs::file_size(log) : 0;
        pid_ = spawn({(bindir_ / "postgres").string(), "-D", data, "-p", std::to_string(port_), "-c",
                      "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir_.string(), "-c", "fsync=off",
                      "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=40"},
                     log, who);
        const auto deadline = clock_type::now() + 30s;
        for (;;) {
            const auto text = detail::read_file_from(log, offset);
            if (text.find("database system is ready to accept connections") != std::string::npos) return;
            int ws = 0;
            if (::waitpid(pid_, &ws, WNOHANG) == pid_) {
                pid_ = -1;
                if (attempt < 3 && text.find("could not bind") != std::string::npos) break;
                throw std::runtime_error("pg_server: postgres exited:\n" + log_tail());
            }
            if (clock_type::now() > deadline) {
                ::kill(pid_, SIGKILL);
                wait_for(pid_);
                pid_ = -1;
                throw std::runtime_error("pg_server: postgres did not start within 30 s:\n" + log_tail());
            }
            std::this_thread::sleep_for(20ms);
        }
    }
}

pg_server::~pg_server()
{
    if (pid_ > 0) {
        signal_all(SIGCONT);  // a paused server cannot shut down
        ::kill(pid_, SIGINT);
        wait_exit(SIGKILL);
    }
    std::error_code ec;
    if (should_keep_files()) std::fprintf(stderr, "kept %s\n", dir_.c_str());
    else fs::remove_all(dir_, ec);
}

std::string pg_server::conninfo() const
{
    return "host=127.0.0.1 port=" + std::to_string(port_) + " user=zklock dbname=postgres";
}

std::vector<std::string> pg_server::environment() const
{
    return {"PGHOST=127.0.0.1", "PGPORT=" + std::to_string(port_), "PGUSER=zklock", "PGDATABASE=postgres"};
}

std::vector<pid_t> pg_server::processes() const
{
    std::vector<pid_t> pids;
    if (pid_ <= 0) return pids;
    pids.push_back(pid_);
    std::error_code ec;
    for (auto it = fs::directory_iterator("/proc", ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
        const auto name = it->path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        // /proc/PID/stat: "pid (comm) state ppid ...", comm may hold spaces and parentheses.
        const auto stat = detail::read_file_from(it->path() / "stat");
        const auto close = stat.rfind(')');
        if (close == std::string::npos) continue;
        char state = 0;
        int ppid = 0;
        if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == pid_)
            pids.push_back(static_cast<pid_t>(std::atoi(name.c_str())));
    }
    return pids;
}

std::string pg_server::psql(const std::string& sql) const
{
    const auto r = detail::run_process({"psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", conninfo(), "-c", sql});
    if (r.status != 0)
        throw std::runtime_error("psql exited with " + std::to_string(r.status) + " on: " + sql + "\n" + r.err);
    return r.out;
}

void pg_server::signal_all(int sig)
{
    for (pid_t p : processes()) ::kill(p, sig);
}

void pg_server::pause() { signal_all(SIGSTOP); }

void pg_server::resume() { signal_all(SIGCONT); }

void pg_server::crash()
{
    if (pid_ <= 0) return;
    signal_all(SIGCONT);
    ::kill(pid_, SIGQUIT);
    wait_exit(SIGKILL);
}

void pg_server::wait_exit(int sig_after_5s)
{
    const auto deadline = clock_type::now() + 5s;
    int ws = 0;
    while (::waitpid(pid_, &ws, WNOHANG) != pid_) {
        if (clock_type::now() > deadline) {
            ::kill(pid_, sig_after_5s);
            wait_for(pid_);
            break;
        }
        std::this_thread::sleep_for(10ms);
    }
    pid_ = -1;
}

std::string pg_server::log_tail(std::size_t lines) const
{
    return detail::tail_lines(detail::read_file_from(dir_ / "postgresql.log"), lines);
}

}  // namespace zklock::test
