// The fixture of the `zklock` command-line tests: the binary (and any other program) run as a
// real process, its status, stdout and stderr, and tables of runs with what each must leave.
//
// Every child process is a support/process_util.hpp child_process: started with PR_SET_PDEATHSIG
// (a crashed test leaves nothing running) and killed at the end of its test case; every wait is
// bounded.
#pragma once

#include "../common.hpp"
#include "server.hpp"
#include "support/process_util.hpp"

#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <source_location>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#ifndef ZKLOCK_CLI_PATH
#error "ZKLOCK_CLI_PATH must name the zklock binary"
#endif

namespace zklock::test::cli {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

/// zklock's own exit statuses (`zklock --help`, EXIT STATUS).
inline constexpr int st_usage = 64, st_unavailable = 69, st_not_acquired = 75, st_lost = 79, st_interrupted = 80,
                     st_revoked = 81;

inline std::string slurp(const fs::path& p) { return detail::read_file_from(p); }

inline std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

/// The whitespace-separated words of `line`.
inline std::vector<std::string> fields_of(const std::string& line)
{
    std::istringstream in(line);
    std::vector<std::string> f;
    for (std::string w; in >> w;) f.push_back(w);
    return f;
}

inline bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

inline double seconds_since(clock_type::time_point t)
{
    return std::chrono::duration<double>(clock_type::now() - t).count();
}

inline void touch(const std::string& file) { std::ofstream{file}; }

inline std::string host_name()
{
    std::string host(256, '\0');
    ::gethostname(host.data(), host.size() - 1);
    host.resize(std::strlen(host.c_str()));
    return host;
}

inline const char* signal_text(int sig) { return sig == SIGTERM ? "SIGTERM" : "SIGINT"; }

/// One process started by a test: stdout and stderr go to files named after it.
struct process : child_process {
    std::string name;
};

/// Waits (polling, so the io_context keeps serving the test's own session) until `p` exits.
inline awaitable<bool> wait_exit(process& p, std::chrono::milliseconds limit = 20s)
{
    const auto deadline = clock_type::now() + limit;
    while (!p.poll()) {
        if (clock_type::now() > deadline) co_return false;
        co_await sleep_for(10ms);
    }
    co_return true;
}

inline awaitable<bool> wait_file(const std::string& path, std::chrono::milliseconds limit = 20s)
{
    co_return co_await eventually([&] { return fs::exists(path); }, limit);
}

/// Waits (bounded) until `p` exits and returns its status; one that does not is killed.
inline awaitable<int> finish(process& p, std::chrono::milliseconds limit = 20s)
{
    const bool exited = co_await wait_exit(p, limit);
    if (!exited) {
        ::kill(p.pid, SIGKILL);
        co_await wait_exit(p, 5s);
    }
    REQUIRE_MESSAGE(exited, p.err_file << ": did not exit within " << limit.count() << " ms; stderr: " << p.err());
    co_return *p.status;
}

/// SIGTERM to `p`, then finish().
inline awaitable<int> terminate(process& p, std::chrono::milliseconds limit = 20s)
{
    p.signal(SIGTERM);
    co_return co_await finish(p, limit);
}

/// What a run to its end left.
struct result {
    int status = -1;
    std::string out, err;
    double seconds = 0;  // from start to end, for a run of fixture::run_argv()
};

/// Waits (bounded, as finish()) until `p` exits; what it left.
inline awaitable<result> result_of(process& p, std::chrono::milliseconds limit = 20s)
{
    result r;
    r.status = co_await finish(p, limit);
    r.out = p.out();
    r.err = p.err();
    co_return r;
}

/// `sig` to `p`, then result_of().
inline awaitable<result> signal_and_finish(process& p, int sig, std::chrono::milliseconds limit = 20s)
{
    p.signal(sig);
    co_return co_await result_of(p, limit);
}

/// What a run must leave: its status, all of its stdout or stderr where given, parts that they
/// have or lack, and bounds on how long it took (0: none).
struct expected {
    int status = 0;
    std::optional<std::string> out, err;
    std::vector<std::string> out_has, out_lacks, err_has, err_lacks;
    double at_least = 0, under = 0;  // seconds
};

/// Checks what `r` left against `e`.
inline void check_expected(const result& r, const expected& e)
{
    CHECK(r.status == e.status);
    if (e.out) CHECK(r.out == *e.out);
    if (e.err) CHECK(r.err == *e.err);
    for (const auto& part : e.out_has) CHECK_MESSAGE(has(r.out, part), "stdout lacks: " << part << "\n" << r.out);
    for (const auto& part : e.out_lacks) CHECK_MESSAGE(!has(r.out, part), "stdout has: " << part << "\n" << r.out);
    for (const auto& part : e.err_has) CHECK_MESSAGE(has(r.err, part), "stderr lacks: " << part << "\n" << r.err);
    for (const auto& part : e.err_lacks) CHECK_MESSAGE(!has(r.err, part), "stderr has: " << part << "\n" << r.err);
    if (e.at_least > 0) CHECK(r.seconds >= e.at_least);
    if (e.under > 0) CHECK(r.seconds < e.under);
}

/// check_expected(), a failure naming the line of the call.
inline void check_run(const result& r, const expected& e, std::source_location call = std::source_location::current())
{
    INFO("check_run at " << fs::path(call.file_name()).filename().string() << ":" << call.line());
    check_expected(r, e);
}

/// A row of a table of zklock runs: its arguments (without the program), what it must leave, and
/// "NAME=value" strings added to its environment.
struct run_case {
    std::vector<std::string> args;
    expected want;
    std::vector<std::string> env;
};

/// One test case's processes, in a scratch directory (removed at the end unless a check failed):
/// zklock runs in the background or to their end, and a session of the test's own on `servers`.
/// Everything still running at the end is killed (SIGKILL) and reaped, even when a REQUIRE throws.
///
/// run() gives zklock its arguments as they are (each test names `--servers` where its command line
/// has it); start() and what builds on it put `--servers SERVERS` first.
///
/// A run's arguments are strings of their own, and a table is built in a statement of its own:
/// GCC 12 miscompiles braced lists and aggregate temporaries in a full-expression with co_await.
class fixture {
public:
    /// Runs against `servers` (none: usage errors).
    explicit fixture(std::string server_list = {}) : servers(std::move(server_list)), dir_("zklock-cli") {}
    fixture(const fixture&) = delete;
    fixture& operator=(const fixture&) = delete;

