// Fencing against a real PostgreSQL (support/pg_server.hpp) and the real ZooKeeper server of
// server.hpp: docs/guide.md's SQL run as written, examples/http_counter_pg (two instances, a paused
// holder, a database that stalls or crashes mid-request), and the zklock tool with psql.
#include "../common.hpp"
#include "http_example_fixture.hpp"
#include "server.hpp"
#include "support/pg_server.hpp"
#include "support/process_util.hpp"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#if !defined(HTTP_COUNTER_PG_PATH) || !defined(ZKLOCK_CLI_PATH) || !defined(ZKLOCK_SOURCE_DIR)
#error "HTTP_COUNTER_PG_PATH, ZKLOCK_CLI_PATH and ZKLOCK_SOURCE_DIR must be defined"
#endif

using namespace zklock;
using namespace zklock::test;
namespace fs = std::filesystem;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

using clock_type = std::chrono::steady_clock;

// ---- docs/guide.md's section, its code blocks in order ----------------------------------------------

struct guide_blocks {
    std::string table, single, pair, claim, write, increment_sql, command_line;
};

/// The fenced blocks of "## Fencing a PostgreSQL table", in the order the guide shows them.
guide_blocks read_guide()
{
    const auto text = test::detail::read_file_from(fs::path(ZKLOCK_SOURCE_DIR) / "docs" / "guide.md");
    const auto begin = text.find("\n## Fencing a PostgreSQL table\n");
    REQUIRE_MESSAGE(begin != std::string::npos, "docs/guide.md has no section \"Fencing a PostgreSQL table\"");
    const auto end = text.find("\n## ", begin + 1);
    const auto section = text.substr(begin, end - begin);
    std::vector<std::pair<std::string, std::string>> blocks;  // language, body
    const std::regex fence_re("```(\\w*)\\n([\\s\\S]*?)```");
    for (auto it = std::sregex_iterator(section.begin(), section.end(), fence_re); it != std::sregex_iterator(); ++it)
        blocks.emplace_back((*it)[1].str(), (*it)[2].str());
    REQUIRE(blocks.size() == 7);
    for (int i = 0; i < 6; ++i) REQUIRE(blocks[static_cast<std::size_t>(i)].first == "sql");
    REQUIRE(blocks[6].first == "sh");
    auto body = [&](std::size_t i) {
        auto b = blocks[i].second;
        while (!b.empty() && b.back() == '\n') b.pop_back();
        return b;
    };
    return {body(0), body(1), body(2), body(3), body(4), body(5) + "\n", body(6)};
}

/// `text` with `from` replaced by `to` once; fails if `from` is not in it.
std::string replace_once(std::string text, const std::string& from, const std::string& to)
{
    const auto at = text.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, "'" << from << "' not in: " << text);
    return text.replace(at, from.size(), to);
}

/// A statement with $1.. run through psql: PREPARE it, EXECUTE it with `args`.
std::string prepared(pg_server& pg, const std::string& types, const std::string& statement, const std::string& args)
{
    return pg.psql("PREPARE s(" + types + ") AS " + statement + ";\nEXECUTE s(" + args + ");");
}

std::string row(pg_server& pg) { return pg.psql("SELECT value, fence_zxid, fence_local FROM counter WHERE id = 1"); }

std::int64_t column(pg_server& pg, const std::string& name)
{
    return std::stoll(pg.psql("SELECT " + name + " FROM counter WHERE id = 1"));
}

/// Polls until `fence_zxid` in the table differs from `old` (a holder has claimed the row).
awaitable<std::int64_t> wait_claimed(pg_server& pg, std::int64_t old)
{
    const auto deadline = clock_type::now() + 20s;
    for (;;) {
        const auto now = column(pg, "fence_zxid");
        if (now != old) co_return now;
        REQUIRE_MESSAGE(clock_type::now() < deadline, "no holder claimed the row within 20 s");
        co_await sleep_for(5ms);
    }
}

void write_executable(const std::string& path, const std::string& text)
{
    test::detail::write_file(path, text);
    REQUIRE(::chmod(path.c_str(), 0755) == 0);
}

