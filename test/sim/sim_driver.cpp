#include "sim_driver.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

namespace zklock::sim {

namespace {

std::uint64_t env_u64(const char* name, std::uint64_t fallback)
{
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    return std::strtoull(v, nullptr, 0);
}

double since(std::chrono::steady_clock::time_point t)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A failing seed again, with its trace.
std::string traced_report(std::uint64_t seed, const run_config& proto)
{
    run_config cfg = proto;
    cfg.seed = seed;
    cfg.trace = true;
    const auto r = run_schedule(cfg);
    if (r.ok) return "seed " + std::to_string(seed) + " failed, and passed when run again with its trace: not deterministic";
    return report(cfg, r);
}

template <class NextSeed>
seeds_result run_many(std::uint64_t count, double budget_seconds, bool stop_at_failure, const run_config& proto, NextSeed next)
{
    seeds_result out;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < count; ++i) {
        run_config cfg = proto;
        cfg.seed = next(i);
        const auto r = run_schedule(cfg);
        ++out.schedules;
        out.steps += r.steps;
        out.grants += r.grants;
        out.marked_releases += r.marked_releases;
        out.marks_refused += r.marks_refused;
        out.permit_mismatches += r.permit_mismatches;
        out.queued_stalls += r.queued_stalls;
        out.held_replies += r.held_replies;
        out.misuse_probes += r.misuse_probes;
        if (!r.ok) {
            // ZKLOCK_SIM_LIST_FAILURES: every failing seed's violation, as it fails.
            if (std::getenv("ZKLOCK_SIM_LIST_FAILURES")) std::cout << "seed " << cfg.seed << ": " << r.violation << std::endl;
            if (out.failures++ == 0) {
                out.first_failing_seed = cfg.seed;
                out.first_report = traced_report(cfg.seed, proto);
            }
            if (stop_at_failure) break;
        }
        if (budget_seconds > 0 && (i & 63) == 63 && since(t0) > budget_seconds) break;
    }
    out.seconds = since(t0);
    return out;
}

}  // namespace

std::vector<std::uint64_t> corpus_seeds()
{
    std::vector<std::uint64_t> seeds;
    std::ifstream in(ZKLOCK_SIM_CORPUS);
    std::string line;
    while (std::getline(in, line)) {
        const auto hash = line.find('#');
        if (hash != std::string::npos) line.erase(hash);
        std::istringstream words(line);
        std::string w;
        if (words >> w) seeds.push_back(std::strtoull(w.c_str(), nullptr, 0));
    }
    return seeds;
}

seeds_result run_seeds(const std::vector<std::uint64_t>& seeds, double budget_seconds, bool stop_at_failure)
{
    return run_many(seeds.size(), budget_seconds, stop_at_failure, run_config{}, [&](std::uint64_t i) { return seeds[i]; });
}

seeds_result run_range(std::uint64_t base, std::uint64_t count, double budget_seconds, bool stop_at_failure, const run_config& proto)
{
    return run_many(count, budget_seconds, stop_at_failure, proto, [&](std::uint64_t i) { return base + i; });
}

std::uint64_t fresh_base_seed()
{
    return env_u64("ZKLOCK_SIM_BASE_SEED", (std::uint64_t{std::random_device{}()} << 32) ^
                                               static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()));
}

std::uint64_t fresh_schedules() { return env_u64("ZKLOCK_SIM_SCHEDULES", 100'000); }

void run_fresh_shard(int shard, int shards)
{
    const std::uint64_t total = fresh_schedules();
    const std::uint64_t base = fresh_base_seed();
    const std::uint64_t per = total / static_cast<std::uint64_t>(shards);
    const std::uint64_t first = base + per * static_cast<std::uint64_t>(shard);
    std::cout << "sim: shard " << shard + 1 << "/" << shards << ": seeds " << first << " .. " << first + per - 1
              << " (ZKLOCK_SIM_BASE_SEED=" << base << ")" << std::endl;
    const auto r = run_range(first, per, 0, false);
    std::cout << "sim: " << r.schedules << " schedules in " << r.seconds << " s: " << static_cast<double>(r.schedules) / r.seconds
              << " schedules/s, " << static_cast<double>(r.steps) / static_cast<double>(r.schedules) << " steps and "
              << static_cast<double>(r.grants) / static_cast<double>(r.schedules) << " grants a schedule; "
              << r.failures << " failed" << std::endl;
    std::cout << "sim: reached " << r.permit_mismatches << " permit mismatches, " << r.queued_stalls
              << " stalls with a reply queued, " << r.held_replies << " replies held past T/3, " << r.misuse_probes
              << " moved-from or released objects probed" << std::endl;
    INFO(r.first_report);
    CHECK(r.failures == 0);
    CHECK(r.schedules == per);
    // The misuse and slow paths are reached in every shard of the default size.
    if (per >= 10'000) {
        CHECK(r.permit_mismatches > 0);
        CHECK(r.queued_stalls > 0);
        CHECK(r.held_replies > 0);
        CHECK(r.misuse_probes > 0);
    }
}

bool replay_requested() { return std::getenv("ZKLOCK_SIM_SEED") != nullptr; }

void replay_one(const run_config& proto)
{
    run_config cfg = proto;
    cfg.seed = env_u64("ZKLOCK_SIM_SEED", 0);
    cfg.trace = true;
    const auto r = run_schedule(cfg);
    for (const auto& line : r.trace) std::cout << line << "\n";
    std::cout << "seed " << cfg.seed << ": " << (r.ok ? "ok" : r.violation) << ", " << r.steps << " steps, " << r.grants
              << " grants, " << r.faults << " faults, " << r.virtual_time.count() << " ms simulated" << std::endl;
    CHECK_MESSAGE(r.ok, report(cfg, r));
}

}  // namespace zklock::sim
