// bench/peers.cpp — --peers: U, C64 and W<N> with Apache Curator 5.4's InterProcessMutex and Kazoo
// 2.8's Lock (Debian's libcurator-recipes-java and python3-kazoo, as the interop tests use them),
// against the bench's server, right after zklock's run of the scenario and its floors.
//
// Each peer scenario is one worker process (bench/peers/CuratorBench.java, compiled once per bench
// process as the interop tests compile theirs, test/support/curator_worker.hpp;
// bench/peers/kazoo_bench.py), written as the library's users write it: one client per session,
// one lock object and one thread per contender, the scenario's sessions × contenders layout
// (contender i on session i % sessions). The worker connects, warms itself (`duration` seconds of
// a loop on another path, with up to 64 threads) and starts its threads untimed, then
// waits at a start gate; the bench opens it and samples the worker's /proc figures (threads,
// VmHWM, CPU time) until the worker says it is done. The worker reports every acquisition's four
// times (CLOCK_MONOTONIC, the bench's clock) and its node; the bench computes the figures with the
// functions it uses for zklock (add_u_figures, add_c64_figures, add_w_figures).
#include "bench.hpp"
#include "support/curator_worker.hpp"
#include "support/process_util.hpp"

namespace zklock_bench {

namespace {

namespace fs = std::filesystem;

const fs::path peers_dir = fs::path(ZKLOCK_SOURCE_DIR) / "bench" / "peers";


/// A directory removed with its files when the process exits.
struct temp_dir_at_exit {
    fs::path path;
    ~temp_dir_at_exit()
    {
        std::error_code ec;
        if (!path.empty()) fs::remove_all(path, ec);
    }
};


/// The classpath of the compiled Curator worker (compiled once per process, into a temporary
/// directory removed at exit), or the error.
const std::pair<std::string, std::string>& curator_classpath()
{
    static temp_dir_at_exit classes;
    static const std::pair<std::string, std::string> cp = []() -> std::pair<std::string, std::string> {
        try {
            const fs::path out = zklock::test::detail::make_temp_dir("zklock-bench-curator");
            classes.path = out;
            return {zklock::test::compile_against_curator(peers_dir / "CuratorBench.java", out), ""};
        } catch (const std::exception& e) {
            // Its first line, then javac's last lines.
            const std::string what = e.what();
            const auto nl = what.find('\n');
            return {"", nl == std::string::npos ? what
                                                : what.substr(0, nl) + " " + zklock::test::detail::tail_lines(what.substr(nl + 1), 3)};
        }
    }();
    return cp;
}


/// "Key:  value" of /proc/<pid>/status as a number (-1 if absent).
long status_of(pid_t pid, const char* key)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    const std::size_t n = std::strlen(key);
    for (std::string line; std::getline(in, line);)
        if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':') return std::atol(line.c_str() + n + 1);
    return -1;
}


std::int64_t trailing_seq(std::string_view node)
{
    std::size_t i = node.size();
    while (i > 0 && node[i - 1] >= '0' && node[i - 1] <= '9') --i;
    std::int64_t seq = -1;
    std::from_chars(node.data() + i, node.data() + node.size(), seq);
    return seq;
}


/// What one peer's run of a scenario gave.
struct peer_outcome {
    std::string status = "failed";  // ok, incomplete (it ran, not to the end), failed (no figures)
    std::string why;
    figures figs;
    int threads_started = 0;
};


/// The worker's log so far: its "ready" count, its "end" line, and (once ended) its acquisitions.
struct worker_log {
    std::optional<int> ready;
    std::optional<std::string> end;
};

worker_log read_log(const fs::path& file)
{
    worker_log w;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
        if (line.starts_with("ready ")) w.ready = std::atoi(line.c_str() + 6);
        else if (line.starts_with("end ")) w.end = line.substr(4);
    }
    return w;
}


asio::awaitable<void> pause(std::chrono::milliseconds d)
{
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::deferred);
}