/// Runs `during` while another transaction holds the counter's row, having set fence_zxid to
/// `fence` (uncommitted), and commits 1.2 s after it took the row.
template <class F> void while_row_held(pg_server& pg, const scratch_dir& dir, int fence, F during)
{
    child_process holder;
    holder.start({"/bin/sh", "-c",
                  "exec psql -X -q -v ON_ERROR_STOP=1 -d '" + pg.conninfo() +
                      "' -c 'BEGIN; UPDATE counter SET fence_zxid = " + std::to_string(fence) +
                      ", fence_local = 0 WHERE id = 1; SELECT pg_sleep(1.2); COMMIT;'"},
                 dir / "holder.out", dir / "holder.err");
    const auto deadline = clock_type::now() + 20s;
    while (pg.psql("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(1.2)%' AND state = 'active' "
                   "AND pid <> pg_backend_pid()") != "1\n") {
        REQUIRE_MESSAGE(!holder.poll(), "the holding transaction ended early: " << holder.err());
        REQUIRE(clock_type::now() < deadline);
        std::this_thread::sleep_for(10ms);
    }
    during();
    while (!holder.poll()) std::this_thread::sleep_for(10ms);
    CHECK(*holder.status == 0);
}

}  // namespace

TEST_CASE("pg_server: PostgreSQL on loopback, paused and resumed, stopped by its PID, nothing left behind")
{
    fs::path dir;
    pid_t postmaster = -1;
    std::vector<pid_t> all;
    {
        pg_server pg;
        dir = pg.dir();
        postmaster = pg.pid();
        CHECK(fs::exists(dir / "data" / "PG_VERSION"));
        CHECK(pg.psql("SHOW listen_addresses") == "127.0.0.1\n");
        CHECK(pg.psql("SELECT current_user") == "zklock\n");
        all = pg.processes();
        CHECK(all.size() >= 3);  // the postmaster and its background processes
        if (::geteuid() == 0) {  // PostgreSQL refuses root: it runs as postgres
            const auto status = test::detail::read_file_from("/proc/" + std::to_string(postmaster) + "/status");
            const auto uid = status.substr(status.find("Uid:") + 4);
            CHECK(std::stoul(uid) != 0);
        }
        // Paused, it accepts the connection (the kernel does) and answers nothing.
        pg.pause();
        const auto stalled =
            test::detail::run_process({"psql", "-X", "-At", "-d", pg.conninfo(), "-c", "SELECT 1"}, 1000ms);
        CHECK(stalled.timed_out);
        pg.resume();
        CHECK(pg.psql("SELECT 2") == "2\n");
    }
    // Gone: the postmaster reaped, its processes ended, the directory removed.
    CHECK(::kill(postmaster, 0) == -1);
    const auto deadline = clock_type::now() + 5s;
    auto alive = [&] {  // (a zombie waiting for whoever adopted it counts as gone)
        return std::count_if(all.begin(), all.end(), [](pid_t p) {
            const auto stat = test::detail::read_file_from("/proc/" + std::to_string(p) + "/stat");
            const auto close = stat.rfind(')');
            return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
        });
    };
    while (alive() > 0 && clock_type::now() < deadline) std::this_thread::sleep_for(10ms);
    CHECK(alive() == 0);
    CHECK(!fs::exists(dir));

    // crash(): an immediate shutdown; the postmaster is gone at once, the destructor only cleans up.
    pg_server crashed;
    const auto pid = crashed.pid();
    crashed.crash();
    CHECK(!crashed.running());
    CHECK(::kill(pid, 0) == -1);
    CHECK(test::detail::run_process({"psql", "-X", "-At", "-d", crashed.conninfo(), "-c", "SELECT 1"}).status == 2);
}

