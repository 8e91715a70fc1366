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

namespace {

// Decodes one UTF-8 sequence at s[i] (strictly: no overlong forms, no surrogates, nothing above
// U+10FFFF); advances i. Returns -1 for invalid UTF-8.
long decode_utf8(std::string_view s, std::size_t& i) noexcept
{
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char b0 = byte(i);
    if (b0 < 0x80) {
        ++i;
        return b0;
    }
    int len = 0;
    long cp = 0, min = 0;
    if ((b0 & 0xe0) == 0xc0) { len = 2; cp = b0 & 0x1f; min = 0x80; }
    else if ((b0 & 0xf0) == 0xe0) { len = 3; cp = b0 & 0x0f; min = 0x800; }
    else if ((b0 & 0xf8) == 0xf0) { len = 4; cp = b0 & 0x07; min = 0x10000; }
    else return -1;
    if (i + static_cast<std::size_t>(len) > s.size()) return -1;
    for (int k = 1; k < len; ++k) {
        const unsigned char b = byte(i + static_cast<std::size_t>(k));
        if ((b & 0xc0) != 0x80) return -1;
        cp = (cp << 6) | (b & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
    i += static_cast<std::size_t>(len);
    return cp;
}

// The characters the server's PathUtils.validatePath refuses (it checks Java's UTF-16 units, so
// every character outside the BMP, sent as a surrogate pair, is refused too).
bool refused_by_server(long cp) noexcept
{
    return cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0xd800 && cp <= 0xf8ff) || cp >= 0xfff0;
}

}  // namespace

std::string_view lock_path_problem(std::string_view path) noexcept
{
    if (path.empty()) return "the path is empty";
    if (path.front() != '/') return "the path is not absolute (it must start with '/')";
    if (path == "/") return "the path is the root '/' (a lock needs a node of its own)";
    if (path.size() > max_lock_path) return "the path is longer than 1024 bytes";
    if (path.back() == '/') return "the path ends with '/'";
    std::size_t start = 1;
    while (start <= path.size()) {
        std::size_t end = path.find('/', start);
        if (end == std::string_view::npos) end = path.size();
        std::string_view comp = path.substr(start, end - start);
        if (comp.empty()) return "a component is empty ('//')";
        if (comp == ".") return "a component is '.'";
        if (comp == "..") return "a component is '..'";
        for (std::size_t i = 0; i < comp.size();) {
            const long cp = decode_utf8(comp, i);
            if (cp < 0) return "the path is not valid UTF-8";
            if (cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f))
                return "the path contains a control character (C0 or C1, NUL included)";
            if (refused_by_server(cp))
                return "the path contains a character ZooKeeper refuses (U+D800..U+F8FF, U+FFF0..U+FFFF, or one "
                       "outside the BMP)";
        }
        if (start == 1 && comp == "zookeeper") return "the path is under /zookeeper, which the server reserves";
        start = end + 1;
    }
    return {};
}

error_code validate_lock_path(std::string_view path) noexcept
{
    return lock_path_problem(path).empty() ? error_code{} : error_code{errc::invalid_path};
}

namespace {

// One "host:port" of a server list: the host as written (brackets included) and the port.
struct host_port {
    std::string_view host;
    unsigned port = 0;
};

// Parses one entry; nullopt if it is malformed. A bracketed host must be an IPv6 address
// (optionally with a zone, "[fe80::1%eth0]"); an unbracketed one may not contain ':'.
std::optional<host_port> parse_host_port(std::string_view hp) noexcept
{
    const std::size_t colon = hp.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || colon + 1 == hp.size()) return std::nullopt;
    const std::string_view host = hp.substr(0, colon);
    const std::string_view port = hp.substr(colon + 1);
    for (const char c : host)
        if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return std::nullopt;
    if (host.front() == '[') {
        if (host.back() != ']' || host.size() < 3) return std::nullopt;
        std::string_view address = host.substr(1, host.size() - 2);
        if (const auto zone = address.find('%'); zone != std::string_view::npos) {
            if (zone + 1 == address.size()) return std::nullopt;
            address = address.substr(0, zone);
        }
        char text[INET6_ADDRSTRLEN];
        in6_addr parsed;
        if (address.size() >= sizeof text) return std::nullopt;
        address.copy(text, address.size());
        text[address.size()] = '\0';
        if (::inet_pton(AF_INET6, text, &parsed) != 1) return std::nullopt;
    } else if (host.find_first_of(":[]") != std::string_view::npos) {
        return std::nullopt;
    }
    unsigned value = 0;
    auto [p, e] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (e != std::errc{} || p != port.data() + port.size() || value == 0 || value > 65535) return std::nullopt;
    return host_port{host, value};
}

// Calls f(entry) for each comma-separated entry of `hosts`.
template <class F> void for_each_entry(std::string_view hosts, F f)
{
    std::size_t start = 0;
    while (start <= hosts.size()) {
        std::size_t end = hosts.find(',', start);
        if (end == std::string_view::npos) end = hosts.size();
        f(hosts.substr(start, end - start));
        start = end + 1;
    }
}

}  // namespace

error_code validate_servers(std::string_view servers) noexcept
{
    const error_code bad = errc::invalid_servers;
    if (auto slash = servers.find('/'); slash != std::string_view::npos) {
        std::string_view chroot = servers.substr(slash);
        servers = servers.substr(0, slash);
        if (chroot != "/" && validate_lock_path(chroot)) return bad;
    }
    if (servers.empty()) return bad;
    bool ok = true;
    for_each_entry(servers, [&](std::string_view hp) { ok = ok && parse_host_port(hp).has_value(); });
    return ok ? error_code{} : bad;
}

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
