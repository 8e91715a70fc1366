// zklock_bench — the benchmark of bench/PROTOCOL.md: scenarios U, C64, W1000, W10000 and
// the floor, each lock figure also given as a ratio to the floor measured in the same run; and the
// lock family's scenarios RW64 (shared_mutex) and S64 (semaphore), against the C64 floor.
//
//   zklock_bench [--scenario U|C64|W1000|W10000|W<N>|RW64|S64|floor|all|family[,...]] [--servers H:P]
//                [--duration S] [--warmup S] [--waiters N] [--repeat N] [--json FILE] [--plot DIR]
//                [--hold-us N] [--permits N]
//
// Everything runs on ONE thread: one io_context, every session and every contender on it.
// Output: one JSON line per scenario on stdout (and appended to --json FILE), then a short table;
// progress on stderr. See bench/README.md for what each figure means.
//
// What the floor is (the same definitions are in bench/README.md). The floor issues the ZooKeeper
// operations a lock cycle needs through zklock's own session layer (zklock::session, its public
// async_* functions) with no lock logic: no acquire state machine, no lease, no queue parsing
// beyond finding the predecessor, no own-node watch. Each floor runs right before the lock
// scenario it is compared with, on the same server, with the same sessions × contenders layout,
// the same node names ("x-<16 hex>-<seq>") and the same node data ("<host>:<pid>"), so listings
// carry the same bytes:
//  * floor U: one contender; cycle = create(ephemeral sequential) and get_children sent back to
//    back (pipelined, one round trip), both awaited; then remove, awaited. acquire = the pipelined
//    pair, release = the remove.
//  * floor C64 (and the C64 handoff floor): 8 sessions × 8 contenders, each looping the raw queue
//    cycle: create + get_children pipelined; if a node with a smaller sequence exists, set a data
//    watch on the largest such one (the predecessor), wait for its event, then get_children again
//    (any correct queue lock must look again: a vanished predecessor may have been an abandoned
//    waiter, not the holder); repeat until no smaller node is left; then remove. Figures as for C64.
//  * floor ping-pong: two sessions; the holder creates a node, the waiter sets a data watch on it,
//    the holder removes it, the waiter gets the event. handoff = event received − remove called.
//    This is the pure notification latency; a correct lock adds one get_children round trip.
//  * floor W<N>: N raw contenders over 16 sessions run the C64 raw cycle once, all at once.
//  * RW64 and S64 are compared with the C64 floor of the same run (measured before the first of
//    them unless C64 already measured it): the raw exclusive queue cycle is what a lock of the
//    family can at best cost per acquisition.
// With --hold-us N, every holder of C64, RW64, S64 and of the C64 floor waits N µs on a
// steady_timer between its acquire and its release; with 0 (the default) there is no timer.
#include "stats.hpp"
#include "svg_plot.hpp"

#include "support/zk_server.hpp"

#include <zklock/detail/path.hpp>
#include <zklock/lease.hpp>
#include <zklock/mutex.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json.hpp>
#include <boost/program_options.hpp>

#include <malloc.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace json = boost::json;
namespace po = boost::program_options;
using namespace std::chrono_literals;
using zklock::error_code;
using zklock_bench::acquisition;

namespace {

// ---- clock, process figures -----------------------------------------------------------------------

using clock_type = std::chrono::steady_clock;
const clock_type::time_point g_epoch = clock_type::now();

std::int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - g_epoch).count(); }
clock_type::time_point at_ns(std::int64_t t) { return g_epoch + std::chrono::nanoseconds(t); }
std::int64_t seconds_ns(double s) { return static_cast<std::int64_t>(s * 1e9); }

/// A "Key:  value kB" line of /proc/self/status, as a number (-1 if absent).
long proc_status(const char* key)
{
    std::ifstream in("/proc/self/status");
    const std::size_t n = std::strlen(key);
    for (std::string line; std::getline(in, line);)
        if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':') return std::atol(line.c_str() + n + 1);
    return -1;
}

int os_threads() { return static_cast<int>(proc_status("Threads")); }
double peak_rss_mb() { return static_cast<double>(proc_status("VmHWM")) / 1024.0; }

/// Starts a fresh peak-RSS window: gives freed heap back to the OS, then resets VmHWM to the
/// current RSS (Linux >= 4.0, "5" > /proc/self/clear_refs). Without this a scenario would inherit
/// the peak of the one before (e.g. W10000's floor).
void reset_peak_rss()
{
    ::malloc_trim(0);
    std::ofstream("/proc/self/clear_refs") << "5";
}

/// CPU seconds (user, system) used so far by a process, from /proc/<pid>/stat; {0,0} if unknown.
std::pair<double, double> cpu_seconds(const std::string& pid = "self")
{
    std::ifstream in("/proc/" + pid + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');  // the command name may contain spaces
    if (close == std::string::npos) return {0, 0};
    std::istringstream rest(text.substr(close + 2));
    std::string field;
    double utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
        if (i == 14) utime = std::atof(field.c_str());
        if (i == 15) stime = std::atof(field.c_str());
    }
    const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
    return {utime / hz, stime / hz};
}

// ---- four-letter words to any host:port -----------------------------------------------------------

std::string four_letter(const std::string& host, const std::string& port, const std::string& cmd)
{
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) return {};
    std::string reply;
    for (addrinfo* ai = res; ai && reply.empty(); ai = ai->ai_next) {
        int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) continue;
        timeval tv{3, 0};  // bounds connect, send and every recv
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
            ::send(fd, cmd.data(), cmd.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(cmd.size())) {
            char buf[4096];
            for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<std::size_t>(n));
        }
        ::close(fd);
    }
    ::freeaddrinfo(res);
    return reply;
}

using endpoint_list = std::vector<std::pair<std::string, std::string>>;  // (host, port)

/// Resets every server's statistics (`srst`), the packet counters included.
void reset_server_stats(const endpoint_list& servers)
{
    for (const auto& [host, port] : servers) four_letter(host, port, "srst");
}

/// The sum over the servers of the packets they received (`srvr`: "Received: N"); nullopt when
/// one does not answer.
std::optional<std::int64_t> packets_received(const endpoint_list& servers)
{
    std::int64_t sum = 0;
    for (const auto& [host, port] : servers) {
        const std::string reply = four_letter(host, port, "srvr");
        const std::string key = "Received: ";
        const auto p = reply.find(key);
        if (p == std::string::npos) return std::nullopt;
        sum += std::atoll(reply.c_str() + p + key.size());
    }
    return sum;
}

/// "h1:p1,[::1]:p2/chroot" -> {(h1, p1), (::1, p2)}.
endpoint_list parse_endpoints(const std::string& servers)
{
    endpoint_list out;
    const std::string list = servers.substr(0, servers.find('/'));
    for (std::size_t pos = 0; pos < list.size();) {
        const std::size_t comma = std::min(list.find(',', pos), list.size());
        const std::string hp = list.substr(pos, comma - pos);
        pos = comma + 1;
        const auto colon = hp.rfind(':');
        if (colon == std::string::npos) continue;
        std::string host = hp.substr(0, colon);
        if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
        out.emplace_back(host, hp.substr(colon + 1));
    }
    return out;
}

// ---- options --------------------------------------------------------------------------------------

struct options {
    std::vector<std::string> scenarios;  // expanded: U, C64, W<N>, RW64, S64, floor
    std::string servers;                 // empty: start our own server
    double duration = 5;                 // U measures this long (after duration/5 of warm-up); C64, RW64, S64 twice it
    double warmup = 20;
    int waiters = 0;                     // W's N override (0: per scenario name)
    int repeat = 1;
    std::string json_file, plot_dir;
    std::int64_t hold_us = 0;            // C64, RW64, S64 and their floor: µs each holder holds
    std::int64_t permits = 4;            // S64's semaphore
};

constexpr int w_sessions = 16;
constexpr double w_bound_s = 300;  // PROTOCOL.md: W completes within 300 s

