// The checkers catch real bugs: each mutant (src/core/mutant.hpp, by name) is a one-line mistake
// in the library, switched on in a build of it made for this test; a checker of the simulation
// must find every one, from seed 1 on, within a bounded number of schedules, and the seed that
// found it must pass with the mutant off. The seeds each took are printed.
#include "sim_driver.hpp"

#include "core/mutant.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>

namespace zklock::detail {
mutant active_mutant = mutant::none;
std::size_t mark_queue_override = 0;
}  // namespace zklock::detail

using namespace zklock::sim;
using zklock::detail::mutant;

namespace {

// Runs seeds 1, 2, ... with the mutant on until a checker catches it (at most 50 000 schedules);
// then runs the seed that caught it again with the mutant off: it must pass, so that what failed
// was the mutant, not the schedule.
void hunt(mutant m, const char* name)
{
    constexpr std::uint64_t max_schedules = 50'000;
    zklock::detail::active_mutant = m;
    const auto r = run_range(1, max_schedules, 120, true);
    zklock::detail::active_mutant = mutant::none;
    std::cout << "mutant " << name << ": "
              << (r.failures ? "caught by seed " + std::to_string(r.first_failing_seed) + ", after " +
                                   std::to_string(r.schedules) + " schedules, in " + std::to_string(r.seconds) + " s"
                             : "NOT caught in " + std::to_string(r.schedules) + " schedules")
              << std::endl;
    // The first line of the report; all of it (the trace's last events) with ZKLOCK_SIM_MUTANT_TRACE set.
    if (r.failures)
        std::cout << (std::getenv("ZKLOCK_SIM_MUTANT_TRACE") ? r.first_report : r.first_report.substr(0, r.first_report.find('\n')))
                  << std::endl;
    CHECK_MESSAGE(r.failures == 1, "mutant " << name << " survived " << r.schedules << " schedules");
    // A step budget is no checker: the mutant must break an invariant.
    CHECK_MESSAGE(r.first_report.find("no end after") == std::string::npos, "mutant " << name << " was caught by the step budget only");
    if (!r.failures) return;
    run_config cfg;
    cfg.seed = r.first_failing_seed;
    const auto clean = run_schedule(cfg);
    std::cout << "  seed " << cfg.seed << " with no mutant: " << (clean.ok ? "passes" : clean.violation) << std::endl;
    CHECK_MESSAGE(clean.ok, "seed " << cfg.seed << " fails with no mutant too: " << clean.violation);
}

}  // namespace

#define ZKLOCK_SIM_MUTANT_CASE(name, what) \
    TEST_CASE("sim mutant " #name ": " what) { hunt(mutant::name, #name); }

ZKLOCK_SIM_MUTANT_CASE(grant_on_any_deletion, "a waiter granted on any deletion of the node it watches")
ZKLOCK_SIM_MUTANT_CASE(no_presumed_expiry, "the doubt, but never the presumption of expiry")
ZKLOCK_SIM_MUTANT_CASE(status_as_recorded, "a lease's status read as recorded, not on the clock")
ZKLOCK_SIM_MUTANT_CASE(cancelled_node_left, "a cancelled waiter's node left in the queue")
ZKLOCK_SIM_MUTANT_CASE(one_permit_too_many, "a semaphore admits one permit too many")
ZKLOCK_SIM_MUTANT_CASE(reader_passes_writer, "a reader ignores the writers ahead of it")
ZKLOCK_SIM_MUTANT_CASE(observer_ends_on_connection_loss, "an election observer gives up at a lost connection")
ZKLOCK_SIM_MUTANT_CASE(valid_until_at_grant, "a lease's valid_until as its grant read it, never moved on")
ZKLOCK_SIM_MUTANT_CASE(revocation_unheard, "a revocation request read in our node is not told")
ZKLOCK_SIM_MUTANT_CASE(loss_untold, "a presumed expiry not told to async_wait_lost")
ZKLOCK_SIM_MUTANT_CASE(permit_watches_one, "a semaphore waiter watches only the node `permits` places ahead")
ZKLOCK_SIM_MUTANT_CASE(permit_count_unchecked, "a semaphore's stored permit count checked for its format, not its value")
ZKLOCK_SIM_MUTANT_CASE(granted_when_lost, "an acquire whose lease is lost at its grant completes with it all the same")
ZKLOCK_SIM_MUTANT_CASE(doubt_at_presumption, "the doubt begins at T/2 with the presumption, not at T/3")
ZKLOCK_SIM_MUTANT_CASE(released_release_inline, "a released lease's release answered inline, from the lease's own state")

// No mutant: the correct operations, with handoff marks from a queue of 2 on (the library reads
// them from 256, which the simulation's queues never reach): the releases write marks, waiters
// read them and are granted by them, and where the lock paths' ACL refuses the write, the
// releases fall back to plain deletes. Every checker as in the regular runs.
TEST_CASE("sim: handoff marks in short queues")
{
    // A tenth of the regular runs' schedules, from fresh seeds (ZKLOCK_SIM_SEED replays one below).
    const auto base = fresh_base_seed();
    zklock::detail::mark_queue_override = 2;
    const auto r = run_range(base, std::max<std::uint64_t>(fresh_schedules() / 10, 1000), 300, false);
    zklock::detail::mark_queue_override = 0;
    std::cout << "sim with handoff marks: base seed " << base << ", " << r.schedules << " schedules in " << r.seconds << " s, "
              << r.marked_releases << " marked releases, " << r.marks_refused << " refused by the lock path's ACL; "
              << r.failures << " failed" << std::endl;
    INFO(r.first_report);
    CHECK(r.failures == 0);
    CHECK(r.marked_releases > 0);
    CHECK(r.marks_refused > 0);
}

TEST_CASE("sim: ZKLOCK_SIM_SEED replays one seed with handoff marks in short queues" * doctest::skip(!replay_requested()))
{
    zklock::detail::mark_queue_override = 2;
    replay_one();
    zklock::detail::mark_queue_override = 0;
}
