// Cohort mode (lock_options::cohort): the acquires of one session that want the same lock in the
// same role queue locally behind one ZooKeeper node. See src/ops/cohort.cpp.
#pragma once

#include <zklock/detail/acquire_fwd.hpp>

namespace zklock::detail {

/// An acquire with acquire_request::cohort set (not a semaphore's): joins the session's local
/// queue for (role, lock path), creating it if there is none.
void initiate_cohort_acquire(session_ptr s, acquire_request req, handler<error_code, lease> h);

}  // namespace zklock::detail
