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
#include <utility>
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

/// `name` looked up in PATH as execvp does (a name with a slash is a path), or "" if not found.
std::string find_in_path(const std::string& name);

struct process_result {
    /// The exit status, or 128 + the signal that killed it.
    int status = -1;
    std::string out;
    std::string err;
    /// Killed (SIGKILL) because it ran past the timeout.
    bool timed_out = false;
};

/// Runs args[0] (looked up in PATH) with args[1..] and stdin from `input` (a file; /dev/null if
/// empty), and returns its exit status and what it wrote on stdout and stderr (a child_process).
/// For short-lived tools such as openssl: it is not put in a process group of its own; a child
/// still running after `timeout` is killed. Throws std::system_error when it cannot be started.
process_result run_process(const std::vector<std::string>& args,
                           std::chrono::milliseconds timeout = std::chrono::seconds(30), const std::string& input = {});

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

/// Where one of a child's output streams goes: a file (truncated, or appended to), a descriptor
/// the caller keeps (a pipe's write end), or, when neither is given, the test process's own.
struct child_output {
    std::string file{};
    bool append = false;
    int fd = -1;
};

/// How child_process::start() sets up the child.
struct child_options {
    child_output out{}, err{};       // stdout and stderr
    std::string in_file{};           // stdin from this file
    bool inherit_stdin = false;      // else the test process's stdin, else /dev/null
    int controlling_tty = -1;        // a pty slave: the child becomes a session leader with it as stdin
    std::vector<std::string> env{};  // "NAME=value" added to (or replacing in) the environment
    std::vector<std::string> unset{};  // names left out of the environment
    bool search_path = false;        // argv[0] is a name looked up in PATH, not a path
    bool own_group = false;          // a process group of its own, which signal() and kill_and_reap() reach
    bool default_signals = false;    // SIGTERM, SIGINT, SIGHUP and SIGPIPE back to SIG_DFL
    bool close_other_fds = false;    // descriptors 3 and up closed (Asio's sockets are not close-on-exec)
    std::optional<std::pair<uid_t, gid_t>> user{};  // run as this user and group (the caller is root)
};

/// A program run in the background: every process the tests start goes through here. stdin is
/// /dev/null unless told otherwise, the signal mask is emptied, and the child gets SIGKILL when
/// the thread that started it dies (PR_SET_PDEATHSIG: a crashed test leaves nothing running). One
/// still running when this is destroyed is killed (SIGKILL) and reaped.
class child_process {
public:
    child_process() = default;
    ~child_process() { kill_and_reap(); }
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;

    /// fork + execve of argv[0] with everything prepared before the fork (the test process may
    /// have threads). A child that cannot exec says so on its stderr and exits 127; one that
    /// cannot become `options.user` exits 125. Throws std::system_error when a file cannot be
    /// opened, the program is not found in PATH (search_path), or fork fails. A child that has
    /// ended may be started again.
    void start(const std::vector<std::string>& argv, const child_options& options);
    /// As above, stdout and stderr to files of their own (truncated), which out() and err() read.
    void start(const std::vector<std::string>& argv, const std::string& out_path, const std::string& err_path,
               child_options options = {});

    /// Whether it has ended (or was never started); reaps it and sets `status` once it has.
    bool poll();
    /// Blocks until it has ended; its status.
    int wait();
    /// `sig` to it (to its group, with own_group), unless it has ended.
    void signal(int sig);
    /// SIGKILL and a blocking wait, unless it has ended.
    void kill_and_reap();

    std::string out() const { return detail::read_file_from(out_file); }
    std::string err() const { return detail::read_file_from(err_file); }

    pid_t pid = -1;
    std::string out_file, err_file;
    std::optional<int> status;  // the shell's convention: exit code, or 128+N for signal N (-1:
                                // someone else reaped it)

private:
    bool own_group_ = false;
};

}  // namespace zklock::test
