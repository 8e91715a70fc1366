#include "support/process_util.hpp"

#include "support/failure.hpp"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>

extern char** environ;

namespace zklock::test::detail {

namespace fs = std::filesystem;

fs::path make_temp_dir(const std::string& prefix)
{
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = (tmp && *tmp ? std::string(tmp) : std::string("/tmp")) + "/" + prefix + ".XXXXXX";
    if (!::mkdtemp(templ.data()))
        throw std::system_error(errno, std::generic_category(), "mkdtemp " + templ);
    return templ;
}

void write_file(const fs::path& path, const std::string& content)
{
    std::ofstream out(path, std::ios::trunc);
    out << content;
    if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

std::string read_file_from(const fs::path& path, std::uintmax_t offset)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    in.seekg(static_cast<std::streamoff>(offset));
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

std::string tail_lines(const std::string& text, std::size_t lines)
{
    if (lines == 0) return {};
    std::size_t pos = text.size();
    if (pos > 0 && text[pos - 1] == '\n') --pos;  // a trailing newline does not start a line
    for (std::size_t n = 0; n < lines; ++n) {
        std::size_t nl = pos == 0 ? std::string::npos : text.rfind('\n', pos - 1);
        if (nl == std::string::npos) return text;
        pos = nl;
    }
    return text.substr(pos + 1);
}

std::string find_in_path(const std::string& name)
{
    if (name.find('/') != std::string::npos) return name;
    const char* path = std::getenv("PATH");
    const std::string dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
    for (std::size_t start = 0; start <= dirs.size();) {
        const auto end = std::min(dirs.find(':', start), dirs.size());
        const std::string dir = end > start ? dirs.substr(start, end - start) : ".";
        const std::string candidate = dir + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate)) return candidate;
        start = end + 1;
    }
    return {};
}

process_result run_process(const std::vector<std::string>& args, std::chrono::milliseconds timeout, const std::string& input)
{
    if (args.empty()) throw std::invalid_argument("run_process: no program");
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
    if (::pipe2(err, O_CLOEXEC) != 0) {
        const int e = errno;
        ::close(out[0]);
        ::close(out[1]);
        throw std::system_error(e, std::generic_category(), "pipe2");
    }
    child_process child;
    try {
        child.start(args, {.out = {.fd = out[1]}, .err = {.fd = err[1]}, .in_file = input, .search_path = true});
    } catch (...) {
        for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
        throw;
    }
    ::close(out[1]);
    ::close(err[1]);

    process_result result;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    std::string* sinks[2] = {&result.out, &result.err};
    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left <= std::chrono::milliseconds::zero()) {
            result.timed_out = true;
            child.signal(SIGKILL);
            break;
        }
        const int r = ::poll(fds, 2, static_cast<int>(left.count()));
        if (r < 0 && errno != EINTR) break;
        for (int i = 0; i < 2 && r > 0; ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            char buf[4096];
            const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                sinks[i]->append(buf, static_cast<std::size_t>(n));
            } else if (n == 0 || errno != EINTR) {
                ::close(fds[i].fd);
                fds[i].fd = -1;  // poll ignores negative fds
            }
        }
    }
    for (auto& p : fds)
        if (p.fd >= 0) ::close(p.fd);
    result.status = child.wait();
    return result;
}

}  // namespace zklock::test::detail

namespace zklock::test {

namespace fs = std::filesystem;

scratch_dir::scratch_dir(const std::string& prefix) : dir_(detail::make_temp_dir(prefix)) {}

scratch_dir::~scratch_dir()
{
    std::error_code ec;
    if (!should_keep_files()) fs::remove_all(dir_, ec);
    else std::fprintf(stderr, "kept %s\n", dir_.c_str());
}

namespace {

/// The shell's convention for a wait status: exit code, or 128+N for signal N.
int shell_status(int ws) { return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws); }

/// A descriptor for one of the child's output streams: opened here (`opened` owns it), the
/// caller's, or -1 for the test process's own.
int output_fd(const child_output& o, std::vector<int>& opened)
{
    if (o.fd >= 0) return o.fd;
    if (o.file.empty()) return -1;
    const int fd = ::open(o.file.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (o.append ? O_APPEND : O_TRUNC), 0644);
    if (fd < 0) {
        const int e = errno;
        for (int f : opened) ::close(f);
        throw std::system_error(e, std::generic_category(), "open " + o.file);
    }
    opened.push_back(fd);
    return fd;
}

}  // namespace

