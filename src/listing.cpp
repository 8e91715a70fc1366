#include <zklock/detail/listing.hpp>

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
