// zklock_bench — the benchmark of bench/PROTOCOL.md: scenarios U, C64, W1000, W10000 and
// the floor, each lock figure also given as a ratio to the floor measured in the same run; and the
// lock family's scenarios RW64 (shared_mutex) and S64 (semaphore), against the C64 floor.
//
//   zklock_bench [--scenario U|C64|C64L|W1000|W10000|W<N>|RW64|S64|HOLD|M<N>[x<S>]|H<N>|floor|all|family[,...]]
//                [--servers H:P]
//                [--duration S] [--warmup S] [--waiters N] [--repeat N] [--json FILE] [--plot DIR]
//                [--hold-us N] [--permits N] [--tls] [--netty] [--ensemble 3|5] [--force-sync]
//                [--threads N[,N...] [--contexts shared|per-thread|both]] [--peers curator,kazoo [--peer-bound S]]
//
// Everything runs on ONE thread: one io_context, every session and every contender on it; except
// with --threads, where C64's and M's sessions and contenders run on worker threads (bench/threads.cpp)
// while this thread keeps the scenario's coroutine and the raw floor.
// Output: one JSON line per scenario on stdout (and appended to --json FILE), then a short table;
// progress on stderr. See bench/README.md for what each figure means.
//
// What the floor is (the same definitions are in bench/REFERENCE.md). The floor issues the ZooKeeper
// operations a lock cycle needs through zklock's own session layer (zklock::session, its public
// async_* functions) with no lock logic: no acquire state machine, no lease, no queue parsing
// beyond finding the predecessor, no own-node watch. Each floor runs right after the lock
// scenario it is compared with (the lock first: its peak RSS is not that of a heap the floor's
// listings left behind), on the same server, with the same sessions × contenders layout,
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
// With --tls our server also has a TLS port, and U, C64 and W<N> each run once more over TLS right
// after their plaintext run and floors ("U tls", ...: bench/tls.cpp).
// With --ensemble N our own servers are a local N-server ensemble (zklock::test::zk_ensemble, the
// standalone server's settings), and session i of each connect_sessions / connect_raw_sessions call
// connects to one member alone, round-robin from a follower, the leader last
// (servers_for_session): the lock and its floors get the same layout, and a one-session scenario
// runs on a follower. Packet counts and the server CPU cover every member. With --force-sync our
// server(s) fsync every write (forceSync=yes).
// With --peers curator,kazoo, U, C64 and W<N> each run once more per peer after their floors, with
// Curator's InterProcessMutex or Kazoo's Lock in a worker process (bench/peers.cpp), and the
// scenario's line carries their figures and zklock's ratios to them ("peers").
#include "bench.hpp"
#include "support/tls_certs.hpp"
#include "support/zk_ensemble.hpp"

