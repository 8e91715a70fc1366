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

listing::listing(std::string buffer, const std::vector<std::uint32_t>& ends) : names_(std::move(buffer))
{
    children_ = ends.size();
    nodes_.reserve(ends.size());
    std::uint32_t begin = 0;
    for (const std::uint32_t end : ends) {
        const std::string_view child = std::string_view(names_).substr(begin, end - begin);
        if (const auto v = parse_queue_view(child)) nodes_.push_back({v->seq, v->id, begin, end - begin, v->kind});
        begin = end;
    }
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
    ix->by_id.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) ix->by_id.emplace_back(nodes_[i].id, i);
    std::sort(ix->by_id.begin(), ix->by_id.end());
    index_ = std::move(ix);
    return *index_;
}

const listing::kind_index& listing::sorted(kind_set kinds) const
{
    auto& slot = kind_index_[kinds & 7];
    if (slot) return *slot;
    const auto& ix = sorted();
    auto k = std::make_unique<kind_index>();
    const auto n = static_cast<std::uint32_t>(ix.by_seq.size());
    k->before.resize(n);
    for (std::uint32_t p = 0; p < n; ++p) {
        k->before[p] = static_cast<std::uint32_t>(k->positions.size());
        if (kinds & kind_bit(nodes_[ix.by_seq[p]].kind)) k->positions.push_back(p);
    }
    slot = std::move(k);
    return *slot;
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
