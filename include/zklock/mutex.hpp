// zklock/mutex.hpp — a fair exclusive lock on a ZooKeeper path.
//
// The recipe: each acquire creates an ephemeral sequential node "x-<attempt id>-lock-<seq>" under
// the lock path and holds the lock when its node is first in sequence order. A waiter watches only
// the node just before its own (a data watch, so nothing is left behind if that node is already
// gone), and looks again when it fires: no herd effect, and locks are granted strictly in queue
// order. Apache Curator's InterProcessMutex and Kazoo's Lock on the same path are contenders in
// the same queue (see docs/guide.md, "Mixed fleets").
#pragma once

#include <zklock/basic_lock.hpp>

#include <string>

namespace zklock {

/// An exclusive lock bound to a session and a path.
///
/// async_acquire(timeout, token), async_acquire(token), async_try_acquire(token): see basic_lock,
/// whose documentation (completion signature, executor, the per-state cancellation table,
/// errors, lifetimes, thread safety) is this class's.
class mutex : public basic_lock {
public:
    /// `options` applies to every acquire made through this object.
    mutex(session& s, std::string path) : mutex(s, std::move(path), lock_options{}) {}
    /// As above, with `options` for every acquire made through this object.
    mutex(session& s, std::string path, lock_options options)
        : basic_lock(s, std::move(path), std::move(options), detail::queue_policy{detail::mutex_recipe})
    {
    }
};

}  // namespace zklock