asio::awaitable<peer_outcome> run_peer(bench_ctx& c, const std::string& peer, const scenario_result& lock)
{
    peer_outcome out;
    const bool u = lock.scenario == "U", w = lock.scenario[0] == 'W';
    const int sessions = lock.sessions, contenders = lock.contenders;
    // The scenario's times, as zklock's: U measures `duration` after a fifth of it; C64 loops
    // 2 × duration; W acquires once. The bound: zklock's (U, C64), --peer-bound (W).
    const double warm_s = u ? c.opt.duration / 5 : 0, run_s = u ? c.opt.duration : w ? 0 : 2 * c.opt.duration;
    const double bound_s = w ? c.opt.peer_bound : warm_s + run_s + (u ? 30 : 60);
    // The worker first warms itself for `duration` (its runtime loads and compiles the lock's code;
    // zklock's is compiled ahead of time), before U's own warm-up.
    const double prewarm_s = c.opt.duration;
    std::vector<std::string> argv;
    if (peer == "curator") {
        const auto& [cp, error] = curator_classpath();
        if (!error.empty()) {
            out.why = error;
            co_return out;
        }
        argv = {"java", "-cp", cp, "CuratorBench"};
    } else {
        argv = {"/usr/bin/python3", (peers_dir / "kazoo_bench.py").string()};
    }
    const fs::path dir = zklock::test::detail::make_temp_dir("zklock-bench-" + peer);
    const fs::path log = dir / "log", go = dir / "go", quit = dir / "quit";
    const std::string path = c.root + "/" + peer + "-" + lock.scenario + "-r" + std::to_string(c.run);
    const auto ms = [](double s) { return std::to_string(static_cast<std::int64_t>(s * 1000)); };
    argv.insert(argv.end(), {c.servers, path, w ? "once" : "loop", std::to_string(sessions), std::to_string(contenders),
                             ms(warm_s), ms(run_s), ms(bound_s), log.string(), go.string(), quit.string(), ms(prewarm_s)});
    zklock::test::child_process worker;
    worker.start(argv, (dir / "out").string(), (dir / "err").string(),
                 {.search_path = true, .own_group = true, .close_other_fds = true});
    const auto failed = [&](const std::string& why) {
        out.why = why + "; stderr: " + zklock::test::detail::tail_lines(worker.err(), 3);
        worker.kill_and_reap();
        std::error_code ec;
        fs::remove_all(dir, ec);
        return out;
    };

    // Set-up (untimed): its sessions connect, its threads start and wait at the gate.
    const double setup_s = 60 + contenders / 100.0 + prewarm_s;
    const std::int64_t setup_end = now_ns() + seconds_ns(setup_s);
    worker_log wl;
    for (;;) {
        wl = read_log(log);
        if (wl.ready || wl.end) break;
        if (worker.poll()) co_return failed("the worker exited during set-up with status " + std::to_string(*worker.status));
        if (now_ns() > setup_end) co_return failed("set-up took longer than " + ms(setup_s) + " ms");
        co_await pause(20ms);
    }
    out.threads_started = wl.ready.value_or(0);
    const auto cpu0 = cpu_seconds(std::to_string(worker.pid));
    int max_threads = static_cast<int>(status_of(worker.pid, "Threads"));
    std::ofstream(go) << "go\n";
    const std::int64_t t_go = now_ns(), run_end = t_go + seconds_ns(bound_s + 30);
    std::int64_t last_progress = t_go;
    while (!wl.end) {
        if (worker.poll()) co_return failed("the worker exited with status " + std::to_string(*worker.status));
        if (now_ns() > run_end) co_return failed("no end " + ms(bound_s + 30) + " ms after the start");
        co_await pause(100ms);
        max_threads = std::max(max_threads, static_cast<int>(status_of(worker.pid, "Threads")));
        if (now_ns() - last_progress > seconds_ns(5)) {
            last_progress = now_ns();
            std::fprintf(stderr, "zklock_bench:   %s %s: %.0f s\n", peer.c_str(), lock.scenario.c_str(),
                         static_cast<double>(now_ns() - t_go) / 1e9);
        }
        wl = read_log(log);
    }
    const auto cpu1 = cpu_seconds(std::to_string(worker.pid));
    const double peak_mb = static_cast<double>(status_of(worker.pid, "VmHWM")) / 1024.0;
    max_threads = std::max(max_threads, static_cast<int>(status_of(worker.pid, "Threads")));
    std::ofstream(quit) << "quit\n";

    // Its acquisitions, in grant order.
    std::vector<acquisition> by_grant;
    std::vector<std::int64_t> counts(static_cast<std::size_t>(contenders));
    {
        std::ifstream in(log);
        for (std::string line; std::getline(in, line);) {
            if (!line.starts_with("acq ")) continue;
            std::istringstream ls(line.substr(4));
            acquisition a;
            std::string node;
            ls >> a.contender >> node >> a.t_request >> a.t_acquired >> a.t_release_start >> a.t_released;
            if (!ls || a.contender < 0 || a.contender >= contenders) continue;
            a.seq = trailing_seq(node);
            ++counts[static_cast<std::size_t>(a.contender)];
            by_grant.push_back(a);
        }
    }
    sort_by_grant(by_grant);
    std::int64_t first_request = by_grant.empty() ? 0 : by_grant.front().t_request;
    for (const auto& a : by_grant) first_request = std::min(first_request, a.t_request);
    if (u) {
        std::int64_t last = first_request;
        for (const auto& a : by_grant) last = std::max(last, a.t_released);
        add_u_figures(out.figs, by_grant, static_cast<double>(last - first_request) / 1e9);
    } else if (w) {
        add_w_figures(out.figs, by_grant, first_request);
        out.figs.add("completed", static_cast<double>(by_grant.size()));
    } else {
        add_c64_figures(out.figs, by_grant, counts, first_request);
    }
    const double cpu_s = (cpu1.first - cpu0.first) + (cpu1.second - cpu0.second);
    out.figs.add("overlaps", static_cast<double>(overlaps(by_grant)));
    out.figs.add("client_cpu_s", cpu_s);
    out.figs.add("client_cpu_us_per_acquisition",
                 by_grant.empty() ? std::nan("") : cpu_s * 1e6 / static_cast<double>(by_grant.size()));
    out.figs.add("threads", max_threads);
    out.figs.add("peak_rss_mb", peak_mb);

    // "end <recorded> <started> <why>"
    std::istringstream es(*wl.end);
    long recorded = 0, started = 0;
    es >> recorded >> started;
    std::string why;
    std::getline(es >> std::ws, why);
    const bool all_started = started == contenders;
    if (why == "ok" && all_started && (!w || static_cast<int>(by_grant.size()) == contenders) && !by_grant.empty()) {
        out.status = "ok";
    } else {
        out.status = by_grant.empty() ? "failed" : "incomplete";
        out.why = (why == "ok" ? std::string() : why) + (why == "ok" ? "" : "; ") + "reached: " +
                  std::to_string(by_grant.size()) + " acquisitions, " + std::to_string(started) + " of " +
                  std::to_string(contenders) + " contender threads started, " + std::to_string(max_threads) +
                  " threads, " + std::to_string(static_cast<int>(peak_mb)) + " MB";
    }
    if (!worker.poll()) {  // it closes its sessions, then exits: 20 s at most
        const std::int64_t exit_end = now_ns() + seconds_ns(20);
        while (!worker.poll() && now_ns() < exit_end) co_await pause(50ms);
        worker.kill_and_reap();
    }
    {  // the lock path (its nodes went with the worker's sessions)
        session_list ss = co_await connect_sessions(c, 1);
        co_await remove_dir(*ss[0], path);
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    co_return out;
}


/// The figures a peer's line compares with zklock's (zklock ÷ peer), for those the scenario has.
const std::vector<std::string>& compared_figures()
{
    static const std::vector<std::string> names = {
        "cycles_per_s",  "acquire_p50_us", "release_p50_us", "acquisitions_per_s", "handoff_p50_us",
        "handoff_p99_us", "jain_index",    "drain_s",        "wait_p99_ms",        "wait_p99_us",
        "client_cpu_us_per_acquisition",   "threads",        "peak_rss_mb"};
    return names;
}

}  // namespace