/// Parses the command line; std::nullopt (after printing why) to exit with `exit_code`.
std::optional<options> parse_options(int argc, char** argv, int& exit_code)
{
    options o;
    std::string scenario = "all";
    po::options_description desc("zklock_bench: the zklock benchmark (see bench/README.md)\noptions");
    desc.add_options()
        ("help,h", "this help")
        ("scenario", po::value(&scenario)->default_value("all"),
         "U | C64 | W1000 | W10000 | W<N> | RW64 | S64 | floor | all (U,C64,W1000,W10000,floor) | "
         "family (RW64,S64,floor), or a comma-separated list")
        ("servers", po::value(&o.servers), "use this existing ZooKeeper (H:P) instead of starting one")
        ("duration", po::value(&o.duration)->default_value(5.0),
         "seconds U measures (C64, RW64, S64: twice that; U's warm-up and ping-pong: a fifth / the same)")
        ("warmup", po::value(&o.warmup)->default_value(20.0), "seconds of contended server warm-up before measuring")
        ("waiters", po::value(&o.waiters), "N of the W scenario (replaces W1000/W10000 by one W<N>)")
        ("repeat", po::value(&o.repeat)->default_value(1), "run everything this many times, then print medians")
        ("json", po::value(&o.json_file), "append the JSON lines to this file")
        ("plot", po::value(&o.plot_dir), "write SVG plots (wait distribution, grant vs queue order) into this directory")
        ("hold-us", po::value(&o.hold_us)->default_value(0),
         "microseconds each holder holds the lock (a timer) in C64, RW64, S64 and their floor; 0: no timer")
        ("permits", po::value(&o.permits)->default_value(4), "permits of S64's semaphore");
    po::variables_map vm;
    try {
        po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
        po::notify(vm);
    } catch (const po::error& e) {
        std::cerr << "zklock_bench: " << e.what() << "\n" << desc;
        exit_code = 2;
        return std::nullopt;
    }
    if (vm.count("help")) {
        std::cout << desc;
        exit_code = 0;
        return std::nullopt;
    }
    auto fail = [&](const std::string& why) {
        std::cerr << "zklock_bench: " << why << "\n";
        exit_code = 2;
        return std::nullopt;
    };
    if (!(o.duration > 0) || !(o.warmup >= 0) || o.repeat < 1 || (vm.count("waiters") && o.waiters < 1))
        return fail("--duration must be > 0, --warmup >= 0, --repeat and --waiters >= 1");
    if (o.hold_us < 0 || o.hold_us > 60'000'000) return fail("--hold-us must be in 0..60000000");
    if (o.permits < 1 || o.permits > 1'000'000) return fail("--permits must be in 1..1000000");
    if (!o.servers.empty() && o.servers.find(':') == std::string::npos) return fail("--servers wants H:P");

    std::vector<std::string> wanted;
    for (std::size_t pos = 0; pos <= scenario.size();) {
        std::size_t comma = std::min(scenario.find(',', pos), scenario.size());
        std::string s = scenario.substr(pos, comma - pos);
        pos = comma + 1;
        if (s == "all") wanted.insert(wanted.end(), {"U", "C64", "W1000", "W10000", "floor"});
        else if (s == "family") wanted.insert(wanted.end(), {"RW64", "S64", "floor"});
        else if (s == "U" || s == "C64" || s == "RW64" || s == "S64" || s == "floor") wanted.push_back(s);
        else if (s.size() > 1 && s[0] == 'W' && s.find_first_not_of("0123456789", 1) == std::string::npos &&
                 std::atoi(s.c_str() + 1) > 0)
            wanted.push_back("W" + std::to_string(std::atoi(s.c_str() + 1)));
        else if (s == "W") wanted.push_back("W" + std::to_string(o.waiters > 0 ? o.waiters : 1000));
        else return fail("unknown scenario '" + s + "'");
    }
    bool floor_wanted = false;
    for (auto& s : wanted) {
        if (s == "floor") { floor_wanted = true; continue; }
        if (s[0] == 'W' && o.waiters > 0) s = "W" + std::to_string(o.waiters);
        if (std::find(o.scenarios.begin(), o.scenarios.end(), s) == o.scenarios.end()) o.scenarios.push_back(s);
    }
    if (floor_wanted && o.scenarios.empty()) {  // floor alone: every floor
        o.scenarios = {"U", "C64", "W" + std::to_string(o.waiters > 0 ? o.waiters : 1000)};
        if (o.waiters == 0) o.scenarios.push_back("W10000");
    }
    if (floor_wanted) o.scenarios.push_back("floor");
    return o;
}

// ---- results --------------------------------------------------------------------------------------

/// An ordered list of named figures (the order of PROTOCOL.md).
struct figures {
    std::vector<std::pair<std::string, double>> list;
    void add(std::string name, double v) { list.emplace_back(std::move(name), v); }
    std::optional<double> get(const std::string& name) const
    {
        for (auto& [n, v] : list)
            if (n == name) return v;
        return std::nullopt;
    }
};

struct scenario_result {
    std::string scenario;  // "U", "C64", "W1000", "pingpong", ...
    bool floor = false;
    int sessions = 0, contenders = 0;
    std::int64_t hold_us = 0;  // what each holder held (C64, RW64, S64 and the C64 floor)
    std::int64_t permits = 0;  // S64: the semaphore's permits (0: not a semaphore)
    // The figures compared with the floor's figure of the same name (empty: all). RW64 and S64
    // against the C64 floor: only those that measure the same thing for a mutex's raw cycle.
    std::vector<std::string> vs_floor;
    figures figs;
    std::vector<acquisition> acqs;  // for the plots
    std::int64_t failures = 0;
    std::string first_error;
};

bool is_integer_figure(const std::string& n)
{
    return n == "min_count" || n == "max_count" || n == "fifo_inversions" || n == "threads" || n == "completed" ||
           n == "max_concurrent_readers" || n == "writer_overlaps" || n == "max_concurrent_holders";
}

double round_to(double v, int digits)
{
    const double f = std::pow(10.0, digits);
    return std::round(v * f) / f;
}

json::value figure_value(const std::string& name, double v)
{
    if (!std::isfinite(v)) return nullptr;
    if (is_integer_figure(name)) return static_cast<std::int64_t>(std::llround(v));
    if (name == "jain_index") return round_to(v, 6);
    if (name == "requests_per_acquisition") return round_to(v, 2);
    if (name.ends_with("_ms") || name.ends_with("drain_s")) return round_to(v, 3);
    return round_to(v, 1);
}

json::value ratio_value(std::optional<double> lock, std::optional<double> floor)
{
    if (!lock || !floor || *floor == 0 || !std::isfinite(*lock / *floor)) return nullptr;
    return round_to(*lock / *floor, 3);
}

// ---- the benchmark's context ----------------------------------------------------------------------

struct bench_ctx {
    options opt;
    std::string servers;  // what sessions connect to
    std::string root;     // "/zklock-bench/<pid>-<random>": every path of this process is below
    std::string node_data;
    json::object server_config;
    std::ofstream json_out;
    std::string fl_host, fl_port;  // where four-letter words go
    endpoint_list fl_all;          // every server of the connect string: packet counts
    std::string server_pid;        // our own server's java process (for its CPU time), or empty
    int run = 1;
    int errors = 0;  // failures, overlapping grants, FIFO inversions, incomplete W: exit status 1
    std::vector<std::pair<std::string, scenario_result>> floors;  // of the current run, in measuring order
    std::map<std::string, std::vector<json::object>> lines;  // every run's JSON object per scenario
};

zklock::session_config session_cfg(const bench_ctx& c)
{
    zklock::session_config cfg;
    cfg.servers = c.servers;
    return cfg;
}

using session_list = std::vector<std::shared_ptr<zklock::session>>;

asio::awaitable<session_list> connect_sessions(const bench_ctx& c, int n)
{
    auto ex = co_await asio::this_coro::executor;
    const zklock::session_config cfg = session_cfg(c);
    session_list v;
    for (int i = 0; i < n; ++i) {
        v.push_back(std::make_shared<zklock::session>(ex, cfg));
        co_await v.back()->async_connect();
    }
    co_return v;
}

/// Creates `path` and missing parents as persistent nodes.
asio::awaitable<void> ensure_path(zklock::session& s, const std::string& path)
{
    for (std::size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
        const std::string prefix = path.substr(0, slash);
        auto r = co_await s.async_create(prefix, std::string(), zklock::create_mode::persistent, asio::as_tuple(asio::deferred));
        if (std::get<0>(r) && std::get<0>(r) != zklock::zk_errc::node_exists)
            throw boost::system::system_error(std::get<0>(r), "create " + prefix);
        if (slash == std::string::npos) break;
    }
}

/// Removes an (empty) scenario directory; errors are only reported.
asio::awaitable<void> remove_dir(zklock::session& s, const std::string& path)
{
    auto r = co_await s.async_remove(path, -1, asio::as_tuple(asio::deferred));
    if (std::get<0>(r) && std::get<0>(r) != zklock::zk_errc::no_node)
        std::fprintf(stderr, "zklock_bench: cannot remove %s: %s\n", path.c_str(), std::get<0>(r).message().c_str());
}

// ---- shared state of one scenario's contenders ------------------------------------------------------

struct run_state {
    explicit run_state(asio::any_io_executor ex) : wake(std::move(ex)) {}
    std::vector<acquisition> acqs;
    std::vector<std::int64_t> counts;  // per contender
    std::int64_t stop_ns = 0;          // loops start no new cycle after this
    std::int64_t bound_ns = 0;         // hard bound: acquires give up, the scenario stops waiting
    std::int64_t first_request = -1;
    int expected = 0, done = 0;
    std::int64_t failures = 0;
    std::string first_error;
    asio::steady_timer wake;

    void fail(const std::string& what)
    {
        if (failures++ == 0) first_error = what;
    }
    void request(std::int64_t t)
    {
        if (first_request < 0 || t < first_request) first_request = t;
    }
    void record(const acquisition& a)
    {
        acqs.push_back(a);
        ++counts[static_cast<std::size_t>(a.contender)];
    }
};

/// The co_spawn completion of a contender: counts it as done, notes an escaped exception.
auto contender_done(std::shared_ptr<run_state> st)
{
    return [st](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& x) {
                st->fail(x.what());
            }
        }
        if (++st->done == st->expected) st->wake.cancel();
    };
}

