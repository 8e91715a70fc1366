// bench/bench.hpp — what the files of zklock_bench share: the options, the context of a run,
// the results, the contenders' state, and every function used across files (each defined in
// the .cpp file its section names).
#pragma once

#include "raw_client.hpp"
#include "stats.hpp"
#include "svg_plot.hpp"
#include "support/zk_server.hpp"
#include <zklock/lease.hpp>
#include <zklock/mutex.hpp>
#include <zklock/queue.hpp>
#include <zklock/semaphore.hpp>
#include <zklock/session.hpp>
#include <zklock/shared_mutex.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
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
#include <atomic>
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
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace zklock_bench {

namespace asio = boost::asio;
namespace json = boost::json;
namespace po = boost::program_options;
using namespace std::chrono_literals;
using zklock::error_code;

using clock_type = std::chrono::steady_clock;

// ---- bench/measure.cpp: the clock and the process figures (threads, peak RSS, CPU time)

std::int64_t now_ns();
clock_type::time_point at_ns(std::int64_t t);
std::int64_t seconds_ns(double s);
long proc_status(const char* key);
int os_threads();
double peak_rss_mb();
void reset_peak_rss();
std::pair<double, double> cpu_seconds(const std::string& pid = "self");


using endpoint_list = std::vector<std::pair<std::string, std::string>>;  // (host, port)


/// One layout of --threads: `threads` threads running one io_context, each session on a strand of
/// it; or (per_thread) one io_context per thread, session i on context i mod threads.
struct thread_layout {
    int threads = 1;
    bool per_thread = false;
};


constexpr double w_bound_s = 300;  // PROTOCOL.md: W completes within 300 s


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
    bool w_lock_only = false;            // W: no floors (profiling)
    bool request_mix = false;            // print each run's client requests per acquisition, by type
    bool tls = false;                    // our server with a TLS port; U, C64, W<N> again over TLS (bench/tls.cpp)
    bool netty = false;                  // our server serves its plaintext port with Netty instead of NIO
    int ensemble = 0;                    // 3 or 5: our own N-server ensemble instead of one standalone server
    bool force_sync = false;             // our server(s) with forceSync=yes
    int windows = 4;                     // M, H: measured turns of the lock and of its raw floor each
    std::vector<thread_layout> thread_layouts;  // --threads/--contexts (bench/threads.cpp); empty: the one thread
    std::vector<std::string> peers;      // --peers: "curator", "kazoo" (bench/peers.cpp), in that order
    double peer_bound = w_bound_s;  // --peer-bound: seconds a peer's W<N> may take once started
};


constexpr int w_sessions = 16;


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
    bool raw = false;      // a floor straight on libzookeeper_st (raw_client.hpp), not through zklock's session layer
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
    // This process's CPU seconds over the measured window only (U: the timed loop; C64, W: from
    // the first contender's start to the last one's end), and the acquisitions in it.
    double window_cpu_s = std::nan("");
    std::size_t window_acquisitions = 0;
    std::string layout;  // --threads: where its sessions ran (layout_label); empty: on the bench's one thread
};


class worker_pool;


struct bench_ctx {
    options opt;
    std::string servers;  // what sessions connect to
    std::string root;     // "/zklock-bench/<pid>-<random>": every path of this process is below
    std::string node_data;
    json::object server_config;
    std::ofstream json_out;
    std::string fl_host, fl_port;  // where four-letter words go
    endpoint_list fl_all;          // every server of the connect string: packet counts
    std::vector<std::string> server_pids;  // our own servers' java processes (for their CPU time), or none
    std::string tls_servers;       // --tls: our server's TLS port ("127.0.0.1:P")
    zklock::tls_options tls;       // --tls: the test CA, alice's certificate
    bool over_tls = false;         // sessions made now connect to tls_servers with `tls`
    worker_pool* pool = nullptr;   // --threads: sessions made now run on this pool's threads
    // --ensemble: the members' addresses in round-robin order, a follower first; session i of a
    // connect_sessions / connect_raw_sessions call connects to element i % size() alone. Empty:
    // every session gets `servers`.
    std::vector<std::string> session_servers;
    int run = 1;
    int errors = 0;  // failures, overlapping grants, FIFO inversions, incomplete W: exit status 1
    std::vector<std::pair<std::string, scenario_result>> floors;  // of the current run, in measuring order
    std::map<std::string, std::vector<json::object>> lines;  // every run's JSON object per scenario
};

