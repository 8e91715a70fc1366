// bench/options.cpp — the command line.
#include "bench.hpp"

namespace zklock_bench {


/// Parses the command line; std::nullopt (after printing why) to exit with `exit_code`.
std::optional<options> parse_options(int argc, char** argv, int& exit_code)
{
    options o;
    std::string scenario = "all";
    std::string threads, contexts = "shared", peers;
    po::options_description desc("zklock_bench: the zklock benchmark (see bench/README.md)\noptions");
    desc.add_options()
        ("help,h", "this help")
        ("scenario", po::value(&scenario)->default_value("all"),
         "U | C64 | C64L | W1000 | W10000 | W<N> | RW64 | S64 | floor | all (U,C64,C64L,W1000,W10000,floor) | "
         "family (RW64,S64,floor), HOLD (one idle lease held: the liveness probe's requests), "
         "M<N>[x<S>] (N contenders over S sessions, each on its own lock), H<N> (N distinct locks held at once), "
         "L<N> (a directory of N children listed over and over: the session layer's cost on long replies), "
         "or a comma-separated list")
        ("servers", po::value(&o.servers), "use this existing ZooKeeper (H:P) instead of starting one")
        ("duration", po::value(&o.duration)->default_value(5.0),
         "seconds U measures (C64, RW64, S64: twice that; U's warm-up and ping-pong: a fifth / the same)")
        ("warmup", po::value(&o.warmup)->default_value(20.0), "seconds of contended server warm-up before measuring")
        ("waiters", po::value(&o.waiters), "N of the W scenario (replaces W1000/W10000 by one W<N>)")
        ("repeat", po::value(&o.repeat)->default_value(1), "run everything this many times, then print medians")
        ("json", po::value(&o.json_file), "append the JSON lines to this file")
        ("plot", po::value(&o.plot_dir), "write SVG plots into this directory: per C64/W run its wait distribution and grant order; at the end the write bound, L<N> and --threads scaling")
        ("hold-us", po::value(&o.hold_us)->default_value(0),
         "microseconds each holder holds the lock (a timer) in C64, RW64, S64 and their floor; 0: no timer")
        ("permits", po::value(&o.permits)->default_value(4), "permits of S64's semaphore")
        ("w-lock-only", po::bool_switch(&o.w_lock_only),
         "W scenarios: measure the lock alone, no floors, no ratios (as beyond W20000; for profiling)")
        ("request-mix", po::bool_switch(&o.request_mix),
         "print (stderr) each zklock run's requests per acquisition by type, from its sessions' metrics")
        ("tls", po::bool_switch(&o.tls),
         "our server also gets a TLS port: U, C64 and W<N> run again over TLS after their plaintext run "
         "(\"U tls\", ...), plus TLS's memory per session")
        ("netty", po::bool_switch(&o.netty),
         "our server serves its plaintext port with Netty (NettyServerCnxnFactory, as with --tls) instead of NIO")
        ("ensemble", po::value(&o.ensemble)->default_value(0),
         "3 or 5: start a local ensemble of that many servers instead of one standalone server; session i of "
         "each scenario connects to one member, round-robin from a follower (the leader last)")
        ("force-sync", po::bool_switch(&o.force_sync),
         "run our server(s) with forceSync=yes (fsync every write) instead of forceSync=no")
        ("windows", po::value(&o.windows)->default_value(4),
         "M<N>, H<N>: the lock and its raw floor take turns (ABBA...), this many measured windows "
         "each (M: 2 x duration in all each; H: one round of acquire-all, release-all each)")
        ("threads", po::value(&threads),
         "N[,N...], e.g. 1,2,4: run C64 and M<N>[x<S>] (no other scenario) once per thread count with their "
         "sessions and contenders on worker threads (see --contexts), then report acquisitions/s, client CPU and "
         "acquisitions_vs_one_thread per count; the raw floor stays on the bench's one thread, no session-layer floor")
        ("contexts", po::value(&contexts)->default_value("shared"),
         "with --threads: shared (one io_context run by the N threads, each session on a strand of it), "
         "per-thread (N io_contexts run by one thread each, session i on context i mod N) or both (each count both ways)")
        ("peers", po::value(&peers),
         "curator,kazoo (or one of them): after zklock's U, C64 and W<N> and their floors, run the same scenario with "
         "Apache Curator's InterProcessMutex (Java) and Kazoo's Lock (Python) against the same server, one thread per "
         "contender, and add their figures and zklock's ratios to the scenario's line")
        ("peer-bound", po::value(&o.peer_bound)->default_value(w_bound_s),
         "seconds a peer's W<N> may run once started (past it, its line says what it reached)");
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
    if (!(o.duration > 0) || !(o.warmup >= 0) || o.repeat < 1 || (vm.count("waiters") && o.waiters < 1) || o.windows < 1)
        return fail("--duration must be > 0, --warmup >= 0, --repeat, --waiters and --windows >= 1");
    if (o.hold_us < 0 || o.hold_us > 60'000'000) return fail("--hold-us must be in 0..60000000");
    if (o.permits < 1 || o.permits > 1'000'000) return fail("--permits must be in 1..1000000");
    if (!o.servers.empty() && o.servers.find(':') == std::string::npos) return fail("--servers wants H:P");
    if (o.tls && !o.servers.empty()) return fail("--tls needs the benchmark's own server (no --servers)");
    if (o.ensemble != 0 && o.ensemble != 3 && o.ensemble != 5) return fail("--ensemble must be 3 or 5");
    if (o.ensemble != 0 && !o.servers.empty()) return fail("--ensemble starts its own servers (no --servers)");
    if (o.ensemble != 0 && o.tls) return fail("--ensemble does not go with --tls");
    if (o.netty && (!o.servers.empty() || o.ensemble != 0))
        return fail("--netty is for the benchmark's own standalone server (no --servers, no --ensemble)");
    if (o.force_sync && !o.servers.empty()) return fail("--force-sync needs the benchmark's own server(s) (no --servers)");
    if (vm.count("threads")) {
        if (contexts != "shared" && contexts != "per-thread" && contexts != "both")
            return fail("--contexts must be shared, per-thread or both");
        for (std::size_t pos = 0; pos <= threads.size();) {
            const std::size_t comma = std::min(threads.find(',', pos), threads.size());
            const std::string n = threads.substr(pos, comma - pos);
            pos = comma + 1;
            const int k = n.empty() || n.size() > 3 || n.find_first_not_of("0123456789") != std::string::npos
                              ? 0
                              : std::atoi(n.c_str());
            if (k < 1 || k > 64) return fail("--threads wants thread counts in 1..64, comma-separated (e.g. 1,2,4)");
            for (const bool per_thread : {false, true})
                if ((per_thread ? contexts != "shared" : contexts != "per-thread") &&
                    std::none_of(o.thread_layouts.begin(), o.thread_layouts.end(), [&](const thread_layout& l) {
                        return l.threads == k && l.per_thread == per_thread;
                    }))
                    o.thread_layouts.push_back({k, per_thread});
        }
        if (o.tls) return fail("--threads does not go with --tls");
    } else if (vm.count("contexts") && !vm["contexts"].defaulted()) {
        return fail("--contexts goes with --threads");
    }

    for (std::size_t pos = 0; vm.count("peers") && pos <= peers.size();) {
        const std::size_t comma = std::min(peers.find(',', pos), peers.size());
        const std::string p = peers.substr(pos, comma - pos);
        pos = comma + 1;
        if (p != "curator" && p != "kazoo") return fail("--peers wants curator, kazoo or curator,kazoo, not '" + p + "'");
        if (std::find(o.peers.begin(), o.peers.end(), p) == o.peers.end()) o.peers.push_back(p);
    }
    std::sort(o.peers.begin(), o.peers.end());  // curator, then kazoo
    if (!o.peers.empty() && !o.thread_layouts.empty()) return fail("--peers does not go with --threads");
    if (!(o.peer_bound > 0) || o.peer_bound > 3600) return fail("--peer-bound must be in (0, 3600]");

    std::vector<std::string> wanted;
    for (std::size_t pos = 0; pos <= scenario.size();) {
        std::size_t comma = std::min(scenario.find(',', pos), scenario.size());
        std::string s = scenario.substr(pos, comma - pos);
        pos = comma + 1;
        if (s == "all") wanted.insert(wanted.end(), {"U", "C64", "C64L", "W1000", "W10000", "floor"});
        else if (s == "family") wanted.insert(wanted.end(), {"RW64", "S64", "floor"});
        else if (s == "U" || s == "C64" || s == "C64L" || s == "RW64" || s == "S64" || s == "HOLD" || s == "floor")
            wanted.push_back(s);
        else if (s.size() > 1 && s[0] == 'W' && s.find_first_not_of("0123456789", 1) == std::string::npos &&
                 std::atoi(s.c_str() + 1) > 0)
            wanted.push_back("W" + std::to_string(std::atoi(s.c_str() + 1)));
        else if (is_many(s) || is_listing(s)) wanted.push_back(s);
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
    if (!o.thread_layouts.empty())
        for (const auto& s : o.scenarios)
            if (s != "C64" && !(is_many(s) && s[0] == 'M'))
                return fail("--threads runs C64 and M<N>[x<S>] only, not '" + s + "'");
    return o;
}


bool compared_with_write_bound(const std::string& scenario) { return scenario == "C64" || scenario[0] == 'W'; }


/// The run's bound: warm-up plus, per run, every scenario's own bounds, plus slack.
double watchdog_s(const options& o)
{
    double per_run = 0;
    const auto layouts = static_cast<double>(o.thread_layouts.size());
    for (const auto& s : o.scenarios) {
        const double hold_s = static_cast<double>(o.hold_us) / 1e6 * 64;
        if (layouts > 0) {  // each layout's lock (M: with its raw floor), then C64's raw floor once
            if (s == "C64") per_run += (layouts + 1) * (2 * o.duration + 90 + hold_s);
            else per_run += layouts * 2 * (2 * o.duration + 2 * 120 + parse_many(s).locks / 50.0 + 60);
            continue;
        }
        if (s == "U") per_run += 2 * (1.2 * o.duration + 30);
        else if (s == "C64") per_run += 2 * (2 * o.duration + 90 + hold_s) + o.duration + 30;
        else if (s == "RW64" || s == "S64" || s == "C64L") per_run += 2 * (2 * o.duration + 90 + hold_s);
        else if (s == "HOLD") per_run += o.duration + 30;
        else if (s[0] == 'W') per_run += 2 * (w_bound_s + 60);
        else if (is_many(s)) per_run += 2 * (2 * o.duration + 2 * 120 + parse_many(s).locks / 50.0 + 60);
        else if (is_listing(s)) per_run += 2 * (2 * o.duration + 1 + 120) + std::atoi(s.c_str() + 1) / 500.0 + 120;
        if (o.tls) {  // the TLS twin
            if (s == "U") per_run += 1.2 * o.duration + 30;
            else if (s == "C64") per_run += 2 * o.duration + 90 + hold_s;
            else if (s[0] == 'W') per_run += w_bound_s + 60;
        }
    }
    if (layouts == 0 && std::any_of(o.scenarios.begin(), o.scenarios.end(), compared_with_write_bound))
        per_run += 2 * o.duration + 60 + 30;  // the server's write bound (its own bound, and its set-up)
    if (o.tls) per_run += 60;  // tls memory
    for (const auto& s : o.scenarios) per_run += peer_bound_s(o, s);
    return (o.tls ? 2 : 1) * o.warmup + 90 + o.repeat * per_run;
}

}  // namespace zklock_bench