namespace zklock_bench {

namespace {

// The server's JVM: a 512 MB heap, and 4 GB of direct memory (a cap, reserved as used). A Netty
// server (--netty, --tls) holds every reply its clients have not read yet in direct memory, by
// default as much as the heap: the floors of W10000 queue about 2 GB of listings at once
// (REFERENCE.md, "Netty and the floors' flood").
constexpr const char* bench_direct_memory = "4g";
constexpr const char* bench_jvm = "-Xmx512m -XX:MaxDirectMemorySize=4g";


/// --tls: the lock scenario `name` again, over TLS to the same server, right after its plaintext
/// run (`plain`) and floors.
asio::awaitable<void> tls_twin(bench_ctx& c, const std::string& name, scenario_result& plain)
{
    plain.acqs.clear();
    plain.acqs.shrink_to_fit();
    std::fprintf(stderr, "zklock_bench: run %d: %s tls\n", c.run, name.c_str());
    c.over_tls = true;
    scenario_result twin;
    const cpu_meter tls_cpu{c};
    if (name == "U") twin = co_await scenario_u(c, false);
    else if (name == "C64") twin = co_await scenario_c64(c, false);
    else twin = co_await scenario_w(c, name, false);
    tls_cpu.add_to(twin.figs);
    tls_cpu.report(name + " tls");
    c.over_tls = false;
    report_tls_twin(c, std::move(twin), plain);
}


asio::awaitable<void> run_once(bench_ctx& c)
{
    c.floors.clear();
    bool twins = false;
    for (const auto& name : c.opt.scenarios) {
        if (!c.opt.thread_layouts.empty()) {  // C64 or M<N>[x<S>] only (parse_options)
            co_await run_threads(c, name);
            continue;
        }
        if (name == "floor") {
            json::object o = floor_object(c);
            emit(c, o);
            print_floor_table(c);
            c.lines["floor"].push_back(std::move(o));
            continue;
        }
        if (name == "HOLD") {
            std::fprintf(stderr, "zklock_bench: run %d: HOLD\n", c.run);
            json::object o = co_await scenario_hold(c);
            emit(c, o);
            c.lines[name].push_back(std::move(o));
            continue;
        }
        if (name == "RW64" || name == "S64" || name == "C64L") {
            // Compared with the C64 floor of this run; measured now if C64 has not measured it.
            const scenario_result* floor = nullptr;
            const scenario_result* raw_floor = nullptr;
            for (auto& [n, f] : c.floors) {
                if (n == "C64") floor = &f;
                if (n == "raw C64") raw_floor = &f;
            }
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
            if (name == "RW64") {
                lock = co_await scenario_rw64(c);
            } else if (name == "C64L") {
                // Compared with C64's throughput of this run, if C64 ran before it.
                std::optional<double> c64;
                if (auto it = c.lines.find("C64"); it != c.lines.end() && !it->second.empty())
                    if (auto* v = it->second.back().if_contains("acquisitions_per_s"); v && v->is_double())
                        c64 = v->as_double();
                lock = co_await scenario_c64l(c, c64);
            } else {
                lock = co_await scenario_s64(c);
            }
            lock_cpu.report(name);
            json::object o = lock_object(c, lock, floor, raw_floor);
            emit(c, o);
            print_lock_table(o, lock, floor, nullptr, raw_floor);
            c.lines[name].push_back(std::move(o));
            continue;
        }
        if (is_many(name) || is_listing(name)) {
            scenario_result lock, raw_floor;
            // The lock and its raw floor (on libzookeeper_st: the same requests, as pipelined)
            // set up side by side, measured in turns.
            std::fprintf(stderr, "zklock_bench: run %d: %s and its raw floor, in turns\n", c.run, name.c_str());
            {
                const cpu_meter cpu{c};
                if (name[0] == 'M') std::tie(lock, raw_floor) = co_await scenario_m(c, name);
                else if (name[0] == 'H') std::tie(lock, raw_floor) = co_await scenario_h(c, name);
                else std::tie(lock, raw_floor) = co_await scenario_l(c, name);
                cpu.report(name + " + raw floor");
            }
            json::object o = lock_object(c, lock, nullptr, &raw_floor);
            emit(c, o);
            print_lock_table(o, lock, nullptr, nullptr, &raw_floor);
            c.lines[name].push_back(std::move(o));
            std::erase_if(c.floors, [&](const auto& f) { return f.first == "raw " + name; });
            c.floors.emplace_back("raw " + name, std::move(raw_floor));
            continue;
        }
        // Beyond W20000 the floors cannot finish: every waiter of the plain recipe lists the
        // whole queue, and the server (-Xmx512m) runs out of heap under the burst. Only the lock
        // is measured.
        if (name[0] == 'W' && (std::atoi(name.c_str() + 1) > 20000 || c.opt.w_lock_only)) {
            std::fprintf(stderr, "zklock_bench: run %d: %s (no floor: %s)\n", c.run, name.c_str(),
                         c.opt.w_lock_only ? "--w-lock-only" : "beyond W20000");
            const cpu_meter lock_cpu{c};
            scenario_result lock = co_await scenario_w(c, name, false);
            lock_cpu.add_to(lock.figs);
            lock_cpu.report(name);
            json::object o = lock_object(c, lock, nullptr, nullptr);
            emit(c, o);
            print_lock_table(o, lock, nullptr, nullptr, nullptr);
            c.lines[name].push_back(std::move(o));
            if (c.opt.tls) {
                co_await tls_twin(c, name, lock);
                twins = true;
            }
            continue;
        }
        // The lock first, then the floors it is compared with.
        std::fprintf(stderr, "zklock_bench: run %d: %s\n", c.run, name.c_str());
        scenario_result lock;
        const cpu_meter lock_cpu{c};
        if (name == "U") lock = co_await scenario_u(c, false);
        else if (name == "C64") lock = co_await scenario_c64(c, false);
        else lock = co_await scenario_w(c, name, false);
        lock_cpu.add_to(lock.figs);
        lock_cpu.report(name);
        // The floors right after it: the raw floor (libzookeeper_st directly) and the floor
        // through zklock's session layer. The lock first, so that its peak RSS is that of a process
        // that ran nothing else since the last scenario (a floor's W10000 leaves a heap of
        // 10 000-name listings behind: ~2.5 MB more at the lock's peak after malloc_trim). The two
        // floors take turns at going first (raw first in odd runs): the one that runs second
        // finds the server's state after the other's run (W10000: 20 000 nodes created and
        // deleted), so a fixed order would count the server's after-effects against one of them.
        scenario_result raw_floor, floor;
        const bool raw_first = c.run % 2 == 1;
        const auto run_raw_floor = [&]() -> asio::awaitable<void> {
            std::fprintf(stderr, "zklock_bench: run %d: raw floor for %s\n", c.run, name.c_str());
            const cpu_meter raw_cpu{c};
            if (name == "U") raw_floor = co_await scenario_u(c, true, true);
            else if (name == "C64") raw_floor = co_await scenario_c64(c, true, true);
            else raw_floor = co_await scenario_w(c, name, true, true);
            raw_cpu.add_to(raw_floor.figs);
            raw_cpu.report("raw floor " + name);
            // A floor's samples are not kept while the next one runs; the session-layer floor's
            // are kept only for --plot.
            raw_floor.acqs.clear();
            raw_floor.acqs.shrink_to_fit();
        };
        const auto run_floor = [&]() -> asio::awaitable<void> {
            std::fprintf(stderr, "zklock_bench: run %d: floor for %s\n", c.run, name.c_str());
            const cpu_meter floor_cpu{c};
            if (name == "U") floor = co_await scenario_u(c, true);
            else if (name == "C64") floor = co_await scenario_c64(c, true);
            else floor = co_await scenario_w(c, name, true);
            floor_cpu.add_to(floor.figs);
            floor_cpu.report("floor " + name);
            if (c.opt.plot_dir.empty()) {
                floor.acqs.clear();
                floor.acqs.shrink_to_fit();
            }
        };
        if (raw_first) {
            co_await run_raw_floor();
            co_await run_floor();
        } else {
            co_await run_floor();
            co_await run_raw_floor();
        }
        scenario_result pingpong, chain;
        if (name == "C64") {
            std::fprintf(stderr, "zklock_bench: run %d: floor ping-pong\n", c.run);
            pingpong = co_await floor_pingpong(c);
        } else if (name[0] == 'W') {
            std::fprintf(stderr, "zklock_bench: run %d: write chain for %s\n", c.run, name.c_str());
            chain = co_await raw_write_chain(c, name, lock.sessions, lock.contenders);
        }
        // The server's write bound, once a run, after the first scenario that is compared with it.
        const bool bounded = compared_with_write_bound(name);
        auto bound = std::find_if(c.floors.begin(), c.floors.end(), [](const auto& f) { return f.first == "write bound"; });
        if (bounded && bound == c.floors.end()) {
            std::fprintf(stderr, "zklock_bench: run %d: the server's write bound\n", c.run);
            const cpu_meter bound_cpu{c};
            scenario_result b = co_await raw_write_bound(c);
            bound_cpu.report("write bound");
            c.floors.emplace_back("write bound", std::move(b));
            bound = std::prev(c.floors.end());
        }
        json::object o = lock_object(c, lock, &floor, &raw_floor);
        o["floors_order"] = raw_first ? "raw_first" : "session_layer_first";
        if (name[0] == 'W') {
            o["write_chain"] = write_chain_object(lock, raw_floor, chain);
            // Where the floors' costs differ (the session-layer floor's and the raw one's): the
            // names their listings carried, and the servers' collector.
            const auto floor_figures = [](const scenario_result& f) {
                const auto get = [&](const char* n, int digits) -> json::value {
                    const auto v = f.figs.get(n);
                    return v ? json::value(round_to(*v, digits)) : json::value(nullptr);
                };
                return json::object{{"names_listed_per_acquisition", get("names_listed_per_acquisition", 1)},
                                    {"server_cpu_s", get("server_cpu_s", 2)},
                                    {"server_gc_cpu_s", get("server_gc_cpu_s", 2)}};
            };
            o["floors"] = {{"session_layer", floor_figures(floor)}, {"raw", floor_figures(raw_floor)}};
        }
        if (bounded) o["server_write_bound"] = write_bound_object(lock, bound->second);
        std::string peer_table;  // --peers: the same scenario with Curator and Kazoo, after the floors
        if (!c.opt.peers.empty() && peer_scenario(name)) {
            auto [peers, table] = co_await run_peers(c, lock);
            o["peers"] = std::move(peers);
            // The CPU figure the peers' is compared with: this process's over the measured window.
            if (lock.window_acquisitions > 0)
                o["client_cpu_us_per_acquisition"] =
                    round_to(lock.window_cpu_s * 1e6 / static_cast<double>(lock.window_acquisitions), 1);
            peer_table = std::move(table);
        }
        emit(c, o);
        print_lock_table(o, lock, &floor, name == "C64" ? &pingpong : nullptr, &raw_floor);
        std::fputs(peer_table.c_str(), stdout);
        write_plots(c, lock, &floor);
        c.lines[name].push_back(std::move(o));
        floor.acqs.clear();
        floor.acqs.shrink_to_fit();
        raw_floor.acqs.clear();
        raw_floor.acqs.shrink_to_fit();
        std::erase_if(c.floors, [&](const auto& f) { return f.first == name || f.first == "raw " + name; });  // RW64/S64 measured it first
        c.floors.emplace_back("raw " + name, std::move(raw_floor));
        c.floors.emplace_back(name, std::move(floor));
        if (name == "C64") c.floors.emplace_back("pingpong", std::move(pingpong));
        if (c.opt.tls) {
            co_await tls_twin(c, name, lock);
            twins = true;
        }
    }
    if (twins) co_await run_tls_memory(c);
}


asio::awaitable<void> run_all(bench_ctx& c)
{
    // ZooKeeper 3.8.0's CommitProcessor can miss the wakeup of a request that arrives while it goes
    // to sleep (ZOOKEEPER-4537, fixed in 3.8.1): the request then waits for the member's next one,
    // and when every session on that member is waiting for an answer none pings, until the C
    // client's receive timeout drops them. On an ensemble each member gets one idle raw session
    // with the shortest timeout (4 s): its pings, every 1.3 s, are that next request.
    raw_session_list wakers;
    if (c.opt.ensemble > 0) {
        auto ex = co_await asio::this_coro::executor;
        for (const auto& member : c.session_servers) {
            wakers.push_back(raw_session::make(ex, member, std::chrono::milliseconds(4000)));
            if (auto ec = co_await wakers.back()->connect(30s)) throw boost::system::system_error(ec, "waker connect");
        }
    }
    {
        session_list ss = co_await connect_sessions(c, 1);
        co_await ensure_path(*ss[0], c.root);
    }
    co_await warm_up(c, c.opt.warmup);
    if (c.opt.tls) {  // the server's TLS path is hot code too
        c.over_tls = true;
        co_await warm_up(c, c.opt.warmup);
        c.over_tls = false;
    }
    if (four_letter(c.fl_host, c.fl_port, "srst").empty())
        std::fprintf(stderr, "zklock_bench: 'srst' got no answer (4lw.commands.whitelist?)\n");
    for (c.run = 1; c.run <= c.opt.repeat; ++c.run) co_await run_once(c);
    c.run = c.opt.repeat;
    session_list ss = co_await connect_sessions(c, 1);
    co_await remove_dir(*ss[0], c.root);
    co_await remove_dir(*ss[0], "/zklock-bench");  // fails harmlessly while other runs use it
}

}  // namespace

}  // namespace zklock_bench