// (bench/measure.cpp) The CPU seconds (user, system) of our own servers' JVMs, summed (0 without
// our own server).
std::pair<double, double> server_cpu_seconds(const bench_ctx& c);
/// The CPU seconds (user + system) of those JVMs' garbage collector: their threads named "GC
/// Thread#N", "G1 ..." (G1's workers, marking and refinement) and "VM Thread" (which runs the pauses).
double server_gc_cpu_seconds(const bench_ctx& c);


/// Where the CPU time of a scenario went (stderr only): this process (client: zklock, the C
/// client, the benchmark) and, with our own server(s), the servers' JVMs.
struct cpu_meter {
    const bench_ctx& c;
    std::pair<double, double> client0 = cpu_seconds(), server0 = server_cpu_seconds(c);
    double server_gc0 = server_gc_cpu_seconds(c);
    std::int64_t t0 = now_ns();
    /// This process's CPU seconds (user + system) since the meter started.
    double client_s() const;
    /// The servers' CPU seconds (user + system) since the meter started; 0 without server pids.
    double server_s() const;
    /// Adds client_cpu_s to `f`, and server_cpu_s and server_gc_cpu_s when the bench knows the
    /// servers' pids.
    void add_to(figures& f) const;
    void report(const std::string& what) const;  // (bench/measure.cpp)
};


/// Runs `f` (a function returning an awaitable) on `ex` and resumes the caller, on its own
/// executor, with the result (an exception is rethrown). The harness touches a session only this
/// way, on the session's executor: with --threads a strand of the worker pool or one of its
/// io_contexts (docs/guide.md, "Threading model"); without, the bench's one thread. `f` is kept
/// in the spawned coroutine's frame until it completes, so a coroutine lambda may capture. Name
/// the lambda before the co_await: GCC 12 destroys a closure (like any braced temporary) made
/// inside a co_await expression twice.
template <class F>
auto run_on(asio::any_io_executor ex, F f)
{
    return asio::co_spawn(std::move(ex), std::move(f), asio::deferred);
}


using session_list = std::vector<std::shared_ptr<zklock::session>>;


struct run_state {
    run_state(asio::any_io_executor ex, std::string d, std::string nd)
        : dir(std::move(d)), data(std::move(nd)), wake(std::move(ex))
    {
    }
    const std::string dir;   // the lock path (one copy for all contenders)
    const std::string data;  // the floors' node data
    std::vector<acquisition> acqs;
    std::vector<std::int64_t> counts;  // per contender
    std::int64_t stop_ns = 0;          // loops start no new cycle after this
    std::int64_t bound_ns = 0;         // hard bound: acquires give up, the scenario stops waiting
    std::int64_t first_request = -1;
    std::atomic<std::uint64_t> names_listed{0};  // the floors: names in every listing they got
    int expected = 0, done = 0;
    std::int64_t failures = 0;
    std::string first_error;
    asio::steady_timer wake;  // the scenario's executor's: `done` and `wake` are only touched there
    // With --threads, contenders of different sessions record at once from the workers: fail,
    // request and record take this lock (uncontended on one thread: two lock/unlock pairs per
    // acquisition). The scenario reads the rest once every contender is done.
    mutable std::mutex m;

    void fail(const std::string& what)
    {
        const std::lock_guard lock(m);
        if (failures++ == 0) first_error = what;
    }
    /// The same for a contender: out of line, so that the message's temporaries are not in every
    /// contender's coroutine frame.
    void fail(const char* what, const error_code& ec);
    void request(std::int64_t t)
    {
        const std::lock_guard lock(m);
        if (first_request < 0 || t < first_request) first_request = t;
    }
    void record(const acquisition& a)
    {
        const std::lock_guard lock(m);
        acqs.push_back(a);
        ++counts[static_cast<std::size_t>(a.contender)];
    }
    /// Acquisitions recorded so far (for the progress line, while contenders run).
    std::size_t recorded() const
    {
        const std::lock_guard lock(m);
        return acqs.size();
    }
};


/// Samples the OS thread count every 100 ms and prints progress on stderr every second.
struct sampler_state {
    explicit sampler_state(asio::any_io_executor ex) : timer(std::move(ex)) {}
    asio::steady_timer timer;
    int max_threads = 0;
    double rss_start_mb = 0;  // the process's RSS when the window opened (what earlier scenarios left)
    bool stopped = false;
    std::function<std::string()> progress;
    std::int64_t started = now_ns(), last_progress = now_ns();
};


