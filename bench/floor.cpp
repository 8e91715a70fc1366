// bench/floor.cpp — the floors: the raw queue cycle and the two-session ping-pong.
#include "bench.hpp"

namespace zklock_bench {

std::string raw_node_prefix(const std::string& dir)
{
    // zklock's own node name for a mutex ("x-<16 hex digit attempt id>-lock-"), so that listings
    // carry the same bytes as the lock's; a fresh random id per cycle.
    static std::mt19937_64 gen{std::random_device{}()};
    char buf[40];
    std::snprintf(buf, sizeof buf, "/x-%016llx-lock-", static_cast<unsigned long long>(gen() | 1));
    return dir + buf;
}


std::int64_t seq_of(std::string_view name)
{
    std::int64_t seq = -1;
    if (name.size() >= 10) std::from_chars(name.data() + name.size() - 10, name.data() + name.size(), seq);
    return seq;
}


/// The queue node just before ours: the largest sequence number below `own`; empty if none.
std::string_view predecessor(const std::vector<std::string>& children, std::int64_t own)
{
    std::string_view best;
    std::int64_t best_seq = -1;
    for (const auto& c : children) {
        const std::int64_t s = seq_of(c);
        if (s < own && s > best_seq) {
            best_seq = s;
            best = c;
        }
    }
    return best;
}


/// Raw acquire (floor): create + get_children pipelined, then watch-predecessor / re-list until no
/// smaller node is left. Sets `own` to our node's path.
asio::awaitable<error_code> raw_acquire(zklock::session& s, const std::string& dir, const std::string& data,
                                        std::string& own, std::atomic<std::uint64_t>& names_listed)
{
    const std::string prefix = raw_node_prefix(dir);
    auto r = co_await asio::experimental::make_parallel_group(
                 s.async_create(prefix, data, zklock::create_mode::ephemeral_sequential, asio::deferred),
                 s.async_get_children(dir, asio::deferred))
                 .async_wait(asio::experimental::wait_for_all(), asio::deferred);
    if (std::get<1>(r)) co_return std::get<1>(r);
    own = std::move(std::get<2>(r));
    const std::int64_t own_seq = seq_of(own);
    if (std::get<4>(r)) co_return std::get<4>(r);
    std::vector<std::string> children = std::move(std::get<5>(r));
    for (;;) {
        names_listed.fetch_add(children.size(), std::memory_order_relaxed);
        const std::string_view pred = predecessor(children, own_seq);
        if (pred.empty()) co_return error_code{};
        const std::string pred_path = dir + "/" + std::string(pred);
        children = std::vector<std::string>();  // not kept while waiting (W10000: 10000 × 300 KB)
        auto w = co_await s.async_watch_data(pred_path, asio::as_tuple(asio::deferred));
        if (!std::get<0>(w)) {
            auto ev = co_await std::get<3>(w).async_wait(asio::as_tuple(asio::deferred));
            if (std::get<0>(ev)) co_return std::get<0>(ev);
        } else if (std::get<0>(w) != zklock::zk_errc::no_node) {
            co_return std::get<0>(w);
        }
        auto l = co_await s.async_get_children(dir, asio::as_tuple(asio::deferred));
        if (std::get<0>(l)) co_return std::get<0>(l);
        children = std::move(std::get<1>(l));
    }
}


/// The raw floor's sessions: libzookeeper_st handles driven by this thread's io_context.
asio::awaitable<raw_session_list> connect_raw_sessions(const bench_ctx& c, int n)
{
    auto ex = co_await asio::this_coro::executor;
    raw_session_list v;
    for (int i = 0; i < n; ++i) {
        // The session timeout zklock's sessions ask for by default.
        v.push_back(raw_session::make(ex, servers_for_session(c, i), zklock::session_config{}.session_timeout));
        if (auto ec = co_await v.back()->connect(30s)) throw boost::system::system_error(ec, "raw floor connect");
    }
    co_return v;
}


/// raw_acquire on libzookeeper_st directly: the same requests, no zklock object in between.
asio::awaitable<error_code> raw_acquire(raw_session& s, const std::string& dir, const std::string& data,
                                        std::string& own, std::atomic<std::uint64_t>& names_listed)
{
    const std::string prefix = raw_node_prefix(dir);
    auto r = co_await asio::experimental::make_parallel_group(s.async_create(prefix, data, asio::deferred),
                                                             s.async_get_children(dir, asio::deferred))
                 .async_wait(asio::experimental::wait_for_all(), asio::deferred);
    if (std::get<1>(r)) co_return std::get<1>(r);
    own = std::move(std::get<2>(r));
    const std::int64_t own_seq = seq_of(own);
    if (std::get<3>(r)) co_return std::get<3>(r);
    std::vector<std::string> children = std::move(std::get<4>(r));
    for (;;) {
        names_listed.fetch_add(children.size(), std::memory_order_relaxed);
        const std::string_view pred = predecessor(children, own_seq);
        if (pred.empty()) co_return error_code{};
        std::string pred_path = dir + "/" + std::string(pred);
        children = std::vector<std::string>();
        auto w = co_await s.async_watch_data(std::move(pred_path), asio::as_tuple(asio::deferred));
        if (!std::get<0>(w)) {
            auto ev = co_await std::get<1>(w).async_wait(asio::as_tuple(asio::deferred));
            if (std::get<0>(ev)) co_return std::get<0>(ev);
        } else if (std::get<0>(w) != zklock::zk_errc::no_node) {
            co_return std::get<0>(w);
        }
        auto l = co_await s.async_get_children(dir, asio::as_tuple(asio::deferred));
        if (std::get<0>(l)) co_return std::get<0>(l);
        children = std::move(std::get<1>(l));
    }
}


asio::awaitable<void> raw_contender(std::shared_ptr<raw_session> s, std::shared_ptr<run_state> st, int id, bool loop,
                                    std::int64_t hold_ns)
{
    std::unique_ptr<asio::steady_timer> hold;  // as contender(): none with hold 0
    if (hold_ns > 0) hold = std::make_unique<asio::steady_timer>(co_await asio::this_coro::executor);
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
            if (!own.empty()) co_await s->async_remove(own, asio::as_tuple(asio::deferred));
            break;
        }
        a.seq = seq_of(own);
        if (hold) {
            hold->expires_after(std::chrono::nanoseconds(hold_ns));
            co_await hold->async_wait(asio::as_tuple(asio::deferred));
        }
        a.t_release_start = now_ns();
        auto rr = co_await s->async_remove(own, asio::as_tuple(asio::deferred));
        a.t_released = now_ns();
        if (std::get<0>(rr)) {
            st->fail("raw release", std::get<0>(rr));
            break;
        }
        st->record(a);
    } while (loop && now_ns() < st->stop_ns);
}


