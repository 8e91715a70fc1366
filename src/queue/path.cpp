#include <zklock/detail/path.hpp>
#include <zklock/detail/recipe.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cerrno>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <unistd.h>

namespace zklock::detail {

std::string node_prefix(const recipe& r, std::uint64_t id, std::size_t marker)
{
    static constexpr char hex[] = "0123456789abcdef";
    std::string s(19, '-');
    s[0] = kind_letter(r.kind);
    for (std::size_t i = 0; i < 16; ++i) s[2 + i] = hex[(id >> (60 - 4 * i)) & 0xf];
    if (!r.markers.empty()) s.append(r.markers[marker < r.markers.size() ? marker : 0]);
    return s;
}

namespace {

// ZooKeeper's sequence suffix is "%010d" of a 32-bit counter: 10 characters ("0000000042",
// "-000000001" after the counter wrapped), or 11 for a negative value below -999999999.
std::optional<std::int64_t> parse_seq(std::string_view s) noexcept
{
    // (Canonical forms only: an 11-character one is below -999999999, so no leading zero.)
    if (s.size() != 10 && !(s.size() == 11 && s.front() == '-' && s[1] != '0')) return std::nullopt;
    std::int64_t value = 0;
    auto [p, e] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (e != std::errc{} || p != s.data() + s.size()) return std::nullopt;
    if (value > 2147483647 || value < -2147483648LL) return std::nullopt;
    if (value == 0 && s.front() == '-') return std::nullopt;  // "-000000000" is no %010d output
    return value;
}

// The sequence at the end of `child`, after exactly `marker`: {sequence, where the marker starts}.
std::optional<std::pair<std::int64_t, std::size_t>> seq_after(std::string_view child, std::string_view marker) noexcept
{
    for (std::size_t len : {std::size_t{10}, std::size_t{11}}) {
        if (child.size() < len + marker.size()) continue;
        const std::size_t at = child.size() - len - marker.size();
        if (child.substr(at, marker.size()) != marker) continue;
        if (auto seq = parse_seq(child.substr(child.size() - len))) return std::pair{*seq, at};
    }
    return std::nullopt;
}

// "<k>-<16 hex>-[marker]<sequence>": zklock's own names (the marker is absent in names made by
// zklock's earliest names, which are still recognised).
std::optional<queue_view> parse_zklock(std::string_view child) noexcept
{
    if (child.size() < 29 || child[1] != '-' || child[18] != '-') return std::nullopt;
    const auto letter = kind_of_letter(child[0]);
    if (!letter) return std::nullopt;
    const node_kind kind = *letter;
    std::uint64_t id = 0;
    for (std::size_t i = 2; i < 18; ++i) {
        const char c = child[i];
        unsigned d;
        if (c >= '0' && c <= '9') d = static_cast<unsigned>(c - '0');
        else if (c >= 'a' && c <= 'f') d = static_cast<unsigned>(c - 'a' + 10);
        else return std::nullopt;
        id = (id << 4) | d;
    }
    const std::string_view rest = child.substr(19);
    for (const recipe* r : recipes()) {
        if (r->kind != kind) continue;
        for (std::string_view m : r->markers) {
            if (m.empty() || !rest.starts_with(m)) continue;
            if (auto seq = parse_seq(rest.substr(m.size()))) return queue_view{child, kind, id, *seq, lock_library::zklock, r};
        }
    }
    if (auto seq = parse_seq(rest)) return queue_view{child, kind, id, *seq, lock_library::zklock, &base_recipe(kind)};
    return std::nullopt;
}

// Queue nodes of the other ZooKeeper libraries, by the marker right before the sequence, as the
// recipes list them (see recipe::foreign): a name any of them would take for a contender is one.
std::optional<queue_view> parse_foreign(std::string_view child) noexcept
{
    for (const recipe* r : recipes())
        for (const foreign_name& f : r->foreign)
            if (auto found = seq_after(child, f.marker)) return queue_view{child, r->kind, 0, found->first, f.library, r};
    return std::nullopt;
}

}  // namespace

std::optional<queue_view> parse_queue_view(std::string_view child) noexcept
{
    if (auto v = parse_zklock(child)) return v;
    return parse_foreign(child);
}

std::optional<queue_node> parse_queue_node(std::string_view child) noexcept
{
    auto v = parse_queue_view(child);
    if (!v) return std::nullopt;
    return queue_node{std::string(v->name), v->kind, v->id, v->seq, v->library, v->what};
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
    // Straight from the kernel's random pool, every time: no generator state lives in the process,
    // so a fork() without exec, a process restored from a checkpoint, or two copies of the library
    // in one process can never hand out the same ids. Two ids collide with probability 2^-64.
    for (;;) {
        std::uint64_t id = 0;
        ssize_t got = ::getrandom(&id, sizeof id, 0);
        if (got == static_cast<ssize_t>(sizeof id)) {
            if (id != 0) return id;
            continue;
        }
        if (got < 0 && errno == EINTR) continue;
        // No getrandom (a very old kernel or a seccomp filter): /dev/urandom, read afresh each time.
        if (int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC); fd >= 0) {
            got = ::read(fd, &id, sizeof id);
            ::close(fd);
            if (got == static_cast<ssize_t>(sizeof id) && id != 0) return id;
        }
        // Last resort: the pid, the clock and a counter through SplitMix64 (fork-safe by the pid).
        static std::atomic<std::uint64_t> counter{0};
        const auto pid = static_cast<std::uint64_t>(::getpid());
        std::uint64_t z = pid * 0x9e3779b97f4a7c15ULL ^
                          static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
                          (counter.fetch_add(1) << 48);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        if (z != 0) return z;
    }
}

}  // namespace zklock::detail
