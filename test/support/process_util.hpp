// support/process_util.hpp — temp dirs, files and processes: internals shared by the support
// classes (detail::), and the scratch directory and background child process of the tests that
// drive programs (zklock's command-line tool, the examples) as real processes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

namespace zklock::test::detail {

/// mkdtemp under $TMPDIR (or /tmp): "<base>/<prefix>.XXXXXX".
std::filesystem::path make_temp_dir(const std::string& prefix);

void write_file(const std::filesystem::path& path, const std::string& content);

/// Everything in `path` from byte `offset` on ("" if unreadable).
std::string read_file_from(const std::filesystem::path& path, std::uintmax_t offset = 0);

/// The last `lines` lines of `text`.
std::string tail_lines(const std::string& text, std::size_t lines);

struct process_result {
    /// The exit status, or 128 + the signal that killed it.
    int status = -1;
    std::string out;
    std::string err;
    /// Killed (SIGKILL) because it ran past the timeout.
    bool timed_out = false;
};

/// Runs args[0] (looked up in PATH) with args[1..] and stdin from /dev/null, and returns its
/// exit status and what it wrote on stdout and stderr. For short-lived tools such as openssl:
/// it is not put in a process group of its own; a child still running after `timeout` is killed.
/// Throws std::system_error when it cannot be started.
process_result run_process(const std::vector<std::string>& args,
                           std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace zklock::test::detail

namespace zklock::test {

/// A directory of a test's own, detail::make_temp_dir(prefix), removed with its files when
/// destroyed unless should_keep_files() (a test failed), in which case its path goes to stderr.
class scratch_dir {
public:
    explicit scratch_dir(const std::string& prefix);
    ~scratch_dir();
    scratch_dir(const scratch_dir&) = delete;
    scratch_dir& operator=(const scratch_dir&) = delete;

    const std::filesystem::path& path() const { return dir_; }
    /// A file in the directory.
    std::string operator/(const std::string& name) const { return (dir_ / name).string(); }

private:
    std::filesystem::path dir_;
};

/// How child_process::start() sets up the child.
struct child_options {
    std::vector<std::string> env;    // "NAME=value" added to (or replacing in) the environment
    std::vector<std::string> unset;  // names left out of the environment
    int controlling_tty = -1;        // a pty slave: the child becomes a session leader with it as stdin
};

/// A program run in the background, its stdout and stderr in files and stdin /dev/null (or a
/// terminal). It is started with PR_SET_PDEATHSIG (a crashed test leaves nothing running), and one
/// still running when this is destroyed is killed (SIGKILL) and reaped.
class child_process {
public:
    child_process() = default;
    ~child_process() { kill_and_reap(); }
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;

    /// fork + execve of argv[0] (a path) with everything prepared before the fork (the test process
    /// may have threads); a child that cannot exec exits 127. Throws std::system_error when a file
    /// cannot be opened or fork fails.
    void start(const std::vector<std::string>& argv, const std::string& out_path, const std::string& err_path,
               const child_options& options = {});

    /// Whether it has ended (or was never started); reaps it and sets `status` once it has.
    bool poll();
    /// `sig` to it, unless it has ended.
    void signal(int sig);
    /// SIGKILL and a blocking wait, unless it has ended.
    void kill_and_reap();

    std::string out() const { return detail::read_file_from(out_file); }
    std::string err() const { return detail::read_file_from(err_file); }

    pid_t pid = -1;
    std::string out_file, err_file;
    std::optional<int> status;  // the shell's convention: exit code, or 128+N for signal N
};

}  // namespace zklock::test
