// What the acquires of one session remember of the lock paths they listed (a session extension,
// see zk_port::extension).
#pragma once

#include <array>
#include <cstddef>
#include <string>

namespace zklock::detail {

/// How long `dir`'s queue was in the latest listing an acquire of this session saw (0: none
/// remembered): a waiter whose predecessor just left decides from it whether to read the handoff
/// mark or list again. A few lock paths are remembered, the oldest forgotten first.
class queue_hints {
public:
    void note(const std::string& dir, std::size_t n)
    {
        for (auto& q : sizes_)
            if (q.dir == dir) {
                q.n = n;
                return;
            }
        // A queue of one (our own node: an uncontended lock) takes no slot. Nothing reads that
        // hint: a lease that listed no successor releases without a mark whatever the hint, and a
        // waiter's threshold is far above one. Many distinct locks would otherwise evict the
        // queues that matter, and copy their paths on every acquire.
        if (n < 2) return;
        sizes_[next_] = {dir, n};
        next_ = (next_ + 1) % sizes_.size();
    }

    std::size_t hint(const std::string& dir) const noexcept
    {
        for (const auto& q : sizes_)
            if (q.dir == dir) return q.n;
        return 0;
    }

private:
    struct queue_size {
        std::string dir;
        std::size_t n = 0;
    };
    std::array<queue_size, 8> sizes_;
    std::size_t next_ = 0;
};

}  // namespace zklock::detail
