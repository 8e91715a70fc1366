// The safety checker itself: fed good and bad histories, it must say which is which.
#include "support/checker.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using namespace zklock::test;
using namespace std::chrono_literals;

namespace {

struct history {
    checker c;
    checker::clock::time_point t0 = checker::clock::now();
    void grant(const std::string& holder, std::int64_t token, std::int64_t seq, int at_ms, const std::string& lock = "/l")
    {
        c.record({checker::kind::grant, lock, holder, token, seq, t0 + std::chrono::milliseconds(at_ms), 0, {}});
    }
    void release(const std::string& holder, int at_ms, const std::string& lock = "/l")
    {
        c.record({checker::kind::release, lock, holder, 0, -1, t0 + std::chrono::milliseconds(at_ms), 0, "released"});
    }
    bool says(const std::string& what) const
    {
        auto v = c.check();
        return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.find(what) != std::string::npos; });
    }
};

}  // namespace

TEST_CASE("checker: a clean history passes")
{
    history h;
    h.c.expect_queue_order("/l");
    h.grant("a", 10, 1, 0);
    h.release("a", 5);
    h.grant("b", 12, 2, 5);  // a grant at the very moment of the release is not an overlap
    h.release("b", 9);
    h.grant("c", 20, 7, 10, "/other");  // another lock is independent
    h.release("c", 11, "/other");
    CHECK(h.c.ok());
    CHECK(h.c.grants() == 3);
    CHECK(h.c.grants("/l") == 2);
    CHECK(h.c.releases("/other") == 1);
    // Recorded out of time order, sorted by the clock.
    history h2;
    h2.grant("b", 12, 2, 20);
    h2.grant("a", 10, 1, 0);
    h2.release("b", 30);
    h2.release("a", 10);
    CHECK_MESSAGE(h2.c.ok(), h2.c.report());
}

TEST_CASE("checker: overlapping holders are reported")
{
    history h;
    h.grant("a", 10, 1, 0);
    h.grant("b", 11, 2, 3);
    h.release("a", 5);
    h.release("b", 8);
    CHECK_FALSE(h.c.ok());
    CHECK(h.says("overlap"));
    CHECK(h.c.report().find("violation") != std::string::npos);
}

TEST_CASE("checker: fencing tokens must strictly increase")
{
    history h;
    h.grant("a", 10, 1, 0);
    h.release("a", 1);
    h.grant("b", 10, 2, 2);  // same token
    h.release("b", 3);
    h.grant("c", 9, 3, 4);   // lower token
    h.release("c", 5);
    CHECK(h.says("fencing token did not increase"));
    CHECK(h.c.check().size() == 2);
}

TEST_CASE("checker: queue order only where asked for")
{
    history h;
    h.grant("a", 10, 5, 0);
    h.release("a", 1);
    h.grant("b", 11, 3, 2);  // an older node granted later
    h.release("b", 3);
    CHECK(h.c.ok());  // not asked for
    h.c.expect_queue_order("/l");
    CHECK(h.says("out of queue order"));
}

TEST_CASE("checker: releases without a grant, double grants, holders never released")
{
    history h;
    h.release("ghost", 0);
    h.grant("a", 10, 1, 1);
    h.release("a", 2);
    h.release("a", 3);
    h.grant("a", 11, 2, 4);
    CHECK(h.says("ghost released (released) without holding"));
    CHECK(h.says("released twice"));
    CHECK(h.says("granted twice"));
    CHECK(h.says("never released"));
    CHECK_FALSE(h.c.check(false).empty());
    history h2;
    h2.grant("a", 10, 1, 1);
    CHECK(h2.c.ok(false));  // still holding is fine when not required
    CHECK_FALSE(h2.c.ok(true));
}

TEST_CASE("checker: a lost counter update is reported")
{
    checker c;
    // Two critical sections interleaved: both read 0, both write 1.
    auto v1 = c.read_counter("/l");
    auto v2 = c.read_counter("/l");
    c.write_counter("/l", v1 + 1);
    c.write_counter("/l", v2 + 1);
    CHECK(c.counter("/l") == 1);
    CHECK(c.counter_writes("/l") == 2);
    auto v = c.check();
    REQUIRE(v.size() == 1);
    CHECK(v[0].find("lost update") != std::string::npos);

    checker good;
    for (int i = 0; i < 5; ++i) good.write_counter("/l", good.read_counter("/l") + 1);
    CHECK(good.ok());
    CHECK(good.counter("/l") == 5);
}
