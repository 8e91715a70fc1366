#include "core/executor_check.hpp"

#include <cstdio>
#include <cstdlib>

namespace zklock::detail {

namespace {
void abort_on_wrong_thread(const char* what) noexcept
{
    std::fprintf(stderr,
                 "zklock: %s called from a thread that does not run its session's executor "
                 "(docs/guide.md, \"Which thread may call what\")\n",
                 what);
    std::abort();
}
}  // namespace

wrong_thread_handler wrong_thread = &abort_on_wrong_thread;

bool caller_checks_enabled() noexcept
{
#ifdef NDEBUG
    return false;
#else
    return true;
#endif
}

}  // namespace zklock::detail
