// bench/many.cpp — many distinct locks: M<N> (N contenders, each cycling its own lock) and H<N>
// (N distinct locks held at once), each with its raw floor on libzookeeper_st.
#include "bench.hpp"

#include <array>

namespace zklock_bench {

many_spec parse_many(const std::string& name)
{
    many_spec s;
    s.kind = name[0];
    const char* p = name.c_str() + 1;
    char* end = nullptr;
    s.locks = static_cast<int>(std::strtol(p, &end, 10));
    s.sessions = *end == 'x' ? static_cast<int>(std::strtol(end + 1, nullptr, 10)) : 1;
    return s;
}


bool is_many(const std::string& name)
{
    if (name.size() < 2 || (name[0] != 'M' && name[0] != 'H')) return false;
    const std::size_t x = name.find('x');
    const std::string n = name.substr(1, x == std::string::npos ? std::string::npos : x - 1);
    const std::string s = x == std::string::npos ? "1" : name.substr(x + 1);
    auto digits = [](const std::string& v) {
        return !v.empty() && v.size() <= 6 && v.find_first_not_of("0123456789") == std::string::npos && std::atoi(v.c_str()) > 0;
    };
    return digits(n) && digits(s) && (name[0] == 'M' || x == std::string::npos);
}


namespace {

/// What the contenders of M and H share: the lock objects or raw sessions, the counts, the clock.
struct many_state {
    explicit many_state(asio::any_io_executor ex) : wake(std::move(ex)) {}
    std::vector<std::unique_ptr<zklock::mutex>> locks;  // M's lock i (on session i % sessions)
    raw_session_list raws;
    std::vector<std::string> dirs;  // lock i's path
    std::string data;
    std::vector<double> cycle_us;   // measured cycles' latencies
    std::vector<zklock::lease> held;  // H
    std::vector<std::string> raw_held;  // H's raw floor: the nodes
    std::int64_t stop_ns = 0;       // no new cycle after this (0: one cycle each)
    int running = 0;
    failure_count fails;
    asio::steady_timer wake;  // the scenario's executor's: `running` and `wake` are only touched there
    // With --threads, the lock's contenders on different sessions add cycles and failures at once
    // from the workers: add_cycle and fail take this lock. The rest is read once they are all done.
    mutable std::mutex m;