void stop_sampler(sampler_state& s);

/// Stops a sampler when leaving a scope, also by an exception.
struct sampler_guard {
    std::shared_ptr<sampler_state> s;
    ~sampler_guard()
    {
        if (s) stop_sampler(*s);
    }
};


/// What a contender acquires: zklock::mutex, a shared_mutex's read or write side, a semaphore's
/// permit. The floor ignores it (always the raw exclusive queue cycle).
enum class lock_kind { mutex, reader, writer, permit, cohort };


/// The lock objects of one session's contenders: one object serves any number of acquires at
/// once (basic_lock), so the contenders of a session share them instead of holding one each.
struct session_locks {
    session_locks(std::shared_ptr<zklock::session> session, const std::string& dir)
        : s(std::move(session)), m(*s, dir), sm(*s, dir), mc(*s, dir, cohort_options())
    {
    }
    static zklock::lock_options cohort_options()
    {
        zklock::lock_options o;
        o.cohort = true;  // max_local_handoffs: the default
        return o;
    }
    std::shared_ptr<zklock::session> s;
    zklock::mutex m;
    zklock::shared_mutex sm;
    zklock::mutex mc;  // cohort mode (C64L)
};


/// How a scenario's contenders behave.
struct contender_plan {
    bool loop = false;                // loop until stop_ns (C64, RW64, S64), or acquire once (W)
    bool floor = false;               // the raw queue cycle instead of the lock
    bool raw = false;                 // with floor: on libzookeeper_st directly (the raw floor)
    std::int64_t hold_ns = 0;         // > 0: wait this long on a timer between acquire and release
    std::uint32_t permits = 1;        // lock_kind::permit's semaphore
    bool sessions_in_blocks = false;  // contender i on session i / (contenders / sessions), not i % sessions
    std::function<lock_kind(int)> kind_of = [](int) { return lock_kind::mutex; };
    bool count_requests = false;      // srst / srvr around the contenders' run: requests_per_acquisition
    int junk_children = 0;            // children of `dir` that are not lock nodes, there throughout the run
};


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
    double cpu_s = std::nan("");     // this process's CPU seconds from the first contender's start to the last one's end
};


/// Counts a scenario's failures (the first one is kept).
struct failure_count {
    std::int64_t n = 0;
    std::string first;
    void add(const std::string& what)
    {
        if (n++ == 0) first = what;
    }
};

// ---- bench/server_stats.cpp: the server's statistics: four-letter words to any host:port (srst, srvr), packet counts

std::string four_letter(const std::string& host, const std::string& port, const std::string& cmd);
void reset_server_stats(const endpoint_list& servers);
std::optional<std::int64_t> packets_received(const endpoint_list& servers);
/// A window of the servers' packet count: `srst`, then a baseline `srvr` (nullopt: no count).
std::optional<std::int64_t> open_packet_window(const endpoint_list& servers);
/// The packets the servers received since the window opened, less the final readings' own
/// `srvr` packets (ZooKeeper 3.8 counts each as one); NaN without a count.
double packets_in_window(const endpoint_list& servers, std::optional<std::int64_t> base);
endpoint_list parse_endpoints(const std::string& servers);
std::string version_of(const std::string& srvr);

// ---- bench/options.cpp: the command line

std::optional<options> parse_options(int argc, char** argv, int& exit_code);
double watchdog_s(const options& o);
/// Which side (0: the lock, 1: its raw floor) takes turn j (0 or 1) of window w of the scenarios
/// measured in turns (M, H, L): ABBA, BAAB, ...
inline std::size_t turn_side(int w, int j) { return (j == 0) == (w % 2 == 0) ? 0 : 1; }
/// Whether a scenario's line says what fraction of the server's write bound it uses (C64, W<N>):
/// the bound is measured once a run, after the first such scenario.
bool compared_with_write_bound(const std::string& scenario);

// ---- bench/harness.cpp: the harness: sessions, the contenders' shared state and sampler, running contenders, checks

