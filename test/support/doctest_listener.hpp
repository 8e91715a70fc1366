// support/doctest_listener.hpp — include in one source file of a doctest binary so that a failed
// CHECK (which, unlike REQUIRE, throws nothing) still makes zk_server/zk_ensemble keep their files.
#pragma once

#include <doctest/doctest.h>

#include "support/failure.hpp"

namespace zklock::test {

struct failure_listener : doctest::IReporter {
    explicit failure_listener(const doctest::ContextOptions&) {}

    void log_assert(const doctest::AssertData& ad) override
    {
        if (ad.m_failed && !(ad.m_at & doctest::assertType::is_warn)) note_failure();  // WARNs do not fail
    }
    void test_case_exception(const doctest::TestCaseException&) override { note_failure(); }

    void report_query(const doctest::QueryData&) override {}
    void test_run_start() override {}
    void test_run_end(const doctest::TestRunStats&) override {}
    void test_case_start(const doctest::TestCaseData&) override {}
    void test_case_reenter(const doctest::TestCaseData&) override {}
    void test_case_end(const doctest::CurrentTestCaseStats&) override {}
    void subcase_start(const doctest::SubcaseSignature&) override {}
    void subcase_end() override {}
    void log_message(const doctest::MessageData&) override {}
    void test_case_skipped(const doctest::TestCaseData&) override {}
};

}  // namespace zklock::test

REGISTER_LISTENER("zklock_failure_listener", 1, zklock::test::failure_listener);
