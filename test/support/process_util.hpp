// support/process_util.hpp — internals shared by zk_server and zk_ensemble.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace zklock::test::detail {

/// mkdtemp under $TMPDIR (or /tmp): "<base>/<prefix>.XXXXXX".
std::filesystem::path make_temp_dir(const std::string& prefix);

void write_file(const std::filesystem::path& path, const std::string& content);

/// Everything in `path` from byte `offset` on ("" if unreadable).
std::string read_file_from(const std::filesystem::path& path, std::uintmax_t offset = 0);

/// The last `lines` lines of `text`.
std::string tail_lines(const std::string& text, std::size_t lines);

}  // namespace zklock::test::detail
