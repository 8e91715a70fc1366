#include "port/zk_port.hpp"

#include <atomic>

namespace zklock::detail {

error_code zk_port::check_request_size(std::size_t path_bytes, std::size_t data_bytes, std::size_t ops) const noexcept
{
    // Request header (xid, type: 8), length prefixes, the ACL (world:anyone or auth: < 48), flags,
    // and per multi op its header: generous, so a request we pass is never one the server drops.
    constexpr std::size_t framing = 128, per_op = 64;
    const std::size_t limit = max_request_bytes();
    if (path_bytes > limit || data_bytes > limit || ops > limit / per_op) return errc::request_too_large;
    if (path_bytes + data_bytes + framing + ops * per_op > limit) return errc::request_too_large;
    return {};
}

std::size_t zk_port::next_extension_id() noexcept
{
    static std::atomic<std::size_t> next{0};
    return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace zklock::detail