TEST_CASE("pg: the guide's table and statements, as written, against PostgreSQL")
{
    REQUIRE_MESSAGE(psql_available(), "psql not found (Debian's postgresql-client; scripts/install-deps.sh --test)");
    const auto g = read_guide();
    pg_server pg;
    pg.psql(g.table);
    CHECK(row(pg) == "0|0|0\n");

    // One token: a greater one writes and returns the value; an equal or smaller one changes nothing.
    CHECK(prepared(pg, "bigint", g.single, "10") == "1\n");
    CHECK(prepared(pg, "bigint", g.single, "10") == "");
    CHECK(prepared(pg, "bigint", g.single, "9") == "");
    CHECK(prepared(pg, "bigint", g.single, "11") == "2\n");
    CHECK(row(pg) == "2|11|0\n");

    // The pair: ordered by zxid, then local.
    CHECK(prepared(pg, "bigint, bigint", g.pair, "20, 1") == "3\n");
    CHECK(prepared(pg, "bigint, bigint", g.pair, "20, 1") == "");
    CHECK(prepared(pg, "bigint, bigint", g.pair, "19, 9") == "");
    CHECK(prepared(pg, "bigint, bigint", g.pair, "20, 2") == "4\n");
    CHECK(prepared(pg, "bigint, bigint", g.pair, "21, 0") == "5\n");
    CHECK(row(pg) == "5|21|0\n");

    // The example's two statements are the guide's, character for character.
    const auto example = test::detail::read_file_from(fs::path(ZKLOCK_SOURCE_DIR) / "examples" / "http_counter_pg.cpp");
    CHECK(example.find("R\"(" + g.claim + ")\"") != std::string::npos);
    CHECK(example.find("R\"(" + g.write + ")\"") != std::string::npos);
    // Claim (read), then write while the claim stands; an older claim or write changes nothing.
    CHECK(prepared(pg, "bigint, bigint", g.claim, "30, 0") == "5\n");
    CHECK(prepared(pg, "bigint, bigint", g.claim, "29, 7") == "");
    CHECK(prepared(pg, "bigint, bigint, bigint", g.write, "29, 7, 100") == "");
    CHECK(prepared(pg, "bigint, bigint, bigint", g.write, "30, 0, 6") == "");
    CHECK(row(pg) == "6|30|0\n");
    CHECK(prepared(pg, "bigint, bigint", g.claim, "30, 1") == "6\n");
    CHECK(prepared(pg, "bigint, bigint, bigint", g.write, "30, 0, 100") == "");  // fenced off by (30, 1)
    CHECK(row(pg) == "6|30|1\n");

    // READ COMMITTED's re-check: a transaction holds the row with a newer fence (100) for a moment.
    // A stale UPDATE (fence 50) started meanwhile: its snapshot still has fence 30 (< 50, it would
    // pass), but it waits for the row lock, then evaluates its WHERE again on the committed row.
    scratch_dir dir{"zklock-pg"};
    const auto t0 = clock_type::now();
    while_row_held(pg, dir, 100, [&] { CHECK(prepared(pg, "bigint", g.single, "50") == ""); });
    CHECK(clock_type::now() - t0 >= 1s);  // it waited for the holder's commit
    CHECK(row(pg) == "6|100|0\n");
    // REPEATABLE READ: the same stale UPDATE fails with a serialization error instead.
    std::string failure;
    while_row_held(pg, dir, 200, [&] {
        try {
            pg.psql("BEGIN ISOLATION LEVEL REPEATABLE READ;\nPREPARE s(bigint) AS " + g.single +
                    ";\nEXECUTE s(150);\nCOMMIT;");
        } catch (const std::runtime_error& e) {
            failure = e.what();
        }
    });
    CAPTURE(failure);
    CHECK(failure.find("could not serialize access due to concurrent update") != std::string::npos);
    CHECK(row(pg) == "6|200|0\n");
}

TEST_CASE("http_counter_pg: two instances (one in cohort mode), 16 concurrent clients, no lost update")
{
    const auto g = read_guide();
    pg_server pg;
    pg.psql(g.table);
    run(
        [&]() -> awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            scratch_dir dir{"zklock-pg"};
            const auto servers = shared_server().connect_string();
            const auto lock = unique_path("http-counter-pg");
            const std::vector<std::string> common{"--servers", servers, "--lock", lock, "--pg", pg.conninfo(),
                                                  "--hold-ms", "2", "--lock-timeout-ms", "10000"};
            example_server a, b;
            auto args_a = common;
            args_a.push_back("--cohort");
            start(a, HTTP_COUNTER_PG_PATH, dir, "a", args_a);
            start(b, HTTP_COUNTER_PG_PATH, dir, "b", common);
            co_await wait_listening(a);
            co_await wait_listening(b);

            const int total = 160, clients = 16;
            int handed_out = 0, finished = 0, ok = 0;
            std::array<int, 2> per_server{};
            std::vector<std::string> bad;
            std::int64_t max_local = 0;
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
                            } else {
                                bad.push_back(std::to_string(r.status) + " " + r.error + r.body);
                            }
                        }
                        ++finished;
                    },
                    asio::detached);
            }
            while (finished < clients && clock_type::now() - t0 < 60s) {
                max_local = std::max(max_local, column(pg, "fence_local"));
                co_await sleep_for(100ms);
            }
            MESSAGE(ok << " increments in " << std::chrono::duration<double>(clock_type::now() - t0).count() << " s ("
                       << per_server[0] << " via a, " << per_server[1] << " via b); largest local fence seen "
                       << max_local);
            REQUIRE(finished == clients);
            CAPTURE(bad.empty() ? std::string() : bad.front());
            CHECK(bad.empty());  // no 409 (every fence greater than the last), no 503
            CHECK(ok == total);
            CHECK(per_server[0] > 0);
            CHECK(per_server[1] > 0);

            // No lost update: the row counts every acknowledged increment.
            CHECK(column(pg, "value") == ok);
            http_client ca(ex, a.port);
            const auto v = co_await ca.request(http::verb::get, "/value");
            CHECK(v.status == 200);
            CHECK(v.body == std::to_string(ok) + "\n");

            CHECK(co_await stop(a) == 0);
            CHECK(co_await stop(b) == 0);
            session zk{ex, config_for(servers)};
            co_await connect(zk);
            CHECK((co_await children_of(zk, lock)).empty());
        },
        std::chrono::seconds(90));
}

