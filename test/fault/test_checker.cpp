// The safety checker itself: fed good and bad histories, it must say which is which.
#include "support/checker.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>

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

TEST_CASE("checker: pair tokens (zklock::fence_token) compare as pairs")
{
    history h;
    auto grant2 = [&](const std::string& holder, std::int64_t zxid, std::uint64_t local, int at_ms) {
        checker::event e{checker::kind::grant, "/l", holder, zxid, -1, h.t0 + std::chrono::milliseconds(at_ms), 0, {}};
        e.local = local;
        h.c.record(e);
    };
    grant2("a", 10, 1, 0);
    h.release("a", 1);
    grant2("b", 10, 2, 2);  // same node, next local holder: greater
    h.release("b", 3);
    grant2("c", 11, 1, 4);  // next node: greater whatever the local part
    h.release("c", 5);
    CHECK_MESSAGE(h.c.ok(), h.c.report());
    grant2("d", 11, 1, 6);  // the same pair again
    h.release("d", 7);
    CHECK(h.says("fencing token did not increase"));
}

TEST_CASE("checker: bounded runs between groups")
{
    auto request = [](history& h, const std::string& holder, const std::string& group, int at_ms) {
        checker::event e{checker::kind::request, "/l", holder, 0, -1, h.t0 + std::chrono::milliseconds(at_ms), 0, {}};
        e.group = group;
        h.c.record(e);
    };
    // Group A runs 6 grants; B asks at t=0 and is granted at t=100.
    auto history_with = [&](int b_asks_ms, int a_runs) {
        auto h = std::make_unique<history>();
        h->c.expect_bounded_runs("/l", 3, 10ms);
        request(*h, "b1", "B", b_asks_ms);
        for (int i = 0; i < a_runs; ++i) {
            request(*h, "a" + std::to_string(i), "A", 0);
            h->grant("a" + std::to_string(i), 10 + i, -1, 20 + 10 * i);
            h->release("a" + std::to_string(i), 25 + 10 * i);
        }
        h->grant("b1", 100, -1, 100 + 10 * a_runs);
        h->release("b1", 105 + 10 * a_runs);
        return h;
    };
    // Three grants of A after B's grace: allowed.
    {
        auto h = history_with(0, 3);
        CHECK_MESSAGE(h->c.ok(), h->c.report());
    }
    // Six grants of A while B waits: reported.
    {
        auto h = history_with(0, 6);
        CHECK(h->says("unbounded run: 6 grants to group A"));
    }
    // B asked only during A's last grants: within the grace, not counted.
    {
        auto h = history_with(60, 6);
        CHECK_MESSAGE(h->c.ok(), h->c.report());
    }
}
