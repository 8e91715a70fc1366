// The checkers catch real bugs: each mutant (src/core/mutant.hpp) is a one-line mistake in the
// library, switched on in a build of it made for this test; the simulation must find every one,
// from seed 1 on, within a bounded number of schedules. The seeds each took are printed.
#include "sim_driver.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <iostream>

namespace zklock::detail {
int active_mutant = 0;
std::size_t mark_queue_override = 0;
}  // namespace zklock::detail

using namespace zklock::sim;

namespace {

void hunt(int n, const char* what)
{
    constexpr std::uint64_t max_schedules = 50'000;
    zklock::detail::active_mutant = n;
    const auto r = run_range(1, max_schedules, 120, true);
    zklock::detail::active_mutant = 0;
    std::cout << "mutant " << n << " (" << what << "): "
              << (r.failures ? "caught by seed " + std::to_string(r.first_failing_seed) + ", after " +
                                   std::to_string(r.schedules) + " schedules, in " + std::to_string(r.seconds) + " s"
                             : "NOT caught in " + std::to_string(r.schedules) + " schedules")
              << std::endl;
    // The first line of the report; all of it (the trace's last events) with ZKLOCK_SIM_MUTANT_TRACE set.
    if (r.failures)
        std::cout << (std::getenv("ZKLOCK_SIM_MUTANT_TRACE") ? r.first_report : r.first_report.substr(0, r.first_report.find('\n')))
                  << std::endl;
    CHECK_MESSAGE(r.failures == 1, "mutant " << n << " (" << what << ") survived " << r.schedules << " schedules");
}

}  // namespace

TEST_CASE("sim mutant 1: a waiter granted on any deletion of the node it watches") { hunt(1, "grant on any deletion event"); }
TEST_CASE("sim mutant 2: no presumed expiry") { hunt(2, "skip the presumption"); }
TEST_CASE("sim mutant 3: a lease's status read as recorded, not on the clock") { hunt(3, "read status without the clock"); }
TEST_CASE("sim mutant 4: a cancelled waiter's node left in the queue") { hunt(4, "forget a cancelled node"); }
TEST_CASE("sim mutant 5: a semaphore admits one permit too many") { hunt(5, "count one permit short"); }
TEST_CASE("sim mutant 6: a reader ignores the writers ahead of it") { hunt(6, "a reader passes a writer"); }
TEST_CASE("sim mutant 7: an election observer gives up at a lost connection") { hunt(7, "observer ends on a connection loss"); }

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
