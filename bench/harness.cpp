// bench/harness.cpp — the harness: sessions, the contenders' shared state and sampler, running contenders, checks.
#include "bench.hpp"

namespace zklock_bench {

namespace {


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

}  // namespace


void run_state::fail(const char* what, const error_code& ec) { fail(std::string(what) + ": " + ec.message()); }


std::string servers_for_session(const bench_ctx& c, int i)
{
    if (c.over_tls) return c.tls_servers;
    if (c.session_servers.empty()) return c.servers;
    return c.session_servers[static_cast<std::size_t>(i) % c.session_servers.size()];
}


zklock::session_config session_cfg(const bench_ctx& c, int i)
{
    zklock::session_config cfg;
    cfg.servers = servers_for_session(c, i);
    if (c.over_tls) cfg.tls = c.tls;
    return cfg;
}


asio::awaitable<session_list> connect_sessions(const bench_ctx& c, int n)
{
    auto ex = co_await asio::this_coro::executor;
    session_list v;
    for (int i = 0; i < n; ++i) {
        if (!c.pool) {
            v.push_back(std::make_shared<zklock::session>(ex, session_cfg(c, i)));
        } else {
            // Its destructor too runs on its executor, wherever the last reference goes.
            v.emplace_back(new zklock::session(c.pool->session_executor(i), session_cfg(c, i)), [](zklock::session* s) {
                auto sx = s->get_executor();
                asio::post(sx, [s] { delete s; });
            });
        }
        auto* s = v.back().get();
        auto connect = [s]() -> asio::awaitable<void> { co_await s->async_connect(); };
        co_await run_on(s->get_executor(), std::move(connect));
    }
    co_return v;
}


asio::awaitable<std::vector<zklock::metrics_snapshot>> metrics_of(const session_list& ss)
{
    // Written on each session's executor, read here once its run_on completed. (Not co_returned:
    // Boost 1.81 cannot co_await a co_spawn that completes with a value, awaitable.hpp's
    // resume() for (exception_ptr, T) dereferences its result struct.)
    std::vector<zklock::metrics_snapshot> v(ss.size());
    for (std::size_t i = 0; i < ss.size(); ++i) {
        auto* s = ss[i].get();
        auto read = [s, &out = v[i]]() -> asio::awaitable<void> {
            out = s->metrics();
            co_return;
        };
        co_await run_on(s->get_executor(), std::move(read));
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


std::shared_ptr<sampler_state> start_sampler(asio::any_io_executor ex, std::function<std::string()> progress)
{
    reset_peak_rss();
    auto s = std::make_shared<sampler_state>(ex);
    s->rss_start_mb = peak_rss_mb();  // VmHWM was just reset to the current RSS
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


/// One session-layer-floor contender: the raw queue cycle through zklock's session layer, once or
/// looping until st->stop_ns (as raw_contender does on libzookeeper_st).
asio::awaitable<void> floor_contender(std::shared_ptr<zklock::session> s, std::shared_ptr<run_state> st, int id,
                                      bool loop, std::int64_t hold_ns)
{
    // None with hold 0: not even the timer object. (Its executor from the run, not from
    // `co_await this_coro::executor`: every co_await expression has its own room in the frame,
    // one for each of 10 000 waiters in W10000.)
    std::unique_ptr<asio::steady_timer> hold;
    if (hold_ns > 0) hold = std::make_unique<asio::steady_timer>(st->wake.get_executor());
    do {
        acquisition a;
        a.contender = id;
        a.t_request = now_ns();
        st->request(a.t_request);
        std::string own;
        const error_code ec = co_await raw_acquire(*s, st->dir, st->data, own, st->names_listed);
        a.t_acquired = now_ns();
        if (ec) {
            st->fail("raw acquire", ec);
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
            st->fail("raw release", std::get<0>(rr));
            break;
        }
        st->record(a);
    } while (loop && now_ns() < st->stop_ns);
}


/// One lock contender: acquire → (hold) → release, once or looping until st->stop_ns. Lean on
/// purpose, like raw_contender: W holds 10 000 of these at once, and what a contender's frame holds
/// counts in peak_rss_mb. So the lock object is its session's (one object serves any number of
/// acquires at once), a semaphore's is its own (a semaphore object remembers that it verified the
/// permit count), and every acquire is one co_await expression whatever the kind. No timeout:
/// past the bound run_contenders closes the sessions, which ends every pending acquire (as it
/// ends the raw floor's waits).
asio::awaitable<void> contender(std::shared_ptr<session_locks> l, std::shared_ptr<run_state> st, int id, bool loop,
                                lock_kind kind, std::int64_t hold_ns, std::uint32_t permits)
{
    std::unique_ptr<zklock::semaphore> sem;
    if (kind == lock_kind::permit) sem = std::make_unique<zklock::semaphore>(*l->s, st->dir, permits);
    std::unique_ptr<asio::steady_timer> hold;  // none with hold 0: not even the timer object
    if (hold_ns > 0) hold = std::make_unique<asio::steady_timer>(co_await asio::this_coro::executor);
    do {
        acquisition a;
        a.contender = id;
        a.t_request = now_ns();
        st->request(a.t_request);
        auto r = co_await asio::async_initiate<const decltype(asio::as_tuple(asio::deferred))&, void(error_code, zklock::lease)>(
            [](auto h, session_locks* l, zklock::semaphore* sem, lock_kind kind) {
                switch (kind) {
                case lock_kind::mutex: l->m.async_acquire(std::move(h)); break;
                case lock_kind::writer: l->sm.async_acquire(std::move(h)); break;
                case lock_kind::reader: l->sm.async_acquire_shared(std::move(h)); break;
                case lock_kind::permit: sem->async_acquire(std::move(h)); break;
                case lock_kind::cohort: l->mc.async_acquire(std::move(h)); break;
                }
            },
            asio::as_tuple(asio::deferred), l.get(), sem.get(), kind);
        a.t_acquired = now_ns();
        if (std::get<0>(r)) {
            st->fail("acquire", std::get<0>(r));
            break;
        }
        zklock::lease lease = std::move(std::get<1>(r));
        a.seq = zklock::queue_sequence(lease.node()).value_or(-1);
        a.local = lease.fence().local;
        if (hold) {
            hold->expires_after(std::chrono::nanoseconds(hold_ns));
            co_await hold->async_wait(asio::as_tuple(asio::deferred));
        }
        a.t_release_start = now_ns();
        auto rr = co_await lease.async_release(asio::as_tuple(asio::deferred));
        a.t_released = now_ns();
        if (std::get<0>(rr)) {
            st->fail("release", std::get<0>(rr));
            break;
        }
        st->record(a);
    } while (loop && now_ns() < st->stop_ns);
}


/// W's contender (a mutex, once, no hold): what a user's coroutine would hold across the
/// acquire, and nothing else, so that the frame (one per waiter: 10 000 in W10000) measures the
/// lock, not the looping scenarios' options (a semaphore, a timer, lock kinds).
asio::awaitable<void> contender_once(std::shared_ptr<session_locks> l, std::shared_ptr<run_state> st, int id)
{
    acquisition a;
    a.contender = id;
    a.t_request = now_ns();
    st->request(a.t_request);
    auto r = co_await l->m.async_acquire(asio::as_tuple(asio::deferred));
    a.t_acquired = now_ns();
    if (std::get<0>(r)) {
        st->fail("acquire", std::get<0>(r));
        co_return;
    }
    a.seq = zklock::queue_sequence(std::get<1>(r).node()).value_or(-1);
    a.t_release_start = now_ns();
    auto rr = co_await std::get<1>(r).async_release(asio::as_tuple(asio::deferred));
    a.t_released = now_ns();
    if (std::get<0>(rr)) {
        st->fail("release", std::get<0>(rr));
        co_return;
    }
    st->record(a);
}


namespace {

// --request-mix: what the run's sessions sent, per acquisition (the metrics count every request
// a session sent, the contenders' and the directory's set-up alike).
void print_request_mix(const std::string& dir, const std::vector<zklock::metrics_snapshot>& metrics,
                       std::size_t acquisitions)
{
    std::map<std::string, std::uint64_t> by_type;
    std::uint64_t with_listing = 0, without_listing = 0;
    for (const auto& m : metrics) {
        for (const auto& [type, n] : m.requests) by_type[type] += n;
        with_listing += m.handoffs_with_listing;
        without_listing += m.handoffs_without_listing;
    }
    std::string line = dir + ": requests per acquisition:";
    double total = 0;
    char buf[128];
    for (const auto& [type, n] : by_type) {
        const double per = static_cast<double>(n) / static_cast<double>(acquisitions);
        total += per;
        std::snprintf(buf, sizeof buf, " %s %.2f", type.c_str(), per);
        line += buf;
    }
    std::snprintf(buf, sizeof buf, " (total %.2f); handoffs with a listing %llu, without %llu", total,
                  static_cast<unsigned long long>(with_listing), static_cast<unsigned long long>(without_listing));
    std::cerr << line << buf << "\n";
}


/// A run's directory, and `junk` children in it that are not lock nodes (there throughout the run).
asio::awaitable<void> set_stage(zklock::session& s, const std::string& dir, int junk)
{
    co_await ensure_path(s, dir);
    for (int i = 0; i < junk; ++i) {
        auto r = co_await s.async_create(dir + "/junk-" + std::to_string(i), std::string(), zklock::create_mode::ephemeral,
                                         asio::as_tuple(asio::deferred));
        if (std::get<0>(r)) throw boost::system::system_error(std::get<0>(r), "create junk in " + dir);
    }
}


/// Removes what set_stage made.
asio::awaitable<void> strike_stage(zklock::session& s, const std::string& dir, int junk)
{
    for (int i = 0; i < junk; ++i)
        co_await s.async_remove(dir + "/junk-" + std::to_string(i), -1, asio::as_tuple(asio::deferred));
    co_await remove_dir(s, dir);
}

}  // namespace

asio::awaitable<contenders_run> run_contenders(bench_ctx& c, const std::string& dir, int sessions, int contenders,
                                               contender_plan plan, double run_s, double bound_s)
{
    const bool loop = plan.loop;
    auto ex = co_await asio::this_coro::executor;
    auto st = std::make_shared<run_state>(ex, dir, c.node_data);
    st->counts.assign(static_cast<std::size_t>(contenders), 0);
    if (!loop) st->acqs.reserve(static_cast<std::size_t>(contenders));  // W: one each, no regrowth at the peak
    st->expected = contenders;
    // The raw floor: its own libzookeeper_st handles; one zklock session still sets the stage.
    session_list ss = co_await connect_sessions(c, plan.raw ? 1 : sessions);
    raw_session_list raws;
    if (plan.raw) raws = co_await connect_raw_sessions(c, sessions);
    // The stage (the directory and its junk) is set and struck on the first session's executor.
    const auto stage = ss[0];
    auto set = [&]() { return set_stage(*stage, dir, plan.junk_children); };
    co_await run_on(stage->get_executor(), std::move(set));
    // Threads and peak RSS cover the contenders: sampled from here until the sessions close.
    auto sampler = start_sampler(ex, [st, contenders, loop] {
        char buf[160];
        if (loop) std::snprintf(buf, sizeof buf, "%zu acquisitions", st->recorded());
        else std::snprintf(buf, sizeof buf, "%zu/%d acquired and released", st->recorded(), contenders);
        return std::string(buf);
    });
    sampler_guard guard{sampler};
    // The packet count covers the contenders only: after the connects and the directory, before
    // the directory's removal and the closes.
    std::optional<std::int64_t> received0;
    if (plan.count_requests) received0 = open_packet_window(c.fl_all);
    const auto cpu0 = cpu_seconds();
    const std::int64_t t0 = now_ns();
    st->stop_ns = t0 + seconds_ns(run_s);
    st->bound_ns = t0 + seconds_ns(bound_s);
    const int per_session = std::max(1, contenders / sessions);
    std::vector<std::shared_ptr<session_locks>> locks;
    if (!plan.raw && !plan.floor)
        for (auto& s : ss) locks.push_back(std::make_shared<session_locks>(s, dir));
    // A contender runs on its session's executor (the raw floor's on this one, as its raw
    // sessions); its completion comes back here, where `done` and `wake` live. (A fresh binder
    // each: Asio 1.26 moves the handler out of a bound token given as an lvalue.)
    auto done = [&] { return asio::bind_executor(ex, contender_done(st)); };
    for (int i = 0; i < contenders; ++i) {
        const auto on = static_cast<std::size_t>(plan.sessions_in_blocks ? std::min(i / per_session, sessions - 1) : i % sessions);
        if (plan.raw)
            asio::co_spawn(ex, raw_contender(raws[on], st, i, loop, plan.hold_ns), done());
        else if (plan.floor)
            asio::co_spawn(ss[on]->get_executor(), floor_contender(ss[on], st, i, loop, plan.hold_ns), done());
        else if (!loop && plan.hold_ns == 0 && plan.kind_of(i) == lock_kind::mutex)
            asio::co_spawn(ss[on]->get_executor(), contender_once(locks[on], st, i), done());
        else
            asio::co_spawn(ss[on]->get_executor(),
                           contender(locks[on], st, i, loop, plan.kind_of(i), plan.hold_ns, plan.permits), done());
    }
    const bool all_done = co_await wait_all(*st);
    const auto cpu1 = cpu_seconds();
    if (c.opt.request_mix && !plan.raw && !st->acqs.empty()) {
        const auto metrics = co_await metrics_of(ss);
        print_request_mix(dir, metrics, st->acqs.size());
    }
    const double requests = all_done ? packets_in_window(c.fl_all, received0) : std::nan("");
    if (!all_done) {
        // Past the bound: close the sessions, which ends every pending operation, then collect.
        st->fail("bound of " + std::to_string(static_cast<int>(bound_s)) + " s reached");
        for (auto& s : ss) {
            auto close = [s = s.get()]() -> asio::awaitable<void> { co_await s->async_close(asio::as_tuple(asio::deferred)); };
            co_await run_on(s->get_executor(), std::move(close));
        }
        for (auto& r : raws) r->close();
        st->bound_ns = now_ns() + seconds_ns(30);
        co_await wait_all(*st);
        session_list fresh = co_await connect_sessions(c, 1);
        const auto other = fresh[0];
        auto remove = [&]() { return remove_dir(*other, dir); };
        co_await run_on(other->get_executor(), std::move(remove));
    } else {
        auto strike = [&]() { return strike_stage(*stage, dir, plan.junk_children); };
        co_await run_on(stage->get_executor(), std::move(strike));
    }
    // The figures cover the contenders: the sampler stops before the sessions close (each close
    // runs on zklock's close thread for a moment).
    stop_sampler(*sampler);
    locks.clear();
    ss.clear();
    for (auto& r : raws) r->close();  // zookeeper_close: one blocking round trip each
    raws.clear();
    stop_sampler(*sampler);
    sampler->progress = nullptr;
    contenders_run result{st, sampler, requests,
                          (cpu1.first - cpu0.first) + (cpu1.second - cpu0.second)};  // not braced inside co_return/co_await (GCC 12)
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


void coroutine_group::spawn(asio::awaitable<error_code> a)
{
    ++running_;
    asio::co_spawn(wake_.get_executor(), std::move(a), [self = shared_from_this()](std::exception_ptr e, error_code ec) {
        if (e && !ec) ec = asio::error::fault;
        if (ec && !self->first_ec_) self->first_ec_ = ec;
        if (--self->running_ == 0) self->wake_.cancel();
    });
}


asio::awaitable<void> coroutine_group::join(std::chrono::nanoseconds bound, const std::string& what)
{
    wake_.expires_after(bound);
    if (running_ > 0) co_await wake_.async_wait(asio::as_tuple(asio::deferred));
    if (running_ > 0) first_ec_ = asio::error::timed_out;
    if (first_ec_) throw boost::system::system_error(first_ec_, what);
}


std::string dir_for(const bench_ctx& c, const std::string& name, bool floor, bool raw)
{
    return c.root + "/" + (floor ? (raw ? "raw-floor-" : "floor-") : "") + name + "-r" + std::to_string(c.run);
}

}  // namespace zklock_bench
