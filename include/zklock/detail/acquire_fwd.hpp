// The one acquire operation behind every recipe, compiled in src/acquire_op.cpp.
#pragma once

#include <zklock/config.hpp>
#include <zklock/detail/acquire_fsm.hpp>
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
    std::optional<std::chrono::steady_clock::duration> timeout;  ///< none: wait until granted
    std::string owner_info;            ///< data of our queue node
    /// Permit policy: shared by the acquires of one semaphore object; set once its stored count
    /// was verified, so later acquires skip the read (policy.count_known).
    std::shared_ptr<bool> count_known;
    std::function<void(std::string_view, std::size_t)> on_queued;  ///< lock_options::on_queued
    bool cohort = false;                    ///< lock_options::cohort (ignored by a semaphore)
    std::uint32_t max_local_handoffs = 32;  ///< lock_options::max_local_handoffs
    bool internal = false;                  ///< a cohort's own acquire: not counted in the metrics
};

void initiate_acquire(session_ptr s, acquire_request req, handler<error_code, lease> h);

}  // namespace zklock::detail
