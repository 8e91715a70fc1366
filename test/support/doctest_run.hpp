// support/doctest_run.hpp — doctest's run for the test binaries' main(), included by exactly one
// source file of each binary (with DOCTEST_CONFIG_IMPLEMENT defined before doctest.h).
//
// CTest runs each case by its name (--test-case=<name>). A name that doctest's filter cannot
// match (a ';' splits it in CTest's list) would select nothing, and doctest passes a run of no
// test case. Here such a run fails, and says so.
#pragma once

#include <doctest/doctest.h>

#include "support/doctest_quiet_listener.hpp"

#include <cstdio>
#include <cstring>

namespace zklock::test {

struct run_counter : quiet_listener {
    explicit run_counter(const doctest::ContextOptions&) {}

    static int& selected()
    {
        static int n = -1;  // -1: no run (a query such as --list-test-cases)
        return n;
    }

    void test_run_end(const doctest::TestRunStats& s) override { selected() = static_cast<int>(s.numTestCasesPassingFilters); }
};

/// ctx.run(), except that a run whose --test-case filter selected no test case fails.
inline int run_doctest(doctest::Context& ctx, int argc, char** argv)
{
    const int rc = ctx.run();
    if (rc != 0 || ctx.shouldExit()) return rc;
    bool filtered = false;
    for (int i = 1; i < argc; ++i)
        if (std::strncmp(argv[i], "--test-case=", 12) == 0 || std::strncmp(argv[i], "-tc=", 4) == 0) filtered = true;
    if (filtered && run_counter::selected() == 0) {
        std::fprintf(stderr, "doctest: the --test-case filter selected no test case\n");
        return 1;
    }
    return rc;
}

}  // namespace zklock::test

REGISTER_LISTENER("zklock_run_counter", 2, zklock::test::run_counter);
