#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "support/doctest_run.hpp"

int main(int argc, char** argv)
{
    doctest::Context ctx;
    ctx.applyCommandLine(argc, argv);
    return zklock::test::run_doctest(ctx, argc, argv);
}
