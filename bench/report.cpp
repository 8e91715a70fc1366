// bench/report.cpp — the report: figures as JSON lines, ratios to the floor, tables, medians, plots.
#include "bench.hpp"

namespace zklock_bench {


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
    if (name == "requests_per_acquisition" || name.ends_with("cpu_s")) return round_to(v, 2);
    if (name.find("_vs_") != std::string::npos || name.ends_with("_of_bound")) return round_to(v, 3);  // ratios
    if (name.ends_with("_ms") || name.ends_with("drain_s") || name.ends_with("_all_s") || name == "first_round_s")
        return round_to(v, 3);
    return round_to(v, 1);
}


json::value ratio_value(std::optional<double> lock, std::optional<double> floor)
{
    if (!lock || !floor || *floor == 0 || !std::isfinite(*lock / *floor)) return nullptr;
    return round_to(*lock / *floor, 3);
}


json::object base_object(const bench_ctx& c, const std::string& scenario, int sessions, int contenders,
                         std::int64_t hold_us, std::int64_t permits)
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


json::object lock_object(const bench_ctx& c, const scenario_result& r, const scenario_result* floor,
                         const scenario_result* raw_floor)
{
    json::object o = base_object(c, r.scenario, r.sessions, r.contenders, r.hold_us, r.permits);
    for (auto& [n, v] : r.figs.list) o[n] = figure_value(n, v);
    for (auto& [n, v] : r.figs.list) o[n + "_vs_floor"] = ratio_value(v, floor_figure(r, floor, n));
    for (auto& [n, v] : r.figs.list) o[n + "_vs_raw_floor"] = ratio_value(v, floor_figure(r, raw_floor, n));
    return o;
}


json::object write_chain_object(const scenario_result& lock, const scenario_result& raw_floor,
                                const scenario_result& chain)
{
    json::object o;
    for (auto& [n, v] : chain.figs.list) o[n] = figure_value(n, v);
    // The chain's drain against the raw floor's: the lowest drain_s_vs_raw_floor that a handoff
    // through the server (one write, one event) leaves reachable, before any queueing.
    o["drain_s_vs_raw_floor"] = ratio_value(*chain.figs.get("drain_s"), raw_floor.figs.get("drain_s"));
    o["zklock_drain_s_vs_chain"] = ratio_value(*lock.figs.get("drain_s"), chain.figs.get("drain_s"));
    o["zklock_handoff_p50_us_vs_chain"] = ratio_value(*lock.figs.get("handoff_p50_us"), chain.figs.get("handoff_p50_us"));
    // The lock's steady handoffs (after the first tenth of its grants, when the queueing burst
    // is over) against the chain's mean gap from one deletion to the next.
    if (auto gap = lock.figs.get("grant_gap_rest_us"))
        o["zklock_grant_gap_rest_us_vs_chain"] = ratio_value(*gap, chain.figs.get("gap_mean_us"));
    return o;
}


