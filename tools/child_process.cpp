#include "child_process.hpp"

#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace zklock::cli {

namespace {

error_code last_error() { return {errno, boost::system::system_category()}; }

/// The descriptors open now, from /proc/self/fd (without the one reading it).
std::set<int> open_fds()
{
    std::set<int> fds;
    DIR* dir = ::opendir("/proc/self/fd");
    if (!dir) return fds;
    const int own = ::dirfd(dir);
    while (const dirent* e = ::readdir(dir)) {
        char* end = nullptr;
        const long fd = std::strtol(e->d_name, &end, 10);
        if (end != e->d_name && *end == '\0' && fd != own) fds.insert(static_cast<int>(fd));
    }
    ::closedir(dir);
    return fds;
}

}  // namespace

sigset_t handled_signals()
{
    sigset_t set;
    ::sigemptyset(&set);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD}) ::sigaddset(&set, sig);
    return set;
}

error_code take_over_signals(inheritance& out)
{
    ::sigemptyset(&out.defaulted);
    for (int sig = 1; sig < NSIG; ++sig) {
        struct sigaction sa {};
        if (::sigaction(sig, nullptr, &sa) == 0 && !(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL)
            ::sigaddset(&out.defaulted, sig);
    }
    out.fds = open_fds();
    const sigset_t handled = handled_signals();
    if (::sigprocmask(SIG_BLOCK, &handled, &out.mask) != 0) return last_error();
    return {};
}

signal_reader::signal_reader(asio::any_io_executor ex) : fd_(std::move(ex))
{
    const sigset_t handled = handled_signals();
    const int fd = ::signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd < 0) throw boost::system::system_error(last_error(), "signalfd");
    fd_.assign(fd);
}

asio::awaitable<signalfd_siginfo> signal_reader::async_receive()
{
    for (;;) {
        co_await fd_.async_wait(asio::posix::stream_descriptor::wait_read, asio::use_awaitable);
        signalfd_siginfo info{};
        const auto n = ::read(fd_.native_handle(), &info, sizeof info);
        if (n == static_cast<ssize_t>(sizeof info)) co_return info;
        if (n < 0 && errno != EAGAIN && errno != EINTR) throw boost::system::system_error(last_error(), "signalfd read");
    }
}

error_code child_process::spawn(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                                const inheritance& inherited)
{
    // Everything is prepared before posix_spawnp: glibc's implementation runs the child on our
    // memory until the exec (CLONE_VM | CLONE_VFORK) and reports the exec's errno to us.
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);

    std::vector<char*> env;
    for (char** e = environ; e && *e; ++e) {
        const std::string_view entry = *e;
        bool replaced = false;
        for (auto& x : extra_env)
            if (entry.substr(0, entry.find('=') + 1) == std::string_view(x).substr(0, x.find('=') + 1)) replaced = true;
        if (!replaced) env.push_back(*e);
    }
    for (auto& x : extra_env) env.push_back(const_cast<char*>(x.c_str()));
    env.push_back(nullptr);

    posix_spawnattr_t attr;
    posix_spawn_file_actions_t actions;
    ::posix_spawnattr_init(&attr);
    ::posix_spawn_file_actions_init(&actions);
    // No POSIX_SPAWN_SETPGROUP: COMMAND stays in our process group, so a terminal's ^C reaches it.
    ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    ::posix_spawnattr_setsigmask(&attr, &inherited.mask);
    ::posix_spawnattr_setsigdefault(&attr, &inherited.defaulted);
    // Our own descriptors are not COMMAND's business. Asio's are close-on-exec; the ZooKeeper C
    // client's socket is not (it would keep the session's TCP connection open in COMMAND).
    for (int fd : open_fds())
        if (!inherited.fds.contains(fd)) ::posix_spawn_file_actions_addclose(&actions, fd);

    const int rc = ::posix_spawnp(&pid_, args[0], &actions, &attr, args.data(), env.data());
    ::posix_spawn_file_actions_destroy(&actions);
    ::posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        pid_ = -1;
        return {rc, boost::system::system_category()};
    }
    reaped_ = false;
    return {};
}

bool child_process::try_reap()
{
    if (pid_ <= 0 || reaped_) return reaped_;
    int status = 0;
    pid_t r;
    do r = ::waitpid(pid_, &status, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == pid_) {
        reaped_ = true;
        wait_status_ = status;
    }
    return reaped_;
}

void child_process::signal(int sig) const noexcept
{
    if (running()) ::kill(pid_, sig);
}

int child_process::exit_status() const noexcept
{
    if (WIFEXITED(wait_status_)) return WEXITSTATUS(wait_status_);
    if (WIFSIGNALED(wait_status_)) return 128 + WTERMSIG(wait_status_);
    return 255;
}

std::string child_process::describe_exit() const
{
    if (WIFSIGNALED(wait_status_)) return "killed by " + signal_name(WTERMSIG(wait_status_));
    return "exited with status " + std::to_string(exit_status());
}

std::string signal_name(int sig)
{
    const char* abbrev = ::sigabbrev_np(sig);
    return abbrev ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

}  // namespace zklock::cli