TEST_CASE("http_counter_pg: a holder paused past its session timeout is refused by the database")
{
    const auto g = read_guide();
    pg_server pg;
    pg.psql(g.table);
    run(
        [&]() -> awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            scratch_dir dir{"zklock-pg"};
            const auto servers = shared_server().connect_string();
            const auto lock = unique_path("http-pg-paused");
            // a: reads, then works 3 s before writing, on a 2 s session (the test has 3 s to see
            // the claim and stop it); b: a normal instance.
            const std::vector<std::string> args_a{"--servers", servers, "--lock", lock, "--pg", pg.conninfo(),
                                                  "--hold-ms", "3000", "--session-timeout-ms", "2000"};
            const std::vector<std::string> args_b{"--servers", servers, "--lock", lock, "--pg", pg.conninfo(),
                                                  "--lock-timeout-ms", "10000"};
            example_server a, b;
            start(a, HTTP_COUNTER_PG_PATH, dir, "a", args_a);
            start(b, HTTP_COUNTER_PG_PATH, dir, "b", args_b);
            co_await wait_listening(a);
            co_await wait_listening(b);

            std::optional<http_reply> paused_reply;
            request_detached(ex, a.port, http::verb::post, "/increment", paused_reply);
            // Once a has read the value and claimed the row with its fence, freeze it mid-work.
            const auto fence_a = co_await wait_claimed(pg, 0);
            REQUIRE(::kill(a.pid, SIGSTOP) == 0);
            const auto stopped_at = clock_type::now();

            // ZooKeeper expires a's session and deletes its node: b takes the lock and increments.
            session zk{ex, config_for(servers)};
            co_await connect(zk);
            REQUIRE(co_await wait_children(zk, lock, 0, 20s) == 0);
            http_client cb(ex, b.port);
            const auto rb = co_await cb.request(http::verb::post, "/increment");
            CHECK(rb.status == 200);
            CHECK(rb.body == "1\n");
            CHECK(column(pg, "fence_zxid") > fence_a);
            MESSAGE("a stopped for " << std::chrono::duration<double>(clock_type::now() - stopped_at).count()
                                     << " s; b's increment: " << rb.status << " " << rb.body);

            // a wakes up "inside" its critical section and writes 0 + 1 with its old fence.
            REQUIRE(::kill(a.pid, SIGCONT) == 0);
            for (int i = 0; i < 1000 && !paused_reply; ++i) co_await sleep_for(10ms);
            REQUIRE(paused_reply.has_value());
            MESSAGE("a's reply after it resumed: " << paused_reply->status << " " << paused_reply->body);
            CHECK(paused_reply->status == 409);
            // Every accepted increment counted once: b's only.
            const int accepted = (rb.status == 200) + (paused_reply->status == 200);
            CHECK(column(pg, "value") == accepted);
            CHECK(column(pg, "value") == 1);

            // a has a fresh session (reconnect_on_expiry) and works again.
            http_client ca2(ex, a.port);
            const auto again = co_await request_until_served(ca2, http::verb::post, "/increment");
            CHECK(again.status == 200);
            CHECK(again.body == "2\n");
            CHECK(co_await stop(a) == 0);
            CHECK(co_await stop(b) == 0);
        },
        std::chrono::seconds(90));
}