/// What session i of a connect_sessions / connect_raw_sessions call connects to: `servers` (or
/// `tls_servers` over TLS), or with --ensemble one member, round-robin from a follower.
std::string servers_for_session(const bench_ctx& c, int i);
zklock::session_config session_cfg(const bench_ctx& c, int i = 0);
/// `n` fresh connected sessions: on the caller's executor, or with c.pool on the pool's
/// (session_executor(i)), each then destroyed on its own executor wherever its last reference goes.
asio::awaitable<session_list> connect_sessions(const bench_ctx& c, int n);
/// Every session's metrics, each read on its session's executor.
asio::awaitable<std::vector<zklock::metrics_snapshot>> metrics_of(const session_list& ss);
asio::awaitable<void> ensure_path(zklock::session& s, const std::string& path);
asio::awaitable<void> remove_dir(zklock::session& s, const std::string& path);
asio::awaitable<bool> wait_all(run_state& st);
std::shared_ptr<sampler_state> start_sampler(asio::any_io_executor ex, std::function<std::string()> progress);
void stop_sampler(sampler_state& s);
asio::awaitable<void> floor_contender(std::shared_ptr<zklock::session> s, std::shared_ptr<run_state> st, int id,
                                      bool loop, std::int64_t hold_ns);
asio::awaitable<void> contender(std::shared_ptr<session_locks> l, std::shared_ptr<run_state> st, int id, bool loop,
                                lock_kind kind, std::int64_t hold_ns, std::uint32_t permits);
asio::awaitable<contenders_run> run_contenders(bench_ctx& c, const std::string& dir, int sessions, int contenders,
                                               contender_plan plan, double run_s, double bound_s);
void check_failures(bench_ctx& c, scenario_result& r, const run_state& st);
void check(bench_ctx& c, scenario_result& r, const run_state& st, const std::vector<acquisition>& by_grant);
std::string dir_for(const bench_ctx& c, const std::string& name, bool floor, bool raw = false);

/// Coroutines that each complete with an error code, spawned on one executor, and a bounded wait
/// for those spawned so far. Owned by a shared_ptr: past the bound, those still running keep it.
class coroutine_group : public std::enable_shared_from_this<coroutine_group> {
public:
    explicit coroutine_group(asio::any_io_executor ex) : wake_(std::move(ex)) {}
    void spawn(asio::awaitable<error_code> a);
    /// Waits until every coroutine spawned has completed; throws (`what`: the message) past
    /// `bound`, or if one completed with an error (the first) or an exception.
    asio::awaitable<void> join(std::chrono::nanoseconds bound, const std::string& what);

private:
    asio::steady_timer wake_;
    int running_ = 0;
    error_code first_ec_;
};

// ---- bench/floor.cpp: the floors: the raw queue cycle and the two-session ping-pong

/// The path prefix of a raw exclusive queue node under `dir` (named as zklock names its own).
std::string raw_node_prefix(const std::string& dir);
std::int64_t seq_of(std::string_view name);
std::string_view predecessor(const std::vector<std::string>& children, std::int64_t own);
/// Adds the names of every listing it gets to `names_listed`.
asio::awaitable<error_code> raw_acquire(zklock::session& s, const std::string& dir, const std::string& data,
                                        std::string& own, std::atomic<std::uint64_t>& names_listed);
/// The same on libzookeeper_st directly (the raw floor).
asio::awaitable<error_code> raw_acquire(raw_session& s, const std::string& dir, const std::string& data,
                                        std::string& own, std::atomic<std::uint64_t>& names_listed);
using raw_session_list = std::vector<std::shared_ptr<raw_session>>;
asio::awaitable<raw_session_list> connect_raw_sessions(const bench_ctx& c, int n);
/// One raw-floor contender (the raw queue cycle, once or looping, as contender() with floor).
asio::awaitable<void> raw_contender(std::shared_ptr<raw_session> s, std::shared_ptr<run_state> st, int id, bool loop,
                                    std::int64_t hold_ns);
asio::awaitable<scenario_result> floor_pingpong(bench_ctx& c);
/// W<N>'s write chain: n deletions, each made when the previous one's event arrives (drain_s,
/// handoff_p50_us), on raw sessions set up before the clock starts.
asio::awaitable<scenario_result> raw_write_chain(bench_ctx& c, const std::string& name, int sessions, int n);
/// The server's write bound (writes_per_s): 64 pipelined writers on 8 raw sessions, each creating
/// and deleting a node over and over for C64's time.
asio::awaitable<scenario_result> raw_write_bound(bench_ctx& c);

// ---- bench/scenarios.cpp: the scenarios: U, C64, W<N>, RW64, S64, and the server warm-up