bool peer_scenario(const std::string& scenario) { return scenario == "U" || scenario == "C64" || scenario[0] == 'W'; }


double peer_bound_s(const options& o, const std::string& scenario)
{
    if (o.peers.empty() || !peer_scenario(scenario)) return 0;
    // Per peer: the compile (once), set-up, the run's bound, the exit.
    const double run = scenario == "U" ? 1.2 * o.duration + 30 : scenario == "C64" ? 2 * o.duration + 60 : o.peer_bound;
    const double setup = 60 + (scenario[0] == 'W' ? std::atoi(scenario.c_str() + 1) / 100.0 : 0) + o.duration;
    return static_cast<double>(o.peers.size()) * (run + 30 + setup + 20) + 300;
}


asio::awaitable<std::pair<json::object, std::string>> run_peers(bench_ctx& c, const scenario_result& lock)
{
    json::object peers;
    // zklock's CPU per acquisition over its measured window (the peers' is theirs over theirs).
    figures z = lock.figs;
    z.add("client_cpu_us_per_acquisition", lock.window_acquisitions > 0
                                               ? lock.window_cpu_s * 1e6 / static_cast<double>(lock.window_acquisitions)
                                               : std::nan(""));
    std::vector<std::pair<std::string, peer_outcome>> outcomes;
    for (const auto& peer : c.opt.peers) {
        std::fprintf(stderr, "zklock_bench: run %d: %s with %s\n", c.run, lock.scenario.c_str(), peer.c_str());
        peer_outcome p = co_await run_peer(c, peer, lock);
        if (p.status != "ok")
            std::fprintf(stderr, "zklock_bench: %s with %s: %s: %s\n", lock.scenario.c_str(), peer.c_str(), p.status.c_str(),
                         p.why.c_str());
        json::object o;
        o["library"] = peer == "curator" ? "Apache Curator 5.4 InterProcessMutex" : "Kazoo 2.8 Lock";
        o["status"] = p.status;
        if (!p.why.empty()) o["why"] = p.why;
        for (auto& [n, v] : p.figs.list) o[n] = figure_value(n, v);
        json::object ratio;
        for (const auto& n : compared_figures()) {
            const auto zv = z.get(n), pv = p.figs.get(n);
            if (zv && pv) ratio[n] = ratio_value(*zv, *pv);
        }
        o["zklock_ratio"] = std::move(ratio);
        peers[peer] = std::move(o);
        outcomes.emplace_back(peer, std::move(p));
    }
    // The table: zklock's figure, then each peer's and zklock's ratio to it.
    std::string table;
    char buf[2048];
    const auto print = [&](const char* format, auto... args) {
        std::snprintf(buf, sizeof buf, format, args...);
        table += buf;
    };
    print("%s", "  peers (same server, same run; ratio = zklock / peer):\n");
    print("  %-30s %12s", "figure", "zklock");
    for (const auto& [peer, p] : outcomes) print(" %12s %8s", peer.c_str(), "ratio");
    print("%s", "\n");
    for (const auto& n : compared_figures()) {
        const auto zv = z.get(n);
        if (!zv) continue;
        print("  %-30s %12s", n.c_str(), fmt(figure_value(n, *zv)).c_str());
        for (const auto& [peer, p] : outcomes) {
            const auto pv = p.figs.get(n);
            print(" %12s %8s", pv ? fmt(figure_value(n, *pv)).c_str() : "-",
                        pv ? fmt(ratio_value(*zv, *pv)).c_str() : "-");
        }
        print("%s", "\n");
    }
    for (const std::string n : {"fifo_inversions", "overlaps", "completed"}) {
        if (std::none_of(outcomes.begin(), outcomes.end(), [&](const auto& x) { return x.second.figs.get(n).has_value(); }))
            continue;
        const auto zv = z.get(n);
        print("  %-30s %12s", n.c_str(), zv ? fmt(figure_value(n, *zv)).c_str() : "-");
        for (const auto& [peer, p] : outcomes) {
            const auto pv = p.figs.get(n);
            print(" %12s %8s", pv ? fmt(figure_value(n, *pv)).c_str() : "-", "");
        }
        print("%s", "\n");
    }
    for (const auto& [peer, p] : outcomes)
        if (p.status != "ok") print("  %s: %s: %s\n", peer.c_str(), p.status.c_str(), p.why.c_str());
    co_return std::pair{std::move(peers), std::move(table)};
}

}  // namespace zklock_bench
