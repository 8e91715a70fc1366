// support/process_util.hpp — internals shared by the support classes: temp dirs, files, processes.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

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
