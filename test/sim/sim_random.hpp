// Seeded node ids for a simulated run (sim_random.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace zklock::sim {

/// While one lives on a thread, getrandom on that thread returns bytes from `seed`.
class seeded_ids {
public:
    explicit seeded_ids(std::uint64_t seed) noexcept;
    ~seeded_ids();
    seeded_ids(const seeded_ids&) = delete;
    seeded_ids& operator=(const seeded_ids&) = delete;
};

bool seeded_ids_fill(void* buf, std::size_t n) noexcept;

}  // namespace zklock::sim