    void done()
    {
        if (--running == 0) wake.cancel();
    }
    void add_cycle(double us)
    {
        const std::lock_guard lock(m);
        cycle_us.push_back(us);
    }
    void fail(const std::string& what)
    {
        const std::lock_guard lock(m);
        fails.add(what);
    }
    /// Cycles measured so far (for the progress line, while contenders run).
    std::size_t cycles() const
    {
        const std::lock_guard lock(m);
        return cycle_us.size();
    }
    raw_session& raw_for(std::size_t i) { return *raws[i % raws.size()]; }
};


/// A raw cycle's acquire: create and get_children pipelined, and no node ahead in the listing
/// (each lock has one contender; a correct lock still looks).
asio::awaitable<std::optional<std::string>> raw_many_acquire(std::shared_ptr<many_state> st, std::size_t i)
{
    raw_session& s = st->raw_for(i);
    auto r = co_await asio::experimental::make_parallel_group(
                 s.async_create(raw_node_prefix(st->dirs[i]), st->data, asio::deferred),
                 s.async_get_children(st->dirs[i], asio::deferred))
                 .async_wait(asio::experimental::wait_for_all(), asio::deferred);
    if (std::get<1>(r) || std::get<3>(r)) {
        st->fail("raw acquire: " + (std::get<1>(r) ? std::get<1>(r) : std::get<3>(r)).message());
        co_return std::nullopt;
    }
    if (!predecessor(std::get<4>(r), seq_of(std::get<2>(r))).empty()) {
        st->fail("raw acquire: a node ahead in an uncontended lock");
        co_return std::nullopt;
    }
    co_return std::move(std::get<2>(r));
}


/// M's contender i: acquire → release on its own lock, once (stop_ns 0) or until stop_ns.
asio::awaitable<void> m_contender(std::shared_ptr<many_state> st, std::size_t i, bool raw)
{
    do {
        const std::int64_t t0 = now_ns();
        if (raw) {
            auto own = co_await raw_many_acquire(st, i);
            if (!own) break;
            auto [ec] = co_await st->raw_for(i).async_remove(std::move(*own), asio::as_tuple(asio::deferred));
            if (ec) {
                st->fail("raw release: " + ec.message());
                break;
            }
        } else {
            auto [ec, lease] = co_await st->locks[i]->async_acquire(asio::as_tuple(asio::deferred));
            if (ec) {
                st->fail("acquire: " + ec.message());
                break;
            }
            auto [rec] = co_await lease.async_release(asio::as_tuple(asio::deferred));
            if (rec) {
                st->fail("release: " + rec.message());
                break;
            }
        }
        if (st->stop_ns) st->add_cycle(static_cast<double>(now_ns() - t0) / 1e3);
    } while (st->stop_ns && now_ns() < st->stop_ns);
}


/// H's acquire of lock i: a mutex object made for it and dropped once granted (what a server
/// that locks a resource on demand does); the lease is kept.
asio::awaitable<void> h_acquire(std::shared_ptr<many_state> st, std::shared_ptr<zklock::session> s, std::size_t i, bool raw)
{
    if (raw) {
        auto own = co_await raw_many_acquire(st, i);
        if (own) st->raw_held[i] = std::move(*own);
        co_return;
    }
    auto m = std::make_unique<zklock::mutex>(*s, st->dirs[i]);
    auto [ec, lease] = co_await m->async_acquire(asio::as_tuple(asio::deferred));
    if (ec) st->fail("acquire: " + ec.message());
    else st->held[i] = std::move(lease);
}


asio::awaitable<void> h_release(std::shared_ptr<many_state> st, std::size_t i, bool raw)
{
    if (raw) {
        if (st->raw_held[i].empty()) co_return;
        auto [ec] = co_await st->raw_for(i).async_remove(std::move(st->raw_held[i]), asio::as_tuple(asio::deferred));
        if (ec) st->fail("raw release: " + ec.message());
        co_return;
    }
    auto [ec] = co_await st->held[i].async_release(asio::as_tuple(asio::deferred));
    if (ec) st->fail("release: " + ec.message());
}


/// Which executor `make(i)` of all_at_once runs on: that of the session it uses.
using executor_of = std::function<asio::any_io_executor(std::size_t)>;


/// Runs `make(i)` for every lock at once, each on `on(i)`, and waits for all, at most `bound_s`;
/// false past it.
template <class Make>
asio::awaitable<bool> all_at_once(std::shared_ptr<many_state> st, std::size_t n, double bound_s, Make make, executor_of on)
{
    auto ex = co_await asio::this_coro::executor;
    st->running = static_cast<int>(n);
    // Its completion comes back here, where `running` and `wake` live (a fresh binder each: Asio
    // 1.26 moves the handler out of a bound token given as an lvalue).
    auto done = [&] { return asio::bind_executor(ex, [st](std::exception_ptr) { st->done(); }); };
    for (std::size_t i = 0; i < n; ++i) asio::co_spawn(on(i), make(i), done());
    st->wake.expires_after(std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(bound_s)));
    if (st->running > 0) co_await st->wake.async_wait(asio::as_tuple(asio::deferred));
    co_return st->running == 0;
}


/// Current RSS in bytes.
double rss_bytes() { return static_cast<double>(proc_status("VmRSS")) * 1024.0; }


/// Every session's requests sent so far (zklock's metrics).
asio::awaitable<std::uint64_t> requests_sent(const session_list& ss)
{
    const auto metrics = co_await metrics_of(ss);
    std::uint64_t n = 0;
    for (const auto& m : metrics)
        for (auto& [type, k] : m.requests) n += k;
    co_return n;
}


/// all_at_once's executor: `ex` for every item (a session's, or the caller's for the raw floor,
/// whose raw sessions live there).
executor_of all_on(asio::any_io_executor ex)
{
    return [ex](std::size_t) { return ex; };
}


/// all_at_once's executor: item i on the executor of lock i's session.
executor_of each_on_its_lock(std::shared_ptr<many_state> st)
{
    return [st](std::size_t i) { return st->locks[i]->get_executor(); };
}


asio::awaitable<void> create_dir(std::shared_ptr<zklock::session> s, std::shared_ptr<many_state> st, std::size_t i)
{
    auto [ec, p, stat] = co_await s->async_create(st->dirs[i], std::string(), zklock::create_mode::persistent,
                                            asio::as_tuple(asio::deferred));
    if (ec) st->fail("create " + st->dirs[i] + ": " + ec.message());
}


asio::awaitable<void> remove_path(std::shared_ptr<zklock::session> s, std::shared_ptr<many_state> st, std::size_t i)
{
    co_await s->async_remove(st->dirs[i], -1, asio::as_tuple(asio::deferred));
}


/// A scenario's side (the lock, or its raw floor): its sessions, its state, its directory.
struct many_run {
    session_list ss;
    std::shared_ptr<many_state> st;
    std::string dir;
};


/// Set-up shared by M and H: sessions, the lock paths, the raw floor's directories (persistent,
/// untimed; the lock's are its own containers, made by its first cycle), and for the lock, one
/// mutex per path when `mutexes` (M; H makes its own as it acquires).
asio::awaitable<many_run> many_setup(bench_ctx& c, const std::string& name, const many_spec& spec, bool raw, bool mutexes)
{
    auto ex = co_await asio::this_coro::executor;
    many_run run;
    run.st = std::make_shared<many_state>(ex);
    run.dir = dir_for(c, name, raw, raw);
    auto& st = *run.st;
    st.data = c.node_data;
    const auto n = static_cast<std::size_t>(spec.locks);
    run.ss = co_await connect_sessions(c, raw ? 1 : spec.sessions);
    if (raw) st.raws = co_await connect_raw_sessions(c, spec.sessions);
    const auto stage = run.ss[0];  // makes and removes the directories, on its executor
    auto make_dir = [&]() { return ensure_path(*stage, run.dir); };
    co_await run_on(stage->get_executor(), std::move(make_dir));
    st.dirs.reserve(n);
    for (std::size_t i = 0; i < n; ++i) st.dirs.push_back(run.dir + "/" + std::to_string(i));
    if (raw) {
        auto& ss = run.ss;
        auto sp = run.st;
        executor_of on = all_on(ss[0]->get_executor());
        const bool ok = co_await all_at_once(sp, n, 120, [&](std::size_t i) { return create_dir(ss[0], sp, i); }, std::move(on));
        if (!ok || st.fails.n) throw std::runtime_error("raw floor set-up: " + st.fails.first);
    } else if (mutexes) {
        st.locks.reserve(n);
        for (std::size_t i = 0; i < n; ++i)
            st.locks.push_back(std::make_unique<zklock::mutex>(*run.ss[i % run.ss.size()], st.dirs[i]));
    }
    co_return run;
}


/// The end of a side: past the bound (`ok` false), closes its sessions (which ends every pending
/// operation) and waits a little for the contenders; then counts its failures into `r`, removes
/// the lock paths (pipelined) and the directory, and closes the raw sessions.
asio::awaitable<void> many_finish(bench_ctx& c, many_run& run, bool ok, double bound_s, scenario_result& r)
{
    auto& st = run.st;
    if (!ok) {
        st->fail("bound of " + std::to_string(static_cast<int>(bound_s)) + " s reached");
        for (auto& s : run.ss) {
            auto close = [s = s.get()]() -> asio::awaitable<void> { co_await s->async_close(asio::as_tuple(asio::deferred)); };
            co_await run_on(s->get_executor(), std::move(close));
        }
        for (auto& s : st->raws) s->close();
        st->wake.expires_after(30s);
        if (st->running > 0) co_await st->wake.async_wait(asio::as_tuple(asio::deferred));
        st->locks.clear();  // before their sessions go
        run.ss = co_await connect_sessions(c, 1);
    }
    r.failures = st->fails.n;
    r.first_error = st->fails.first;
    if (st->fails.n) {
        ++c.errors;
        std::fprintf(stderr, "zklock_bench: ERROR %s%s: %lld failure(s), first: %s\n", r.raw ? "raw floor " : "",
                     r.scenario.c_str(), static_cast<long long>(st->fails.n), st->fails.first.c_str());
    }
    st->locks.clear();
    std::vector<zklock::lease>().swap(st->held);
    std::vector<std::string>().swap(st->raw_held);
    failure_count ignored;
    std::swap(ignored, st->fails);
    const auto stage = run.ss[0];
    executor_of on = all_on(stage->get_executor());
    co_await all_at_once(st, st->dirs.size(), 120, [&](std::size_t i) { return remove_path(stage, st, i); }, std::move(on));
    std::swap(ignored, st->fails);
    auto remove = [&]() { return remove_dir(*stage, run.dir); };
    co_await run_on(stage->get_executor(), std::move(remove));
    for (auto& s : st->raws) s->close();
    st->raws.clear();
}


scenario_result many_result(const std::string& name, const many_spec& spec, bool raw, int sessions)
{
    scenario_result r;
    r.scenario = name;
    r.floor = r.raw = raw;
    r.sessions = sessions;
    r.contenders = spec.locks;
    return r;
}


/// One side of M: what its first round took, and what its measured windows add up to.
struct m_side {
    many_run run;
    bool ok = true;
    double first_s = 0, first_packets = 0, first_sent = 0;
    double span_s = 0, cpu_s = 0, server_cpu_s = 0, packets = 0;
};


/// Each contender of a side cycles once (stop_ns 0), or until `seconds` from now.
asio::awaitable<bool> m_round(m_side& side, double seconds, double bound_s)
{
    auto st = side.run.st;
    st->stop_ns = seconds > 0 ? now_ns() + seconds_ns(seconds) : 0;
    const bool raw = !st->raws.empty();
    auto ex = co_await asio::this_coro::executor;
    // (Not a conditional inside the co_await: GCC 12 destroys its temporaries twice.)
    executor_of on = each_on_its_lock(st);
    if (raw) on = all_on(ex);
    co_return co_await all_at_once(st, st->dirs.size(), bound_s, [&](std::size_t i) { return m_contender(st, i, raw); },
                                   std::move(on));
}


/// A measured window of one side: its cycles, wall time, CPU time (ours and the servers') and
/// requests are added to the side's.
asio::awaitable<void> m_window(bench_ctx& c, m_side& side, double seconds, double bound_s)
{
    const auto packets0 = open_packet_window(c.fl_all);
    const cpu_meter cpu{c};
    side.ok = co_await m_round(side, seconds, bound_s);
    side.span_s += static_cast<double>(now_ns() - cpu.t0) / 1e9;
    side.cpu_s += cpu.client_s();
    side.server_cpu_s += cpu.server_s();
    side.packets += packets_in_window(c.fl_all, packets0);
}

}  // namespace


