// The metrics state (src/core/metrics_state.hpp) and the Prometheus text rendering.
#include "core/metrics_state.hpp"

#include <zklock/metrics.hpp>

#include <boost/asio/error.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <sstream>

using namespace zklock;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> lines_of(const std::string& s)
{
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}

bool has_line(const std::string& text, const std::string& line)
{
    for (const auto& l : lines_of(text))
        if (l == line) return true;
    return false;
}

}  // namespace

TEST_CASE("metrics_state: acquires are classified, gauges follow waiters and holders and are erased at zero")
{
    detail::metrics_state m;
    m.acquire_started(lock_kind::exclusive, "/a");
    m.acquire_started(lock_kind::exclusive, "/a");
    m.acquire_started(lock_kind::shared, "/b");
    m.acquire_started(lock_kind::permit, "/c");
    m.acquire_started(lock_kind::exclusive, "/d");
    {
        auto s = m.snapshot();
        REQUIRE(s.paths.size() == 4);
        CHECK(s.paths[0].path == "/a");
        CHECK(s.paths[0].waiters == 2);
        CHECK(s.paths[0].holders == 0);
    }
    m.acquire_finished(lock_kind::exclusive, "/a", {}, 3ms, false, true);
    m.acquire_finished(lock_kind::exclusive, "/a", {}, 30ms, true, false);  // a handoff without a listing
    m.acquire_finished(lock_kind::shared, "/b", errc::timeout, 1s, false, true);
    m.acquire_finished(lock_kind::permit, "/c", boost::asio::error::operation_aborted, 1s, false, true);
    m.acquire_finished(lock_kind::exclusive, "/d", errc::would_block, 1ms, false, true);
    auto s = m.snapshot();
    CHECK(s.exclusive.started == 3);
    CHECK(s.exclusive.granted == 2);
    CHECK(s.exclusive.failed == 1);
    CHECK(s.shared.timed_out == 1);
    CHECK(s.permit.cancelled == 1);
    REQUIRE(s.failed_by_error.size() == 1);
    CHECK(s.failed_by_error[0] == std::pair<std::string, std::uint64_t>{"would_block", 1});
    CHECK(s.handoffs_without_listing == 1);
    CHECK(s.handoffs_with_listing == 0);
    CHECK(s.wait_seconds.count == 2);  // granted only
    // Only /a remains: 2 holders, no waiter; the failed paths' entries are gone.
    REQUIRE(s.paths.size() == 1);
    CHECK(s.paths[0].path == "/a");
    CHECK(s.paths[0].waiters == 0);
    CHECK(s.paths[0].holders == 2);

    m.lease_ended("/a", 10ms, {});
    m.lease_ended("/a", 10ms, errc::lock_lost);
    s = m.snapshot();
    CHECK(s.paths.empty());
    CHECK(s.hold_seconds.count == 2);
    CHECK(s.leases_lost_node_deleted == 1);
    CHECK(s.leases_lost_session_expired == 0);

    m.acquire_started(lock_kind::exclusive, "/e");
    m.acquire_finished(lock_kind::exclusive, "/e", zk_errc::no_auth, 1ms, false, true);
    s = m.snapshot();
    REQUIRE(s.failed_by_error.size() == 2);
    CHECK(s.failed_by_error[0].first == "would_block");
    CHECK(s.failed_by_error[1].first == "zookeeper_minus102");
}

TEST_CASE("metrics_state: histograms are cumulative over fixed log-scale bounds")
{
    detail::metrics_state m;
    m.listing(1);
    m.listing(3);
    m.listing(64);
    m.listing(1'000'000);  // above every bound: only in count (+Inf)
    auto h = m.snapshot().listing_size;
    REQUIRE(h.upper_bounds.size() == h.cumulative.size());
    CHECK(h.upper_bounds.front() == 1);
    CHECK(h.cumulative[0] == 1);  // le=1
    CHECK(h.cumulative[1] == 1);  // le=2
    CHECK(h.cumulative[2] == 2);  // le=5
    CHECK(h.cumulative.back() == 3);
    CHECK(h.count == 4);
    CHECK(h.sum == doctest::Approx(1'000'068));
    for (std::size_t i = 1; i < h.cumulative.size(); ++i) CHECK(h.cumulative[i] >= h.cumulative[i - 1]);

    auto d = m.snapshot().wait_seconds;
    CHECK(d.upper_bounds.front() == doctest::Approx(1e-4));
    CHECK(d.upper_bounds.back() == doctest::Approx(100));
}

