// Seeded faults for the simulation's mutant test (test/sim/test_mutants.cpp):
// ZKLOCK_MUTANT(mutant::name, correct, mutated) is `correct`, except in the library build made
// with ZKLOCK_MUTANTS, where it is `mutated` while that mutant is the one switched on. Each marks
// a one-line mistake a developer could plausibly make, which a checker of the simulation must
// catch. The library that ships is compiled without ZKLOCK_MUTANTS: there the macro is its
// second argument and nothing else.
//
// ZKLOCK_MARK_QUEUE(shipped) is the queue length from which handoff marks are used
// (acquire_fsm::min_queue_for_mark): in the ZKLOCK_MUTANTS build a test may lower it
// (mark_queue_override), so that the simulation's short queues take the marks' paths too.
#pragma once

#include <cstddef>

namespace zklock::detail {

/// The mistakes, by what they get wrong (docs/guarantees.md, "The checkers catch real bugs").
enum class mutant {
    none,
    grant_on_any_deletion,             ///< a waiter granted on any deletion of the node it watches
    no_presumed_expiry,                ///< the doubt, but never the presumption of expiry
    status_as_recorded,                ///< a lease's status read as recorded, not on the clock
    cancelled_node_left,               ///< a cancelled waiter's node left in the queue
    one_permit_too_many,               ///< a semaphore admits one permit too many
    reader_passes_writer,              ///< a reader ignores the writers ahead of it
    observer_ends_on_connection_loss,  ///< an election observer gives up at a lost connection
    valid_until_at_grant,              ///< a lease's valid_until as its grant read it, never moved on
    revocation_unheard,                ///< a revocation request read in our node is not told
    loss_untold,                       ///< a presumed expiry not told to async_wait_lost
    permit_watches_one,                ///< a semaphore waiter watches only the node `permits` places ahead
    permit_count_unchecked,            ///< a semaphore's stored permit count checked for its format, not its value
    granted_when_lost,                 ///< an acquire whose lease is lost at its grant completes with it all the same
    doubt_at_presumption,              ///< the doubt begins at T/2 with the presumption, not at T/3
    released_release_inline,           ///< a released lease's release answered inline, from the lease's own state
};

}  // namespace zklock::detail

#ifdef ZKLOCK_MUTANTS
namespace zklock::detail {
/// The mutant switched on (none: the correct library).
extern mutant active_mutant;
/// Replaces acquire_fsm::min_queue_for_mark while not 0.
extern std::size_t mark_queue_override;
}  // namespace zklock::detail
#define ZKLOCK_MUTANT(m, correct, mutated) (::zklock::detail::active_mutant == ::zklock::detail::m ? (mutated) : (correct))
#define ZKLOCK_MARK_QUEUE(shipped) (::zklock::detail::mark_queue_override ? ::zklock::detail::mark_queue_override : (shipped))
#else
#define ZKLOCK_MUTANT(m, correct, mutated) (correct)
#define ZKLOCK_MARK_QUEUE(shipped) (shipped)
#endif