using namespace zklock_bench;


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
    std::optional<zklock::test::zk_ensemble> ensemble;
    std::string fl_host, fl_port;
    try {
        const char* force_sync = c.opt.force_sync ? "yes" : "no";
        std::vector<std::string> extra_config = {"initLimit=10", "syncLimit=5"};
        if (c.opt.force_sync) extra_config.push_back("forceSync=yes");
        if (c.opt.ensemble > 0) {
            std::fprintf(stderr, "zklock_bench: starting a %d-server ZooKeeper ensemble (forceSync=%s, %s, default JIT)\n",
                         c.opt.ensemble, force_sync, bench_jvm);
            const std::int64_t t0 = now_ns();
            ensemble.emplace(c.opt.ensemble, zklock::test::server_options{
                                                 .tick_time = std::chrono::milliseconds(2000),
                                                 .jvm_heap = "512m",
                                                 .direct_memory = bench_direct_memory,
                                                 .fast_start_jvm = false,
                                                 .extra_config = extra_config,
                                             });
            // The constructor waited for a leader; the leader is the last of the round-robin.
            const int leader = ensemble->leader();
            if (leader < 0) throw std::runtime_error("the ensemble has no leader");
            const int n = ensemble->size();
            c.servers = ensemble->connect_string();
            json::array members, order;
            for (int i = 0; i < n; ++i) members.emplace_back(ensemble->connect_string(i));
            std::string order_text;
            for (int k = 1; k <= n; ++k) {
                const int i = (leader + k) % n;
                c.session_servers.push_back(ensemble->connect_string(i));
                c.server_pids.push_back(std::to_string(ensemble->pid(i)));
                order.emplace_back(i);
                order_text += (order_text.empty() ? "" : ", ") + std::to_string(i);
            }
            fl_host = "127.0.0.1";
            fl_port = std::to_string(ensemble->port((leader + 1) % n));
            std::fprintf(stderr, "zklock_bench: ensemble up after %.1f s: %s, leader %d (%s); sessions round-robin over %s\n",
                         static_cast<double>(now_ns() - t0) / 1e9, c.servers.c_str(), leader,
                         ensemble->connect_string(leader).c_str(), order_text.c_str());
            c.server_config = {{"tickTime", 2000},           {"initLimit", 10},         {"syncLimit", 5},
                               {"forceSync", force_sync},    {"maxClientCnxns", 0},     {"admin.enableServer", false},
                               {"4lw.commands.whitelist", "*"}, {"jvm", bench_jvm},      {"started_by", "zklock_bench"},
                               {"address", c.servers},       {"ensemble", n},           {"members", members},
                               {"leader", leader},           {"session_order", order}};
        } else if (c.opt.servers.empty()) {
            std::fprintf(stderr, "zklock_bench: starting ZooKeeper (forceSync=%s, %s, default JIT%s)\n", force_sync,
                         bench_jvm, c.opt.netty ? ", Netty" : "");
            server.emplace(zklock::test::server_options{
                .tick_time = std::chrono::milliseconds(2000),
                .jvm_heap = "512m",
                .direct_memory = bench_direct_memory,
                .fast_start_jvm = false,
                .extra_config = extra_config,
                .tls = c.opt.tls ? zklock::test::shared_tls_certs().server_tls() : zklock::test::tls_server_options{},
                .netty = c.opt.netty,
            });
            c.servers = server->connect_string();
            fl_host = "127.0.0.1";
            fl_port = std::to_string(server->port());
            c.server_config = {{"tickTime", 2000},           {"initLimit", 10},         {"syncLimit", 5},
                               {"forceSync", force_sync},    {"maxClientCnxns", 0},     {"admin.enableServer", false},
                               {"4lw.commands.whitelist", "*"}, {"jvm", bench_jvm},      {"started_by", "zklock_bench"},
                               {"address", c.servers}};
            if (c.opt.netty) c.server_config["serverCnxnFactory"] = "NettyServerCnxnFactory";
            if (c.opt.tls) {
                // ZooKeeper's TLS needs Netty: both ports are served by it, the plaintext one too.
                const auto& certs = zklock::test::shared_tls_certs();
                c.tls_servers = server->tls_connect_string();
                c.tls.enabled = true;
                c.tls.ca_file = certs.ca_cert().string();
                c.tls.cert_file = certs.client_cert("alice").string();
                c.tls.key_file = certs.client_key("alice").string();
                c.server_config["serverCnxnFactory"] = "NettyServerCnxnFactory";
                c.server_config["secureClientPort"] = server->tls_port();
                c.server_config["ssl.clientAuth"] = "want";
                c.server_config["tls_address"] = c.tls_servers;
            }
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
    if (server) c.server_pids.push_back(std::to_string(server->pid()));

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
    if (ensemble && ensemble->leader() != c.server_config["leader"].as_int64()) {
        std::fprintf(stderr, "zklock_bench: ERROR: the ensemble's leader changed during the run (now %d)\n",
                     ensemble->leader());
        ++c.errors;
    }
    if (c.opt.repeat > 1) print_medians(c);
    write_summary_plots(c);
    if (c.errors) std::fprintf(stderr, "zklock_bench: %d error(s), see above\n", c.errors);
    return c.errors ? 1 : 0;
}