json::object write_bound_object(const scenario_result& lock, const scenario_result& bound)
{
    json::object o;
    const double bound_w = *bound.figs.get("writes_per_s");
    o["writes_per_s"] = figure_value("writes_per_s", bound_w);
    if (auto a = lock.figs.get("acquisitions_per_s")) {
        o["lock_writes_per_s"] = figure_value("lock_writes_per_s", 2 * *a);
        o["lock_fraction_of_bound"] = ratio_value(2 * *a, bound_w);
    }
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
                      const scenario_result* pingpong, const scenario_result* raw_floor)
{
    std::string extra;
    if (r.hold_us > 0) extra += ", hold " + std::to_string(r.hold_us) + " us";
    if (r.permits > 0) extra += ", " + std::to_string(r.permits) + " permits";
    if (r.scenario == "RW64" || r.scenario == "S64") extra += "   (floor: the C64 floor)";
    const std::string threads = r.layout.empty() ? "one thread" : r.layout + ", the raw floor on one thread";
    std::printf("%s: %d session(s) x %d contender(s) total%s, %s   (ratio = zklock / floor, same run)\n",
                r.scenario.c_str(), r.sessions, r.contenders, extra.c_str(), threads.c_str());
    int width = 20;
    for (auto& [n, v] : r.figs.list) width = std::max(width, static_cast<int>(n.size()));
    std::printf("  %-*s %12s %12s %8s %12s %8s\n", width, "figure", "zklock", "raw floor", "vs raw", "floor", "ratio");
    for (auto& [n, v] : r.figs.list) {
        std::optional<double> f = floor_figure(r, floor, n);
        std::optional<double> rf = floor_figure(r, raw_floor, n);
        std::printf("  %-*s %12s %12s %8s %12s %8s\n", width, n.c_str(), fmt(o.at(n)).c_str(),
                    rf ? fmt(figure_value(n, *rf)).c_str() : "-", fmt(o.at(n + "_vs_raw_floor")).c_str(),
                    f ? fmt(figure_value(n, *f)).c_str() : "-", fmt(o.at(n + "_vs_floor")).c_str());
    }
    if (auto* wc = o.if_contains("write_chain"); wc && wc->is_object()) {
        const auto& w = wc->as_object();
        std::printf("  write chain (one write and one event per handoff, set up untimed): drain_s %s (vs raw floor %s; "
                    "zklock vs chain %s), handoff_p50_us %s (zklock vs chain %s)\n",
                    fmt(w.at("drain_s")).c_str(), fmt(w.at("drain_s_vs_raw_floor")).c_str(),
                    fmt(w.at("zklock_drain_s_vs_chain")).c_str(), fmt(w.at("handoff_p50_us")).c_str(),
                    fmt(w.at("zklock_handoff_p50_us_vs_chain")).c_str());
        if (auto* g = w.if_contains("zklock_grant_gap_rest_us_vs_chain"))
            std::printf("  write chain: gap_mean_us %s (zklock's grant_gap_rest_us vs it %s), server_cpu_s %s\n",
                        fmt(w.at("gap_mean_us")).c_str(), fmt(*g).c_str(),
                        w.contains("server_cpu_s") ? fmt(w.at("server_cpu_s")).c_str() : "-");
    }
    if (auto* wb = o.if_contains("server_write_bound"); wb && wb->is_object()) {
        const auto& w = wb->as_object();
        std::printf("  server write bound (64 pipelined writers on 8 raw sessions): %s writes/s; this scenario's two writes "
                    "per acquisition: %s writes/s, %s of it\n",
                    fmt(w.at("writes_per_s")).c_str(), fmt(w.at("lock_writes_per_s")).c_str(),
                    fmt(w.at("lock_fraction_of_bound")).c_str());
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
    std::printf("floors: \"raw X\" on libzookeeper_st directly, \"X\" through zklock's session layer; no lock logic (see bench/README.md)\n");
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


namespace {

/// The median over the runs of a number in their lines (`key`, or `sub` in the object at `key`).
std::optional<double> median_at(const std::vector<json::object>& runs, std::string_view key, std::string_view sub = {})
{
    std::vector<double> xs;
    for (const auto& o : runs) {
        const json::value* v = o.if_contains(key);
        if (v && !sub.empty()) v = v->is_object() ? v->as_object().if_contains(sub) : nullptr;
        if (v && v->is_number()) xs.push_back(v->to_number<double>());
    }
    if (xs.empty()) return std::nullopt;
    return zklock_bench::median(std::move(xs));
}

const char* const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"};

}  // namespace


void write_summary_plots(const bench_ctx& c)
{
    if (c.opt.plot_dir.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(c.opt.plot_dir, ec);
    const std::string of_runs = c.opt.repeat > 1 ? " (median of " + std::to_string(c.opt.repeat) + " runs)" : "";
    const auto lines_of = [&](const std::string& key) -> const std::vector<json::object>* {
        auto it = c.lines.find(key);
        return it == c.lines.end() || it->second.empty() ? nullptr : &it->second;
    };
    std::vector<std::string> written;
    bool ok = true;
    const auto nan = std::nan("");

    // The server's write bound against the lock scenarios' writes (two per acquisition).
    {
        std::vector<std::string> cats;
        zklock_bench::svg::bar_series bound{"the server's write bound (a pipelined writer)", {}, palette[1], {}};
        zklock_bench::svg::bar_series lock{"the lock: two writes per acquisition", {}, palette[0], {}};
        for (const auto& name : c.opt.scenarios) {
            const auto* runs = lines_of(name);
            if (!runs) continue;
            const auto b = median_at(*runs, "server_write_bound", "writes_per_s");
            const auto l = median_at(*runs, "server_write_bound", "lock_writes_per_s");
            if (!b || !l) continue;
            cats.push_back(name);
            bound.values.push_back(*b);
            bound.notes.push_back(zklock_bench::svg::detail::label(*b));
            lock.values.push_back(*l);
            const auto f = median_at(*runs, "server_write_bound", "lock_fraction_of_bound");
            lock.notes.push_back(f ? zklock_bench::svg::detail::num(*f) + " of it" : zklock_bench::svg::detail::label(*l));
        }
        if (!cats.empty()) {
            const std::string path = c.opt.plot_dir + "/write-bound.svg";
            ok = zklock_bench::svg::bars(path, "Writes/s: the lock against the server's write bound" + of_runs, "scenario",
                                         "writes per second", cats, {bound, lock}) && ok;
            written.push_back(path);
        }
    }

    // L<N>: zklock's listing against the raw client's, as ratios (1: the raw client's cost).
    {
        const std::pair<const char*, const char*> figures[] = {
            {"listing_p50_us", "time per listing (p50)"},
            {"client_cpu_us_per_listing", "client CPU per listing"},
            {"listings_per_s", "listings/s"},
        };
        std::vector<std::string> cats;
        for (const auto& f : figures) cats.emplace_back(f.second);
        std::vector<zklock_bench::svg::bar_series> series;
        for (const auto& name : c.opt.scenarios) {
            const auto* runs = lines_of(name);
            if (!runs || !is_listing(name)) continue;
            zklock_bench::svg::bar_series s{name, {}, palette[series.size() % std::size(palette)], {}};
            for (const auto& f : figures)
                s.values.push_back(median_at(*runs, std::string(f.first) + "_vs_raw_floor").value_or(nan));
            series.push_back(std::move(s));
        }
        if (!series.empty()) {
            const std::string path = c.opt.plot_dir + "/listings.svg";
            ok = zklock_bench::svg::bars(path, "L<N>: zklock ÷ the raw client (dashed: 1)" + of_runs, "figure",
                                         "ratio to the raw client", cats, series, 1.0) && ok;
            written.push_back(path);
        }
    }

    // --threads: acquisitions/s by thread count, one io_context against one per thread.
    std::vector<int> counts;
    for (const auto& l : c.opt.thread_layouts)
        if (std::find(counts.begin(), counts.end(), l.threads) == counts.end()) counts.push_back(l.threads);
    std::sort(counts.begin(), counts.end());
    std::vector<std::string> thread_cats;
    for (int n : counts) thread_cats.push_back(std::to_string(n) + (n == 1 ? " thread" : " threads"));
    for (const auto& name : c.opt.scenarios) {
        std::vector<zklock_bench::svg::bar_series> series;
        for (const bool per_thread : {false, true}) {
            zklock_bench::svg::bar_series s{per_thread ? "an io_context per thread" : "one io_context",
                                            std::vector<double>(counts.size(), nan), palette[per_thread ? 2 : 0],
                                            std::vector<std::string>(counts.size())};
            bool any = false;
            for (const auto& l : c.opt.thread_layouts) {
                if (l.per_thread != per_thread) continue;
                const auto* runs = lines_of(threads_key(name, l));
                const auto rate = runs ? median_at(*runs, "acquisitions_per_s") : std::nullopt;
                if (!rate) continue;
                const auto i = static_cast<std::size_t>(std::find(counts.begin(), counts.end(), l.threads) - counts.begin());
                s.values[i] = *rate;
                const auto vs = median_at(*runs, "acquisitions_vs_one_thread");
                s.notes[i] = zklock_bench::svg::detail::label(*rate) + (vs ? " (" + zklock_bench::svg::detail::num(*vs) + "×)" : "");
                any = true;
            }
            if (any) series.push_back(std::move(s));
        }
        if (series.empty()) continue;
        const std::string path = c.opt.plot_dir + "/threads-" + name + ".svg";
        ok = zklock_bench::svg::bars(path, name + ": acquisitions/s by worker threads (× one thread's)" + of_runs,
                                     "threads running the sessions", "acquisitions per second", thread_cats, series) && ok;
        written.push_back(path);
    }

    // --peers: zklock against Curator and Kazoo per scenario: throughput, handoff (U: acquire) and
    // peak RSS. A peer that did not complete a scenario draws no bar there; its note says so.
    if (!c.opt.peers.empty()) {
        struct peer_plot {
            const char* file;
            const char* title;
            const char* ylabel;
            const char* u_figure;
            const char* figure;
        };
        for (const peer_plot& pp :
             {peer_plot{"peers-throughput", "Acquisitions/s (U: cycles/s): zklock, Curator, Kazoo", "per second", "cycles_per_s",
                        "acquisitions_per_s"},
              peer_plot{"peers-handoff", "Handoff p50 (U: acquire p50), µs: zklock, Curator, Kazoo", "microseconds",
                        "acquire_p50_us", "handoff_p50_us"},
              peer_plot{"peers-memory", "Peak RSS of the client process, MB: zklock, Curator, Kazoo", "MB", "peak_rss_mb",
                        "peak_rss_mb"}}) {
            std::vector<std::string> cats;
            std::vector<zklock_bench::svg::bar_series> series;
            series.push_back({"zklock (one thread)", {}, palette[0], {}});
            for (std::size_t k = 0; k < c.opt.peers.size(); ++k)
                series.push_back({c.opt.peers[k] == "curator" ? "Curator InterProcessMutex (a thread per contender)"
                                                              : "Kazoo Lock (a thread per contender)",
                                  {}, palette[k + 1], {}});
            for (const auto& name : c.opt.scenarios) {
                const auto* runs = lines_of(name);
                if (!runs || !runs->front().contains("peers")) continue;
                const std::string fig = name == "U" ? pp.u_figure : pp.figure;
                cats.push_back(name);
                const auto z = median_at(*runs, fig);
                series[0].values.push_back(z.value_or(nan));
                series[0].notes.push_back(z ? zklock_bench::svg::detail::label(*z) : "");
                for (std::size_t k = 0; k < c.opt.peers.size(); ++k) {
                    std::vector<double> xs;
                    bool complete = true;
                    for (const auto& o : *runs) {
                        const auto* p = o.at("peers").as_object().if_contains(c.opt.peers[k]);
                        if (!p || !p->is_object()) continue;
                        const auto* st = p->as_object().if_contains("status");
                        complete = complete && st && st->is_string() && st->as_string() == "ok";
                        if (const auto* v = p->as_object().if_contains(fig); v && v->is_number())
                            xs.push_back(v->to_number<double>());
                    }
                    const double v = complete && !xs.empty() ? zklock_bench::median(xs) : nan;
                    series[k + 1].values.push_back(v);
                    series[k + 1].notes.push_back(std::isfinite(v) ? zklock_bench::svg::detail::label(v) : "not completed");
                }
            }
            if (cats.empty()) continue;
            const std::string path = c.opt.plot_dir + "/" + pp.file + ".svg";
            ok = zklock_bench::svg::bars(path, pp.title + of_runs, "scenario", pp.ylabel, cats, series) && ok;
            written.push_back(path);
        }
    }

    if (!ok) std::fprintf(stderr, "zklock_bench: cannot write plots under %s\n", c.opt.plot_dir.c_str());
    for (const auto& p : written) std::fprintf(stderr, "zklock_bench: plot %s\n", p.c_str());
}


/// Medians over the runs of every figure (and of every per-run ratio) of each scenario.
void print_medians(bench_ctx& c)
{
    std::printf("==== medians of %d runs ====\n", c.opt.repeat);
    std::vector<std::string> order;
    for (const auto& name : c.opt.scenarios) {
        order.push_back(name);
        order.push_back(name + " tls");  // --tls: its twin, if it has one
        for (const auto& l : c.opt.thread_layouts) order.push_back(threads_key(name, l));  // --threads
    }
    order.push_back("tls memory");
    for (const auto& name : order) {
        auto it = c.lines.find(name);
        if (it == c.lines.end() || it->second.empty()) continue;
        const auto& runs = it->second;
        // Every key of every run (a peer that failed in one run has figures in the others).
        std::function<void(json::object&, const json::object&)> add_missing = [&](json::object& into,
                                                                                 const json::object& from) {
            for (const auto& [k, v] : from) {
                auto* have = into.if_contains(k);
                if (!have) into[k] = v;
                else if (have->is_object() && v.is_object()) add_missing(have->as_object(), v.as_object());
            }
        };
        json::object m = runs.front();
        for (std::size_t r = 1; r < runs.size(); ++r) add_missing(m, runs[r]);
        std::function<void(json::object&, const std::vector<const json::object*>&, bool)> fold =
            [&](json::object& out, const std::vector<const json::object*>& objs, bool ratios) {
                for (auto& [k, v] : out) {
                    if (k == "server_config" || v.is_string()) continue;
                    if (v.is_object()) {
                        std::vector<const json::object*> subs;
                        for (auto* o : objs)
                            if (auto* s = o->if_contains(k); s && s->is_object()) subs.push_back(&s->as_object());
                        fold(v.as_object(), subs, ratios || k == "zklock_ratio");
                        continue;
                    }
                    std::vector<double> xs;
                    for (auto* o : objs)
                        if (auto* x = o->if_contains(k); x && x->is_number()) xs.push_back(x->to_number<double>());
                    if (xs.empty()) continue;
                    const double med = zklock_bench::median(xs);
                    if (ratios || k.ends_with("_vs_floor") || k.ends_with("_vs_raw_floor")) v = round_to(med, 3);
                    else if (v.is_int64() && med == std::floor(med)) v = static_cast<std::int64_t>(med);
                    else v = figure_value(std::string(k), med);
                }
            };
        std::vector<const json::object*> objs;
        for (auto& o : runs) objs.push_back(&o);
        fold(m, objs, false);
        // A peer whose runs ended differently: each run's status and reason, in run order (its
        // figures are the medians of the runs that have them).
        if (auto* peers = m.if_contains("peers"); peers && peers->is_object()) {
            for (auto& [peer, pv] : peers->as_object()) {
                std::vector<std::pair<std::string, std::string>> ends;
                for (const auto& o : runs) {
                    const auto* p = o.contains("peers") ? o.at("peers").as_object().if_contains(peer) : nullptr;
                    const auto* st = p && p->is_object() ? p->as_object().if_contains("status") : nullptr;
                    const auto* why = p && p->is_object() ? p->as_object().if_contains("why") : nullptr;
                    ends.emplace_back(st && st->is_string() ? std::string(st->as_string()) : "not run",
                                      why && why->is_string() ? std::string(why->as_string()) : "");
                }
                if (std::all_of(ends.begin(), ends.end(), [&](const auto& e) { return e.first == ends.front().first; }))
                    continue;
                std::string status, why;
                for (std::size_t r = 0; r < ends.size(); ++r) {
                    status += (r ? ", " : "") + ends[r].first;
                    if (!ends[r].second.empty())
                        why += (why.empty() ? "" : " | ") + ("run " + std::to_string(r + 1) + ": " + ends[r].second);
                }
                pv.as_object()["status"] = "per run: " + status;
                pv.as_object()["why"] = why;
            }
        }
        m["median_of"] = static_cast<std::int64_t>(runs.size());
        if (is_tls_twin(name)) set_tls_target(m);
        emit(c, m);
        std::printf("%s (median of %zu)\n", name.c_str(), runs.size());
        for (auto& [k, v] : m) {
            if (k == "server_config" || k == "scenario" || k == "library" || k.ends_with("_vs_floor") ||
                k.ends_with("_vs_raw_floor"))
                continue;
            if (v.is_object()) {
                for (auto& [k2, v2] : v.as_object())
                    std::printf("  %-10s %-24s %12s\n", std::string(k).c_str(), std::string(k2).c_str(), fmt(v2).c_str());
                continue;
            }
            const json::value* ratio = m.if_contains(std::string(k) + "_vs_floor");
            const json::value* raw_ratio = m.if_contains(std::string(k) + "_vs_raw_floor");
            std::printf("  %-31s %12s %8s %8s\n", std::string(k).c_str(), fmt(v).c_str(),
                        raw_ratio ? fmt(*raw_ratio).c_str() : "", ratio ? fmt(*ratio).c_str() : "");
        }
        std::printf("\n");
    }
    std::fflush(stdout);
}

}  // namespace zklock_bench