    const std::string servers;

    /// A file in the scratch directory.
    std::string operator/(const std::string& name) const { return dir_ / name; }

    /// The file process `name`'s COMMAND creates once it runs, by this fixture's conventions.
    std::string ready_file(const std::string& name) const { return *this / (name + ".ready"); }
    /// `sh -c` text that creates ready_file(name), then sleeps a minute.
    std::string ready_then_sleep(const std::string& name) const
    {
        return "touch " + ready_file(name) + "; exec sleep 60";
    }

    /// A session of the test's own on `servers`, connected on first use.
    awaitable<std::reference_wrapper<session>> connect()
    {
        if (!zk_) {
            auto ex = co_await asio::this_coro::executor;
            zk_.emplace(ex, config_for(servers));
            co_await zklock::test::connect(*zk_);
        }
        co_return std::ref(*zk_);
    }

    /// Starts `program ARGS...` (argv[0] a path) in the background, without the test's $ZK_SERVERS.
    process& start_program(const std::string& name, const std::vector<std::string>& argv, child_options so = {})
    {
        process& p = procs_.emplace_back();
        p.name = name;
        so.unset.push_back("ZK_SERVERS");
        p.start(argv, *this / (name + ".out"), *this / (name + ".err"), so);
        return p;
    }

    /// Starts `zklock --servers SERVERS ARGS...` in the background.
    template <class... A> process& start(const std::string& name, const A&... args)
    {
        return start_program(name, argv_of(ZKLOCK_CLI_PATH, "--servers", servers, args...));
    }

