// tools/child_process.hpp — COMMAND as a child process, and the signals zklock handles, both
// observed from the io_context's one thread without blocking it.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/system/error_code.hpp>

#include <csignal>
#include <set>
#include <string>
#include <vector>

#include <sys/signalfd.h>
#include <sys/types.h>

namespace zklock::cli {

namespace asio = boost::asio;
using boost::system::error_code;

/// What zklock inherited and must hand on to COMMAND unchanged: its signal mask, which signals
/// were at their default disposition (a signal our caller ignores, as nohup does with SIGHUP,
/// stays ignored for COMMAND too), and the open descriptors (COMMAND gets those, and only those).
struct inheritance {
    sigset_t mask;
    sigset_t defaulted;
    std::set<int> fds;
};

/// The signals zklock handles: SIGINT, SIGTERM, SIGHUP, SIGQUIT (interrupt a wait, forwarded to
/// COMMAND), SIGUSR1, SIGUSR2 (forwarded to COMMAND) and SIGCHLD (COMMAND ended).
sigset_t handled_signals();

/// Records what zklock inherited, then blocks the handled signals so that they are only ever
/// received through a signal_reader. Call first thing in main, while the process has one thread:
/// threads started later (the ZooKeeper client's close helper) inherit the mask.
error_code take_over_signals(inheritance& out);

/// Receives the handled signals through a signalfd on the io_context, with the sender's details.
///
/// Why a signalfd rather than asio::signal_set: signal_set reports only the signal number. zklock
/// needs the siginfo to avoid delivering a terminal's ^C twice: the terminal sends SIGINT to the
/// whole foreground process group, COMMAND included (it stays in our group so that it does), so
/// a SIGINT the kernel generated (si_code SI_KERNEL) has already reached COMMAND and must not be
/// forwarded again, while one sent with kill(2) to zklock alone must be.
class signal_reader {
public:
    explicit signal_reader(asio::any_io_executor ex);  // throws boost::system::system_error
    /// The next signal. Cancellation: terminal (the signal stays pending for the next call).
    asio::awaitable<signalfd_siginfo> async_receive();

private:
    asio::posix::stream_descriptor fd_;
};

/// COMMAND, started with posix_spawnp in zklock's own process group.
class child_process {
public:
    child_process() = default;
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;

    /// Starts argv[0] (searched in PATH) with `extra_env` ("NAME=value") added to our environment,
    /// the inherited signal mask and dispositions, and only the inherited descriptors.
    /// Errors: the exec's errno (no_such_file_or_directory when not found, permission_denied, ...).
    error_code spawn(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                     const inheritance& inherited);

    pid_t pid() const noexcept { return pid_; }
    bool running() const noexcept { return pid_ > 0 && !reaped_; }
    bool exited() const noexcept { return reaped_; }

    /// Reaps the child if it has ended (waitpid WNOHANG); true once it has.
    bool try_reap();

    /// Sends `sig` to the child, never after it has been reaped (its pid may be reused by then).
    void signal(int sig) const noexcept;

    /// The shell's convention: the exit status, or 128+N if signal N killed it.
    int exit_status() const noexcept;
    /// "exited with status 3", "killed by SIGTERM".
    std::string describe_exit() const;

private:
    pid_t pid_ = -1;
    bool reaped_ = false;
    int wait_status_ = 0;
};

/// "SIGTERM" for SIGTERM.
std::string signal_name(int sig);

}  // namespace zklock::cli
