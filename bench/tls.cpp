// bench/tls.cpp — --tls: U, C64 and W<N> again over TLS, each next to its plaintext twin of the
// same run on the same server, and what TLS costs in memory per session.
#include "bench.hpp"

namespace zklock_bench {

namespace {

/// The ratio a twin's target is on, and its threshold (W: none, its target is 0 inversions).
struct twin_target {
    const char* ratio;
    double at_least;
};

std::optional<twin_target> target_of(const std::string& scenario)
{
    if (scenario == "U tls") return twin_target{"cycles_vs_plain", 0.8};
    if (scenario == "C64 tls") return twin_target{"acquisitions_vs_plain", 0.85};
    return std::nullopt;
}

double cpu_us_per_acquisition(const scenario_result& r)
{
    return r.window_acquisitions ? r.window_cpu_s * 1e6 / static_cast<double>(r.window_acquisitions) : std::nan("");
}

std::optional<double> number_of(const json::object& o, const char* key)
{
    if (auto* v = o.if_contains(key); v && v->is_number()) return v->to_number<double>();
    return std::nullopt;
}

/// Bytes the heap has handed out: arena blocks in use plus mmap'd blocks.
double heap_in_use()
{
    const struct mallinfo2 m = ::mallinfo2();
    return static_cast<double>(m.uordblks + m.hblkhd);
}

}  // namespace


bool is_tls_twin(const std::string& scenario) { return scenario.ends_with(" tls"); }


void set_tls_target(json::object& o)
{
    const std::string scenario(o.at("scenario").as_string());
    if (auto t = target_of(scenario)) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%s >= %g", t->ratio, t->at_least);
        o["target"] = buf;
        const auto ratio = number_of(o, t->ratio);
        o["target_met"] = ratio ? json::value(*ratio >= t->at_least) : json::value(nullptr);
    } else if (scenario[0] == 'W') {
        o["target"] = "fifo_inversions == 0, completed == contenders";
        const auto inversions = number_of(o, "fifo_inversions"), completed = number_of(o, "completed"),
                   contenders = number_of(o, "contenders");
        o["target_met"] = inversions && completed && contenders ? json::value(*inversions == 0 && *completed == *contenders)
                                                                : json::value(nullptr);
    }
}


void report_tls_twin(bench_ctx& c, scenario_result twin, const scenario_result& plain)
{
    const std::string name = twin.scenario;
    twin.scenario = name + " tls";
    const std::vector<std::string> shared = [&] {
        std::vector<std::string> v;
        for (auto& [n, x] : twin.figs.list) v.push_back(n);
        return v;
    }();
    auto ratio = [&](const char* key, const char* of) {
        const auto t = twin.figs.get(of), p = plain.figs.get(of);
        twin.figs.add(key, t && p && *p != 0 ? *t / *p : std::nan(""));
    };
    if (name == "U") ratio("cycles_vs_plain", "cycles_per_s");
    else ratio("acquisitions_vs_plain", "acquisitions_per_s");
    if (name[0] == 'W') ratio("drain_s_vs_plain", "drain_s");
    // TLS runs in the session's channel, on this thread: its CPU is this process's, over the
    // measured window, per acquisition (U: per lock cycle).
    const double cpu_tls = cpu_us_per_acquisition(twin), cpu_plain = cpu_us_per_acquisition(plain);
    twin.figs.add("client_cpu_us_per_acquisition", cpu_tls);
    twin.figs.add("client_cpu_us_per_acquisition_plain", cpu_plain);
    twin.figs.add("extra_client_cpu_us_per_acquisition", cpu_tls - cpu_plain);
    if (name[0] == 'W') {
        const auto t = twin.figs.get("peak_rss_mb"), p = plain.figs.get("peak_rss_mb");
        twin.figs.add("extra_peak_rss_kb_per_session",
                      t && p && twin.sessions > 0 ? (*t - *p) * 1024 / twin.sessions : std::nan(""));
    }

    json::object o = base_object(c, twin.scenario, twin.sessions, twin.contenders, twin.hold_us);
    for (auto& [n, v] : twin.figs.list) o[n] = figure_value(n, v);
    set_tls_target(o);
    emit(c, o);

    std::printf("%s: %d session(s) x %d contender(s) total, over TLS, one thread   "
                "(ratio = tls / plaintext \"%s\", same run, same server)\n",
                twin.scenario.c_str(), twin.sessions, twin.contenders, name.c_str());
    int width = 20;
    for (auto& [n, v] : twin.figs.list) width = std::max(width, static_cast<int>(n.size()));
    std::printf("  %-*s %12s %12s %8s\n", width, "figure", "tls", "plaintext", "ratio");
    for (auto& [n, v] : twin.figs.list) {
        const bool both = std::find(shared.begin(), shared.end(), n) != shared.end();
        const auto p = both ? plain.figs.get(n) : std::nullopt;
        std::printf("  %-*s %12s %12s %8s\n", width, n.c_str(), fmt(o.at(n)).c_str(), p ? fmt(figure_value(n, *p)).c_str() : "",
                    p ? fmt(ratio_value(v, p)).c_str() : "");
    }
    if (auto* t = o.if_contains("target"))
        std::printf("  target: %s: %s\n", fmt(*t).c_str(),
                    o.at("target_met").is_null() ? "unknown" : o.at("target_met").as_bool() ? "met" : "MISSED");
    std::printf("\n");
    std::fflush(stdout);
    c.lines[twin.scenario].push_back(std::move(o));
}


