// session_config::logger: each session's logger gets the C client's lines about that session and
// zklock's events about it, and nothing of another session's, with two sessions in one process.
#include "../common.hpp"
#include "server.hpp"

#include <cstdio>

using namespace zklock;
using namespace zklock::test;

namespace {

struct record {
    log_level level;
    std::string message;
    std::string source;
    std::int64_t session_id;
    std::string path;
    std::string node;
};

session_config logged_config(std::vector<record>& into)
{
    auto c = config_for(shared_server().connect_string());
    c.logger = [&into](log_level level, std::string_view message, const log_fields& f) {
        into.push_back({level, std::string(message), std::string(f.source), f.session_id, std::string(f.path),
                        std::string(f.node)});
    };
    c.logger_level = log_level::info;
    return c;
}

std::string hex(std::int64_t id)
{
    char b[24];
    std::snprintf(b, sizeof b, "%#llx", static_cast<unsigned long long>(id));
    return b;
}

bool has(const std::vector<record>& rs, std::string_view source, std::string_view text)
{
    for (const auto& r : rs)
        if (r.source == source && r.message.find(text) != std::string::npos) return true;
    return false;
}

}  // namespace

TEST_CASE("logger: each session hears the C client's lines and zklock's events of its own, only")
{
    std::vector<record> a_log, b_log;
    std::int64_t a_id = 0, b_id = 0;
    std::string a_path, b_path;
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const auto ca = logged_config(a_log);
        const auto cb = logged_config(b_log);
        session a{ex, ca};
        session b{ex, cb};
        co_await connect(a);
        co_await connect(b);
        a_id = a.session_id();
        b_id = b.session_id();
        a_path = unique_path("log-a");
        b_path = unique_path("log-b");
        mutex ma{a, a_path}, mb{b, b_path};
        auto la = co_await ma.async_acquire(std::chrono::seconds(5), asio::deferred);
        auto lb = co_await mb.async_acquire(std::chrono::seconds(5), asio::deferred);
        co_await la.async_release(asio::deferred);
        co_await lb.async_release(asio::deferred);
        co_await a.async_close(asio::deferred);
        co_await b.async_close(asio::deferred);
    });
    REQUIRE(a_id != 0);
    REQUIRE(b_id != 0);
    for (auto* side : {&a_log, &b_log}) {
        const bool is_a = side == &a_log;
        CAPTURE(is_a);
        const auto own = is_a ? a_id : b_id;
        const auto other = is_a ? b_id : a_id;
        const auto& own_path = is_a ? a_path : b_path;
        const auto& other_path = is_a ? b_path : a_path;
        const auto& rs = *side;
        // The C client's own lines: its session's establishment, naming its id, and never the
        // other session's id.
        CHECK(has(rs, "zookeeper", "sessionId=" + hex(own)));
        CHECK_FALSE(has(rs, "zookeeper", hex(other)));
        // zklock's events.
        CHECK(has(rs, "zklock", "connected to"));
        CHECK(has(rs, "zklock", "session closed"));
        bool granted = false;
        for (const auto& r : rs) {
            CHECK(r.level >= log_level::info);  // logger_level
            CHECK((r.session_id == 0 || r.session_id == own));
            CHECK(r.path != other_path);
            if (r.source == "zklock" && r.message == "lock granted") {
                granted = true;
                CHECK(r.path == own_path);
                CHECK(r.node.starts_with(own_path + "/"));
            }
            if (r.source == "zklock" && r.message.starts_with("connected to"))
                CHECK(r.message.find(hex(own)) != std::string::npos);
        }
        CHECK(granted);
    }
}

TEST_CASE("logger: a revocation request and a lost lock are events, and a throwing logger is contained")
{
    std::vector<record> log;
    std::string node;
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const auto c = logged_config(log);
        session s{ex, c};
        co_await connect(s);
        auto other_cfg = config_for(shared_server().connect_string());
        other_cfg.logger = [](log_level, std::string_view, const log_fields&) { throw std::runtime_error("a logger that throws"); };
        session other{ex, other_cfg};
        co_await connect(other);  // its logger throws at every line: dropped
        mutex m{s, unique_path("log-lost")};
        auto l = co_await m.async_acquire(std::chrono::seconds(5), asio::deferred);
        node = l.node();
        // Another client asks the holder to let go, then deletes its node.
        const std::string request(revocation_request);
        co_await other.async_set_data(node, request, tuple);
        auto [rec] = co_await l.async_wait_revocation(tuple);
        CHECK_FALSE(rec);
        co_await other.async_remove(node, tuple);
        auto [lec] = co_await l.async_wait_lost(tuple);
        CHECK(lec == errc::lock_lost);
        co_await s.async_close(asio::deferred);
        co_await other.async_close(asio::deferred);
    });
    bool revoked = false, lost = false;
    for (const auto& r : log) {
        if (r.source != "zklock" || r.node != node) continue;
        if (r.message.starts_with("revocation requested")) revoked = r.level == log_level::info;
        if (r.message.starts_with("lock lost")) lost = r.level == log_level::warning;
    }
    CHECK(revoked);
    CHECK(lost);
}
