// The simulation's ids: the library names each queue node after an attempt id it reads from the
// kernel (getrandom). In a simulated run, this program's getrandom hands out ids from the run's
// seed instead, so that a run's node names, and so its listings and its trace, are the same each
// time its seed runs. Outside a run it is the kernel's.
#include "sim_random.hpp"
#include "splitmix.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace zklock::sim {
namespace {
thread_local bool active = false;
thread_local splitmix state{0};
}  // namespace

seeded_ids::seeded_ids(std::uint64_t seed) noexcept
{
    active = true;
    state.s = seed ^ 0x5bd1e9955bd1e995ULL;
}

seeded_ids::~seeded_ids() { active = false; }

bool seeded_ids_fill(void* buf, std::size_t n) noexcept
{
    if (!active) return false;
    auto* out = static_cast<unsigned char*>(buf);
    while (n > 0) {
        const std::uint64_t z = state.next();
        const std::size_t k = n < sizeof z ? n : sizeof z;
        std::memcpy(out, &z, k);
        out += k;
        n -= k;
    }
    return true;
}

}  // namespace zklock::sim

extern "C" ssize_t getrandom(void* buf, size_t n, unsigned int flags)
{
    if (zklock::sim::seeded_ids_fill(buf, n)) return static_cast<ssize_t>(n);
    return syscall(SYS_getrandom, buf, n, flags);
}
