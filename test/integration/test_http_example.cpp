// examples/http_counter: two instances on loopback share one counter file through a zklock mutex,
// driven concurrently by a Beast client in this process. Checks no lost update, every request
// answered, single-threaded servers, and the fencing token at work against a paused holder.
#include "../common.hpp"
#include "http_example_fixture.hpp"
#include "server.hpp"
#include "support/process_util.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef HTTP_COUNTER_PATH
#error "HTTP_COUNTER_PATH must name the http_counter binary"
#endif

using namespace zklock;
using namespace zklock::test;
namespace fs = std::filesystem;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

using clock_type = std::chrono::steady_clock;

std::int64_t number(const std::string& s) { return std::stoll(s); }

/// The value of the sample line "<name_and_labels> <value>" in a Prometheus text page, or -1.
double sample(const std::string& page, const std::string& name_and_labels)
{
    std::istringstream in(page);
    for (std::string l; std::getline(in, l);)
        if (l.size() > name_and_labels.size() && l.compare(0, name_and_labels.size(), name_and_labels) == 0 &&
            l[name_and_labels.size()] == ' ')
            return std::stod(l.substr(name_and_labels.size() + 1));
    return -1;
}

/// `promtool check metrics` (Debian's prometheus package) on `page`, fed on stdin: its exit status
/// and output, or nullopt when promtool is not installed.
std::optional<std::pair<int, std::string>> promtool_check(const scratch_dir& dir, const std::string& page)
{
    const char* candidates[] = {"/usr/bin/promtool", "/usr/local/bin/promtool"};
    const char* tool = nullptr;
    for (const char* c : candidates)
        if (::access(c, X_OK) == 0) tool = c;
    if (!tool) return std::nullopt;
    const std::string in = dir / "metrics.txt";
    std::ofstream(in, std::ios::binary) << page;
    const auto r = test::detail::run_process({tool, "check", "metrics"}, std::chrono::seconds(30), in);
    return std::pair{r.status, r.out + r.err};
}

/// "value token" as the example writes it.
std::pair<std::int64_t, std::int64_t> read_counter(const std::string& file)
{
    std::istringstream in(test::detail::read_file_from(file));
    std::int64_t v = -1, t = -1;
    in >> v >> t;
    return {v, t};
}

}  // namespace

TEST_CASE("http_counter: two instances, 16 concurrent clients, no lost update")
{
    run(
        []() -> awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            scratch_dir dir{"zklock-http"};
            const auto servers = shared_server().connect_string();
            const auto lock = unique_path("http-counter");
            const std::string file = dir / "counter";
            const std::vector<std::string> common{"--servers", servers, "--lock", lock, "--file", file,
                                                  "--hold-ms", "2", "--lock-timeout-ms", "5000"};
            example_server a, b;
            start(a, HTTP_COUNTER_PATH, dir, "a", common);
            start(b, HTTP_COUNTER_PATH, dir, "b", common);
            co_await wait_listening(a);
            co_await wait_listening(b);

            const int total = 200, clients = 16;
            int handed_out = 0, finished = 0, ok = 0, busy = 0;
            std::vector<std::string> bad;
            std::array<int, 2> per_server{};
            int max_threads_a = 0, max_threads_b = 0;
            const auto t0 = clock_type::now();
            for (int c = 0; c < clients; ++c) {
                asio::co_spawn(
                    ex,
                    [&, c]() -> awaitable<void> {
                        const int which = c % 2;
                        http_client cl(ex, which == 0 ? a.port : b.port);
                        while (handed_out < total) {
                            ++handed_out;
                            const auto r = co_await cl.request(http::verb::post, "/increment");
                            if (r.status == 200) {
                                ++ok;
                                ++per_server[static_cast<std::size_t>(which)];
                            } else if (r.status == 503 && r.retry_after == "1") {
                                ++busy;
                            } else {
                                bad.push_back(std::to_string(r.status) + " " + r.error + r.body);
                            }
                        }
                        ++finished;
                    },
                    asio::detached);
            }
            // Meanwhile: both servers stay single-threaded.
            while (finished < clients && clock_type::now() - t0 < 60s) {
                max_threads_a = std::max(max_threads_a, a.threads());
                max_threads_b = std::max(max_threads_b, b.threads());
                co_await sleep_for(5ms);
            }
            const double seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
            MESSAGE(ok << " x 200, " << busy << " x 503 in " << seconds << " s (" << per_server[0] << " via a, "
                       << per_server[1] << " via b)");
            REQUIRE(finished == clients);
            CAPTURE(bad.empty() ? std::string() : bad.front());
            CHECK(bad.empty());                 // every request answered, with 200 or 503
            CHECK(ok + busy == total);
            CHECK(ok > 0);
            CHECK(per_server[0] > 0);
            CHECK(per_server[1] > 0);
            CHECK(max_threads_a == 1);
            CHECK(max_threads_b == 1);

            // No lost update: the counter equals the number of acknowledged increments.
            http_client ca(ex, a.port), cb(ex, b.port);
            const auto va = co_await ca.request(http::verb::get, "/value");
            const auto vb = co_await cb.request(http::verb::get, "/value");
            REQUIRE(va.status == 200);
            REQUIRE(vb.status == 200);
            CHECK(number(va.body) == ok);
            CHECK(number(vb.body) == ok);
            CHECK(read_counter(file).first == ok);
            CHECK(a.threads() == 1);
            CHECK(b.threads() == 1);

            // Routing and methods.
            const auto nf = co_await ca.request(http::verb::get, "/nope");
            CHECK(nf.status == 404);
            const auto na = co_await ca.request(http::verb::get, "/increment");
            CHECK(na.status == 405);

            CHECK(co_await stop(a) == 0);
            CHECK(co_await stop(b) == 0);
            session zk{ex, config_for(servers)};
            co_await connect(zk);
            CHECK((co_await children_of(zk, lock)).empty());
        },
        std::chrono::seconds(120));
}

