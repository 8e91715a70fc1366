// Seeded faults for the simulation's mutant test (test/sim/test_mutants.cpp): ZKLOCK_MUTANT(n,
// correct, mutated) is `correct`, except in the library build made with ZKLOCK_MUTANTS, where it
// is `mutated` while mutant n is the one switched on. Each marks a one-line mistake a developer
// could plausibly make, which the simulation's checkers must catch. The library that ships is
// compiled without ZKLOCK_MUTANTS: there the macro is its first argument and nothing else.
//
// ZKLOCK_MARK_QUEUE(shipped) is the queue length from which handoff marks are used
// (acquire_fsm::min_queue_for_mark): in the ZKLOCK_MUTANTS build a test may lower it
// (mark_queue_override), so that the simulation's short queues take the marks' paths too.
#pragma once

#include <cstddef>

#ifdef ZKLOCK_MUTANTS
namespace zklock::detail {
/// The mutant switched on (0: none).
extern int active_mutant;
/// Replaces acquire_fsm::min_queue_for_mark while not 0.
extern std::size_t mark_queue_override;
}  // namespace zklock::detail
#define ZKLOCK_MUTANT(n, correct, mutated) (::zklock::detail::active_mutant == (n) ? (mutated) : (correct))
#define ZKLOCK_MARK_QUEUE(shipped) (::zklock::detail::mark_queue_override ? ::zklock::detail::mark_queue_override : (shipped))
#else
#define ZKLOCK_MUTANT(n, correct, mutated) (correct)
#define ZKLOCK_MARK_QUEUE(shipped) (shipped)
#endif
