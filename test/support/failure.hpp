// support/failure.hpp — "has a test failed?", used to keep server files for post-mortems.
#pragma once

namespace zklock::test {

/// Notes that a test failed. support/doctest_listener.hpp calls this on every failed assertion;
/// from then on zk_server and zk_ensemble keep their temp dirs (logs, data) when destroyed. The
/// note sticks for the rest of the process, so that servers shared between test cases (static
/// ones, destroyed after main) also keep their files.
void note_failure() noexcept;

/// Forgets noted failures.
void clear_failure() noexcept;

/// True if a failure was noted, or if the environment variable ZKLOCK_TEST_KEEP_FILES is set to
/// anything but "0" (keep everything, e.g. while debugging).
bool should_keep_files() noexcept;

}  // namespace zklock::test
