#include <zklock/detail/path.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <random>

namespace zklock::detail {

error_code validate_lock_path(std::string_view path) noexcept
{
    const error_code bad = errc::invalid_path;
    if (path.size() < 2 || path.size() > max_lock_path || path.front() != '/' || path.back() == '/')
        return bad;
    std::size_t start = 1;
    while (start <= path.size()) {
        std::size_t end = path.find('/', start);
        if (end == std::string_view::npos) end = path.size();
        std::string_view comp = path.substr(start, end - start);
        if (comp.empty() || comp == "." || comp == "..") return bad;
        for (unsigned char c : comp)
            if (c < 0x20 || c == 0x7f) return bad;  // NUL and other control characters
        if (start == 1 && comp == "zookeeper") return bad;  // reserved by the server
        start = end + 1;
    }
    return {};
}

error_code validate_servers(std::string_view servers) noexcept
{
    const error_code bad = errc::invalid_servers;
    if (auto slash = servers.find('/'); slash != std::string_view::npos) {
        std::string_view chroot = servers.substr(slash);
        servers = servers.substr(0, slash);
        if (chroot != "/" && validate_lock_path(chroot)) return bad;
    }
    if (servers.empty()) return bad;
    std::size_t start = 0;
    while (start <= servers.size()) {
        std::size_t end = servers.find(',', start);
        if (end == std::string_view::npos) end = servers.size();
        std::string_view hp = servers.substr(start, end - start);
        std::size_t colon = hp.rfind(':');
        if (colon == std::string_view::npos || colon == 0 || colon + 1 == hp.size()) return bad;
        std::string_view host = hp.substr(0, colon);
        std::string_view port = hp.substr(colon + 1);
        if (host.front() == '[' ? host.back() != ']' || host.size() < 3 : host.find(':') != std::string_view::npos)
            return bad;
        for (unsigned char c : host)
            if (c <= 0x20 || c == 0x7f) return bad;
        unsigned value = 0;
        auto [p, e] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (e != std::errc{} || p != port.data() + port.size() || value == 0 || value > 65535) return bad;
        start = end + 1;
    }
    return {};
}

std::string node_prefix(node_kind kind, std::uint64_t id)
{
    static constexpr char hex[] = "0123456789abcdef";
    std::string s(19, '-');
    s[0] = static_cast<char>(kind);
    for (int i = 0; i < 16; ++i) s[2 + i] = hex[(id >> (60 - 4 * i)) & 0xf];
    return s;
}

std::optional<queue_view> parse_queue_view(std::string_view child) noexcept
{
    // "<k>-<16 hex>-<sequence>"; ZooKeeper formats the sequence as %010d (a negative value after
    // the 32-bit counter wraps has a leading '-').
    if (child.size() < 20 || child.size() > 32 || child[1] != '-' || child[18] != '-') return std::nullopt;
    node_kind kind;
    switch (child[0]) {
    case 'x': kind = node_kind::exclusive; break;
    case 'r': kind = node_kind::shared; break;
    case 's': kind = node_kind::permit; break;
    default: return std::nullopt;
    }
    std::uint64_t id = 0;
    for (int i = 2; i < 18; ++i) {
        char c = child[i];
        unsigned d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else return std::nullopt;
        id = (id << 4) | d;
    }
    std::string_view seq = child.substr(19);
    std::int64_t value = 0;
    auto [p, e] = std::from_chars(seq.data(), seq.data() + seq.size(), value);
    if (e != std::errc{} || p != seq.data() + seq.size() || seq.size() < 10) return std::nullopt;
    return queue_view{child, kind, id, value};
}

std::optional<queue_node> parse_queue_node(std::string_view child) noexcept
{
    auto v = parse_queue_view(child);
    if (!v) return std::nullopt;
    return queue_node{std::string(v->name), v->kind, v->id, v->seq};
}

std::vector<queue_node> make_queue(const std::vector<std::string>& children)
{
    std::vector<queue_node> q;
    q.reserve(children.size());
    for (const auto& c : children)
        if (auto n = parse_queue_node(c)) q.push_back(std::move(*n));
    std::sort(q.begin(), q.end(), [](const queue_node& a, const queue_node& b) { return a.seq < b.seq; });
    return q;
}

std::string join_path(std::string_view dir, std::string_view child)
{
    std::string s;
    s.reserve(dir.size() + 1 + child.size());
    s.append(dir).append("/").append(child);
    return s;
}

std::string_view base_name(std::string_view path) noexcept
{
    auto slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::uint64_t new_attempt_id()
{
    // One random 64-bit seed per process, then a SplitMix64 stream over an atomic counter: ids are
    // unique within the process and collide across processes with probability ~n^2 / 2^64.
    static const std::uint64_t seed = [] {
        std::random_device rd;
        std::uint64_t s = (std::uint64_t{rd()} << 32) ^ rd();
        return s ^ static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    }();
    static std::atomic<std::uint64_t> counter{0};
    for (;;) {
        std::uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (counter.fetch_add(1, std::memory_order_relaxed) + 1);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        if (z != 0) return z;
    }
}

}  // namespace zklock::detail
