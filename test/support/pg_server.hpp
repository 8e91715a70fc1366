// support/pg_server.hpp — a real, throwaway PostgreSQL server for tests.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace zklock::test {

class child_process;  // support/process_util.hpp

/// A PostgreSQL server (Debian's `postgresql` package: initdb and postgres from
/// $ZKLOCK_PG_BINDIR, else the newest /usr/lib/postgresql/N/bin) in a temp dir of its own:
/// `initdb` there (trust authentication, superuser "zklock", database "postgres"), then the
/// postmaster as a child process listening on 127.0.0.1 and a free port, its Unix socket in the
/// temp dir, fsync off. PostgreSQL refuses to run as root: run as root, initdb and the server run
/// as the user "postgres" (the temp dir is given to it).
///
/// The destructor stops the server (SIGINT, PostgreSQL's fast shutdown; SIGKILL after 5 s) and
/// removes the temp dir, unless a test failed (support/failure.hpp) or ZKLOCK_TEST_KEEP_FILES is
/// set; a kept dir is printed on stderr. The postmaster gets SIGKILL when the thread that started
/// it dies (PR_SET_PDEATHSIG), and its backends exit when the postmaster is gone.
class pg_server {
public:
    /// initdb and start (30 s at most, else std::runtime_error with the log's tail).
    pg_server();
    ~pg_server();
    pg_server(const pg_server&) = delete;
    pg_server& operator=(const pg_server&) = delete;

    std::uint16_t port() const { return port_; }
    /// A libpq connection string: "host=127.0.0.1 port=PORT user=zklock dbname=postgres".
    std::string conninfo() const;
    /// The same as libpq's environment variables ("PGHOST=127.0.0.1", ...), for child processes.
    std::vector<std::string> environment() const;
    /// PID of the postmaster, -1 when not running.
    pid_t pid() const;
    /// The postmaster and its children (backends, checkpointer, ...), read from /proc.
    std::vector<pid_t> processes() const;

    /// Runs `sql` with psql (-X, -q, ON_ERROR_STOP) and returns what it printed with -At (unaligned,
    /// tuples only); throws std::runtime_error with psql's stderr if it fails.
    std::string psql(const std::string& sql) const;

    /// SIGSTOP (SIGCONT) to the postmaster and every child of it: the server stops answering,
    /// its connections stay open.
    void pause();
    void resume();
    /// SIGQUIT: PostgreSQL's immediate shutdown (its clients' connections are closed at once,
    /// as in a crash); waits for the postmaster to exit.
    void crash();
    bool running() const;

    std::filesystem::path dir() const { return dir_; }
    std::string log_tail(std::size_t lines = 40) const;

private:
    void signal_all(int sig);
    void wait_exit(int sig_after_5s);

    std::filesystem::path dir_;
    std::filesystem::path bindir_;
    std::uint16_t port_ = 0;
    std::unique_ptr<child_process> postmaster_;
};

/// psql on PATH (Debian's postgresql-client), the program the guide's command lines run.
bool psql_available();

}  // namespace zklock::test
