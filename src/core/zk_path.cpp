#include <zklock/detail/zk_path.hpp>

#include <charconv>
#include <optional>

#include <arpa/inet.h>
#include <netinet/in.h>

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

}  // namespace zklock::detail