void child_process::start(const std::vector<std::string>& args, const std::string& out_path, const std::string& err_path,
                          child_options options)
{
    options.out = {.file = out_path};
    options.err = {.file = err_path};
    start(args, options);
}

void child_process::start(const std::vector<std::string>& args, const child_options& options)
{
    if (args.empty()) throw std::invalid_argument("child_process: no program");
    kill_and_reap();  // (one started before has ended: start afresh)
    pid = -1;
    status.reset();
    own_group_ = options.own_group;
    out_file = options.out.file;
    err_file = options.err.file;

    // Everything the child needs is prepared here: between fork and exec only async-signal-safe calls.
    const std::string program = options.search_path ? detail::find_in_path(args.front()) : args.front();
    if (program.empty())
        throw std::system_error(ENOENT, std::generic_category(), "child_process: " + args.front() + " not found in PATH");
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) {
        const std::string_view entry = *e;
        const auto name = entry.substr(0, entry.find('='));
        const auto named = [&](std::string_view x) { return x.substr(0, x.find('=')) == name; };
        if (std::none_of(options.env.begin(), options.env.end(), named) &&
            std::none_of(options.unset.begin(), options.unset.end(), named))
            env_strings.emplace_back(entry);
    }
    env_strings.insert(env_strings.end(), options.env.begin(), options.env.end());
    std::vector<char*> argv, envp;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string exec_failed = "zklock::test: cannot exec " + program + "\n";

    std::vector<int> opened;
    const int out = output_fd(options.out, opened);
    const int err = output_fd(options.err, opened);
    int in = -1;
    if (!options.inherit_stdin && options.controlling_tty < 0) {
        const std::string in_path = options.in_file.empty() ? "/dev/null" : options.in_file;
        in = ::open(in_path.c_str(), O_RDONLY | O_CLOEXEC);
        if (in < 0) {
            const int e = errno;
            for (int f : opened) ::close(f);
            throw std::system_error(e, std::generic_category(), "open " + in_path);
        }
        opened.push_back(in);
    }
    const long max_fd = ::sysconf(_SC_OPEN_MAX);
    const pid_t parent = ::getpid();
    pid = ::fork();
    if (pid == 0) {
        if (options.own_group) ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(126);  // the parent died before prctl
        sigset_t none;
        ::sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        if (options.default_signals)
            for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) ::signal(sig, SIG_DFL);
        if (options.user && (::setgroups(0, nullptr) != 0 || ::setgid(options.user->second) != 0 ||
                             ::setuid(options.user->first) != 0))
            ::_exit(125);
        if (options.controlling_tty >= 0) {
            ::setsid();
            ::ioctl(options.controlling_tty, TIOCSCTTY, 0);
            ::dup2(options.controlling_tty, 0);
        } else if (in >= 0) {
            ::dup2(in, 0);
        }
        if (out >= 0) ::dup2(out, 1);
        if (err >= 0) ::dup2(err, 2);
        if (options.close_other_fds && ::syscall(SYS_close_range, 3U, ~0U, 0U) != 0)
            for (long fd = 3; fd < max_fd; ++fd) ::close(static_cast<int>(fd));
        ::execve(program.c_str(), argv.data(), envp.data());
        (void)!::write(2, exec_failed.data(), exec_failed.size());
        ::_exit(127);
    }
    const int fork_error = errno;
    for (int f : opened) ::close(f);
    if (pid < 0) throw std::system_error(fork_error, std::generic_category(), "fork " + args.front());
    if (options.own_group) ::setpgid(pid, pid);  // also here, so the group exists before either side runs on
}

bool child_process::poll()
{
    if (status || pid <= 0) return true;
    for (;;) {
        int ws = 0;
        const pid_t r = ::waitpid(pid, &ws, WNOHANG);
        if (r == 0) return false;
        if (r < 0 && errno == EINTR) continue;
        status = r == pid ? shell_status(ws) : -1;  // -1: someone else reaped it (ECHILD)
        return true;
    }
}

int child_process::wait()
{
    if (pid <= 0) return status.value_or(-1);
    while (!status) {
        int ws = 0;
        const pid_t r = ::waitpid(pid, &ws, 0);
        if (r < 0 && errno == EINTR) continue;
        status = r == pid ? shell_status(ws) : -1;
    }
    return *status;
}

void child_process::signal(int sig)
{
    if (poll()) return;
    if (!own_group_ || ::kill(-pid, sig) != 0) ::kill(pid, sig);
}

void child_process::kill_and_reap()
{
    if (poll()) return;
    signal(SIGKILL);
    wait();
}

}  // namespace zklock::test
