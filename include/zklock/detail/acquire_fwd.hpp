// The one acquire operation behind every recipe, compiled in src/acquire_op.cpp.
#pragma once

#include <zklock/config.hpp>
#include <zklock/detail/acquire_fsm.hpp>
#include <zklock/detail/session_fwd.hpp>
#include <zklock/lease.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace zklock::detail {

struct acquire_request {
    std::string dir;                   ///< the lock path (validated by the operation)
    queue_policy policy;
    bool try_only = false;             ///< fail with errc::would_block unless granted at once
    std::optional<std::chrono::steady_clock::duration> timeout;  ///< none: wait until granted
    std::string owner_info;            ///< data of our queue node
};

void initiate_acquire(session_ptr s, acquire_request req, handler<error_code, lease> h);

/// The initiating function behind every recipe's async_acquire*: a timeout <= 0 means "try".
template <class Token>
auto async_acquire(const session_ptr& s, const std::string& path, queue_policy policy, const lock_options& options,
                   bool try_only, std::optional<std::chrono::steady_clock::duration> timeout, Token&& token)
{
    if (timeout && *timeout <= std::chrono::steady_clock::duration::zero()) {
        try_only = true;
        timeout.reset();
    }
    acquire_request req{path, policy, try_only, timeout, options.owner_info};
    return boost::asio::async_initiate<Token, void(error_code, lease)>(
        [](auto h, session_ptr sp, acquire_request r) { initiate_acquire(std::move(sp), std::move(r), std::move(h)); },
        token, s, std::move(req));
}

}  // namespace zklock::detail
