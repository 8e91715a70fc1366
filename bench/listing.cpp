// bench/listing.cpp — L<N>: one directory of N lock-named children, listed over and over through
// zklock's session and through libzookeeper_st (the raw floor), in turns.
#include "bench.hpp"

#include <array>

namespace zklock_bench {

bool is_listing(const std::string& name)
{
    return name.size() > 1 && name.size() <= 8 && name[0] == 'L' &&
           name.find_first_not_of("0123456789", 1) == std::string::npos && std::atoi(name.c_str() + 1) > 0;
}


namespace {

/// Listers per side, each with one listing outstanding at a time (a queue's waiters list at once).
constexpr int listers = 4;
/// Creates outstanding at once while the directory is filled (untimed).
constexpr std::size_t fill_window = 1000;

asio::awaitable<error_code> fill_one(std::shared_ptr<zklock::session> s, std::string prefix, std::string data)
{
    auto [ec, path, st] = co_await s->async_create(std::move(prefix), std::move(data),
                                                   zklock::create_mode::ephemeral_sequential,
                                                   asio::as_tuple(asio::deferred));
    co_return ec;
}


/// One side's measured windows, summed.
struct l_side {
    session_list ss;       // the lock's side
    raw_session_list raws;  // the raw floor's side
    double span_s = 0, cpu_s = 0, server_cpu_s = 0;
    std::int64_t listings = 0, names = 0;
    std::vector<double> listing_us;
    failure_count fails;
};


/// Lister i of a side: lists `dir` until `stop_ns`; every listing must hold `n` names (a failure
/// is the side's, not the group's: the side then stops being measured).
asio::awaitable<error_code> lister(l_side& side, std::size_t i, std::string dir, std::size_t n, std::int64_t stop_ns)
{
    while (now_ns() < stop_ns && side.fails.n == 0) {
        const std::int64_t t0 = now_ns();
        std::vector<std::string> names;
        error_code ec;
        if (side.raws.empty())
            std::tie(ec, names) = co_await side.ss[i]->async_get_children(dir, asio::as_tuple(asio::deferred));
        else
            std::tie(ec, names) = co_await side.raws[i]->async_get_children(dir, asio::as_tuple(asio::deferred));
        if (ec || names.size() != n) {
            side.fails.add(ec ? "list: " + ec.message()
                              : "list: " + std::to_string(names.size()) + " names, not " + std::to_string(n));
            break;
        }
        side.listing_us.push_back(static_cast<double>(now_ns() - t0) / 1e3);
        ++side.listings;
        side.names += static_cast<std::int64_t>(names.size());
    }
    co_return error_code{};
}


/// One measured window of a side: its listers for `seconds`; time and CPU added to the side's.
asio::awaitable<void> l_window(bench_ctx& c, l_side& side, const std::string& dir, std::size_t n, double seconds)
{
    auto ex = co_await asio::this_coro::executor;
    const cpu_meter cpu{c};
    const std::int64_t stop = cpu.t0 + seconds_ns(seconds);
    auto running = std::make_shared<coroutine_group>(ex);
    for (std::size_t i = 0; i < listers; ++i) running->spawn(lister(side, i, dir, n, stop));
    co_await running->join(std::chrono::seconds(static_cast<int>(seconds) + 120), "L: listings");
    side.span_s += static_cast<double>(now_ns() - cpu.t0) / 1e9;
    side.cpu_s += cpu.client_s();
    side.server_cpu_s += cpu.server_s();
}

}  // namespace


asio::awaitable<std::pair<scenario_result, scenario_result>> scenario_l(bench_ctx& c, const std::string& name)
{
    const auto n = static_cast<std::size_t>(std::atoi(name.c_str() + 1));
    auto ex = co_await asio::this_coro::executor;
    const std::string dir = dir_for(c, name, false);

    // The directory: N ephemeral sequential children named as the lock's nodes, made by one session
    // that stays connected until both sides are measured (untimed).
    session_list owner = co_await connect_sessions(c, 1);
    co_await ensure_path(*owner[0], dir);
    auto making = std::make_shared<coroutine_group>(ex);
    for (std::size_t made = 0; made < n; made += fill_window) {
        for (std::size_t k = made; k < std::min(n, made + fill_window); ++k)
            making->spawn(fill_one(owner[0], raw_node_prefix(dir), c.node_data));
        co_await making->join(120s, name + " set-up: create");
    }

    std::array<l_side, 2> sides;  // zklock's session, the raw floor
    sides[0].ss = co_await connect_sessions(c, listers);
    sides[1].raws = co_await connect_raw_sessions(c, listers);
    // One listing each first, untimed: the server's listing path is compiled before either side is
    // measured.
    for (auto& side : sides) {
        co_await l_window(c, side, dir, n, 0.5);
        side.span_s = side.cpu_s = side.server_cpu_s = 0;  // its failures stay: a side that failed is not measured
        side.listings = side.names = 0;
        side.listing_us.clear();
    }

    auto sampler = start_sampler(ex, [&] {
        return std::to_string(sides[0].listings) + " + " + std::to_string(sides[1].listings) + " (raw) listings";
    });
    const double each = 2 * c.opt.duration / c.opt.windows;
    for (int w = 0; w < c.opt.windows; ++w)
        for (int j = 0; j < 2; ++j) {
            if (sides[0].fails.n == 0 && sides[1].fails.n == 0) co_await l_window(c, sides[turn_side(w, j)], dir, n, each);
        }
    stop_sampler(*sampler);
    sampler->progress = nullptr;

    std::pair<scenario_result, scenario_result> out;
    for (std::size_t k = 0; k < sides.size(); ++k) {
        l_side& side = sides[k];
        scenario_result& r = k == 0 ? out.first : out.second;
        r.scenario = name;
        r.floor = r.raw = k == 1;
        r.sessions = r.contenders = listers;
        r.failures = side.fails.n;
        r.first_error = side.fails.first;
        if (side.fails.n) {
            ++c.errors;
            std::fprintf(stderr, "zklock_bench: ERROR %s%s: %lld failure(s), first: %s\n", r.raw ? "raw floor " : "",
                         name.c_str(), static_cast<long long>(side.fails.n), side.fails.first.c_str());
        }
        const double listings = static_cast<double>(side.listings);
        const double span = side.span_s > 0 ? side.span_s : 1;
        std::sort(side.listing_us.begin(), side.listing_us.end());
        r.window_cpu_s = side.cpu_s;
        r.window_acquisitions = static_cast<std::size_t>(side.listings);
        r.figs.add("listings_per_s", listings / span);
        r.figs.add("names_per_s", static_cast<double>(side.names) / span);
        r.figs.add("listing_p50_us", percentile(side.listing_us, 0.50));
        r.figs.add("listing_p99_us", percentile(side.listing_us, 0.99));
        r.figs.add("client_cpu_us_per_listing", listings > 0 ? side.cpu_s * 1e6 / listings : std::nan(""));
        r.figs.add("client_cpu_ns_per_name",
                   side.names > 0 ? side.cpu_s * 1e9 / static_cast<double>(side.names) : std::nan(""));
        r.figs.add("server_cpu_us_per_listing",
                   listings > 0 && !c.server_pids.empty() ? side.server_cpu_s * 1e6 / listings : std::nan(""));
        r.figs.add("threads", sampler->max_threads);
        r.figs.add("peak_rss_mb", peak_rss_mb());
    }
    for (auto& s : sides[0].ss) co_await s->async_close(asio::as_tuple(asio::deferred));
    for (auto& s : sides[1].raws) s->close();
    co_await owner[0]->async_close(asio::as_tuple(asio::deferred));  // its children go with it
    owner = co_await connect_sessions(c, 1);
    co_await remove_dir(*owner[0], dir);
    co_await owner[0]->async_close(asio::as_tuple(asio::deferred));
    co_return out;
}

}  // namespace zklock_bench