/// Waits until every contender is done or the bound passed; true if all are done.
asio::awaitable<bool> wait_all(run_state& st)
{
    while (st.done < st.expected) {
        if (now_ns() >= st.bound_ns) co_return false;
        st.wake.expires_at(at_ns(st.bound_ns));
        co_await st.wake.async_wait(asio::as_tuple(asio::deferred));
    }
    co_return true;
}

/// Samples the OS thread count every 100 ms and prints progress on stderr every second.
struct sampler_state {
    explicit sampler_state(asio::any_io_executor ex) : timer(std::move(ex)) {}
    asio::steady_timer timer;
    int max_threads = 0;
    bool stopped = false;
    std::function<std::string()> progress;
    std::int64_t started = now_ns(), last_progress = now_ns();
};

asio::awaitable<void> sample_loop(std::shared_ptr<sampler_state> s)
{
    while (!s->stopped) {
        s->max_threads = std::max(s->max_threads, os_threads());
        if (s->progress && now_ns() - s->last_progress >= seconds_ns(1)) {
            s->last_progress = now_ns();
            std::fprintf(stderr, "  [%5.1f s] %s\n", static_cast<double>(now_ns() - s->started) / 1e9, s->progress().c_str());
        }
        s->timer.expires_after(100ms);
        co_await s->timer.async_wait(asio::as_tuple(asio::deferred));
    }
}

std::shared_ptr<sampler_state> start_sampler(asio::any_io_executor ex, std::function<std::string()> progress)
{
    reset_peak_rss();
    auto s = std::make_shared<sampler_state>(ex);
    s->progress = std::move(progress);
    s->max_threads = os_threads();
    asio::co_spawn(ex, sample_loop(s), asio::detached);
    return s;
}

void stop_sampler(sampler_state& s)
{
    if (s.stopped) return;
    s.stopped = true;
    s.timer.cancel();
    s.max_threads = std::max(s.max_threads, os_threads());
}

/// Stops a sampler when leaving a scope, also by an exception.
struct sampler_guard {
    std::shared_ptr<sampler_state> s;
    ~sampler_guard()
    {
        if (s) stop_sampler(*s);
    }
};

// ---- the raw queue cycle of the floor ---------------------------------------------------------------

std::int64_t seq_of(std::string_view name)
{
    std::int64_t seq = -1;
    if (name.size() >= 10) std::from_chars(name.data() + name.size() - 10, name.data() + name.size(), seq);
    return seq;
}

/// The queue node just before ours: the largest sequence number below `own`; empty if none.
std::string_view predecessor(const std::vector<std::string>& children, std::int64_t own)
{
    std::string_view best;
    std::int64_t best_seq = -1;
    for (const auto& c : children) {
        const std::int64_t s = seq_of(c);
        if (s < own && s > best_seq) {
            best_seq = s;
            best = c;
        }
    }
    return best;
}

/// Raw acquire (floor): create + get_children pipelined, then watch-predecessor / re-list until no
/// smaller node is left. Sets `own` to our node's path.
asio::awaitable<error_code> raw_acquire(zklock::session& s, const std::string& dir, const std::string& data,
                                        std::string& own)
{
    const std::string prefix = zklock::detail::join_path(
        dir, zklock::detail::node_prefix(zklock::detail::node_kind::exclusive, zklock::detail::new_attempt_id()));
    auto r = co_await asio::experimental::make_parallel_group(
                 s.async_create(prefix, data, zklock::create_mode::ephemeral_sequential, asio::deferred),
                 s.async_get_children(dir, asio::deferred))
                 .async_wait(asio::experimental::wait_for_all(), asio::deferred);
    if (std::get<1>(r)) co_return std::get<1>(r);
    own = std::move(std::get<2>(r));
    const std::int64_t own_seq = seq_of(own);
    if (std::get<4>(r)) co_return std::get<4>(r);
    std::vector<std::string> children = std::move(std::get<5>(r));
    for (;;) {
        const std::string_view pred = predecessor(children, own_seq);
        if (pred.empty()) co_return error_code{};
        const std::string pred_path = zklock::detail::join_path(dir, pred);
        children = std::vector<std::string>();  // not kept while waiting (W10000: 10000 × 300 KB)
        auto w = co_await s.async_watch_data(pred_path, asio::as_tuple(asio::deferred));
        if (!std::get<0>(w)) {
            auto ev = co_await std::get<3>(w).async_wait(asio::as_tuple(asio::deferred));
            if (std::get<0>(ev)) co_return std::get<0>(ev);
        } else if (std::get<0>(w) != zklock::zk_errc::no_node) {
            co_return std::get<0>(w);
        }
        auto l = co_await s.async_get_children(dir, asio::as_tuple(asio::deferred));
        if (std::get<0>(l)) co_return std::get<0>(l);
        children = std::move(std::get<1>(l));
    }
}

/// What a contender acquires: zklock::mutex, a shared_mutex's read or write side, a semaphore's
/// permit. The floor ignores it (always the raw exclusive queue cycle).
enum class lock_kind { mutex, reader, writer, permit };

/// How a scenario's contenders behave.
struct contender_plan {
    bool loop = false;                // loop until stop_ns (C64, RW64, S64), or acquire once (W)
    bool floor = false;               // the raw queue cycle instead of the lock
    std::int64_t hold_ns = 0;         // > 0: wait this long on a timer between acquire and release
    std::uint32_t permits = 1;        // lock_kind::permit's semaphore
    bool sessions_in_blocks = false;  // contender i on session i / (contenders / sessions), not i % sessions
    std::function<lock_kind(int)> kind_of = [](int) { return lock_kind::mutex; };
    bool count_requests = false;      // srst / srvr around the contenders' run: requests_per_acquisition
};

/// One contender: acquire → (hold) → release, once or looping until st->stop_ns.
asio::awaitable<void> contender(std::shared_ptr<zklock::session> s, std::string dir, std::shared_ptr<run_state> st,
                                int id, bool loop, bool floor, std::string data, lock_kind kind, std::int64_t hold_ns,
                                std::uint32_t permits)
{
    zklock::mutex m(*s, dir);
    std::optional<zklock::shared_mutex> sm;
    std::optional<zklock::semaphore> sem;
    if (!floor && (kind == lock_kind::reader || kind == lock_kind::writer)) sm.emplace(*s, dir);
    if (!floor && kind == lock_kind::permit) sem.emplace(*s, dir, permits);
    std::optional<asio::steady_timer> hold;  // none with hold 0: not even the timer object
    if (hold_ns > 0) hold.emplace(co_await asio::this_coro::executor);
    do {
        acquisition a;
        a.contender = id;
        a.t_request = now_ns();
        st->request(a.t_request);
        if (floor) {
            std::string own;
            const error_code ec = co_await raw_acquire(*s, dir, data, own);
            a.t_acquired = now_ns();
            if (ec) {
                st->fail("raw acquire: " + ec.message());
                if (!own.empty()) co_await s->async_remove(own, -1, asio::as_tuple(asio::deferred));
                break;
            }
            a.seq = seq_of(own);
            if (hold) {
                hold->expires_after(std::chrono::nanoseconds(hold_ns));
                co_await hold->async_wait(asio::as_tuple(asio::deferred));
            }
            a.t_release_start = now_ns();
            auto rr = co_await s->async_remove(own, -1, asio::as_tuple(asio::deferred));
            a.t_released = now_ns();
            if (std::get<0>(rr)) {
                st->fail("raw release: " + std::get<0>(rr).message());
                break;
            }
        } else {
            const auto timeout = std::chrono::nanoseconds(std::max<std::int64_t>(1, st->bound_ns - now_ns()));
            std::tuple<error_code, zklock::lease> r;
            switch (kind) {
            case lock_kind::mutex: r = co_await m.async_acquire(timeout, asio::as_tuple(asio::deferred)); break;
            case lock_kind::writer: r = co_await sm->async_acquire(timeout, asio::as_tuple(asio::deferred)); break;
            case lock_kind::reader: r = co_await sm->async_acquire_shared(timeout, asio::as_tuple(asio::deferred)); break;
            case lock_kind::permit: r = co_await sem->async_acquire(timeout, asio::as_tuple(asio::deferred)); break;
            }
            a.t_acquired = now_ns();
            if (std::get<0>(r)) {
                st->fail("acquire: " + std::get<0>(r).message());
                break;
            }
            zklock::lease lease = std::move(std::get<1>(r));
            a.seq = zklock::detail::parse_queue_node(zklock::detail::base_name(lease.node()))->seq;
            if (hold) {
                hold->expires_after(std::chrono::nanoseconds(hold_ns));
                co_await hold->async_wait(asio::as_tuple(asio::deferred));
            }
            a.t_release_start = now_ns();
            auto rr = co_await lease.async_release(asio::as_tuple(asio::deferred));
            a.t_released = now_ns();
            if (std::get<0>(rr)) {
                st->fail("release: " + std::get<0>(rr).message());
                break;
            }
        }
        st->record(a);
    } while (loop && now_ns() < st->stop_ns);
}

/// Runs `contenders` contenders, spread round-robin over `sessions` fresh sessions (or in blocks:
/// plan.sessions_in_blocks), on `dir`: each loops until `run_s` elapsed (plan.loop) or
/// acquires once (W). Returns the state, the sampler and the request count; the
/// sessions are closed before it returns, inside the sampling window. Past `bound_s` the sessions
/// are closed with async_close (which starts one helper thread per connected session: only on
/// this failure path) and the run counts as failed.
struct contenders_run {
    std::shared_ptr<run_state> st;
    std::shared_ptr<sampler_state> sampler;
    double requests = std::nan("");  // plan.count_requests: packets the server(s) received meanwhile
};

