// The library on the simulated ensemble: fresh seeds every run (printed), and the corpus of seeds
// that once failed, replayed every run. A failing seed is run again with its trace, which is
// printed with the violation; ZKLOCK_SIM_SEED=<seed> replays one seed with its whole trace.
#include "sim_driver.hpp"

#include <doctest/doctest.h>

using namespace zklock::sim;

TEST_CASE("sim: the corpus of past failures replays clean")
{
    const auto seeds = corpus_seeds();
    REQUIRE_FALSE(seeds.empty());
    const auto r = run_seeds(seeds, 0);
    INFO(r.first_report);
    CHECK(r.failures == 0);
    CHECK(r.schedules == seeds.size());
}

TEST_CASE("sim: one seed replayed gives the same run")
{
    run_config cfg;
    cfg.seed = 0x5eed;
    cfg.trace = true;
    const auto a = run_schedule(cfg);
    const auto b = run_schedule(cfg);
    CHECK(a.ok);
    CHECK(a.steps > 100);
    CHECK(a.grants > 0);
    CHECK(a.trace == b.trace);
}

// Two shards, so that ctest -j2 runs them side by side: each runs its half of the schedules.
TEST_CASE("sim: fresh schedules (shard 1 of 2)") { run_fresh_shard(0, 2); }
TEST_CASE("sim: fresh schedules (shard 2 of 2)") { run_fresh_shard(1, 2); }

TEST_CASE("sim: ZKLOCK_SIM_SEED replays one seed with its trace" * doctest::skip(!replay_requested()))
{
    replay_one();
}
