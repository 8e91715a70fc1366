// The one acquire operation behind every recipe, compiled in src/ops/acquire_op.cpp.
#pragma once

#include <zklock/config.hpp>
#include <zklock/detail/queue_policy.hpp>
#include <zklock/detail/session_fwd.hpp>
#include <zklock/lease.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace zklock::detail {

struct acquire_request {
    /// The lock path (validated by the operation): the lock object's, shared by its acquires.
    std::shared_ptr<const std::string> dir;
    queue_policy policy;
    bool try_only = false;             ///< fail with errc::would_block unless granted at once
    bool cohort = false;               ///< lock_options::cohort (not for a semaphore)
    bool internal = false;             ///< a cohort's own acquire: not counted in the metrics
    std::optional<std::chrono::steady_clock::duration> timeout;  ///< none: wait until granted
    /// The lock object's options (owner_info, on_queued, max_local_handoffs), shared by its
    /// acquires, not copied into each (a request lives in every awaiting coroutine's frame);
    /// null: the defaults.
    std::shared_ptr<const lock_options> options;
    /// Permit policy: shared by the acquires of one semaphore object; set once its stored count
    /// was verified, so later acquires skip the read (policy.count_known).
    std::shared_ptr<bool> count_known;
};

void initiate_acquire(session_ptr s, acquire_request req, handler<error_code, lease> h);

}  // namespace zklock::detail
