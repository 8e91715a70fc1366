// A lock path's listing in compact form: every child name parsed once, where the C client hands
// the names over, into fixed-size entries (sequence number, kind, attempt id, where the name is),
// with all names in one buffer: no allocation per name. One listing may serve every acquire of a
// session whose create the server ordered before it (see list_queue, src/ops/requests.hpp).
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
    /// From names back to back in `buffer`, the i-th ending at `ends[i]` (as the session lists
    /// them): the buffer becomes the listing's own, no name is copied.
    listing(std::string buffer, const std::vector<std::uint32_t>& ends);

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
        std::vector<std::uint32_t> by_seq;  ///< node indexes in sequence order
        std::vector<std::pair<std::uint64_t, std::uint32_t>> by_id;  ///< (attempt id, node index), sorted
    };
    /// For one set of kinds: where its nodes are in sequence order, and how many are before each
    /// sorted position (a grant rule's count, answered without a pass).
    struct kind_index {
        std::vector<std::uint32_t> positions;  ///< sorted positions of the nodes of those kinds
        std::vector<std::uint32_t> before;     ///< per sorted position: those nodes before it
    };
    const index& sorted() const;
    /// Built on first use per set (a listing serves at most a few: a rule's counted kinds and
    /// its compatible ones).
    const kind_index& sorted(kind_set kinds) const;
    /// How many times this listing was scanned (the first scan is one pass; later ones use sorted()).
    std::size_t scans() const noexcept { return scans_; }
    void count_scan() const noexcept { ++scans_; }

private:
    std::string names_;
    std::vector<node> nodes_;
    std::size_t children_ = 0;
    mutable std::size_t scans_ = 0;
    mutable std::unique_ptr<index> index_;
    mutable std::unique_ptr<kind_index> kind_index_[8];
};

}  // namespace zklock::detail