asio::awaitable<contenders_run> run_contenders(bench_ctx& c, const std::string& dir, int sessions, int contenders,
                                               contender_plan plan, double run_s, double bound_s)
{
    const bool loop = plan.loop;
    auto ex = co_await asio::this_coro::executor;
    auto st = std::make_shared<run_state>(ex);
    st->counts.assign(static_cast<std::size_t>(contenders), 0);
    st->expected = contenders;
    auto sampler = start_sampler(ex, [st, contenders, loop] {
        char buf[160];
        if (loop) std::snprintf(buf, sizeof buf, "%zu acquisitions", st->acqs.size());
        else std::snprintf(buf, sizeof buf, "%zu/%d acquired and released", st->acqs.size(), contenders);
        return std::string(buf);
    });
    sampler_guard guard{sampler};
    session_list ss = co_await connect_sessions(c, sessions);
    co_await ensure_path(*ss[0], dir);
    // The packet count covers the contenders only: after the connects and the directory, before
    // the directory's removal and the closes. srst resets the counters; the reading right after
    // it is the baseline. A `srvr` counts itself as one received packet (ZooKeeper 3.8), so the
    // final reading's own packet is taken off.
    std::optional<std::int64_t> received0;
    if (plan.count_requests) {
        reset_server_stats(c.fl_all);
        received0 = packets_received(c.fl_all);
    }
    const std::int64_t t0 = now_ns();
    st->stop_ns = t0 + seconds_ns(run_s);
    st->bound_ns = t0 + seconds_ns(bound_s);
    const int per_session = std::max(1, contenders / sessions);
    for (int i = 0; i < contenders; ++i) {
        const int on = plan.sessions_in_blocks ? std::min(i / per_session, sessions - 1) : i % sessions;
        asio::co_spawn(ex,
                       contender(ss[static_cast<std::size_t>(on)], dir, st, i, loop, plan.floor, c.node_data,
                                 plan.kind_of(i), plan.hold_ns, plan.permits),
                       contender_done(st));
    }
    const bool all_done = co_await wait_all(*st);
    double requests = std::nan("");
    if (received0 && all_done)
        if (auto received1 = packets_received(c.fl_all))
            requests = static_cast<double>(*received1 - *received0 - static_cast<std::int64_t>(c.fl_all.size()));
    if (!all_done) {
        // Past the bound: close the sessions, which ends every pending operation, then collect.
        st->fail("bound of " + std::to_string(static_cast<int>(bound_s)) + " s reached");
        for (auto& s : ss) co_await s->async_close(asio::as_tuple(asio::deferred));
        st->bound_ns = now_ns() + seconds_ns(30);
        co_await wait_all(*st);
        session_list fresh = co_await connect_sessions(c, 1);
        co_await remove_dir(*fresh[0], dir);
    } else {
        co_await remove_dir(*ss[0], dir);
    }
    ss.clear();  // the sessions' destructors close them (one round trip each, on this thread)
    stop_sampler(*sampler);
    sampler->progress = nullptr;
    contenders_run result{st, sampler, requests};  // not braced inside co_return/co_await (GCC 12)
    co_return result;
}

/// Reports (stderr) and counts failed operations (exit status 1).
void check_failures(bench_ctx& c, scenario_result& r, const run_state& st)
{
    const char* what = r.floor ? "floor " : "";
    r.failures = st.failures;
    r.first_error = st.first_error;
    if (st.failures) {
        ++c.errors;
        std::fprintf(stderr, "zklock_bench: ERROR %s%s: %lld failure(s), first: %s\n", what, r.scenario.c_str(),
                     static_cast<long long>(st.failures), st.first_error.c_str());
    }
}

/// Reports (stderr) and counts what makes the exit status non-zero: failed operations, grants that
/// overlapped the previous holder, grants out of queue order.
void check(bench_ctx& c, scenario_result& r, const run_state& st, const std::vector<acquisition>& by_grant)
{
    const char* what = r.floor ? "floor " : "";
    check_failures(c, r, st);
    if (auto n = zklock_bench::overlaps(by_grant)) {
        ++c.errors;
        std::fprintf(stderr, "zklock_bench: ERROR %s%s: %lld grants overlapped the previous holder\n", what,
                     r.scenario.c_str(), static_cast<long long>(n));
    }
    if (auto n = zklock_bench::fifo_inversions(by_grant)) {
        ++c.errors;
        std::fprintf(stderr, "zklock_bench: ERROR %s%s: %lld grants out of queue order\n", what, r.scenario.c_str(),
                     static_cast<long long>(n));
    }
}

// ---- scenarios ---------------------------------------------------------------------------------------

std::string dir_for(const bench_ctx& c, const std::string& name, bool floor)
{
    return c.root + "/" + (floor ? "floor-" : "") + name + "-r" + std::to_string(c.run);
}

/// Counts a scenario's failures (the first one is kept).
struct failure_count {
    std::int64_t n = 0;
    std::string first;
    void add(const std::string& what)
    {
        if (n++ == 0) first = what;
    }
};

/// One U cycle: acquire then release, lock or floor. nullopt after a failure.
asio::awaitable<std::optional<acquisition>> u_cycle(const bench_ctx& c, zklock::session& s, zklock::mutex& m,
                                                     const std::string& dir, bool floor, failure_count& fails)
{
    acquisition a;
    if (floor) {
        const std::string prefix = zklock::detail::join_path(
            dir, zklock::detail::node_prefix(zklock::detail::node_kind::exclusive, zklock::detail::new_attempt_id()));
        a.t_request = now_ns();
        auto pr = co_await asio::experimental::make_parallel_group(
                      s.async_create(prefix, c.node_data, zklock::create_mode::ephemeral_sequential, asio::deferred),
                      s.async_get_children(dir, asio::deferred))
                      .async_wait(asio::experimental::wait_for_all(), asio::deferred);
        a.t_acquired = now_ns();
        if (std::get<1>(pr) || std::get<4>(pr)) {
            fails.add("raw acquire: " + (std::get<1>(pr) ? std::get<1>(pr) : std::get<4>(pr)).message());
            co_return std::nullopt;
        }
        const std::string own = std::move(std::get<2>(pr));
        a.seq = seq_of(own);
        a.t_release_start = now_ns();
        auto rr = co_await s.async_remove(own, -1, asio::as_tuple(asio::deferred));
        a.t_released = now_ns();
        if (std::get<0>(rr)) {
            fails.add("raw release: " + std::get<0>(rr).message());
            co_return std::nullopt;
        }
    } else {
        a.t_request = now_ns();
        auto ar = co_await m.async_acquire(10s, asio::as_tuple(asio::deferred));
        a.t_acquired = now_ns();
        if (std::get<0>(ar)) {
            fails.add("acquire: " + std::get<0>(ar).message());
            co_return std::nullopt;
        }
        zklock::lease lease = std::move(std::get<1>(ar));
        a.seq = zklock::detail::parse_queue_node(zklock::detail::base_name(lease.node()))->seq;
        a.t_release_start = now_ns();
        auto rr = co_await lease.async_release(asio::as_tuple(asio::deferred));
        a.t_released = now_ns();
        if (std::get<0>(rr)) {
            fails.add("release: " + std::get<0>(rr).message());
            co_return std::nullopt;
        }
    }
    co_return a;
}

/// U: one session, one contender, acquire → release in a loop; duration/5 of warm-up, then duration.
asio::awaitable<scenario_result> scenario_u(bench_ctx& c, bool floor)
{
    scenario_result r;
    r.scenario = "U";
    r.floor = floor;
    r.sessions = r.contenders = 1;
    session_list ss = co_await connect_sessions(c, 1);
    zklock::session& s = *ss[0];
    const std::string dir = dir_for(c, "U", floor);
    co_await ensure_path(s, dir);
    zklock::mutex m(s, dir);
    std::vector<acquisition> acqs;
    failure_count fails;
    const std::int64_t warm_end = now_ns() + seconds_ns(c.opt.duration / 5);
    while (now_ns() < warm_end && fails.n < 100) co_await u_cycle(c, s, m, dir, floor, fails);
    auto ex = co_await asio::this_coro::executor;
    auto sampler = start_sampler(ex, [&acqs] { return std::to_string(acqs.size()) + " cycles"; });
    sampler_guard guard{sampler};
    const std::int64_t t0 = now_ns(), end = t0 + seconds_ns(c.opt.duration);
    std::int64_t t1 = t0;
    while (now_ns() < end && fails.n < 100) {
        auto a = co_await u_cycle(c, s, m, dir, floor, fails);
        t1 = now_ns();
        if (a) acqs.push_back(*a);
    }
    stop_sampler(*sampler);
    sampler->progress = nullptr;  // it refers to acqs
    co_await remove_dir(s, dir);
    r.failures = fails.n;
    r.first_error = fails.first;
    if (fails.n) {
        ++c.errors;
        std::fprintf(stderr, "zklock_bench: ERROR %sU: %lld failure(s), first: %s\n", floor ? "floor " : "",
                     static_cast<long long>(fails.n), fails.first.c_str());
    }
    std::vector<double> acq_us, rel_us;
    for (const auto& a : acqs) {
        acq_us.push_back(static_cast<double>(a.t_acquired - a.t_request) / 1e3);
        rel_us.push_back(static_cast<double>(a.t_released - a.t_release_start) / 1e3);
    }
    std::sort(acq_us.begin(), acq_us.end());
    std::sort(rel_us.begin(), rel_us.end());
    using zklock_bench::percentile;
    r.figs.add("cycles_per_s", static_cast<double>(acqs.size()) / (static_cast<double>(t1 - t0) / 1e9));
    r.figs.add("acquire_p50_us", percentile(acq_us, 0.50));
    r.figs.add("acquire_p99_us", percentile(acq_us, 0.99));
    r.figs.add("release_p50_us", percentile(rel_us, 0.50));
    r.figs.add("release_p99_us", percentile(rel_us, 0.99));
    r.acqs = std::move(acqs);
    co_return r;
}