asio::awaitable<std::optional<acquisition>> u_cycle(const bench_ctx& c, zklock::session& s, zklock::mutex& m,
                                                     const std::string& dir, bool floor, failure_count& fails);
asio::awaitable<scenario_result> scenario_u(bench_ctx& c, bool floor, bool raw = false);
contender_plan looping_plan(const bench_ctx& c, bool floor);
double hold_bound_s(const options& o, int contenders);
double requests_per_acquisition(const contenders_run& run, std::size_t acquisitions);
double span_s(const run_state& st, const std::vector<acquisition>& acqs);
asio::awaitable<scenario_result> scenario_c64(bench_ctx& c, bool floor, bool raw = false);
asio::awaitable<scenario_result> scenario_w(bench_ctx& c, const std::string& name, bool floor, bool raw = false);
/// The figures of U, C64 and W<N> that depend on the acquisitions alone (PROTOCOL.md), for the lock,
/// its floors and the peers: U's from its cycles over a window of `window_s`; C64's and W's from
/// the acquisitions in grant order, the per-contender counts and the first request.
void add_u_figures(figures& f, const std::vector<acquisition>& acqs, double window_s);
void add_c64_figures(figures& f, const std::vector<acquisition>& by_grant, const std::vector<std::int64_t>& counts,
                     std::int64_t first_request);
void add_w_figures(figures& f, const std::vector<acquisition>& by_grant, std::int64_t first_request);
std::vector<std::string> family_vs_floor();
bool rw64_writer(int contender);
asio::awaitable<scenario_result> scenario_rw64(bench_ctx& c);
asio::awaitable<scenario_result> scenario_c64l(bench_ctx& c, std::optional<double> c64_acquisitions_per_s);
asio::awaitable<scenario_result> scenario_s64(bench_ctx& c);
/// HOLD: one session holds one lease for --duration with nothing else to do; reports the requests
/// it sends meanwhile per second, by type (the leader probe's syncs: docs/liveness.md).
asio::awaitable<json::object> scenario_hold(bench_ctx& c);
asio::awaitable<void> warm_up(bench_ctx& c, double seconds);

// ---- bench/many.cpp: many distinct locks: M<N>[x<S>] and H<N>, each with its raw floor

/// M<N>x<S>: N contenders over S sessions (1 without "x<S>"), each on its own lock; H<N>: N locks held at once.
struct many_spec {
    char kind = 'M';
    int locks = 0;
    int sessions = 1;
};
many_spec parse_many(const std::string& name);
bool is_many(const std::string& name);
/// M and its raw floor, set up side by side: after one cycle each (the first round, reported on
/// its own), every contender loops acquire → release on its own lock for 2 × duration in all, in
/// `windows` turns of each side (ABBA...). Returns {the lock's, the raw floor's}.
asio::awaitable<std::pair<scenario_result, scenario_result>> scenario_m(bench_ctx& c, const std::string& name);
/// H and its raw floor: N locks acquired at once and held, then released at once. Each side's
/// first round takes the memory figures (the lock's before the floor is set up); then `windows`
/// timed rounds each, in turns (ABBA...). Returns {the lock's, the raw floor's}.
asio::awaitable<std::pair<scenario_result, scenario_result>> scenario_h(bench_ctx& c, const std::string& name);

// ---- bench/listing.cpp: L<N>, a directory of N children listed over and over, and its raw floor

bool is_listing(const std::string& name);
/// L<N>: N children made once (ephemeral sequential, named as a mutex's nodes; untimed), then
/// listed by 4 sessions, one listing outstanding each, through zklock's session and through
/// libzookeeper_st, for 2 × duration each in `windows` turns (ABBA...). Returns {zklock's, the
/// raw floor's}.
asio::awaitable<std::pair<scenario_result, scenario_result>> scenario_l(bench_ctx& c, const std::string& name);

// ---- bench/tls.cpp: --tls: the TLS twins of U, C64, W<N>, and TLS's memory per session

/// Reports the TLS twin of a plaintext scenario (`twin`: the same lock scenario measured over TLS
/// on the same server right after `plain`, this run's) as "<name> tls", with ratios to plain.
void report_tls_twin(bench_ctx& c, scenario_result twin, const scenario_result& plain);
/// What a TLS session costs in memory over a plaintext one: N sessions connected each way.
asio::awaitable<void> run_tls_memory(bench_ctx& c);
/// The target of a twin's line ("target", "target_met"), from its (median) figures.
void set_tls_target(json::object& o);
bool is_tls_twin(const std::string& scenario);

