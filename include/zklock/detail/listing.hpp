// A lock path's listing in compact form: every child name parsed once, where the C client hands
// the names over, into fixed-size entries (sequence number, kind, attempt id, where the name is),
// with all names in one buffer: no allocation per name. One listing may serve every acquire of a
// session whose create the server ordered before it (see session_impl::list_queue).
#pragma once

#include <zklock/detail/path.hpp>

#include <cstdint>
#include <memory>
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

    /// The queue sorted once, for a listing that serves many acquires (a coalesced one): built on
    /// first use, then each acquire finds its place by binary search instead of a pass.
    struct index {
        std::vector<std::uint32_t> by_seq;       ///< node indexes in sequence order
        std::vector<std::int32_t> prev_exclusive;  ///< per sorted position: the nearest exclusive before it, or -1
        std::vector<std::uint32_t> permits;      ///< sorted positions of permit nodes
        std::vector<std::uint32_t> permits_before;  ///< per sorted position: permit nodes before it
        std::vector<std::pair<std::uint64_t, std::uint32_t>> by_id;  ///< (attempt id, node index), sorted
    };
    const index& sorted() const;
    /// How many times this listing was scanned (the first scan is one pass; later ones use sorted()).
    std::size_t scans() const noexcept { return scans_; }
    void count_scan() const noexcept { ++scans_; }

private:
    std::string names_;
    std::vector<node> nodes_;
    std::size_t children_ = 0;
    mutable std::size_t scans_ = 0;
    mutable std::unique_ptr<index> index_;
};

}  // namespace zklock::detail
