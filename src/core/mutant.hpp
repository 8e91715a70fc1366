// Seeded faults for the simulation's mutant test (test/sim/test_mutants.cpp): ZKLOCK_MUTANT(n,
// correct, mutated) is `correct`, except in the library build made with ZKLOCK_MUTANTS, where it
// is `mutated` while mutant n is the one switched on. Each marks a one-line mistake a developer
// could plausibly make, which the simulation's checkers must catch. The library that ships is
// compiled without ZKLOCK_MUTANTS: there the macro is its first argument and nothing else.
#pragma once

#ifdef ZKLOCK_MUTANTS
namespace zklock::detail {
/// The mutant switched on (0: none).
extern int active_mutant;
}  // namespace zklock::detail
#define ZKLOCK_MUTANT(n, correct, mutated) (::zklock::detail::active_mutant == (n) ? (mutated) : (correct))
#else
#define ZKLOCK_MUTANT(n, correct, mutated) (correct)
#endif