asio::awaitable<std::pair<scenario_result, scenario_result>> scenario_m(bench_ctx& c, const std::string& name)
{
    const many_spec spec = parse_many(name);
    const auto n = static_cast<std::size_t>(spec.locks);
    const double bound_s = 2 * c.opt.duration + 120;
    std::array<m_side, 2> sides;  // the lock, its raw floor
    for (std::size_t k = 0; k < sides.size(); ++k) sides[k].run = co_await many_setup(c, name, spec, k == 1, true);

    // The first round: one cycle each, at once; the lock makes its directories (containers) now.
    for (auto& side : sides) {
        const auto packets0 = open_packet_window(c.fl_all);
        const std::uint64_t sent0 = co_await requests_sent(side.run.ss);
        const std::int64_t t0 = now_ns();
        side.ok = co_await m_round(side, 0, bound_s);
        side.first_s = static_cast<double>(now_ns() - t0) / 1e9;
        side.first_packets = packets_in_window(c.fl_all, packets0);
        const std::uint64_t sent1 = co_await requests_sent(side.run.ss);
        side.first_sent = static_cast<double>(sent1 - sent0);
    }

    // The measured windows: the lock and its floor take turns (ABBA...), each for 2 × duration in
    // all, so that a drift of the machine or the server over the run falls on both alike.
    auto ok = [&] { return sides[0].ok && sides[1].ok && !sides[0].run.st->fails.n && !sides[1].run.st->fails.n; };
    std::shared_ptr<sampler_state> sampler;
    if (ok()) {
        for (auto& side : sides) side.run.st->cycle_us.reserve(static_cast<std::size_t>(200'000 * c.opt.duration));
        auto ex = co_await asio::this_coro::executor;  // not in the call below: GCC 12 and temporaries
        sampler = start_sampler(ex, [a = sides[0].run.st, b = sides[1].run.st] {
            return std::to_string(a->cycles()) + " + " + std::to_string(b->cycles()) + " (raw) cycles";
        });
        const double each = 2 * c.opt.duration / c.opt.windows;
        for (int w = 0; w < c.opt.windows && ok(); ++w)
            for (int j = 0; j < 2 && ok(); ++j) co_await m_window(c, sides[turn_side(w, j)], each, bound_s);
        stop_sampler(*sampler);
        sampler->progress = nullptr;
    }

    std::pair<scenario_result, scenario_result> out(many_result(name, spec, false, spec.sessions),
                                                    many_result(name, spec, true, spec.sessions));
    for (std::size_t k = 0; k < sides.size(); ++k) {
        m_side& side = sides[k];
        scenario_result& r = k == 0 ? out.first : out.second;
        co_await many_finish(c, side.run, side.ok, bound_s, r);
        auto& cyc = side.run.st->cycle_us;
        std::sort(cyc.begin(), cyc.end());
        const double acquisitions = static_cast<double>(cyc.size());
        const double span = side.span_s > 0 ? side.span_s : 1;
        r.window_cpu_s = side.cpu_s;
        r.window_acquisitions = cyc.size();
        r.figs.add("acquisitions_per_s", acquisitions / span);
        r.figs.add("cycle_p50_us", percentile(cyc, 0.50));
        r.figs.add("cycle_p99_us", percentile(cyc, 0.99));
        r.figs.add("requests_per_acquisition", acquisitions > 0 ? side.packets / acquisitions : std::nan(""));
        r.figs.add("client_cpu_us_per_acquisition", acquisitions > 0 ? side.cpu_s * 1e6 / acquisitions : std::nan(""));
        r.figs.add("server_cpu_us_per_acquisition",
                   acquisitions > 0 && !c.server_pids.empty() ? side.server_cpu_s * 1e6 / acquisitions : std::nan(""));
        r.figs.add("first_round_s", side.first_s);
        r.figs.add("first_round_requests_per_lock", side.first_packets / static_cast<double>(n));
        if (k == 0) r.figs.add("first_round_sent_per_lock", side.first_sent / static_cast<double>(n));
        r.figs.add("threads", sampler ? sampler->max_threads : 0);
        r.figs.add("peak_rss_mb", peak_rss_mb());
        cyc.clear();
        cyc.shrink_to_fit();
    }
    co_return out;
}


namespace {

/// One side of H: its first round's memory figures, and what its measured rounds add up to.
struct h_side {
    many_run run;
    bool raw = false;
    bool ok = true;
    double held_bytes = 0, peak_bytes = 0, peak_rss_mb = 0;      // the first round's (bytes per lock)
    double acquire_s = 0, release_s = 0, cpu_s = 0, packets = 0;  // the measured rounds', summed
    int rounds = 0;
};


/// One round of a side: its N locks acquired at once, then released at once. The side's first
/// round takes the memory figures (RSS, trimmed, before and with the locks held) and is not timed;
/// every later round adds its times, the acquires' CPU and their packets to the side's.
asio::awaitable<void> h_round(bench_ctx& c, h_side& side, bool first, double bound_s)
{
    auto& ss = side.run.ss;
    const std::shared_ptr<many_state> st = side.run.st;
    const auto n = st->dirs.size();
    const bool raw = side.raw;
    if (raw) st->raw_held.assign(n, {});
    else st->held.resize(n);
    double rss0 = 0, hwm0 = 0;
    if (first) {
        ::malloc_trim(0);
        rss0 = rss_bytes();
        reset_peak_rss();
        hwm0 = peak_rss_mb();
    }
    const auto packets0 = open_packet_window(c.fl_all);
    const auto cpu0 = cpu_seconds();
    std::int64_t t0 = now_ns();
    auto ex = co_await asio::this_coro::executor;
    auto on_ex = ss[0]->get_executor();  // the lock's one session's
    if (raw) on_ex = ex;                 // the raw sessions'
    const executor_of on = all_on(on_ex);
    side.ok = co_await all_at_once(st, n, bound_s, [&](std::size_t i) { return h_acquire(st, ss[0], i, raw); }, on);
    const double acquire_s = static_cast<double>(now_ns() - t0) / 1e9;
    const auto cpu1 = cpu_seconds();
    const double packets = packets_in_window(c.fl_all, packets0);
    if (first) {
        const double hwm1 = peak_rss_mb();
        ::malloc_trim(0);  // what the acquires freed is not held
        const double dn = static_cast<double>(n);
        side.held_bytes = (rss_bytes() - rss0) / dn;
        side.peak_bytes = (hwm1 - hwm0) * 1024 * 1024 / dn;
        side.peak_rss_mb = hwm1;
    }
    t0 = now_ns();
    if (side.ok) side.ok = co_await all_at_once(st, n, bound_s, [&](std::size_t i) { return h_release(st, i, raw); }, on);
    const double release_s = static_cast<double>(now_ns() - t0) / 1e9;
    if (!side.ok) co_return;  // acquires may still be running: many_finish waits for them, then clears
    std::vector<zklock::lease>().swap(st->held);
    std::vector<std::string>().swap(st->raw_held);
    std::fprintf(stderr, "  %s%s round: acquire-all %.3f s, release-all %.3f s%s\n", raw ? "raw floor " : "lock ",
                 first ? "first" : "timed", acquire_s, release_s, first ? " (memory figures; not timed)" : "");
    if (first) co_return;
    side.acquire_s += acquire_s;
    side.release_s += release_s;
    side.cpu_s += (cpu1.first - cpu0.first) + (cpu1.second - cpu0.second);
    side.packets += packets;
    ++side.rounds;
}

}  // namespace


asio::awaitable<std::pair<scenario_result, scenario_result>> scenario_h(bench_ctx& c, const std::string& name)
{
    const many_spec spec = parse_many(name);
    const auto n = static_cast<std::size_t>(spec.locks);
    const double bound_s = 120 + static_cast<double>(n) / 100;
    std::array<h_side, 2> sides;  // the lock, its raw floor
    sides[1].raw = true;
    auto ok = [&] {
        return sides[0].ok && sides[1].ok && !sides[0].run.st->fails.n && (!sides[1].run.st || !sides[1].run.st->fails.n);
    };

    // The lock first, alone in the process but for its session: one cycle per lock, so that its
    // directories exist as the raw floor's do, then its first round, which takes the memory
    // figures in a process that has not held locks before.
    h_side& lock = sides[0];
    lock.run = co_await many_setup(c, name, spec, false, true);
    {
        const auto& st = lock.run.st;
        executor_of on = each_on_its_lock(st);
        lock.ok = co_await all_at_once(st, n, bound_s, [&](std::size_t i) { return m_contender(st, i, false); }, std::move(on));
        st->locks.clear();
        st->locks.shrink_to_fit();
    }
    if (ok()) co_await h_round(c, lock, true, bound_s);
    // The raw floor's set-up (its directories, untimed) and first round.
    sides[1].run = co_await many_setup(c, name, spec, true, false);
    if (ok()) co_await h_round(c, sides[1], true, bound_s);
    // The measured rounds: the lock and its floor take turns (ABBA...), `windows` rounds each.
    for (int w = 0; w < c.opt.windows && ok(); ++w)
        for (int j = 0; j < 2 && ok(); ++j) co_await h_round(c, sides[turn_side(w, j)], false, bound_s);

    std::pair<scenario_result, scenario_result> out(many_result(name, spec, false, 1), many_result(name, spec, true, 1));
    for (std::size_t k = 0; k < sides.size(); ++k) {
        h_side& side = sides[k];
        scenario_result& r = k == 0 ? out.first : out.second;
        co_await many_finish(c, side.run, side.ok, bound_s, r);
        const double rounds = side.rounds > 0 ? side.rounds : std::nan("");
        const double acquisitions = static_cast<double>(n) * rounds;
        r.window_cpu_s = side.cpu_s;
        r.window_acquisitions = n * static_cast<std::size_t>(side.rounds);
        r.figs.add("acquire_all_s", side.acquire_s / rounds);
        r.figs.add("release_all_s", side.release_s / rounds);
        r.figs.add("requests_per_acquisition", side.packets / acquisitions);
        r.figs.add("client_cpu_us_per_acquisition", side.cpu_s * 1e6 / acquisitions);
        r.figs.add("held_bytes_per_lock", side.held_bytes);
        r.figs.add("peak_bytes_per_lock", side.peak_bytes);
        r.figs.add("peak_rss_mb", side.peak_rss_mb);
    }
    co_return out;
}

}  // namespace zklock_bench