/// Floor ping-pong: two sessions hand a node back and forth for `duration` seconds.
asio::awaitable<scenario_result> floor_pingpong(bench_ctx& c)
{
    scenario_result r;
    r.scenario = "pingpong";
    r.floor = true;
    r.sessions = r.contenders = 2;
    auto ex = co_await asio::this_coro::executor;
    session_list ss = co_await connect_sessions(c, 2);
    const std::string dir = dir_for(c, "pingpong", true);
    co_await ensure_path(*ss[0], dir);
    std::vector<double> h;
    asio::steady_timer removed_event(ex);
    const std::int64_t end = now_ns() + seconds_ns(c.opt.duration);
    for (int turn = 0; now_ns() < end; ++turn) {
        zklock::session& holder = *ss[static_cast<std::size_t>(turn % 2)];
        zklock::session& waiter = *ss[static_cast<std::size_t>(1 - turn % 2)];
        const std::string prefix = raw_node_prefix(dir);
        auto created = co_await holder.async_create(prefix, c.node_data, zklock::create_mode::ephemeral_sequential,
                                                    asio::as_tuple(asio::deferred));
        if (std::get<0>(created)) throw boost::system::system_error(std::get<0>(created), "ping-pong create");
        const std::string node = std::get<1>(created);
        auto watched = co_await waiter.async_watch_data(node, asio::as_tuple(asio::deferred));
        // --ensemble: until the waiter's member has applied the holder's create.
        for (int retry = 0; std::get<0>(watched) == zklock::zk_errc::no_node && retry < 10000; ++retry)
            watched = co_await waiter.async_watch_data(node, asio::as_tuple(asio::deferred));
        if (std::get<0>(watched)) throw boost::system::system_error(std::get<0>(watched), "ping-pong watch");
        bool removed = false;
        error_code remove_ec;
        const std::int64_t t0 = now_ns();
        holder.async_remove(node, -1, [&](error_code ec) {
            removed = true;
            remove_ec = ec;
            removed_event.cancel();
        });
        auto ev = co_await std::get<3>(watched).async_wait(asio::as_tuple(asio::deferred));
        const std::int64_t t1 = now_ns();
        if (std::get<0>(ev)) throw boost::system::system_error(std::get<0>(ev), "ping-pong event");
        h.push_back(static_cast<double>(t1 - t0) / 1e3);
        while (!removed) {
            removed_event.expires_after(10s);
            co_await removed_event.async_wait(asio::as_tuple(asio::deferred));
        }
        if (remove_ec) throw boost::system::system_error(remove_ec, "ping-pong remove");
    }
    co_await remove_dir(*ss[0], dir);
    std::sort(h.begin(), h.end());
    r.figs.add("handoff_p50_us", zklock_bench::percentile(h, 0.50));
    r.figs.add("handoff_p99_us", zklock_bench::percentile(h, 0.99));
    co_return r;
}

