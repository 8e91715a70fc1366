#include "support/process_util.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
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
