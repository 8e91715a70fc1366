#include "support/pg_server.hpp"

#include "support/failure.hpp"
#include "support/process_util.hpp"
#include "support/zk_server.hpp"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
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
std::optional<std::pair<uid_t, gid_t>> server_user()
{
    if (::geteuid() != 0) return std::nullopt;
    const passwd* pw = ::getpwnam("postgres");
    if (!pw)
        throw std::runtime_error("pg_server: running as root, and there is no user \"postgres\" to run PostgreSQL as "
                                 "(PostgreSQL refuses root; Debian's postgresql package creates that user)");
    return std::pair{pw->pw_uid, pw->pw_gid};
}

/// How initdb and postgres run: as `who`, stdout and stderr appended to `log`.
child_options postgres_options(const fs::path& log, const std::optional<std::pair<uid_t, gid_t>>& who)
{
    return {.out = {.file = log.string(), .append = true}, .err = {.file = log.string(), .append = true}, .user = who};
}

}  // namespace

bool psql_available() { return !detail::find_in_path("psql").empty(); }

pg_server::pg_server()
    : dir_(detail::make_temp_dir("zklock-pg")), bindir_(find_bindir()), postmaster_(std::make_unique<child_process>())
{
    const auto who = server_user();
    if (who && ::chown(dir_.c_str(), who->first, who->second) != 0)
        throw std::system_error(errno, std::generic_category(), "chown " + dir_.string());
    const fs::path log = dir_ / "postgresql.log";
    const std::string data = (dir_ / "data").string();
    child_process initdb_process;
    initdb_process.start({(bindir_ / "initdb").string(), "-D", data, "-U", "zklock", "--auth=trust", "--no-sync",
                          "--encoding=UTF8", "--locale=C"},
                         postgres_options(log, who));
    const int initdb = initdb_process.wait();
    if (initdb != 0)
        throw std::runtime_error("pg_server: initdb exited with " + std::to_string(initdb) + ":\n" + log_tail());

    // A port that someone else takes between free_ports() and the server's bind: try another.
    for (int attempt = 0;; ++attempt) {
        port_ = free_ports(1).front();
        const auto offset = fs::exists(log) ? fs::file_size(log) : 0;
        postmaster_->start({(bindir_ / "postgres").string(), "-D", data, "-p", std::to_string(port_), "-c",
                           "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir_.string(), "-c",
                           "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c",
                           "max_connections=40"},
                          postgres_options(log, who));
        const auto deadline = clock_type::now() + 30s;
        for (;;) {
            const auto text = detail::read_file_from(log, offset);
            if (text.find("database system is ready to accept connections") != std::string::npos) return;
            if (postmaster_->poll()) {
                if (attempt < 3 && text.find("could not bind") != std::string::npos) break;
                throw std::runtime_error("pg_server: postgres exited:\n" + log_tail());
            }
            if (clock_type::now() > deadline) {
                postmaster_->kill_and_reap();
                throw std::runtime_error("pg_server: postgres did not start within 30 s:\n" + log_tail());
            }
            std::this_thread::sleep_for(20ms);
        }
    }
}

pg_server::~pg_server()
{
    if (running()) {
        signal_all(SIGCONT);  // a paused server cannot shut down
        postmaster_->signal(SIGINT);
        wait_exit(SIGKILL);
    }
    std::error_code ec;
    if (should_keep_files()) std::fprintf(stderr, "kept %s\n", dir_.c_str());
    else fs::remove_all(dir_, ec);
}

pid_t pg_server::pid() const { return running() ? postmaster_->pid : -1; }

bool pg_server::running() const { return !postmaster_->poll(); }

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
    const pid_t postmaster = pid();
    if (postmaster <= 0) return pids;
    pids.push_back(postmaster);
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
        if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == postmaster)
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
    if (!running()) return;
    signal_all(SIGCONT);
    postmaster_->signal(SIGQUIT);
    wait_exit(SIGKILL);
}

void pg_server::wait_exit(int sig_after_5s)
{
    const auto deadline = clock_type::now() + 5s;
    while (!postmaster_->poll()) {
        if (clock_type::now() > deadline) {
            postmaster_->signal(sig_after_5s);
            postmaster_->wait();
            break;
        }
        std::this_thread::sleep_for(10ms);
    }
}

std::string pg_server::log_tail(std::size_t lines) const
{
    return detail::tail_lines(detail::read_file_from(dir_ / "postgresql.log"), lines);
}

}  // namespace zklock::test