// ---- bench/threads.cpp: --threads: C64 and M<N>[x<S>] with their sessions on worker threads

/// The io_context(s) and threads of one thread_layout, running until destroyed; the bench's own
/// thread keeps the scenario's coroutine (its timers, the sampler) and the raw floor. Destroy it
/// after every session made on it is gone: the destructor lets the contexts run out of work (the
/// sessions' deferred destruction and closes) and joins the threads.
class worker_pool {
public:
    explicit worker_pool(thread_layout layout);
    ~worker_pool();
    worker_pool(const worker_pool&) = delete;
    worker_pool& operator=(const worker_pool&) = delete;
    /// Session i's executor: a new strand of the one io_context, or (per_thread) context i mod threads.
    asio::any_io_executor session_executor(int i);

private:
    thread_layout layout_;
    std::vector<std::unique_ptr<asio::io_context>> contexts_;
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards_;
    std::vector<std::thread> threads_;
};
/// "4 threads on one io_context" / "4 io_contexts, one thread each".
std::string layout_label(const thread_layout& l);
/// The key of a layout's lines (medians) of `scenario`: "C64 threads, 4 threads on one io_context".
std::string threads_key(const std::string& scenario, const thread_layout& l);
/// C64 or M<N>[x<S>] once per --threads layout, then their report (one line per layout, and the
/// scaling table); C64's raw floor once after them, on the bench's own thread (M's in turns, as always).
asio::awaitable<void> run_threads(bench_ctx& c, const std::string& name);

// ---- bench/peers.cpp: --peers: U, C64 and W<N> with Curator's InterProcessMutex and Kazoo's Lock

/// Whether --peers runs `scenario` (U, C64, W<N>) with the peers.
bool peer_scenario(const std::string& scenario);
/// Runs `lock`'s scenario with each peer of --peers against the same server, one worker process
/// each (bench/peers/), computes their figures with the lock's own definitions and returns the
/// line's "peers" object: per peer its figures, "status" ("ok", "incomplete" or "failed"), "why",
/// and "zklock_ratio" (zklock's figure ÷ the peer's); and their table, to print under the lock's.
asio::awaitable<std::pair<json::object, std::string>> run_peers(bench_ctx& c, const scenario_result& lock);
/// The seconds --peers adds to a run of `scenario` (the watchdog).
double peer_bound_s(const options& o, const std::string& scenario);

// ---- bench/report.cpp: the report: figures as JSON lines, ratios to the floor, tables, medians, plots

bool is_integer_figure(const std::string& n);
double round_to(double v, int digits);
json::value figure_value(const std::string& name, double v);
json::value ratio_value(std::optional<double> lock, std::optional<double> floor);
json::object base_object(const bench_ctx& c, const std::string& scenario, int sessions, int contenders,
                         std::int64_t hold_us, std::int64_t permits = 0);
std::optional<double> floor_figure(const scenario_result& r, const scenario_result* floor, const std::string& n);
json::object lock_object(const bench_ctx& c, const scenario_result& r, const scenario_result* floor,
                         const scenario_result* raw_floor = nullptr);
/// W<N>'s "write_chain" object: the chain's figures, its drain against the raw floor's, the lock's against it.
json::object write_chain_object(const scenario_result& lock, const scenario_result& raw_floor,
                                const scenario_result& chain);
/// C64's and W<N>'s "server_write_bound" object: the bound's writes_per_s, the lock's two writes
/// per acquisition a second, and that as a fraction of the bound.
json::object write_bound_object(const scenario_result& lock, const scenario_result& bound);
json::object floor_object(const bench_ctx& c);
std::string fmt(const json::value& v);
void write_json(std::string& out, const json::value& v);
void emit(bench_ctx& c, const json::object& o);
void print_lock_table(const json::object& o, const scenario_result& r, const scenario_result* floor,
                      const scenario_result* pingpong, const scenario_result* raw_floor = nullptr);
void print_floor_table(const bench_ctx& c);
void write_plots(const bench_ctx& c, const scenario_result& r, const scenario_result* floor);
void print_medians(bench_ctx& c);
/// --plot: the plots of the whole run, from every run's lines (medians): the server's write bound
/// against C64's and W's writes, L<N> against the raw client, and --threads' scaling.
void write_summary_plots(const bench_ctx& c);

}  // namespace zklock_bench
