#include <zklock/detail/listing.hpp>

#include <algorithm>

namespace zklock::detail {

listing::listing(const std::vector<std::string>& children)
{
    std::size_t bytes = 0;
    for (const auto& c : children) bytes += c.size();
    reserve(children.size(), bytes);
    for (const auto& c : children) add(c);
}

void listing::reserve(std::size_t children, std::size_t bytes)
{
    nodes_.reserve(children);
    names_.reserve(bytes);
}

const listing::index& listing::sorted() const
{
    if (index_) return *index_;
    auto ix = std::make_unique<index>();
    const auto n = static_cast<std::uint32_t>(nodes_.size());
    ix->by_seq.resize(n);
    for (std::uint32_t i = 0; i < n; ++i) ix->by_seq[i] = i;
    std::sort(ix->by_seq.begin(), ix->by_seq.end(), [&](std::uint32_t a, std::uint32_t b) { return nodes_[a].seq < nodes_[b].seq; });
    ix->prev_exclusive.resize(n);
    ix->permits_before.resize(n);
    std::int32_t last_exclusive = -1;
    std::uint32_t permits = 0;
    for (std::uint32_t p = 0; p < n; ++p) {
        ix->prev_exclusive[p] = last_exclusive;
        ix->permits_before[p] = permits;
        const node& x = nodes_[ix->by_seq[p]];
        if (x.kind == node_kind::exclusive) last_exclusive = static_cast<std::int32_t>(p);
        if (x.kind == node_kind::permit) {
            ix->permits.push_back(p);
            ++permits;
        }
    }
    ix->by_id.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) ix->by_id.emplace_back(nodes_[i].id, i);
    std::sort(ix->by_id.begin(), ix->by_id.end());
    index_ = std::move(ix);
    return *index_;
}

void listing::add(std::string_view child)
{
    ++children_;
    const auto v = parse_queue_view(child);
    if (!v) return;
    const auto offset = static_cast<std::uint32_t>(names_.size());
    names_.append(child);
    nodes_.push_back({v->seq, v->id, offset, static_cast<std::uint32_t>(child.size()), v->kind});
}

}  // namespace zklock::detail
