// support/doctest_listener.hpp — include in one source file of a doctest binary so that a failed
// CHECK (which, unlike REQUIRE, throws nothing) still makes zk_server/zk_ensemble keep their files.
#pragma once

#include <doctest/doctest.h>

#include "support/doctest_quiet_listener.hpp"
#include "support/failure.hpp"

namespace zklock::test {

struct failure_listener : quiet_listener {
    explicit failure_listener(const doctest::ContextOptions&) {}

    void log_assert(const doctest::AssertData& ad) override
    {
        if (ad.m_failed && !(ad.m_at & doctest::assertType::is_warn)) note_failure();  // WARNs do not fail
    }
    void test_case_exception(const doctest::TestCaseException&) override { note_failure(); }
};

}  // namespace zklock::test

REGISTER_LISTENER("zklock_failure_listener", 1, zklock::test::failure_listener);
