#include "support/failure.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace zklock::test {

namespace {
std::atomic<bool> failed{false};
}

void note_failure() noexcept { failed = true; }

void clear_failure() noexcept { failed = false; }

bool should_keep_files() noexcept
{
    const char* env = std::getenv("ZKLOCK_TEST_KEEP_FILES");
    return failed || (env && *env && std::strcmp(env, "0") != 0);
}

}  // namespace zklock::test