TEST_CASE("zklock -c psql: the guide's command line, a paused holder refused by the database")
{
    REQUIRE_MESSAGE(psql_available(), "psql not found (Debian's postgresql-client; scripts/install-deps.sh --test)");
    const auto g = read_guide();
    pg_server pg;
    pg.psql(g.table);
    run(
        [&]() -> awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            scratch_dir dir{"zklock-pg"};
            const auto servers = shared_server().connect_string();
            const auto lock = unique_path("cli-pg-paused");
            test::detail::write_file(dir / "increment.sql", g.increment_sql);
            // The guide's line, on our lock path and with a 2 s session (the default is 10 s).
            const auto line = replace_once(replace_once(g.command_line, "/locks/counter", lock), "zklock ",
                                           "zklock --session-timeout 2s ");
            // `zklock` on PATH is the built one. For a, `psql` is a wrapper that says it runs (its pid
            // and the token it got) and waits for a go file before it runs the real psql.
            fs::create_directories(dir / "bin");
            fs::create_directories(dir / "bin-a");
            fs::create_symlink(ZKLOCK_CLI_PATH, dir / "bin/zklock");
            const auto real_psql = test::detail::run_process({"sh", "-c", "command -v psql"}).out;
            REQUIRE(!real_psql.empty());
            write_executable(dir / "bin-a/psql",
                             "#!/bin/sh\n"
                             "echo \"$$ $ZKLOCK_FENCING_TOKEN\" > '" + dir / "a.started.tmp" + "'\n"
                             "mv '" + dir / "a.started.tmp" + "' '" + dir / "a.started" + "'\n"
                             "while [ ! -e '" + dir / "a.go" + "' ]; do sleep 0.02; done\n" +
                                 real_psql.substr(0, real_psql.find('\n')) + " \"$@\"; rc=$?\n"
                             "echo $rc > '" + dir / "a.rc.tmp" + "'\n"
                             "mv '" + dir / "a.rc.tmp" + "' '" + dir / "a.rc" + "'\n"
                             "exit $rc\n");
            const std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
            child_options env_a{.env = pg.environment()}, env_b{.env = pg.environment()};
            env_a.env.push_back("PATH=" + (dir / "bin-a") + ":" + (dir / "bin") + ":" + path);
            env_b.env.push_back("PATH=" + (dir / "bin") + ":" + path);
            env_a.env.push_back("ZK_SERVERS=" + servers);
            env_b.env.push_back("ZK_SERVERS=" + servers);
            const std::vector<std::string> argv{"/bin/sh", "-c", "cd '" + dir.path().string() + "' && exec " + line};

            child_process a;
            a.start(argv, dir / "a.out", dir / "a.err", env_a);
            const auto deadline = clock_type::now() + 20s;
            while (!fs::exists(dir / "a.started")) {
                REQUIRE_MESSAGE(!a.poll(), "zklock a exited with " << *a.status << ": " << a.err());
                REQUIRE(clock_type::now() < deadline);
                co_await sleep_for(10ms);
            }
            std::istringstream started(test::detail::read_file_from(dir / "a.started"));
            pid_t wrapper = 0;
            std::int64_t token_a = 0;
            started >> wrapper >> token_a;
            REQUIRE(wrapper > 0);
            REQUIRE(token_a > 0);
            // a (zklock, and its psql about to run) stops: its session expires, b takes the lock.
            REQUIRE(::kill(a.pid, SIGSTOP) == 0);
            REQUIRE(::kill(wrapper, SIGSTOP) == 0);
            session zk{ex, config_for(servers)};
            co_await connect(zk);
            REQUIRE(co_await wait_children(zk, lock, 0, 20s) == 0);

            child_process b;
            b.start(argv, dir / "b.out", dir / "b.err", env_b);
            while (!b.poll()) co_await sleep_for(10ms);
            CHECK(*b.status == 0);
            CHECK(b.out() == "1\n");
            CAPTURE(b.err());
            CHECK(column(pg, "fence_zxid") > token_a);

            // a's psql runs now, with a's old token, before a's zklock has resumed.
            test::detail::write_file(dir / "a.go", "");
            REQUIRE(::kill(wrapper, SIGCONT) == 0);
            while (!fs::exists(dir / "a.rc")) co_await sleep_for(10ms);
            const auto rc = test::detail::read_file_from(dir / "a.rc");
            MESSAGE("a's psql, token " << token_a << " after b's: exit " << rc << a.err());
            CHECK(rc == "3\n");  // ON_ERROR_STOP: no row returned, nothing written
            CHECK(a.err().find("no rows returned for \\gset") != std::string::npos);
            REQUIRE(::kill(a.pid, SIGCONT) == 0);
            const auto deadline_a = clock_type::now() + 20s;
            while (!a.poll() && clock_type::now() < deadline_a) co_await sleep_for(10ms);
            REQUIRE(a.poll());
            CHECK(*a.status != 0);
            CHECK(a.out() == "");
            // Every accepted increment counted once: b's only.
            CHECK(column(pg, "value") == 1);
        },
        std::chrono::seconds(90));
}

