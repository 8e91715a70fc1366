// Running many schedules: seeds, the corpus, the figures and the reports (test_sim.cpp,
// test_mutants.cpp).
#pragma once

#include "world.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace zklock::sim {

/// What running many seeds found.
struct seeds_result {
    std::uint64_t schedules = 0;
    std::uint64_t failures = 0;
    std::uint64_t first_failing_seed = 0;
    std::uint64_t steps = 0;
    std::uint64_t grants = 0;
    std::uint64_t marked_releases = 0;
    std::uint64_t marks_refused = 0;
    std::uint64_t permit_mismatches = 0;
    std::uint64_t queued_stalls = 0;
    std::uint64_t held_replies = 0;
    std::uint64_t misuse_probes = 0;
    std::string first_report;  ///< the first failure, with its trace
    double seconds = 0;
};

/// The seeds of test/sim/corpus.txt.
std::vector<std::uint64_t> corpus_seeds();
/// Runs each seed; stops at the first failure if `stop_at_failure`. A failure is run again
/// with its trace for the report. `budget_seconds` > 0 stops early when that much wall time passed.
seeds_result run_seeds(const std::vector<std::uint64_t>& seeds, double budget_seconds, bool stop_at_failure = false);
/// Runs seeds base, base+1, ... until `count` ran, a failure, or `budget_seconds`; each run as
/// `proto` says but for its seed.
seeds_result run_range(std::uint64_t base, std::uint64_t count, double budget_seconds, bool stop_at_failure,
                       const run_config& proto = {});
/// ZKLOCK_SIM_BASE_SEED, or a fresh one.
std::uint64_t fresh_base_seed();
/// ZKLOCK_SIM_SCHEDULES, or 100000.
std::uint64_t fresh_schedules();
/// One shard of the fresh schedules: ZKLOCK_SIM_SCHEDULES (default 100000) split over `shards`,
/// from a fresh base seed (ZKLOCK_SIM_BASE_SEED to choose it), printed.
void run_fresh_shard(int shard, int shards);
bool replay_requested();
/// ZKLOCK_SIM_SEED: runs it (as `proto` says) with its trace, and prints it.
void replay_one(const run_config& proto = {});

}  // namespace zklock::sim