    /// Runs `zklock ARGS...` to its end (bounded).
    template <class... A> awaitable<result> run(const A&... args) { return run_argv(argv_of(args...)); }
    awaitable<result> run_argv(std::vector<std::string> args)
    {
        return run_argv(std::move(args), std::vector<std::string>{});
    }
    /// Runs `zklock ARGS` to its end (bounded), with `env` added to the environment.
    awaitable<result> run_argv(std::vector<std::string> args, std::vector<std::string> env)
    {
        args.insert(args.begin(), ZKLOCK_CLI_PATH);
        child_options so;
        so.env = std::move(env);
        const auto t0 = clock_type::now();
        auto r = co_await result_of(start_program("run" + std::to_string(procs_.size()), args, so));
        r.seconds = seconds_since(t0);
        co_return r;
    }

    /// Runs `sh -c SCRIPT` to its end (bounded), with `env` added to the environment.
    awaitable<result> run_shell(const std::string& name, const std::string& script, const std::vector<std::string>& env)
    {
        child_options so;
        so.env = env;
        return result_of(start_program(name, {"/bin/sh", "-c", script}, so), 60s);
    }

    /// Waits (bounded) until ready_file(p.name) exists.
    awaitable<void> wait_ready(process& p)
    {
        REQUIRE_MESSAGE(co_await wait_file(ready_file(p.name)), p.name << " is not ready; stderr: " << p.err());
    }

    /// Starts `zklock --servers SERVERS ARGS...` in the background and waits (bounded) until its
    /// COMMAND has created ready_file(name).
    template <class... A>
    awaitable<std::reference_wrapper<process>> start_ready(const std::string& name, const A&... args)
    {
        return ready(start(name, args...));
    }

    /// Starts `zklock --servers SERVERS ARGS...` in the background and waits (bounded) until `path`
    /// has `n` nodes, its own queued among them.
    template <class... A>
    awaitable<std::reference_wrapper<process>> start_queued(const std::string& path, std::size_t n, const std::string& name,
                                                            const A&... args)
    {
        return queued(start(name, args...), path, n);
    }

    /// A holder, `zklock --servers SERVERS EXTRA... PATH -- sh -c ready_then_sleep(name)`, started
    /// and waited for.
    template <class... A>
    awaitable<std::reference_wrapper<process>> holder(const std::string& name, const std::string& path, const A&... extra)
    {
        return start_ready(name, extra..., path, "--", "sh", "-c", ready_then_sleep(name));
    }

    /// Runs `zklock ARGS...` to its end (bounded), which must exit 0 with `n` lines on stdout; the lines.
    template <class... A> awaitable<std::vector<std::string>> output_lines(std::size_t n, const A&... args)
    {
        const auto r = co_await run(args...);
        CHECK_MESSAGE(r.status == 0, "stderr: " << r.err);
        auto lines = lines_of(r.out);
        REQUIRE_MESSAGE(lines.size() == n, "stdout:\n" << r.out);
        co_return lines;
    }

    /// `sh -c` text for a COMMAND that sets `trap ACTION SIG`, creates ready_file(name), then loops
    /// until it ends.
    std::string trap_and_loop(const std::string& name, const std::string& action, const std::string& sig = "TERM") const
    {
        return "trap '" + action + "' " + sig + "; touch " + ready_file(name) + "; while :; do sleep 0.05; done";
    }

    /// Runs every row of `rows` in order, checks what each left (the row's command line captured)
    /// and returns the results.
    awaitable<std::vector<result>> expect(const std::vector<run_case>& rows)
    {
        std::vector<result> results;
        for (const auto& c : rows) {
            std::string command = "zklock";
            for (const auto& a : c.args) command += " '" + a + "'";
            CAPTURE(command);
            results.push_back(co_await run_argv(c.args, c.env));
            check_expected(results.back(), c.want);
        }
        co_return results;
    }

private:
    template <class... A> static std::vector<std::string> argv_of(const A&... args)
    {
        std::vector<std::string> argv;
        (argv.emplace_back(args), ...);
        return argv;
    }
    awaitable<std::reference_wrapper<process>> ready(process& p)
    {
        co_await wait_ready(p);
        co_return std::ref(p);
    }
    awaitable<std::reference_wrapper<process>> queued(process& p, std::string path, std::size_t n)
    {
        session& zk = co_await connect();
        REQUIRE_MESSAGE(co_await wait_children(zk, path, n) == n, p.name << " is not queued; stderr: " << p.err());
        co_return std::ref(p);
    }