TEST_CASE("http_counter: 503 with Retry-After while the lock is held elsewhere, 409 when fenced off")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        scratch_dir dir{"zklock-http"};
        const auto servers = shared_server().connect_string();
        const auto lock = unique_path("http-busy");
        const std::string file = dir / "counter";
        const std::vector<std::string> args{"--servers", servers, "--lock", lock, "--file", file, "--lock-timeout-ms", "300"};
        example_server srv;
        start(srv, HTTP_COUNTER_PATH, dir, "srv", args);
        co_await wait_listening(srv);
        http_client cl(ex, srv.port);

        session zk{ex, config_for(servers)};
        co_await connect(zk);
        mutex m{zk, lock};
        auto held = co_await m.async_acquire(5s);
        const auto t0 = clock_type::now();
        // While the request waits behind our lease: the service's /metrics shows one waiter on the path.
        std::optional<http_reply> waiting;
        asio::co_spawn(ex, [&]() -> awaitable<void> { waiting = co_await cl.request(http::verb::post, "/increment"); },
                       asio::detached);
        http_client scraper(ex, srv.port);
        const std::string path_labels = "{app=\"http_counter\",path=\"" + lock + "\"}";
        double waiters = -1;
        for (int i = 0; i < 100 && waiters != 1 && !waiting; ++i) {  // until its acquire has started
            const auto mr = co_await scraper.request(http::verb::get, "/metrics");
            REQUIRE(mr.status == 200);
            waiters = sample(mr.body, "zklock_waiters" + path_labels);
            if (waiters != 1) co_await sleep_for(2ms);
        }
        CHECK(waiters == 1);
        while (!waiting) co_await sleep_for(5ms);
        const auto r = *waiting;
        CHECK(r.status == 503);
        CHECK(r.retry_after == "1");
        CHECK(clock_type::now() - t0 >= 300ms);
        CHECK((co_await children_of(zk, lock)).size() == 1);  // its timed-out node is gone
        co_await held.async_release();

        const auto r1 = co_await cl.request(http::verb::post, "/increment");
        CHECK(r1.status == 200);
        CHECK(r1.body == "1\n");

        // A token newer than any this lock will hand out soon: the service's write is refused.
        const std::int64_t future_token = std::int64_t{1} << 60;
        {
            std::ofstream(file) << "100 " << future_token << "\n";
        }
        const auto r2 = co_await cl.request(http::verb::post, "/increment");
        CHECK(r2.status == 409);
        CHECK(read_counter(file) == std::pair<std::int64_t, std::int64_t>{100, future_token});

        // What it counted: 3 acquires, 2 granted (the 409 was granted and fenced off), 1 timed out;
        // nobody waits or holds now (the path's gauges are gone); the page passes promtool.
        const auto mr = co_await scraper.request(http::verb::get, "/metrics");
        REQUIRE(mr.status == 200);
        const std::string& page = mr.body;
        INFO(page);
        const std::string ex_labels = "{app=\"http_counter\",kind=\"exclusive\"}";
        CHECK(sample(page, "zklock_acquires_started_total" + ex_labels) == 3);
        CHECK(sample(page, "zklock_acquires_granted_total" + ex_labels) == 2);
        CHECK(sample(page, "zklock_acquires_timed_out_total" + ex_labels) == 1);
        CHECK(sample(page, "zklock_acquires_cancelled_total" + ex_labels) == 0);
        CHECK(sample(page, "zklock_acquire_wait_seconds_count{app=\"http_counter\"}") == 2);
        CHECK(sample(page, "zklock_lease_hold_seconds_count{app=\"http_counter\"}") == 2);
        CHECK(sample(page, "zklock_requests_total{app=\"http_counter\",type=\"create\"}") >= 3);
        CHECK(sample(page, "zklock_waiters" + path_labels) == -1);
        CHECK(page.find("# TYPE zklock_acquire_wait_seconds histogram\n") != std::string::npos);
        if (auto check = promtool_check(dir, page)) {
            INFO("promtool check metrics: " << check->second);
            CHECK(check->first == 0);
        } else {
            WARN_MESSAGE(false, "promtool not installed (Debian package prometheus; scripts/install-deps.sh --test "
                                "installs it): the Prometheus format check of /metrics was skipped");
        }
        CHECK(co_await stop(srv) == 0);
    });
}