asio::awaitable<void> run_tls_memory(bench_ctx& c)
{
    // As many sessions as W's: every one connected, then one round trip each (the relay has
    // carried a request and a reply both ways), measured before any of them closes.
    const int n = w_sessions;
    std::fprintf(stderr, "zklock_bench: run %d: tls memory (%d sessions each way)\n", c.run, n);
    figures figs;
    double heap[2], rss[2];
    auto ex = co_await asio::this_coro::executor;
    asio::steady_timer settle(ex);
    for (const bool tls : {false, true}) {
        // The sessions closed before (the last scenario's, the plaintext ones here) finish their
        // closes meanwhile and free what they held.
        settle.expires_after(500ms);
        co_await settle.async_wait(asio::as_tuple(asio::deferred));
        c.over_tls = tls;
        ::malloc_trim(0);
        const double heap0 = heap_in_use();
        const long rss0 = proc_status("VmRSS");
        {
            session_list ss = co_await connect_sessions(c, n);
            for (auto& s : ss) co_await s->async_exists(c.root, asio::as_tuple(asio::deferred));
            heap[tls ? 1 : 0] = (heap_in_use() - heap0) / n / 1024;
            rss[tls ? 1 : 0] = static_cast<double>(proc_status("VmRSS") - rss0) / n;
        }
        c.over_tls = false;
    }
    figs.add("heap_kb_per_session_plain", heap[0]);
    figs.add("heap_kb_per_session_tls", heap[1]);
    figs.add("extra_heap_kb_per_session", heap[1] - heap[0]);
    figs.add("rss_kb_per_session_plain", rss[0]);
    figs.add("rss_kb_per_session_tls", rss[1]);
    figs.add("extra_rss_kb_per_session", rss[1] - rss[0]);
    json::object o = base_object(c, "tls memory", n, 0, 0);
    for (auto& [k, v] : figs.list) o[k] = figure_value(k, v);
    emit(c, o);
    std::printf("tls memory: %d sessions connected plaintext, then %d over TLS; per session, before any closes\n", n, n);
    for (auto& [k, v] : figs.list) std::printf("  %-36s %12s\n", k.c_str(), fmt(o.at(k)).c_str());
    std::printf("\n");
    std::fflush(stdout);
    c.lines["tls memory"].push_back(std::move(o));
}

}  // namespace zklock_bench
