// bench/threads.cpp — --threads: C64 and M<N>[x<S>] with their sessions on worker threads, once per
// layout (one io_context run by N threads, or N io_contexts of one thread each), and how their
// throughput scales with the thread count.
#include "bench.hpp"

#include <boost/asio/strand.hpp>

namespace zklock_bench {

worker_pool::worker_pool(thread_layout layout) : layout_(layout)
{
    const int contexts = layout_.per_thread ? layout_.threads : 1;
    for (int i = 0; i < contexts; ++i) {
        contexts_.push_back(std::make_unique<asio::io_context>(layout_.per_thread ? 1 : layout_.threads));
        guards_.push_back(asio::make_work_guard(*contexts_.back()));
    }
    for (int t = 0; t < layout_.threads; ++t)
        threads_.emplace_back([ctx = contexts_[static_cast<std::size_t>(layout_.per_thread ? t : 0)].get()] { ctx->run(); });
}


worker_pool::~worker_pool()
{
    guards_.clear();  // each run() returns once its context has no work left: the sessions' closes too
    for (auto& t : threads_) t.join();
}


asio::any_io_executor worker_pool::session_executor(int i)
{
    if (layout_.per_thread) return contexts_[static_cast<std::size_t>(i) % contexts_.size()]->get_executor();
    return asio::make_strand(*contexts_.front());
}


std::string layout_label(const thread_layout& l)
{
    if (l.per_thread) return std::to_string(l.threads) + (l.threads == 1 ? " io_context, one thread" : " io_contexts, one thread each");
    return std::to_string(l.threads) + (l.threads == 1 ? " thread" : " threads") + " on one io_context (strands)";
}


std::string threads_key(const std::string& scenario, const thread_layout& l)
{
    return scenario + " threads, " + layout_label(l);
}


namespace {

/// Unsets c.pool when leaving a scope, also by an exception.
struct pool_scope {
    bench_ctx& c;
    ~pool_scope() { c.pool = nullptr; }
};


/// One layout's run: the lock's result, and (M) its raw floor measured in turns with it.
struct layout_run {
    thread_layout layout;
    scenario_result lock, raw_floor;
};


double per_acquisition_us(const scenario_result& r)
{
    return r.window_acquisitions ? r.window_cpu_s * 1e6 / static_cast<double>(r.window_acquisitions) : std::nan("");
}

}  // namespace


asio::awaitable<void> run_threads(bench_ctx& c, const std::string& name)
{
    const bool c64 = name == "C64";
    std::vector<layout_run> runs;
    for (const auto& layout : c.opt.thread_layouts) {
        std::fprintf(stderr, "zklock_bench: run %d: %s, %s\n", c.run, name.c_str(), layout_label(layout).c_str());
        layout_run run{layout, {}, {}};
        {
            worker_pool pool(layout);  // joined at the end of this block, after the scenario's sessions are gone
            c.pool = &pool;
            const pool_scope scope{c};
            const cpu_meter cpu{c};
            if (c64) run.lock = co_await scenario_c64(c, false);
            else std::tie(run.lock, run.raw_floor) = co_await scenario_m(c, name);
            if (c64) run.lock.figs.add("client_cpu_s", cpu.client_s());
            cpu.report(name + (c64 ? "" : " + raw floor"));
        }
        run.lock.acqs.clear();
        run.lock.acqs.shrink_to_fit();
        run.lock.scenario = name + " threads";
        run.lock.layout = layout_label(layout);
        runs.push_back(std::move(run));
    }
    // C64's raw floor once, after the layouts, on this thread (M measured its own with each).
    scenario_result c64_raw;
    if (c64) {
        std::fprintf(stderr, "zklock_bench: run %d: raw floor for C64 (on the bench's one thread)\n", c.run);
        const cpu_meter cpu{c};
        c64_raw = co_await scenario_c64(c, true, true);
        c64_raw.figs.add("client_cpu_s", cpu.client_s());
        c64_raw.figs.add("client_cpu_us_per_acquisition", per_acquisition_us(c64_raw));
        cpu.report("raw floor C64");
        c64_raw.acqs.clear();
        c64_raw.acqs.shrink_to_fit();
    }

    // The scaling: acquisitions/s against those of one thread of the same kind, this run.
    auto one_thread = [&](const thread_layout& l) -> std::optional<double> {
        for (const auto& r : runs)
            if (r.layout.threads == 1 && r.layout.per_thread == l.per_thread) return r.lock.figs.get("acquisitions_per_s");
        return std::nullopt;
    };
    for (auto& r : runs) {
        if (c64) r.lock.figs.add("client_cpu_us_per_acquisition", per_acquisition_us(r.lock));
        const auto base = one_thread(r.layout);
        const double rate = r.lock.figs.get("acquisitions_per_s").value_or(std::nan(""));
        r.lock.figs.add("acquisitions_vs_one_thread", base && *base > 0 ? rate / *base : std::nan(""));
    }
    for (auto& r : runs) {
        const scenario_result& raw = c64 ? c64_raw : r.raw_floor;
        json::object o = lock_object(c, r.lock, nullptr, &raw);
        o["io_threads"] = r.layout.threads;
        o["io_contexts"] = r.layout.per_thread ? r.layout.threads : 1;
        o["io_context_per_thread"] = r.layout.per_thread;  // tells the two one-thread layouts apart
        o["raw_floor_threads"] = 1;
        emit(c, o);
        print_lock_table(o, r.lock, nullptr, nullptr, &raw);
        c.lines[threads_key(name, r.layout)].push_back(std::move(o));
    }

    std::printf("%s: how acquisitions/s scale with the threads (vs 1 thread: / the same kind of layout with one "
                "thread, this run; the raw floor on the bench's one thread)\n",
                name.c_str());
    std::printf("  %-44s %18s %12s %30s %18s\n", "layout", "acquisitions_per_s", "vs 1 thread",
                "client_cpu_us_per_acquisition", "raw floor acq/s");
    for (const auto& r : runs) {
        const scenario_result& raw = c64 ? c64_raw : r.raw_floor;
        auto shown = [](const scenario_result& x, const std::string& n) {
            const auto v = x.figs.get(n);
            return v ? fmt(figure_value(n, *v)) : std::string("-");
        };
        std::printf("  %-44s %18s %12s %30s %18s\n", layout_label(r.layout).c_str(), shown(r.lock, "acquisitions_per_s").c_str(),
                    shown(r.lock, "acquisitions_vs_one_thread").c_str(), shown(r.lock, "client_cpu_us_per_acquisition").c_str(),
                    shown(raw, "acquisitions_per_s").c_str());
    }
    std::printf("\n");
    std::fflush(stdout);
}

}  // namespace zklock_bench