TEST_CASE("http_counter: a paused holder's write is fenced off after its session expired")
{
    run(
        []() -> awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            scratch_dir dir{"zklock-http"};
            const auto servers = shared_server().connect_string();
            const auto lock = unique_path("http-paused");
            const std::string file = dir / "counter";
            // a: a slow holder with a short session; b: a normal instance.
            const std::vector<std::string> args_a{"--servers", servers, "--lock", lock, "--file", file,
                                                  "--hold-ms", "1000", "--session-timeout-ms", "1000"};
            const std::vector<std::string> args_b{"--servers", servers, "--lock", lock, "--file", file,
                                                  "--lock-timeout-ms", "10000"};
            example_server a, b;
            start(a, HTTP_COUNTER_PATH, dir, "a", args_a);
            start(b, HTTP_COUNTER_PATH, dir, "b", args_b);
            co_await wait_listening(a);
            co_await wait_listening(b);

            std::optional<http_reply> paused_reply;
            request_detached(ex, a.port, http::verb::post, "/increment", paused_reply);
            // a holds the lock once it has claimed the counter with its token; then freeze it.
            const auto deadline = clock_type::now() + 20s;
            while (read_counter(file).second <= 0 && clock_type::now() < deadline) co_await sleep_for(2ms);
            const auto token_a = read_counter(file).second;
            REQUIRE(token_a > 0);
            REQUIRE(::kill(a.pid, SIGSTOP) == 0);

            // ZooKeeper expires a's session and deletes its node: b gets the lock and increments.
            session zk{ex, config_for(servers)};
            co_await connect(zk);
            REQUIRE(co_await wait_children(zk, lock, 0, 20s) == 0);
            http_client cb(ex, b.port);
            const auto rb = co_await cb.request(http::verb::post, "/increment");
            CHECK(rb.status == 200);
            CHECK(rb.body == "1\n");
            CHECK(read_counter(file).second > token_a);

            // a wakes up, still "in" its critical section: its write carries the old token.
            REQUIRE(::kill(a.pid, SIGCONT) == 0);
            for (int i = 0; i < 2000 && !paused_reply; ++i) co_await sleep_for(10ms);
            REQUIRE(paused_reply.has_value());
            CHECK(paused_reply->status == 409);
            CHECK(read_counter(file).first == 1);  // a's stale increment did not land

            // a has a fresh session (reconnect_on_expiry) and works again.
            http_client ca2(ex, a.port);
            const auto again = co_await request_until_served(ca2, http::verb::post, "/increment");
            CHECK(again.status == 200);
            CHECK(again.body == "2\n");
            CHECK(a.threads() == 1);
            CHECK(b.threads() == 1);
            CHECK(co_await stop(a) == 0);
            CHECK(co_await stop(b) == 0);
        },
        std::chrono::seconds(120));
}
