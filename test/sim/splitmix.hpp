// SplitMix64: the simulation's one pseudo-random generator, the same sequence from a seed on every
// platform (the standard library's distributions are not).
#pragma once

#include <cstdint>

namespace zklock::sim {

struct splitmix {
    std::uint64_t s;
    std::uint64_t next() noexcept
    {
        std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    /// Uniform enough in [0, n); 0 when n is 0.
    std::uint64_t below(std::uint64_t n) noexcept { return n == 0 ? 0 : next() % n; }
};

}  // namespace zklock::sim
