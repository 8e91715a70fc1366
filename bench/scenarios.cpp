// bench/scenarios.cpp — the scenarios: U, C64, W<N>, RW64, S64, and the server warm-up.
#include "bench.hpp"
#include <zklock/detail/acquire_fsm.hpp>

namespace zklock_bench {


/// One U cycle: acquire then release, lock or floor. nullopt after a failure.
asio::awaitable<std::optional<acquisition>> u_cycle(const bench_ctx& c, zklock::session& s, zklock::mutex& m,
                                                     const std::string& dir, bool floor, failure_count& fails)
{
    acquisition a;
    if (floor) {
        const std::string prefix = raw_node_prefix(dir);
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
        a.seq = zklock::queue_sequence(lease.node()).value_or(-1);
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


/// One raw-floor U cycle, on libzookeeper_st directly.
asio::awaitable<std::optional<acquisition>> raw_u_cycle(const bench_ctx& c, raw_session& s, const std::string& dir,
                                                        failure_count& fails)
{
    acquisition a;
    const std::string prefix = raw_node_prefix(dir);
    a.t_request = now_ns();
    auto pr = co_await asio::experimental::make_parallel_group(s.async_create(prefix, c.node_data, asio::deferred),
                                                              s.async_get_children(dir, asio::deferred))
                  .async_wait(asio::experimental::wait_for_all(), asio::deferred);
    a.t_acquired = now_ns();
    if (std::get<1>(pr) || std::get<3>(pr)) {
        fails.add("raw acquire: " + (std::get<1>(pr) ? std::get<1>(pr) : std::get<3>(pr)).message());
        co_return std::nullopt;
    }
    const std::string own = std::move(std::get<2>(pr));
    a.seq = seq_of(own);
    a.t_release_start = now_ns();
    auto rr = co_await s.async_remove(own, asio::as_tuple(asio::deferred));
    a.t_released = now_ns();
    if (std::get<0>(rr)) {
        fails.add("raw release: " + std::get<0>(rr).message());
        co_return std::nullopt;
    }
    co_return a;
}


/// U: one session, one contender, acquire → release in a loop; duration/5 of warm-up, then duration.
asio::awaitable<scenario_result> scenario_u(bench_ctx& c, bool floor, bool raw)
{
    scenario_result r;
    r.scenario = "U";
    r.floor = floor;
    r.raw = raw;
    r.sessions = r.contenders = 1;
    session_list ss = co_await connect_sessions(c, 1);
    zklock::session& s = *ss[0];
    raw_session_list raws;
    if (raw) raws = co_await connect_raw_sessions(c, 1);
    const std::string dir = dir_for(c, "U", floor, raw);
    co_await ensure_path(s, dir);
    zklock::mutex m(s, dir);
    std::vector<acquisition> acqs;
    failure_count fails;
    auto cycle = [&]() -> asio::awaitable<std::optional<acquisition>> {
        if (raw) co_return co_await raw_u_cycle(c, *raws[0], dir, fails);
        co_return co_await u_cycle(c, s, m, dir, floor, fails);
    };
    const std::int64_t warm_end = now_ns() + seconds_ns(c.opt.duration / 5);
    while (now_ns() < warm_end && fails.n < 100) co_await cycle();
    auto ex = co_await asio::this_coro::executor;
    auto sampler = start_sampler(ex, [&acqs] { return std::to_string(acqs.size()) + " cycles"; });
    sampler_guard guard{sampler};
    const auto cpu0 = cpu_seconds();
    const std::int64_t t0 = now_ns(), end = t0 + seconds_ns(c.opt.duration);
    std::int64_t t1 = t0;
    while (now_ns() < end && fails.n < 100) {
        auto a = co_await cycle();
        t1 = now_ns();
        if (a) acqs.push_back(*a);
    }
    const auto cpu1 = cpu_seconds();
    r.window_cpu_s = (cpu1.first - cpu0.first) + (cpu1.second - cpu0.second);
    r.window_acquisitions = acqs.size();
    stop_sampler(*sampler);
    sampler->progress = nullptr;  // it refers to acqs
    co_await remove_dir(s, dir);
    for (auto& x : raws) x->close();
    r.failures = fails.n;
    r.first_error = fails.first;
    if (fails.n) {
        ++c.errors;
        std::fprintf(stderr, "zklock_bench: ERROR %sU: %lld failure(s), first: %s\n", raw ? "raw floor " : floor ? "floor " : "",
                     static_cast<long long>(fails.n), fails.first.c_str());
    }
    add_u_figures(r.figs, acqs, static_cast<double>(t1 - t0) / 1e9);
    r.acqs = std::move(acqs);
    co_return r;
}


void add_u_figures(figures& f, const std::vector<acquisition>& acqs, double window_s)
{
    std::vector<double> acq_us, rel_us;
    for (const auto& a : acqs) {
        acq_us.push_back(static_cast<double>(a.t_acquired - a.t_request) / 1e3);
        rel_us.push_back(static_cast<double>(a.t_released - a.t_release_start) / 1e3);
    }
    std::sort(acq_us.begin(), acq_us.end());
    std::sort(rel_us.begin(), rel_us.end());
    using zklock_bench::percentile;
    f.add("cycles_per_s", window_s > 0 ? static_cast<double>(acqs.size()) / window_s : 0);
    f.add("acquire_p50_us", percentile(acq_us, 0.50));
    f.add("acquire_p99_us", percentile(acq_us, 0.99));
    f.add("release_p50_us", percentile(rel_us, 0.50));
    f.add("release_p99_us", percentile(rel_us, 0.99));
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
asio::awaitable<scenario_result> scenario_c64(bench_ctx& c, bool floor, bool raw)
{
    scenario_result r;
    r.scenario = "C64";
    r.floor = floor;
    r.raw = raw;
    contender_plan plan = looping_plan(c, floor);
    plan.raw = raw;
    r.sessions = 8;
    r.contenders = 64;
    r.hold_us = c.opt.hold_us;
    const double run_s = 2 * c.opt.duration;
    auto run = co_await run_contenders(c, dir_for(c, "C64", floor, raw), r.sessions, r.contenders, plan,
                                       run_s, run_s + 60 + hold_bound_s(c.opt, r.contenders));
    auto& st = run.st;
    auto& sampler = run.sampler;
    auto by_grant = std::move(st->acqs);
    zklock_bench::sort_by_grant(by_grant);
    check(c, r, *st, by_grant);
    r.window_cpu_s = run.cpu_s;
    r.window_acquisitions = by_grant.size();
    add_c64_figures(r.figs, by_grant, st->counts, st->first_request);
    r.figs.add("threads", sampler->max_threads);
    r.figs.add("peak_rss_mb", peak_rss_mb());
    r.figs.add("requests_per_acquisition", requests_per_acquisition(run, by_grant.size()));
    r.acqs = std::move(by_grant);
    co_return r;
}


void add_c64_figures(figures& f, const std::vector<acquisition>& by_grant, const std::vector<std::int64_t>& counts,
                     std::int64_t first_request)
{
    using zklock_bench::percentile;
    const auto h = zklock_bench::handoffs_us(by_grant);
    const auto w = zklock_bench::waits(by_grant, 1e3);
    std::int64_t last = 0;
    for (auto& a : by_grant) last = std::max(last, a.t_released);
    const double span_s = by_grant.empty() ? 1 : static_cast<double>(last - first_request) / 1e9;
    f.add("acquisitions_per_s", static_cast<double>(by_grant.size()) / span_s);
    f.add("handoff_p50_us", percentile(h, 0.50));
    f.add("handoff_p99_us", percentile(h, 0.99));
    f.add("wait_p50_us", percentile(w, 0.50));
    f.add("wait_p99_us", percentile(w, 0.99));
    f.add("wait_max_us", w.empty() ? 0 : w.back());
    f.add("jain_index", zklock_bench::jain_index(counts));
    f.add("min_count", counts.empty() ? 0 : static_cast<double>(*std::min_element(counts.begin(), counts.end())));
    f.add("max_count", counts.empty() ? 0 : static_cast<double>(*std::max_element(counts.begin(), counts.end())));
    f.add("fifo_inversions", static_cast<double>(zklock_bench::fifo_inversions(by_grant)));
}


/// C64L: C64 in cohort mode (lock_options::cohort, max_local_handoffs at its default): 8 sessions
/// × 8 contenders, the 8 of a session queue locally behind one node of their session.
/// Handoffs are split: local (the next grant on the same node, no ZooKeeper request) and remote
/// (the next node). A run is the grants on one node; a run longer than the budget while a
/// contender of another session had been waiting since the run began breaks the rule
/// (bounded unfairness): counted in `runs_over_budget`, an error.
asio::awaitable<scenario_result> scenario_c64l(bench_ctx& c, std::optional<double> c64_acquisitions_per_s)
{
    scenario_result r;
    r.scenario = "C64L";
    r.sessions = 8;
    r.contenders = 64;
    r.hold_us = c.opt.hold_us;
    r.vs_floor = {"acquisitions_per_s", "threads", "peak_rss_mb", "requests_per_acquisition"};
    const double run_s = 2 * c.opt.duration;
    contender_plan plan = looping_plan(c, false);
    plan.kind_of = [](int) { return lock_kind::cohort; };
    auto run = co_await run_contenders(c, dir_for(c, "C64L", false), r.sessions, r.contenders, plan, run_s,
                                       run_s + 60 + hold_bound_s(c.opt, r.contenders));
    auto& st = *run.st;
    auto by_grant = std::move(st.acqs);
    zklock_bench::sort_by_grant(by_grant);
    check(c, r, st, by_grant);
    const auto session_of = [&](const acquisition& a) { return a.contender % r.sessions; };
    const std::uint64_t budget = zklock::lock_options{}.max_local_handoffs;

    // Per session, acquisitions by request time with the running maximum of their grant times:
    // "was someone of session s waiting at t0 and still at t1" is one binary search.
    std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> by_request(static_cast<std::size_t>(r.sessions));
    for (const auto& a : by_grant) by_request[static_cast<std::size_t>(session_of(a))].emplace_back(a.t_request, a.t_acquired);
    for (auto& v : by_request) {
        std::sort(v.begin(), v.end());
        for (std::size_t i = 1; i < v.size(); ++i) v[i].second = std::max(v[i].second, v[i - 1].second);
    }
    auto others_waited = [&](int own, std::int64_t since, std::int64_t until) {
        for (int s = 0; s < r.sessions; ++s) {
            if (s == own) continue;
            const auto& v = by_request[static_cast<std::size_t>(s)];
            auto it = std::lower_bound(v.begin(), v.end(), std::pair<std::int64_t, std::int64_t>(since, INT64_MIN));
            if (it != v.begin() && std::prev(it)->second > until) return true;
        }
        return false;
    };

    std::vector<double> local_h, remote_h;
    std::int64_t longest_run = 0, over_budget = 0;
    std::vector<std::int64_t> per_session(static_cast<std::size_t>(r.sessions));
    for (std::size_t i = 0, start = 0; i < by_grant.size(); ++i) {
        ++per_session[static_cast<std::size_t>(session_of(by_grant[i]))];
        if (i > 0) {
            const double h = static_cast<double>(by_grant[i].t_acquired - by_grant[i - 1].t_release_start) / 1e3;
            if (by_grant[i].seq == by_grant[i - 1].seq) {
                local_h.push_back(h);
            } else {
                remote_h.push_back(h);
                start = i;
            }
        }
        const auto len = static_cast<std::int64_t>(i - start + 1);
        longest_run = std::max(longest_run, len);
        if (static_cast<std::uint64_t>(len) == budget + 1 &&
            others_waited(session_of(by_grant[start]), by_grant[start].t_acquired, by_grant[i].t_acquired))
            ++over_budget;
    }
    if (over_budget) {
        ++c.errors;
        std::fprintf(stderr, "zklock_bench: ERROR C64L: %lld runs of local grants longer than %llu while another session waited\n",
                     static_cast<long long>(over_budget), static_cast<unsigned long long>(budget));
    }
    std::sort(local_h.begin(), local_h.end());
    std::sort(remote_h.begin(), remote_h.end());
    using zklock_bench::percentile;
    const auto w = zklock_bench::waits(by_grant, 1e3);
    const double span = span_s(st, by_grant);
    const double rate = static_cast<double>(by_grant.size()) / span;
    r.figs.add("acquisitions_per_s", rate);
    r.figs.add("acquisitions_vs_c64", c64_acquisitions_per_s && *c64_acquisitions_per_s > 0 ? rate / *c64_acquisitions_per_s
                                                                                             : std::nan(""));
    r.figs.add("local_handoffs", static_cast<double>(local_h.size()));
    r.figs.add("remote_handoffs", static_cast<double>(remote_h.size()));
    r.figs.add("local_handoff_p50_us", percentile(local_h, 0.50));
    r.figs.add("local_handoff_p99_us", percentile(local_h, 0.99));
    r.figs.add("remote_handoff_p50_us", percentile(remote_h, 0.50));
    r.figs.add("remote_handoff_p99_us", percentile(remote_h, 0.99));
    r.figs.add("longest_local_run", static_cast<double>(longest_run));
    r.figs.add("max_local_handoffs", static_cast<double>(budget));
    r.figs.add("runs_over_budget", static_cast<double>(over_budget));
    r.figs.add("wait_p50_us", percentile(w, 0.50));
    r.figs.add("wait_p99_us", percentile(w, 0.99));
    r.figs.add("jain_index_sessions", zklock_bench::jain_index(per_session));
    r.figs.add("jain_index", zklock_bench::jain_index(st.counts));
    r.figs.add("fifo_inversions", static_cast<double>(zklock_bench::fifo_inversions(by_grant)));
    r.figs.add("threads", run.sampler->max_threads);
    r.figs.add("peak_rss_mb", peak_rss_mb());
    r.figs.add("requests_per_acquisition", requests_per_acquisition(run, by_grant.size()));
    r.acqs = std::move(by_grant);
    co_return r;
}


/// W<N>: N contenders over 16 sessions, all request at once, each acquires once.
asio::awaitable<scenario_result> scenario_w(bench_ctx& c, const std::string& name, bool floor, bool raw)
{
    scenario_result r;
    r.scenario = name;
    r.floor = floor;
    r.raw = raw;
    r.contenders = std::atoi(name.c_str() + 1);
    r.sessions = std::min(w_sessions, r.contenders);
    contender_plan plan;
    plan.floor = floor;
    plan.raw = raw;
    plan.count_requests = true;
    auto run = co_await run_contenders(c, dir_for(c, name, floor, raw), r.sessions, r.contenders, plan, 0, w_bound_s);
    auto& st = run.st;
    auto& sampler = run.sampler;
    auto by_grant = std::move(st->acqs);
    zklock_bench::sort_by_grant(by_grant);
    check(c, r, *st, by_grant);
    r.window_cpu_s = run.cpu_s;
    r.window_acquisitions = by_grant.size();
    add_w_figures(r.figs, by_grant, st->first_request);
    r.figs.add("threads", sampler->max_threads);
    r.figs.add("peak_rss_mb", peak_rss_mb());
    r.figs.add("rss_start_mb", sampler->rss_start_mb);
    r.figs.add("completed", static_cast<double>(by_grant.size()));
    r.figs.add("requests_per_acquisition", requests_per_acquisition(run, by_grant.size()));
    if (floor)
        r.figs.add("names_listed_per_acquisition",
                   by_grant.empty() ? std::nan("") : static_cast<double>(st->names_listed.load()) / static_cast<double>(by_grant.size()));
    r.acqs = std::move(by_grant);
    co_return r;
}


void add_w_figures(figures& f, const std::vector<acquisition>& by_grant, std::int64_t first_request)
{
    using zklock_bench::percentile;
    const auto w = zklock_bench::waits(by_grant, 1e6);
    std::int64_t last = 0;
    for (auto& a : by_grant) last = std::max(last, a.t_released);
    const double drain_s = by_grant.empty() ? 0 : static_cast<double>(last - first_request) / 1e9;
    f.add("drain_s", drain_s);
    f.add("acquisitions_per_s", drain_s > 0 ? static_cast<double>(by_grant.size()) / drain_s : 0);
    f.add("wait_p50_ms", percentile(w, 0.50));
    f.add("wait_p99_ms", percentile(w, 0.99));
    f.add("wait_max_ms", w.empty() ? 0 : w.back());
    // Where the drain goes: the queueing burst (first request to first grant), then one handoff
    // after another (a release's start to the next grant).
    f.add("first_grant_s", by_grant.empty() ? 0 : static_cast<double>(by_grant.front().t_acquired - first_request) / 1e9);
    f.add("handoff_p50_us", percentile(zklock_bench::handoffs_us(by_grant), 0.50));
    // The burst's cost: the first tenth of the grants run while the server still works through
    // the burst of creates, listings and watches that queued everyone; the other nine tenths show
    // what a handoff costs once it has the server to itself (the mean time from one grant to the next).
    const std::size_t tenth = by_grant.size() / 10;
    const bool split = tenth > 0 && by_grant.size() - tenth > 1;
    f.add("first_tenth_ms", split ? static_cast<double>(by_grant[tenth].t_acquired - by_grant.front().t_acquired) / 1e6 : 0);
    f.add("grant_gap_rest_us", split ? static_cast<double>(by_grant.back().t_acquired - by_grant[tenth].t_acquired) / 1e3 /
                                                   static_cast<double>(by_grant.size() - 1 - tenth)
                                             : 0);
    f.add("fifo_inversions", static_cast<double>(zklock_bench::fifo_inversions(by_grant)));
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


/// Warm-up: a contended lock load on another path (4 sessions × 8 contenders) for `seconds`, in
/// two halves: a short queue (plain deletes, short listings), then one with
/// acquire_fsm::min_queue_for_mark children that are not lock nodes, so that every request type a
/// scenario sends is compiled by the server's JIT before anything is measured: long listings (the
/// floors' W drains), and the marked releases (`multi`) and mark reads of zklock's W drains, which
/// a short queue never sends (the first W1000 after a short-queue-only warm-up ran ~1.4× slower
/// than the next two).
asio::awaitable<void> warm_up(bench_ctx& c, double seconds)
{
    if (seconds <= 0) co_return;
    std::fprintf(stderr, "zklock_bench: warming the server up for %.0f s (contended load on %s/warmup*)\n", seconds,
                 c.root.c_str());
    std::size_t cycles = 0;
    std::int64_t failures = 0;
    for (const bool long_queue : {false, true}) {
        contender_plan plan;
        plan.loop = true;
        if (long_queue) plan.junk_children = static_cast<int>(zklock::detail::acquire_fsm::min_queue_for_mark);
        auto run = co_await run_contenders(c, c.root + (long_queue ? "/warmup-long" : "/warmup"), 4, 32, plan,
                                           seconds / 2, seconds / 2 + 60);
        cycles += run.st->acqs.size();
        failures += run.st->failures;
    }
    std::fprintf(stderr, "zklock_bench: warm-up done: %zu lock cycles, %lld failure(s)\n", cycles,
                 static_cast<long long>(failures));
}


asio::awaitable<json::object> scenario_hold(bench_ctx& c)
{
    auto ex = co_await asio::this_coro::executor;
    session_list ss = co_await connect_sessions(c, 1);
    zklock::session& s = *ss.front();
    zklock::mutex m{s, c.root + "/hold"};
    auto l = co_await m.async_acquire(std::chrono::seconds(30), asio::deferred);
    // From the grant on: only what holding costs (the acquire's own requests are before m0).
    asio::steady_timer settle{ex, std::chrono::milliseconds(200)};
    co_await settle.async_wait(asio::deferred);
    const auto m0 = s.metrics();
    const auto t0 = std::chrono::steady_clock::now();
    asio::steady_timer t{ex, std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(c.opt.duration))};
    co_await t.async_wait(asio::deferred);
    const auto m1 = s.metrics();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const bool held = l.owns_lock();
    co_await l.async_release(asio::deferred);
    // The lock's directory (a container), so that the run's root can be removed at the end.
    co_await s.async_remove(c.root + "/hold", -1, asio::as_tuple(asio::deferred));
    co_await s.async_close(asio::deferred);

    json::object o;
    o["scenario"] = "HOLD";
    o["run"] = c.run;
    o["seconds"] = secs;
    o["session_timeout_ms"] = static_cast<std::int64_t>(s.negotiated_timeout().count());
    o["held_throughout"] = held;
    json::object per_type;
    double total = 0;
    for (const auto& [type, n] : m1.requests) {
        const double rate = static_cast<double>(n - m0.requests_of(type)) / secs;
        if (rate > 0) per_type[type] = rate;
        total += rate;
    }
    o["requests_per_s"] = total;
    o["requests_per_s_by_type"] = std::move(per_type);
    // What the rule says: one sync per sixth of the session timeout when nothing else is written.
    o["expected_sync_per_s"] = 6000.0 / static_cast<double>(s.negotiated_timeout().count());
    std::printf("HOLD: one idle lease for %.1f s, session timeout %lld ms: %.3f requests/s (syncs %.3f/s; "
                "the rule: %.3f/s)\n",
                secs, static_cast<long long>(s.negotiated_timeout().count()), total,
                static_cast<double>(m1.requests_of("sync") - m0.requests_of("sync")) / secs,
                6000.0 / static_cast<double>(s.negotiated_timeout().count()));
    if (!held) ++c.errors;
    co_return o;
}

}  // namespace zklock_bench