TEST_CASE("http_counter_pg: a database that stalls or crashes mid-request: a clear error, the lock released")
{
    const auto g = read_guide();
    pg_server pg;
    pg.psql(g.table);
    run(
        [&]() -> awaitable<void> {
            auto ex = co_await asio::this_coro::executor;
            scratch_dir dir{"zklock-pg"};
            const auto servers = shared_server().connect_string();
            const auto lock = unique_path("http-pg-gone");
            const std::vector<std::string> args{"--servers", servers, "--lock", lock, "--pg", pg.conninfo(),
                                                "--hold-ms", "1000", "--db-timeout-ms", "1000"};
            example_server srv;
            start(srv, HTTP_COUNTER_PG_PATH, dir, "srv", args);
            co_await wait_listening(srv);
            session zk{ex, config_for(servers)};
            co_await connect(zk);

            // The server stops answering (SIGSTOP) between the claim and the write.
            std::optional<http_reply> r1;
            auto t0 = clock_type::now();
            request_detached(ex, srv.port, http::verb::post, "/increment", r1);
            const auto fence1 = co_await wait_claimed(pg, 0);
            pg.pause();
            while (!r1) co_await sleep_for(10ms);
            const auto stalled = clock_type::now() - t0;
            MESSAGE("stalled database: " << r1->status << " " << r1->body << " after "
                                         << std::chrono::duration<double>(stalled).count() << " s");
            CHECK(r1->status == 503);
            CHECK(r1->retry_after == "1");
            CHECK(r1->body == "database: no answer within 1000 ms (what was sent may still be applied)\n");
            CHECK(stalled < 5s);
            CHECK((co_await children_of(zk, lock)).empty());  // released before the reply
            // The write that timed out is in the server's socket: it runs when the server wakes,
            // before its backend reads that the example closed the connection. It still carries
            // the latest fence (nobody could claim the row meanwhile), so it lands: a timeout is
            // an unknown outcome, the fence only bounds when it can still land.
            pg.resume();
            const auto drained = clock_type::now() + 10s;
            while (pg.psql("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' "
                           "AND pid <> pg_backend_pid()") != "0\n" &&
                   clock_type::now() < drained)
                co_await sleep_for(10ms);
            CHECK(column(pg, "value") == 1);

            // It works again (a fresh connection: the stalled one was closed).
            http_client cl(ex, srv.port);
            const auto r2 = co_await cl.request(http::verb::post, "/increment");
            CHECK(r2.status == 200);
            CHECK(r2.body == "2\n");

            // The server crashes (immediate shutdown) between the claim and the write.
            std::optional<http_reply> r3;
            const auto fence2 = column(pg, "fence_zxid");  // (read before the request is sent)
            t0 = clock_type::now();
            asio::co_spawn(
                ex, [&]() -> awaitable<void> { r3 = co_await cl.request(http::verb::post, "/increment"); }, asio::detached);
            co_await wait_claimed(pg, fence2);
            pg.crash();
            while (!r3) co_await sleep_for(10ms);
            MESSAGE("crashed database: " << r3->status << " " << r3->body << " after "
                                         << std::chrono::duration<double>(clock_type::now() - t0).count() << " s");
            CHECK(r3->status == 503);
            CHECK(r3->body.rfind("database: ", 0) == 0);
            CHECK(r3->body.find("no answer") == std::string::npos);  // told at once, not timed out
            CHECK(clock_type::now() - t0 < 5s);
            CHECK((co_await children_of(zk, lock)).empty());

            // With no server at all: connection refused, at once.
            const auto r4 = co_await cl.request(http::verb::get, "/value");
            CHECK(r4.status == 503);
            CHECK(r4.body.find("database: ") == 0);
            CHECK(fence1 > 0);
            CHECK(co_await stop(srv) == 0);
        },
        std::chrono::seconds(90));
}