    scratch_dir dir_;
    std::optional<session> zk_;
    std::deque<process> procs_;  // stable addresses; destroyed (killed) before dir_
};

/// Runs `body(t)` as the test case's coroutine (run(), with its watchdog), `t` a fixture whose
/// runs go to `servers`; a body that takes a session too, `body(t, zk)`, is given the fixture's own,
/// connected first.
template <class Body> void run_cli(std::string servers, Body body)
{
    run([&]() -> awaitable<void> {
        fixture t{servers};
        if constexpr (std::is_invocable_v<Body&, fixture&, session&>) {
            session& zk = co_await t.connect();
            co_await body(t, zk);
        } else {
            co_await body(t);
        }
    });
}

/// The same with no server: usage errors and the like.
template <class Body> void run_cli(Body body) { run_cli(std::string(), std::move(body)); }

// ---- refusals and --help -----------------------------------------------------------------------

/// A command line zklock must refuse: status 64 and one "zklock: " line on stderr containing `message`.
struct usage_case {
    std::vector<std::string> args;
    std::string message;
};

/// Runs every case and checks its refusal, then `zklock --help`: status 0, and its text has every
/// one of `help`.
inline awaitable<void> expect_usage_errors(fixture& t, const std::vector<usage_case>& cases,
                                           const std::vector<std::string>& help)
{
    for (const auto& c : cases) {
        CAPTURE(c.message);
        const auto r = co_await t.run_argv(c.args);
        CHECK(r.status == st_usage);
        CHECK_MESSAGE(has(r.err, c.message), "stderr: " << r.err);
        CHECK(r.err.rfind("zklock: ", 0) == 0);
        CHECK(lines_of(r.err).size() == 1);  // one line
    }
    const auto text = co_await t.run("--help");
    CHECK(text.status == 0);
    for (const auto& w : help) CHECK_MESSAGE(has(text.out, w), w);
}

/// The long options `zklock --help` lists, each with its value's name ("" for a flag) and its
/// short name (0: none), in the order listed.
struct help_option {
    std::string name, value;
    char short_name = 0;
};
inline std::vector<help_option> help_options(const std::string& help)
{
    std::vector<help_option> out;
    bool in_options = false;
    for (const auto& line : lines_of(help)) {
        if (line == "OPTIONS") in_options = true;
        else if (!line.empty() && line[0] != ' ') in_options = false;
        if (!in_options) continue;
        // "  -w, --timeout DURATION      Give up ..." or "      --servers H:P,...       ZooKeeper ..."
        const auto dashes = line.find("--");
        if (line.rfind("  -", 0) != 0 && line.rfind("      --", 0) != 0) continue;
        if (dashes == std::string::npos || dashes > 6) continue;
        help_option o;
        if (line[2] == '-' && line[3] != '-') o.short_name = line[3];
        const auto name_end = line.find_first_of(" =", dashes);
        o.name = line.substr(dashes + 2, name_end - dashes - 2);
        if (name_end != std::string::npos && line.size() > name_end + 1 && line[name_end + 1] != ' ')
            o.value = line.substr(name_end + 1, line.find(' ', name_end + 1) - name_end - 1);
        out.push_back(o);
    }
    return out;
}

/// `zklock --help` (status 0): its text, and the options it lists (at least 20).
struct help_listing {
    std::string text;
    std::vector<help_option> options;
};
inline awaitable<help_listing> zklock_help(fixture& t)
{
    const auto help = co_await t.run("--help");
    REQUIRE(help.status == 0);
    help_listing listing{help.out, help_options(help.out)};
    REQUIRE(listing.options.size() >= 20);
    co_return listing;
}

// ---- COMMANDs and what zklock prints -----------------------------------------------------------

/// A trap ACTION (fixture::trap_and_loop()) that appends "term" to `log` and exits 0.
inline std::string log_term_and_exit(const std::string& log) { return "echo term >> " + log + "; exit 0"; }

/// `sh -c` text that marks `name` ready, waits until the test creates `name`.go, then logs `name` end.
inline std::string hold_until_go(const fixture& t, const std::string& name, const std::string& log)
{
    return "touch " + t.ready_file(name) + "; while [ ! -e " + t / (name + ".go") + " ]; do sleep 0.05; done; echo " +
           name + "-end >> " + log;
}

/// The fields of `line`: as many as `expected`, each equal to the expected one where that is not
/// empty.
inline std::vector<std::string> check_fields(const std::string& line, const std::vector<std::string>& expected)
{
    CAPTURE(line);
    auto f = fields_of(line);
    REQUIRE(f.size() == expected.size());
    for (std::size_t i = 0; i < f.size(); ++i)
        if (!expected[i].empty()) CHECK(f[i] == expected[i]);
    return f;
}

/// Waits (bounded) until `p`'s stdout has `n` lines, and no more; the fields of the last of them,
/// checked as check_fields() does against `expected`.
inline awaitable<std::vector<std::string>> fields_of_line(const process& p, std::size_t n,
                                                          const std::vector<std::string>& expected)
{
    std::vector<std::string> lines;
    co_await eventually([&] { return (lines = lines_of(p.out())).size() >= n; }, 20s);
    REQUIRE_MESSAGE(lines.size() == n, p.out());
    co_return check_fields(lines[n - 1], expected);
}

/// `p`, whose COMMAND ignores SIGTERM, ends with `status` (bounded): SIGKILL after --kill-after 1s,
/// counted from `t0`, and stderr says so and why (`killed`).
inline awaitable<void> check_killed(process& p, int status, clock_type::time_point t0, const std::string& killed)
{
    CHECK(co_await finish(p, 10s) == status);
    CHECK(seconds_since(t0) >= 0.9);
    CHECK(seconds_since(t0) < 6);
    CHECK(has(p.err(), "sending SIGKILL"));
    CHECK_MESSAGE(has(p.err(), killed), p.err());
}

/// The column each header word of `header` starts at ("POS STATE ..."), by word.
inline std::map<std::string, std::size_t> column_starts(const std::string& header)
{
    std::map<std::string, std::size_t> at;
    for (std::size_t i = 0; i < header.size(); ++i)
        if (header[i] != ' ' && (i == 0 || header[i - 1] == ' ')) at[header.substr(i, header.find(' ', i) - i)] = i;
    return at;
}

/// Whether `line` has a cell starting at column `c`: a space before it (or the line's start) and
/// a non-space there.
inline bool cell_at(const std::string& line, std::size_t c)
{
    return c < line.size() && line[c] != ' ' && (c == 0 || line[c - 1] == ' ');
}

/// Every cell of `rows` starts where its column's word in `header` does.
inline void check_aligned(const std::string& header, const std::vector<std::string>& rows)
{
    const auto at = column_starts(header);
    for (const auto& row : rows) {
        CAPTURE(row);
        for (const auto& [column, c] : at) CHECK_MESSAGE(cell_at(row, c), column);
    }
}

// ---- the build tree ----------------------------------------------------------------------------

/// The build tree the zklock binary is in (the one holding CMakeCache.txt).
inline fs::path build_tree()
{
    for (fs::path dir = fs::path(ZKLOCK_CLI_PATH).parent_path(); dir.has_relative_path(); dir = dir.parent_path())
        if (fs::exists(dir / "CMakeCache.txt")) return dir;
    return {};
}

/// A value of the build tree's CMakeCache.txt ("CMAKE_COMMAND", "CMAKE_HOME_DIRECTORY", ...);
/// empty if not found.
inline std::string cmake_cache(const std::string& key)
{
    const auto dir = build_tree();
    if (dir.empty()) return {};
    for (const auto& line : lines_of(slurp(dir / "CMakeCache.txt"))) {
        const auto colon = line.find(':'), eq = line.find('=');
        if (colon != std::string::npos && eq != std::string::npos && colon < eq && line.substr(0, colon) == key)
            return line.substr(eq + 1);
    }
    return {};
}

inline fs::path source_tree() { return cmake_cache("CMAKE_HOME_DIRECTORY"); }

}  // namespace zklock::test::cli
