// zklock_fault_tests: doctest's main, plus --soak[=SECONDS] (the storm's length; the environment
// variable ZKLOCK_SOAK_SECONDS does the same), taken off the command line before doctest sees it.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "support/doctest_listener.hpp"
#include "support/doctest_run.hpp"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace zklock::test {

namespace {
int g_soak = -1;  // -1: not given on the command line
}

int soak_seconds(int fallback)
{
    if (g_soak > 0) return g_soak;
    if (const char* env = std::getenv("ZKLOCK_SOAK_SECONDS"); env && *env) {
        const int v = std::atoi(env);
        if (v > 0) return v;
    }
    return fallback;
}

}  // namespace zklock::test

int main(int argc, char** argv)
{
    std::vector<char*> args;
    for (int i = 0; i < argc; ++i) {
        if (i > 0 && std::strncmp(argv[i], "--soak", 6) == 0 && (argv[i][6] == '\0' || argv[i][6] == '=')) {
            zklock::test::g_soak = argv[i][6] == '=' ? std::atoi(argv[i] + 7) : 60;
            if (zklock::test::g_soak <= 0) zklock::test::g_soak = 60;
            continue;
        }
        args.push_back(argv[i]);
    }
    doctest::Context ctx;
    ctx.applyCommandLine(static_cast<int>(args.size()), args.data());
    return zklock::test::run_doctest(ctx, static_cast<int>(args.size()), args.data());
}
