// zklock/semaphore.hpp — a fair counting semaphore on a ZooKeeper path.
//
// N permits. Each acquire queues an ephemeral sequential "s-" node; it holds a permit while fewer
// than N permit nodes are ahead of it. Permits are granted in queue order, never to more than N
// holders at once, whichever holder releases first. No herd: the first waiter (N nodes ahead of
// it) watches the N holders and is the one a release wakes; each other waiter watches the waiter
// just ahead of it, which writes into its own node once granted, so a grant wakes the next waiter,
// which then watches the holders. With waiters behind the first, a release costs one wake-up and
// one write more than a mutex handoff (Curator's InterProcessSemaphoreV2 instead serialises every
// acquirer through an internal lock and a children watch).
//
// The permit count is stored in the semaphore node's data ("zklock-semaphore permits=N"), written
// by the first user; an acquire with a different count fails with errc::permit_mismatch.
#pragma once

#include <zklock/basic_lock.hpp>

#include <cstdint>
#include <string>

namespace zklock {

/// A counting semaphore bound to a session, a path and a permit count. Each acquire takes one
/// permit and completes with a lease (void(error_code, lease)); the lease's fencing token orders
/// permit holders as it orders lock holders.
///
/// async_acquire(timeout, token), async_acquire(token), async_try_acquire(token): see basic_lock,
/// whose documentation (executor, the per-state cancellation table, timeout, errors, lifetimes,
/// thread safety) is this class's, plus errc::permit_mismatch and errc::invalid_argument (zero
/// permits). A semaphore never shares its path with a mutex or shared_mutex: the younger node's
/// acquire fails with errc::recipe_mismatch.
///
/// The first acquire through a semaphore object reads the stored count (one more round trip; if
/// the path has no count yet, it stores its own). Later acquires through the same object (and its
/// copies) skip the read; an acquire that finds the path gone (the server removes an empty lock
/// path) stores the count again before queueing. A cancellation (any type) or the deadline
/// during the count steps, also while they wait for a lost connection to come back, completes at
/// once: nothing has been created yet.
class semaphore : public basic_lock {
public:
    /// `options` applies to every acquire made through this object.
    semaphore(session& s, std::string path, std::uint32_t permits)
        : semaphore(s, std::move(path), permits, lock_options{})
    {
    }
    /// As above, with `options` for every acquire made through this object.
    semaphore(session& s, std::string path, std::uint32_t permits, lock_options options)
        : basic_lock(s, std::move(path), std::move(options), detail::queue_policy{detail::semaphore_recipe, permits})
    {
    }

    /// The permit count this object acquires with.
    std::uint32_t permits() const noexcept { return policy().permits; }
};

}  // namespace zklock