/// The write chain (W<N>): the least a drain of n can take when each handoff goes through the
/// server as one write and one watch event, and nothing else: no listing, no look-ahead, no
/// queueing. n nodes over `sessions` raw sessions, node i's deletion watched by node i+1's session,
/// all set up before the clock starts; then node 0 is deleted, and each deletion event makes the
/// next session delete its node. Any recipe's drain (a holder's release is a write the successor
/// hears of by an event) costs at least this, plus its queueing.
asio::awaitable<scenario_result> raw_write_chain(bench_ctx& c, const std::string& name, int sessions, int n)
{
    scenario_result r;
    r.scenario = name;
    r.floor = r.raw = true;
    r.sessions = sessions;
    r.contenders = n;
    auto ex = co_await asio::this_coro::executor;
    session_list ss = co_await connect_sessions(c, 1);
    const std::string dir = c.root + "/write-chain-" + name + "-r" + std::to_string(c.run);
    co_await ensure_path(*ss[0], dir);
    // Shared with the coroutines below, which may outlive this one if it gives up (timeout).
    struct chain_state {
        raw_session_list raws;
        std::vector<std::string> nodes;
        std::vector<raw_session::watch> watches;
        std::vector<std::int64_t> t_event, t_delete;
        std::int64_t t_end = 0;
        raw_session& on(int i) { return *raws[static_cast<std::size_t>(i) % raws.size()]; }
    };
    auto st = std::make_shared<chain_state>();
    st->raws = co_await connect_raw_sessions(c, sessions);
    const auto un = static_cast<std::size_t>(n);
    st->nodes.resize(un);
    st->watches.resize(un);
    st->t_event.resize(un);
    st->t_delete.resize(un);
    auto group = std::make_shared<coroutine_group>(ex);
    const auto bound = std::chrono::seconds(60 + n / 100);

    // Set-up, untimed: each session creates its nodes, then watches its nodes' predecessors, one
    // request after another (the sessions in parallel).
    for (int s = 0; s < sessions; ++s)
        group->spawn([](auto st, int s, int n, int sessions, std::string path, std::string data) -> asio::awaitable<error_code> {
            for (int i = s; i < n; i += sessions) {
                auto cr = co_await st->on(i).async_create(path, data, asio::as_tuple(asio::deferred));
                if (std::get<0>(cr)) co_return std::get<0>(cr);
                st->nodes[static_cast<std::size_t>(i)] = std::move(std::get<1>(cr));
            }
            co_return error_code{};
        }(st, s, n, sessions, dir + "/c-", c.node_data));
    co_await group->join(bound, "write chain: create");
    for (int s = 0; s < sessions; ++s)
        group->spawn([](auto st, int s, int n, int sessions) -> asio::awaitable<error_code> {
            for (int i = s == 0 ? sessions : s; i < n; i += sessions) {
                auto w = co_await st->on(i).async_watch_data(st->nodes[static_cast<std::size_t>(i - 1)], asio::as_tuple(asio::deferred));
                // --ensemble: until this session's member has applied the other session's create.
                for (int retry = 0; std::get<0>(w) == zklock::zk_errc::no_node && retry < 10000; ++retry)
                    w = co_await st->on(i).async_watch_data(st->nodes[static_cast<std::size_t>(i - 1)], asio::as_tuple(asio::deferred));
                if (std::get<0>(w)) co_return std::get<0>(w);
                st->watches[static_cast<std::size_t>(i)] = std::move(std::get<1>(w));
            }
            co_return error_code{};
        }(st, s, n, sessions));
    co_await group->join(bound, "write chain: watch");

    // The chain, timed: node i's session deletes it when node i-1's deletion event arrives.
    const cpu_meter cpu{c};
    const std::int64_t t0 = now_ns();
    for (int i = 0; i < n; ++i)
        group->spawn([](auto st, int i, int n) -> asio::awaitable<error_code> {
            const auto ui = static_cast<std::size_t>(i);
            if (i > 0) {
                auto ev = co_await st->watches[ui].async_wait(asio::as_tuple(asio::deferred));
                st->t_event[ui] = now_ns();
                if (std::get<0>(ev)) co_return std::get<0>(ev);
            }
            st->t_delete[ui] = now_ns();
            auto [ec] = co_await st->on(i).async_remove(st->nodes[ui], asio::as_tuple(asio::deferred));
            if (i == n - 1) st->t_end = now_ns();
            co_return ec;
        }(st, i, n));
    co_await group->join(bound, "write chain: chain");
    cpu.add_to(r.figs);
    for (auto& s : st->raws) s->close();
    co_await remove_dir(*ss[0], dir);

    std::vector<double> h;
    for (std::size_t i = 1; i < un; ++i) h.push_back(static_cast<double>(st->t_event[i] - st->t_delete[i - 1]) / 1e3);
    std::sort(h.begin(), h.end());
    const double drain_s = static_cast<double>(st->t_end - t0) / 1e9;
    r.figs.add("drain_s", drain_s);
    r.figs.add("handoff_p50_us", zklock_bench::percentile(h, 0.50));
    r.figs.add("gap_mean_us", n > 1 ? drain_s * 1e6 / (n - 1) : std::nan(""));
    co_return r;
}