/// The plan of the looping contended scenarios (C64, RW64, S64) and of the C64 floor: --hold-us,
/// and the server's packet count around the run.
contender_plan looping_plan(const bench_ctx& c, bool floor)
{
    contender_plan plan;
    plan.loop = true;
    plan.floor = floor;
    plan.hold_ns = c.opt.hold_us * 1000;
    plan.count_requests = true;
    return plan;
}

/// Extra bound for holds: the last request of a loop may wait for every other holder's hold.
double hold_bound_s(const options& o, int contenders) { return static_cast<double>(o.hold_us) / 1e6 * contenders; }

/// Requests the server(s) received per completed acquisition (NaN: no count, or none completed).
double requests_per_acquisition(const contenders_run& run, std::size_t acquisitions)
{
    return acquisitions ? run.requests / static_cast<double>(acquisitions) : std::nan("");
}

/// Acquisitions per second over a run: first t_request → last t_released.
double span_s(const run_state& st, const std::vector<acquisition>& acqs)
{
    std::int64_t last = 0;
    for (auto& a : acqs) last = std::max(last, a.t_released);
    return acqs.empty() ? 1 : static_cast<double>(last - st.first_request) / 1e9;
}

/// C64: 8 sessions × 8 contenders loop acquire → release for 2 × duration.
asio::awaitable<scenario_result> scenario_c64(bench_ctx& c, bool floor)
{
    scenario_result r;
    r.scenario = "C64";
    r.floor = floor;
    r.sessions = 8;
    r.contenders = 64;
    r.hold_us = c.opt.hold_us;
    const double run_s = 2 * c.opt.duration;
    auto run = co_await run_contenders(c, dir_for(c, "C64", floor), r.sessions, r.contenders, looping_plan(c, floor),
                                       run_s, run_s + 60 + hold_bound_s(c.opt, r.contenders));
    auto& st = run.st;
    auto& sampler = run.sampler;
    auto by_grant = std::move(st->acqs);
    zklock_bench::sort_by_grant(by_grant);
    check(c, r, *st, by_grant);
    using zklock_bench::percentile;
    const auto h = zklock_bench::handoffs_us(by_grant);
    const auto w = zklock_bench::waits(by_grant, 1e3);
    std::int64_t last = 0;
    for (auto& a : by_grant) last = std::max(last, a.t_released);
    const double span_s = by_grant.empty() ? 1 : static_cast<double>(last - st->first_request) / 1e9;
    r.figs.add("acquisitions_per_s", static_cast<double>(by_grant.size()) / span_s);
    r.figs.add("handoff_p50_us", percentile(h, 0.50));
    r.figs.add("handoff_p99_us", percentile(h, 0.99));
    r.figs.add("wait_p50_us", percentile(w, 0.50));
    r.figs.add("wait_p99_us", percentile(w, 0.99));
    r.figs.add("wait_max_us", w.empty() ? 0 : w.back());
    r.figs.add("jain_index", zklock_bench::jain_index(st->counts));
    r.figs.add("min_count", static_cast<double>(*std::min_element(st->counts.begin(), st->counts.end())));
    r.figs.add("max_count", static_cast<double>(*std::max_element(st->counts.begin(), st->counts.end())));
    r.figs.add("fifo_inversions", static_cast<double>(zklock_bench::fifo_inversions(by_grant)));
    r.figs.add("threads", sampler->max_threads);
    r.figs.add("peak_rss_mb", peak_rss_mb());
    r.figs.add("requests_per_acquisition", requests_per_acquisition(run, by_grant.size()));
    r.acqs = std::move(by_grant);
    co_return r;
}

/// W<N>: N contenders over 16 sessions, all request at once, each acquires once.
asio::awaitable<scenario_result> scenario_w(bench_ctx& c, const std::string& name, bool floor)
{
    scenario_result r;
    r.scenario = name;
    r.floor = floor;
    r.contenders = std::atoi(name.c_str() + 1);
    r.sessions = std::min(w_sessions, r.contenders);
    contender_plan plan;
    plan.floor = floor;
    auto run = co_await run_contenders(c, dir_for(c, name, floor), r.sessions, r.contenders, plan, 0, w_bound_s);
    auto& st = run.st;
    auto& sampler = run.sampler;
    auto by_grant = std::move(st->acqs);
    zklock_bench::sort_by_grant(by_grant);
    check(c, r, *st, by_grant);
    using zklock_bench::percentile;
    const auto w = zklock_bench::waits(by_grant, 1e6);
    std::int64_t last = 0;
    for (auto& a : by_grant) last = std::max(last, a.t_released);
    const double drain_s = by_grant.empty() ? 0 : static_cast<double>(last - st->first_request) / 1e9;
    r.figs.add("drain_s", drain_s);
    r.figs.add("acquisitions_per_s", drain_s > 0 ? static_cast<double>(by_grant.size()) / drain_s : 0);
    r.figs.add("wait_p50_ms", percentile(w, 0.50));
    r.figs.add("wait_p99_ms", percentile(w, 0.99));
    r.figs.add("wait_max_ms", w.empty() ? 0 : w.back());
    r.figs.add("fifo_inversions", static_cast<double>(zklock_bench::fifo_inversions(by_grant)));
    r.figs.add("threads", sampler->max_threads);
    r.figs.add("peak_rss_mb", peak_rss_mb());
    r.figs.add("completed", static_cast<double>(by_grant.size()));
    r.acqs = std::move(by_grant);
    co_return r;
}

/// What RW64 and S64 compare with the C64 floor (their other figures get "_vs_floor": null): the
/// throughput, and the costs that do not depend on who may hold at once.
std::vector<std::string> family_vs_floor()
{
    return {"acquisitions_per_s", "threads", "peak_rss_mb", "requests_per_acquisition"};
}

/// RW64's writers: contender i writes when i % 8 == 0, one per session (contender i runs on
/// session i / 8); the other 56 read.
bool rw64_writer(int contender) { return contender % 8 == 0; }

/// RW64: a shared_mutex, 8 sessions × 8 contenders (1 writer, 7 readers each) loop acquire →
/// (hold) → release for 2 × duration.
asio::awaitable<scenario_result> scenario_rw64(bench_ctx& c)
{
    scenario_result r;
    r.scenario = "RW64";
    r.sessions = 8;
    r.contenders = 64;
    r.hold_us = c.opt.hold_us;
    r.vs_floor = family_vs_floor();
    const double run_s = 2 * c.opt.duration;
    contender_plan plan = looping_plan(c, false);
    plan.sessions_in_blocks = true;
    plan.kind_of = [](int i) { return rw64_writer(i) ? lock_kind::writer : lock_kind::reader; };
    auto run = co_await run_contenders(c, dir_for(c, "RW64", false), r.sessions, r.contenders, plan, run_s,
                                       run_s + 60 + hold_bound_s(c.opt, r.contenders));
    auto& st = *run.st;
    auto by_grant = std::move(st.acqs);
    zklock_bench::sort_by_grant(by_grant);
    check_failures(c, r, st);
    std::vector<acquisition> readers, writers;
    std::vector<std::pair<std::int64_t, std::int64_t>> read_leases;  // t_acquired → t_released
    for (const auto& a : by_grant) {
        if (rw64_writer(a.contender)) {
            writers.push_back(a);
        } else {
            readers.push_back(a);
            read_leases.emplace_back(a.t_acquired, a.t_released);
        }
    }
    const std::int64_t max_readers = zklock_bench::max_concurrent(read_leases);
    const std::int64_t writer_overlaps =
        zklock_bench::exclusive_overlaps(by_grant, [](const acquisition& a) { return rw64_writer(a.contender); });
    if (writer_overlaps) {
        ++c.errors;
        std::fprintf(stderr, "zklock_bench: ERROR RW64: %lld write holds overlapped another hold\n",
                     static_cast<long long>(writer_overlaps));
    }
    if (readers.size() > 1 && max_readers < 2) {
        ++c.errors;
        std::fprintf(stderr, "zklock_bench: ERROR RW64: %zu read acquisitions, never two read leases at once\n",
                     readers.size());
    }
    std::vector<std::int64_t> writer_counts;
    for (int i = 0; i < r.contenders; ++i)
        if (rw64_writer(i)) writer_counts.push_back(st.counts[static_cast<std::size_t>(i)]);
    using zklock_bench::percentile;
    const auto ww = zklock_bench::waits(writers, 1e3), rw = zklock_bench::waits(readers, 1e3);
    const double span = span_s(st, by_grant);
    r.figs.add("acquisitions_per_s", static_cast<double>(by_grant.size()) / span);
    r.figs.add("reader_acquisitions_per_s", static_cast<double>(readers.size()) / span);
    r.figs.add("writer_acquisitions_per_s", static_cast<double>(writers.size()) / span);
    r.figs.add("writer_wait_p50_us", percentile(ww, 0.50));
    r.figs.add("writer_wait_p99_us", percentile(ww, 0.99));
    r.figs.add("reader_wait_p50_us", percentile(rw, 0.50));
    r.figs.add("reader_wait_p99_us", percentile(rw, 0.99));
    r.figs.add("max_concurrent_readers", static_cast<double>(max_readers));
    r.figs.add("writer_overlaps", static_cast<double>(writer_overlaps));
    r.figs.add("jain_index", zklock_bench::jain_index(writer_counts));
    r.figs.add("threads", run.sampler->max_threads);
    r.figs.add("peak_rss_mb", peak_rss_mb());
    r.figs.add("requests_per_acquisition", requests_per_acquisition(run, by_grant.size()));
    r.acqs = std::move(by_grant);
    co_return r;
}