TEST_CASE("to_prometheus: HELP and TYPE once per family, _total counters, cumulative buckets, +Inf, _sum, _count")
{
    detail::metrics_state st;
    st.acquire_started(lock_kind::exclusive, "/locks/a");
    st.acquire_finished(lock_kind::exclusive, "/locks/a", {}, 1500us, false, true);
    st.acquire_started(lock_kind::exclusive, "/locks/a");  // a waiter
    st.request(detail::request_type::create);
    st.request(detail::request_type::get_children);
    st.request(detail::request_type::get_children);
    st.listing(2);
    const std::string text = to_prometheus(st.snapshot());
    INFO(text);

    CHECK(has_line(text, "# HELP zklock_acquires_granted_total Acquires that were granted the lock."));
    CHECK(has_line(text, "# TYPE zklock_acquires_granted_total counter"));
    CHECK(has_line(text, "zklock_acquires_granted_total{kind=\"exclusive\"} 1"));
    CHECK(has_line(text, "zklock_acquires_started_total{kind=\"exclusive\"} 2"));
    CHECK(has_line(text, "zklock_acquires_granted_total{kind=\"shared\"} 0"));
    CHECK(has_line(text, "zklock_requests_total{type=\"get_children\"} 2"));
    CHECK(has_line(text, "zklock_requests_total{type=\"create\"} 1"));
    CHECK(has_line(text, "# TYPE zklock_acquire_wait_seconds histogram"));
    CHECK(has_line(text, "zklock_acquire_wait_seconds_bucket{le=\"0.001\"} 0"));
    CHECK(has_line(text, "zklock_acquire_wait_seconds_bucket{le=\"0.002\"} 1"));
    CHECK(has_line(text, "zklock_acquire_wait_seconds_bucket{le=\"100\"} 1"));
    CHECK(has_line(text, "zklock_acquire_wait_seconds_bucket{le=\"+Inf\"} 1"));
    CHECK(has_line(text, "zklock_acquire_wait_seconds_sum 0.0015"));
    CHECK(has_line(text, "zklock_acquire_wait_seconds_count 1"));
    CHECK(has_line(text, "zklock_listing_children_bucket{le=\"1\"} 0"));
    CHECK(has_line(text, "zklock_listing_children_bucket{le=\"2\"} 1"));
    CHECK(has_line(text, "# TYPE zklock_waiters gauge"));
    CHECK(has_line(text, "zklock_waiters{path=\"/locks/a\"} 1"));
    CHECK(has_line(text, "zklock_holders{path=\"/locks/a\"} 1"));

    // Every family's HELP and TYPE once, TYPE right after HELP, samples named after their family.
    std::vector<std::string> families;
    std::string current;
    for (const auto& l : lines_of(text)) {
        REQUIRE_FALSE(l.empty());
        if (l.rfind("# HELP ", 0) == 0) {
            current = l.substr(7, l.find(' ', 7) - 7);
            CHECK(std::find(families.begin(), families.end(), current) == families.end());
            families.push_back(current);
            continue;
        }
        if (l.rfind("# TYPE ", 0) == 0) {
            CHECK(l.substr(7, current.size()) == current);
            continue;
        }
        CHECK(l.rfind(current, 0) == 0);
        const std::string type_line = "# TYPE " + current;
        if (current.ends_with("_total")) CHECK(text.find(type_line + " counter\n") != std::string::npos);
    }
    CHECK(families.size() >= 16);
    CHECK(text.back() == '\n');
}

TEST_CASE("to_prometheus: label values are escaped, several sessions share each family once")
{
    detail::metrics_state st;
    st.acquire_started(lock_kind::exclusive, "/odd\"path\\x\ny");
    const auto snap = st.snapshot();
    const std::string text = to_prometheus(snap, {{"session", "a\"b"}});
    INFO(text);
    CHECK(has_line(text, R"(zklock_waiters{session="a\"b",path="/odd\"path\\x\ny"} 1)"));
    CHECK(has_line(text, R"(zklock_reconnects_total{session="a\"b"} 0)"));
    CHECK(has_line(text, R"(zklock_acquire_wait_seconds_bucket{session="a\"b",le="+Inf"} 0)"));

    const std::string two = to_prometheus({{snap, {{"session", "one"}}}, {snap, {{"session", "two"}}}});
    INFO(two);
    CHECK(has_line(two, R"(zklock_reconnects_total{session="one"} 0)"));
    CHECK(has_line(two, R"(zklock_reconnects_total{session="two"} 0)"));
    std::size_t n = 0;
    for (const auto& l : lines_of(two)) n += l == "# TYPE zklock_reconnects_total counter";
    CHECK(n == 1);
}
