#include "support/process_util.hpp"

#include "support/failure.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
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

process_result run_process(const std::vector<std::string>& args, std::chrono::milliseconds timeout)
{
    if (args.empty()) throw std::invalid_argument("run_process: no program");
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);

    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
    if (::pipe2(err, O_CLOEXEC) != 0) {
        const int e = errno;
        ::close(out[0]);
        ::close(out[1]);
        throw std::system_error(e, std::generic_category(), "pipe2");
    }
    posix_spawn_file_actions_t actions;
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    ::posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    ::posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    pid_t pid = -1;
    const int spawn_error = ::posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    ::posix_spawn_file_actions_destroy(&actions);
    ::close(out[1]);
    ::close(err[1]);
    if (spawn_error != 0) {
        ::close(out[0]);
        ::close(err[0]);
        throw std::system_error(spawn_error, std::generic_category(), "posix_spawn " + args.front());
    }

    process_result result;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    std::string* sinks[2] = {&result.out, &result.err};
    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left <= std::chrono::milliseconds::zero()) {
            result.timed_out = true;
            ::kill(pid, SIGKILL);
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
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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

void child_process::start(const std::vector<std::string>& args, const std::string& out_path, const std::string& err_path,
                          const child_options& options)
{
    out_file = out_path;
    err_file = err_path;
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

    const int out = ::open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    const int open_error = errno;
    const auto close_all = [&] {
        for (int fd : {out, err, null})
            if (fd >= 0) ::close(fd);
    };
    if (out < 0 || err < 0 || null < 0) {
        close_all();
        throw std::system_error(open_error, std::generic_category(), "open " + out_file + " or " + err_file);
    }
    const pid_t parent = ::getpid();
    pid = ::fork();
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(126);
        sigset_t none;
        ::sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        if (options.controlling_tty >= 0) {
            ::setsid();
            ::ioctl(options.controlling_tty, TIOCSCTTY, 0);
            ::dup2(options.controlling_tty, 0);
        } else {
            ::dup2(null, 0);
        }
        ::dup2(out, 1);
        ::dup2(err, 2);
        ::execve(argv[0], argv.data(), envp.data());
        ::_exit(127);
    }
    const int fork_error = errno;
    close_all();
    if (pid < 0) throw std::system_error(fork_error, std::generic_category(), "fork " + args.front());
}

bool child_process::poll()
{
    if (status || pid <= 0) return true;
    int ws = 0;
    if (::waitpid(pid, &ws, WNOHANG) != pid) return false;
    status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    return true;
}

void child_process::signal(int sig)
{
    if (!poll()) ::kill(pid, sig);
}

void child_process::kill_and_reap()
{
    if (poll()) return;
    ::kill(pid, SIGKILL);
    int ws = 0;
    while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {}
    status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

}  // namespace zklock::test