/// S64: a semaphore of --permits permits, 8 sessions × 8 contenders loop acquire → (hold) →
/// release for 2 × duration.
asio::awaitable<scenario_result> scenario_s64(bench_ctx& c)
{
    scenario_result r;
    r.scenario = "S64";
    r.sessions = 8;
    r.contenders = 64;
    r.hold_us = c.opt.hold_us;
    r.permits = c.opt.permits;
    r.vs_floor = family_vs_floor();
    const double run_s = 2 * c.opt.duration;
    contender_plan plan = looping_plan(c, false);
    plan.kind_of = [](int) { return lock_kind::permit; };
    plan.permits = static_cast<std::uint32_t>(c.opt.permits);
    auto run = co_await run_contenders(c, dir_for(c, "S64", false), r.sessions, r.contenders, plan, run_s,
                                       run_s + 60 + hold_bound_s(c.opt, r.contenders));
    auto& st = *run.st;
    auto by_grant = std::move(st.acqs);
    zklock_bench::sort_by_grant(by_grant);
    check_failures(c, r, st);
    std::vector<std::pair<std::int64_t, std::int64_t>> holds;  // t_acquired → t_release_start
    for (const auto& a : by_grant) holds.emplace_back(a.t_acquired, a.t_release_start);
    const std::int64_t max_holders = zklock_bench::max_concurrent(holds);
    if (max_holders > c.opt.permits) {
        ++c.errors;
        std::fprintf(stderr, "zklock_bench: ERROR S64: %lld holders at once, permits %lld\n",
                     static_cast<long long>(max_holders), static_cast<long long>(c.opt.permits));
    }
    using zklock_bench::percentile;
    const auto w = zklock_bench::waits(by_grant, 1e3);
    r.figs.add("acquisitions_per_s", static_cast<double>(by_grant.size()) / span_s(st, by_grant));
    r.figs.add("wait_p50_us", percentile(w, 0.50));
    r.figs.add("wait_p99_us", percentile(w, 0.99));
    r.figs.add("max_concurrent_holders", static_cast<double>(max_holders));
    r.figs.add("fifo_inversions",
               static_cast<double>(zklock_bench::fifo_inversions_window(by_grant, static_cast<std::size_t>(c.opt.permits))));
    r.figs.add("jain_index", zklock_bench::jain_index(st.counts));
    r.figs.add("threads", run.sampler->max_threads);
    r.figs.add("peak_rss_mb", peak_rss_mb());
    r.figs.add("requests_per_acquisition", requests_per_acquisition(run, by_grant.size()));
    r.acqs = std::move(by_grant);
    co_return r;
}

/// Floor ping-pong: two sessions hand a node back and forth for `duration` seconds.
asio::awaitable<scenario_result> floor_pingpong(bench_ctx& c)
{
    scenario_result r;
    r.scenario = "pingpong";
    r.floor = true;
    r.sessions = r.contenders = 2;
    auto ex = co_await asio::this_coro::executor;
    session_list ss = co_await connect_sessions(c, 2);
    const std::string dir = dir_for(c, "pingpong", true);
    co_await ensure_path(*ss[0], dir);
    std::vector<double> h;
    asio::steady_timer removed_event(ex);
    const std::int64_t end = now_ns() + seconds_ns(c.opt.duration);
    for (int turn = 0; now_ns() < end; ++turn) {
        zklock::session& holder = *ss[static_cast<std::size_t>(turn % 2)];
        zklock::session& waiter = *ss[static_cast<std::size_t>(1 - turn % 2)];
        const std::string prefix = zklock::detail::join_path(
            dir, zklock::detail::node_prefix(zklock::detail::node_kind::exclusive, zklock::detail::new_attempt_id()));
        auto created = co_await holder.async_create(prefix, c.node_data, zklock::create_mode::ephemeral_sequential,
                                                    asio::as_tuple(asio::deferred));
        if (std::get<0>(created)) throw boost::system::system_error(std::get<0>(created), "ping-pong create");
        const std::string node = std::get<1>(created);
        auto watched = co_await waiter.async_watch_data(node, asio::as_tuple(asio::deferred));
        if (std::get<0>(watched)) throw boost::system::system_error(std::get<0>(watched), "ping-pong watch");
        bool removed = false;
        error_code remove_ec;
        const std::int64_t t0 = now_ns();
        holder.async_remove(node, -1, [&](error_code ec) {
            removed = true;
            remove_ec = ec;
            removed_event.cancel();
        });
        auto ev = co_await std::get<3>(watched).async_wait(asio::as_tuple(asio::deferred));
        const std::int64_t t1 = now_ns();
        if (std::get<0>(ev)) throw boost::system::system_error(std::get<0>(ev), "ping-pong event");
        h.push_back(static_cast<double>(t1 - t0) / 1e3);
        while (!removed) {
            removed_event.expires_after(10s);
            co_await removed_event.async_wait(asio::as_tuple(asio::deferred));
        }
        if (remove_ec) throw boost::system::system_error(remove_ec, "ping-pong remove");
    }
    co_await remove_dir(*ss[0], dir);
    std::sort(h.begin(), h.end());
    r.figs.add("handoff_p50_us", zklock_bench::percentile(h, 0.50));
    r.figs.add("handoff_p99_us", zklock_bench::percentile(h, 0.99));
    co_return r;
}

/// Warm-up: a contended lock load on another path (4 sessions × 8 contenders) for `seconds`.
asio::awaitable<void> warm_up(bench_ctx& c, double seconds)
{
    if (seconds <= 0) co_return;
    std::fprintf(stderr, "zklock_bench: warming the server up for %.0f s (contended load on %s/warmup)\n", seconds,
                 c.root.c_str());
    contender_plan plan;
    plan.loop = true;
    auto run = co_await run_contenders(c, c.root + "/warmup", 4, 32, plan, seconds, seconds + 60);
    std::fprintf(stderr, "zklock_bench: warm-up done: %zu lock cycles, %lld failure(s)\n", run.st->acqs.size(),
                 static_cast<long long>(run.st->failures));
}

// ---- output ------------------------------------------------------------------------------------------

json::object base_object(const bench_ctx& c, const std::string& scenario, int sessions, int contenders,
                         std::int64_t hold_us, std::int64_t permits = 0)
{
    json::object o;
    o["scenario"] = scenario;
    o["library"] = "zklock";
    o["sessions"] = sessions;
    o["contenders"] = contenders;
    o["hold_us"] = hold_us;
    if (permits > 0) o["permits"] = permits;
    o["server_config"] = c.server_config;
    return o;
}

/// The floor's value of figure `n` when `r` is compared with it on that figure.
std::optional<double> floor_figure(const scenario_result& r, const scenario_result* floor, const std::string& n)
{
    if (!floor) return std::nullopt;
    if (!r.vs_floor.empty() && std::find(r.vs_floor.begin(), r.vs_floor.end(), n) == r.vs_floor.end()) return std::nullopt;
    return floor->figs.get(n);
}

json::object lock_object(const bench_ctx& c, const scenario_result& r, const scenario_result* floor)
{
    json::object o = base_object(c, r.scenario, r.sessions, r.contenders, r.hold_us, r.permits);
    for (auto& [n, v] : r.figs.list) o[n] = figure_value(n, v);
    for (auto& [n, v] : r.figs.list) o[n + "_vs_floor"] = ratio_value(v, floor_figure(r, floor, n));
    return o;
}

json::object floor_object(const bench_ctx& c)
{
    int sessions = 0, contenders = 0;
    std::int64_t hold_us = 0;
    for (auto& [name, r] : c.floors) {
        sessions = std::max(sessions, r.sessions);
        contenders = std::max(contenders, r.contenders);
        hold_us = std::max(hold_us, r.hold_us);
    }
    json::object o = base_object(c, "floor", sessions, contenders, hold_us);
    for (auto& [name, r] : c.floors) {
        json::object sub;
        sub["sessions"] = r.sessions;
        sub["contenders"] = r.contenders;
        sub["hold_us"] = r.hold_us;
        for (auto& [n, v] : r.figs.list) sub[n] = figure_value(n, v);
        o[name] = std::move(sub);
    }
    return o;
}

