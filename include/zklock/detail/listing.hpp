// A lock path's listing in compact form: every child name parsed once, where the C client hands
// the names over, into fixed-size entries (sequence number, kind, attempt id, where the name is),
// with all names in one buffer: no allocation per name. One listing may serve every acquire of a
// session whose create the server ordered before it (see session_impl::list_queue).
#pragma once

#include <zklock/detail/path.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::detail {

class listing {
public:
    struct node {
        std::int64_t seq;
        std::uint64_t id;
        std::uint32_t offset;  ///< of the name in the buffer
        std::uint32_t length;
        node_kind kind;
    };

    listing() = default;
    /// From names (tests, and callers that already hold strings).
    explicit listing(const std::vector<std::string>& children);

    /// Room for `children` names of `bytes` bytes in total.
    void reserve(std::size_t children, std::size_t bytes);
    /// One child, as listed: counted; kept if it is a queue node (see parse_queue_view).
    void add(std::string_view child);

    /// Every child listed, queue nodes or not (what a listing costs).
    std::size_t children() const noexcept { return children_; }
    /// The queue nodes, in the order listed (not sorted).
    const std::vector<node>& nodes() const noexcept { return nodes_; }
    std::string_view name(const node& n) const noexcept { return {names_.data() + n.offset, n.length}; }

private:
    std::string names_;
    std::vector<node> nodes_;
    std::size_t children_ = 0;
};

}  // namespace zklock::detail