/// The server's write bound: what a pipelined writer gets from the server, the most any lock
/// scenario of C64's shape could: 8 raw sessions, 64 writers (8 in flight on each session), each
/// creating an ephemeral sequential node and deleting it, over and over for C64's time. Every
/// acquisition is at least two writes (its node's create and delete), so 2 x acquisitions/s over
/// writes_per_s says how near to what the server can do a lock scenario runs.
asio::awaitable<scenario_result> raw_write_bound(bench_ctx& c)
{
    scenario_result r;
    r.scenario = "write bound";
    r.floor = r.raw = true;
    r.sessions = 8;
    r.contenders = 64;
    auto ex = co_await asio::this_coro::executor;
    session_list ss = co_await connect_sessions(c, 1);
    const std::string dir = c.root + "/write-bound-r" + std::to_string(c.run);
    co_await ensure_path(*ss[0], dir);
    // Shared with the writers, which may outlive this coroutine if it gives up (timeout).
    struct bound_state {
        raw_session_list raws;
        std::int64_t stop_ns = 0;
        std::int64_t writes = 0;
    };
    auto st = std::make_shared<bound_state>();
    st->raws = co_await connect_raw_sessions(c, r.sessions);
    const double run_s = 2 * c.opt.duration;
    const std::int64_t t0 = now_ns();
    st->stop_ns = t0 + seconds_ns(run_s);
    auto group = std::make_shared<coroutine_group>(ex);
    for (int w = 0; w < r.contenders; ++w)
        group->spawn([](auto st, int w, std::string path, std::string data) -> asio::awaitable<error_code> {
            raw_session& s = *st->raws[static_cast<std::size_t>(w) % st->raws.size()];
            while (now_ns() < st->stop_ns) {
                auto [ec, node] = co_await s.async_create(path, data, asio::as_tuple(asio::deferred));
                if (ec) co_return ec;
                ++st->writes;
                auto [rec] = co_await s.async_remove(std::move(node), asio::as_tuple(asio::deferred));
                if (rec) co_return rec;
                ++st->writes;
            }
            co_return error_code{};
        }(st, w, dir + "/w-", c.node_data));
    co_await group->join(std::chrono::nanoseconds(seconds_ns(run_s + 60)), "write bound");
    const std::int64_t t1 = now_ns();
    for (auto& s : st->raws) s->close();
    co_await remove_dir(*ss[0], dir);
    r.figs.add("writes_per_s", static_cast<double>(st->writes) / (static_cast<double>(t1 - t0) / 1e9));
    co_return r;
}

}  // namespace zklock_bench