std::string fmt(const json::value& v)
{
    if (v.is_null()) return "-";
    if (v.is_int64()) return std::to_string(v.as_int64());
    if (v.is_uint64()) return std::to_string(v.as_uint64());
    if (v.is_double()) {
        char buf[32];
        const double d = v.as_double();
        std::snprintf(buf, sizeof buf, std::fabs(d) >= 100 || d == std::floor(d) ? "%.1f" : "%.4g", d);
        return buf;
    }
    if (v.is_string()) return std::string(v.as_string());
    return json::serialize(v);
}

/// JSON text like json::serialize, but numbers in plain decimal notation (Boost.JSON 1.81 writes
/// every double in exponent form: 3.896E2), so the lines stay readable with grep and eyes.
void write_json(std::string& out, const json::value& v)
{
    if (v.is_double()) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.6f", v.as_double());
        std::string t = buf;
        t.erase(t.find_last_not_of('0') + 1);
        if (t.back() == '.') t.pop_back();
        out += t;
    } else if (v.is_object()) {
        out += '{';
        bool first = true;
        for (auto& [k, x] : v.as_object()) {
            if (!first) out += ',';
            first = false;
            out += json::serialize(json::string(k));
            out += ':';
            write_json(out, x);
        }
        out += '}';
    } else if (v.is_array()) {
        out += '[';
        bool first = true;
        for (auto& x : v.as_array()) {
            if (!first) out += ',';
            first = false;
            write_json(out, x);
        }
        out += ']';
    } else {
        out += json::serialize(v);
    }
}

void emit(bench_ctx& c, const json::object& o)
{
    std::string line;
    write_json(line, o);
    std::printf("%s\n", line.c_str());
    if (c.json_out.is_open()) c.json_out << line << "\n" << std::flush;
}

void print_lock_table(const json::object& o, const scenario_result& r, const scenario_result* floor,
                      const scenario_result* pingpong)
{
    std::string extra;
    if (r.hold_us > 0) extra += ", hold " + std::to_string(r.hold_us) + " us";
    if (r.permits > 0) extra += ", " + std::to_string(r.permits) + " permits";
    if (r.scenario == "RW64" || r.scenario == "S64") extra += "   (floor: the C64 floor)";
    std::printf("%s: %d session(s) x %d contender(s) total%s, one thread   (ratio = zklock / floor, same run)\n",
                r.scenario.c_str(), r.sessions, r.contenders, extra.c_str());
    int width = 20;
    for (auto& [n, v] : r.figs.list) width = std::max(width, static_cast<int>(n.size()));
    std::printf("  %-*s %12s %12s %8s\n", width, "figure", "zklock", "floor", "ratio");
    for (auto& [n, v] : r.figs.list) {
        std::optional<double> f = floor_figure(r, floor, n);
        std::printf("  %-*s %12s %12s %8s\n", width, n.c_str(), fmt(o.at(n)).c_str(),
                    f ? fmt(figure_value(n, *f)).c_str() : "-", fmt(o.at(n + "_vs_floor")).c_str());
    }
    if (pingpong) {
        for (const char* n : {"handoff_p50_us", "handoff_p99_us"}) {
            auto l = r.figs.get(n), p = pingpong->figs.get(n);
            std::printf("  %-*s %12s %12s %8s   (vs two-session ping-pong)\n", width, n, fmt(figure_value(n, *l)).c_str(),
                        fmt(figure_value(n, *p)).c_str(), fmt(ratio_value(l, p)).c_str());
        }
    }
    std::printf("\n");
    std::fflush(stdout);
}

void print_floor_table(const bench_ctx& c)
{
    std::printf("floor: zklock's session layer, no lock logic (see bench/README.md)\n");
    for (auto& [name, r] : c.floors) {
        std::printf("  %s (%d session(s), %d contender(s))\n", name.c_str(), r.sessions, r.contenders);
        for (auto& [n, v] : r.figs.list) std::printf("    %-24s %12s\n", n.c_str(), fmt(figure_value(n, v)).c_str());
    }
    std::printf("\n");
    std::fflush(stdout);
}

void write_plots(const bench_ctx& c, const scenario_result& r, const scenario_result* floor)
{
    if (c.opt.plot_dir.empty() || r.scenario == "U") return;
    std::error_code ec;
    std::filesystem::create_directories(c.opt.plot_dir, ec);
    const std::string suffix = c.opt.repeat > 1 ? "-run" + std::to_string(c.run) : "";
    const std::string base = c.opt.plot_dir + "/" + r.scenario + suffix;
    const bool ms = r.scenario[0] == 'W';
    const double scale = ms ? 1e6 : 1e3;
    std::vector<zklock_bench::svg::series> series;
    series.push_back({"zklock", zklock_bench::waits(r.acqs, scale), "#1f77b4"});
    if (floor) series.push_back({"floor (raw ops)", zklock_bench::waits(floor->acqs, scale), "#ff7f0e"});
    bool ok = zklock_bench::svg::wait_histogram(base + "-wait.svg", r.scenario + ": wait-time distribution", ms ? "ms" : "µs",
                                                series);
    ok = zklock_bench::svg::grant_order(base + "-order.svg", r.scenario + ": grant order vs queue order (zklock)", r.acqs) && ok;
    if (!ok) std::fprintf(stderr, "zklock_bench: cannot write plots under %s\n", c.opt.plot_dir.c_str());
    else std::fprintf(stderr, "zklock_bench: plots %s-wait.svg, %s-order.svg\n", base.c_str(), base.c_str());
}

/// Medians over the runs of every figure (and of every per-run ratio) of each scenario.
void print_medians(bench_ctx& c)
{
    std::printf("==== medians of %d runs ====\n", c.opt.repeat);
    std::vector<std::string> order = c.opt.scenarios;
    for (const auto& name : order) {
        auto it = c.lines.find(name);
        if (it == c.lines.end() || it->second.empty()) continue;
        const auto& runs = it->second;
        json::object m = runs.front();
        std::function<void(json::object&, const std::vector<const json::object*>&)> fold =
            [&](json::object& out, const std::vector<const json::object*>& objs) {
                for (auto& [k, v] : out) {
                    if (k == "server_config" || v.is_string()) continue;
                    if (v.is_object()) {
                        std::vector<const json::object*> subs;
                        for (auto* o : objs)
                            if (auto* s = o->if_contains(k); s && s->is_object()) subs.push_back(&s->as_object());
                        fold(v.as_object(), subs);
                        continue;
                    }
                    std::vector<double> xs;
                    for (auto* o : objs)
                        if (auto* x = o->if_contains(k); x && x->is_number()) xs.push_back(x->to_number<double>());
                    if (xs.empty()) continue;
                    const double med = zklock_bench::median(xs);
                    if (k.ends_with("_vs_floor")) v = round_to(med, 3);
                    else if (v.is_int64() && med == std::floor(med)) v = static_cast<std::int64_t>(med);
                    else v = figure_value(std::string(k), med);
                }
            };
        std::vector<const json::object*> objs;
        for (auto& o : runs) objs.push_back(&o);
        fold(m, objs);
        m["median_of"] = static_cast<std::int64_t>(runs.size());
        emit(c, m);
        std::printf("%s (median of %zu)\n", name.c_str(), runs.size());
        for (auto& [k, v] : m) {
            if (k == "server_config" || k == "scenario" || k == "library" || k.ends_with("_vs_floor")) continue;
            if (v.is_object()) {
                for (auto& [k2, v2] : v.as_object())
                    std::printf("  %-10s %-24s %12s\n", std::string(k).c_str(), std::string(k2).c_str(), fmt(v2).c_str());
                continue;
            }
            const json::value* ratio = m.if_contains(std::string(k) + "_vs_floor");
            std::printf("  %-31s %12s %8s\n", std::string(k).c_str(), fmt(v).c_str(), ratio ? fmt(*ratio).c_str() : "");
        }
        std::printf("\n");
    }
    std::fflush(stdout);
}

// ---- the run --------------------------------------------------------------------------------------------

/// Where the CPU time of a scenario went (stderr only): this process (client: zklock, the C
/// client, the benchmark) and, with our own server, the server's JVM.
struct cpu_meter {
    const bench_ctx& c;
    std::pair<double, double> client0 = cpu_seconds(), server0 = c.server_pid.empty() ? std::pair{0.0, 0.0} : cpu_seconds(c.server_pid);
    std::int64_t t0 = now_ns();
    void report(const std::string& what) const
    {
        const auto client = cpu_seconds();
        const auto server = c.server_pid.empty() ? std::pair{0.0, 0.0} : cpu_seconds(c.server_pid);
        const double wall = static_cast<double>(now_ns() - t0) / 1e9;
        char server_part[64] = "server n/a";
        if (!c.server_pid.empty())
            std::snprintf(server_part, sizeof server_part, "server user %6.2f sys %6.2f", server.first - server0.first,
                          server.second - server0.second);
        std::fprintf(stderr, "zklock_bench: cpu %-14s wall %6.2f s | client user %6.2f sys %6.2f | %s\n", what.c_str(), wall,
                     client.first - client0.first, client.second - client0.second, server_part);
    }
};

asio::awaitable<void> run_once(bench_ctx& c)
{
    c.floors.clear();
    for (const auto& name : c.opt.scenarios) {
        if (name == "floor") {
            json::object o = floor_object(c);
            emit(c, o);
            print_floor_table(c);
            c.lines["floor"].push_back(std::move(o));
            continue;
        }
        if (name == "RW64" || name == "S64") {
            // Compared with the C64 floor of this run; measured now if C64 has not measured it.
            const scenario_result* floor = nullptr;
            for (auto& [n, f] : c.floors)
                if (n == "C64") floor = &f;
            if (!floor) {
                std::fprintf(stderr, "zklock_bench: run %d: floor for %s (the C64 floor)\n", c.run, name.c_str());
                const cpu_meter floor_cpu{c};
                scenario_result f = co_await scenario_c64(c, true);
                floor_cpu.report("floor C64");
                f.acqs.clear();
                f.acqs.shrink_to_fit();
                c.floors.emplace_back("C64", std::move(f));
                floor = &c.floors.back().second;
            }
            std::fprintf(stderr, "zklock_bench: run %d: %s\n", c.run, name.c_str());
            const cpu_meter lock_cpu{c};
            scenario_result lock;  // (not `x ? co_await a : co_await b`: GCC 12 miscompiles it)
            if (name == "RW64") lock = co_await scenario_rw64(c);
            else lock = co_await scenario_s64(c);
            lock_cpu.report(name);
            json::object o = lock_object(c, lock, floor);
            emit(c, o);
            print_lock_table(o, lock, floor, nullptr);
            c.lines[name].push_back(std::move(o));
            continue;
        }
        // The floor first, right before the scenario it is compared with.
        std::fprintf(stderr, "zklock_bench: run %d: floor for %s\n", c.run, name.c_str());
        scenario_result floor;
        const cpu_meter floor_cpu{c};
        if (name == "U") floor = co_await scenario_u(c, true);
        else if (name == "C64") floor = co_await scenario_c64(c, true);
        else floor = co_await scenario_w(c, name, true);
        floor_cpu.report("floor " + name);
        scenario_result pingpong;
        if (name == "C64") {
            std::fprintf(stderr, "zklock_bench: run %d: floor ping-pong\n", c.run);
            pingpong = co_await floor_pingpong(c);
        }
        std::fprintf(stderr, "zklock_bench: run %d: %s\n", c.run, name.c_str());
        scenario_result lock;
        const cpu_meter lock_cpu{c};
        if (name == "U") lock = co_await scenario_u(c, false);
        else if (name == "C64") lock = co_await scenario_c64(c, false);
        else lock = co_await scenario_w(c, name, false);
        lock_cpu.report(name);
        json::object o = lock_object(c, lock, &floor);
        emit(c, o);
        print_lock_table(o, lock, &floor, name == "C64" ? &pingpong : nullptr);
        write_plots(c, lock, &floor);
        c.lines[name].push_back(std::move(o));
        floor.acqs.clear();
        floor.acqs.shrink_to_fit();
        std::erase_if(c.floors, [&](const auto& f) { return f.first == name; });  // RW64/S64 measured it first
        c.floors.emplace_back(name, std::move(floor));
        if (name == "C64") c.floors.emplace_back("pingpong", std::move(pingpong));
    }
}

asio::awaitable<void> run_all(bench_ctx& c)
{
    {
        session_list ss = co_await connect_sessions(c, 1);
        co_await ensure_path(*ss[0], c.root);
    }
    co_await warm_up(c, c.opt.warmup);
    if (four_letter(c.fl_host, c.fl_port, "srst").empty())
        std::fprintf(stderr, "zklock_bench: 'srst' got no answer (4lw.commands.whitelist?)\n");
    for (c.run = 1; c.run <= c.opt.repeat; ++c.run) co_await run_once(c);
    c.run = c.opt.repeat;
    session_list ss = co_await connect_sessions(c, 1);
    co_await remove_dir(*ss[0], c.root);
    co_await remove_dir(*ss[0], "/zklock-bench");  // fails harmlessly while other runs use it
}

std::string version_of(const std::string& srvr)
{
    const std::string key = "Zookeeper version: ";
    auto p = srvr.find(key);
    if (p == std::string::npos) return "unknown";
    auto e = srvr.find_first_of(",\n", p);
    return srvr.substr(p + key.size(), e - p - key.size());
}

/// The run's bound: warm-up plus, per run, every scenario's own bounds, plus slack.
double watchdog_s(const options& o)
{
    double per_run = 0;
    for (const auto& s : o.scenarios) {
        const double hold_s = static_cast<double>(o.hold_us) / 1e6 * 64;
        if (s == "U") per_run += 2 * (1.2 * o.duration + 30);
        else if (s == "C64") per_run += 2 * (2 * o.duration + 90 + hold_s) + o.duration + 30;
        else if (s == "RW64" || s == "S64") per_run += 2 * (2 * o.duration + 90 + hold_s);
        else if (s[0] == 'W') per_run += 2 * (w_bound_s + 60);
    }
    return o.warmup + 90 + o.repeat * per_run;
}

}  // namespace

int main(int argc, char** argv)
{
    int exit_code = 0;
    auto parsed = parse_options(argc, argv, exit_code);
    if (!parsed) return exit_code;
    bench_ctx c;
    c.opt = std::move(*parsed);

    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) host[0] = '?';
    c.node_data = std::string(host) + ":" + std::to_string(::getpid());  // what zklock stores by default
    std::random_device rd;
    c.root = "/zklock-bench/" + std::to_string(::getpid()) + "-" + std::to_string(rd() % 100000);

    if (!c.opt.json_file.empty()) {
        c.json_out.open(c.opt.json_file, std::ios::app);
        if (!c.json_out) {
            std::fprintf(stderr, "zklock_bench: cannot open %s\n", c.opt.json_file.c_str());
            return 2;
        }
    }

    std::optional<zklock::test::zk_server> server;
    std::string fl_host, fl_port;
    try {
        if (c.opt.servers.empty()) {
            std::fprintf(stderr, "zklock_bench: starting ZooKeeper (forceSync=no, -Xmx512m, default JIT)\n");
            server.emplace(zklock::test::server_options{
                .tick_time = std::chrono::milliseconds(2000),
                .jvm_heap = "512m",
                .fast_start_jvm = false,
                .extra_config = {"initLimit=10", "syncLimit=5"},
            });
            c.servers = server->connect_string();
            fl_host = "127.0.0.1";
            fl_port = std::to_string(server->port());
            c.server_config = {{"tickTime", 2000},           {"initLimit", 10},         {"syncLimit", 5},
                               {"forceSync", "no"},          {"maxClientCnxns", 0},     {"admin.enableServer", false},
                               {"4lw.commands.whitelist", "*"}, {"jvm", "-Xmx512m"},      {"started_by", "zklock_bench"},
                               {"address", c.servers}};
        } else {
            c.servers = c.opt.servers;
            const std::string first = c.servers.substr(0, c.servers.find_first_of(",/"));
            fl_host = first.substr(0, first.rfind(':'));
            fl_port = first.substr(first.rfind(':') + 1);
            if (fl_host.size() > 2 && fl_host.front() == '[') fl_host = fl_host.substr(1, fl_host.size() - 2);
            c.server_config = {{"started_by", "external"}, {"address", c.servers}};
            std::istringstream conf(four_letter(fl_host, fl_port, "conf"));
            for (std::string line; std::getline(conf, line);) {
                auto eq = line.find('=');
                if (eq == std::string::npos) continue;
                const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
                if (k == "tickTime" || k == "maxClientCnxns" || k == "maxSessionTimeout")
                    c.server_config[k] = std::atoll(v.c_str());
            }
            c.server_config["forceSync"] = "unknown";
        }
        c.server_config["version"] = version_of(four_letter(fl_host, fl_port, "srvr"));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "zklock_bench: cannot start ZooKeeper: %s\n", e.what());
        return 1;
    }

    c.fl_host = fl_host;
    c.fl_port = fl_port;
    c.fl_all = parse_endpoints(c.servers);
    if (server) c.server_pid = std::to_string(server->pid());

    asio::io_context ioc;
    bool finished = false;
    std::exception_ptr failure;
    asio::co_spawn(ioc, run_all(c), [&](std::exception_ptr e) {
        finished = true;
        failure = e;
        ioc.stop();  // after a failure, contenders may still wait on a dead server: do not wait for them
    });
    const double bound = watchdog_s(c.opt);
    ioc.run_for(std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(bound)));
    if (!finished) {
        std::fprintf(stderr, "zklock_bench: ERROR: not finished within the watchdog's %.0f s\n", bound);
        return 3;
    }
    if (failure) {
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "zklock_bench: ERROR: %s\n", e.what());
        }
        return 1;
    }
    if (c.opt.repeat > 1) print_medians(c);
    if (c.errors) std::fprintf(stderr, "zklock_bench: %d error(s), see above\n", c.errors);
    return c.errors ? 1 : 0;
}
