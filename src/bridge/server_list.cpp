#include <zklock/detail/server_list.hpp>

#include <algorithm>
#include <charconv>

namespace zklock::detail {

split_servers split_chroot(std::string_view servers) noexcept
{
    const std::size_t slash = servers.find('/');
    if (slash == std::string_view::npos) return {servers, {}};
    std::string_view chroot = servers.substr(slash);
    if (chroot == "/") chroot = {};
    return {servers.substr(0, slash), chroot};
}

std::vector<std::string_view> server_entries(std::string_view hosts)
{
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (start <= hosts.size()) {
        std::size_t end = hosts.find(',', start);
        if (end == std::string_view::npos) end = hosts.size();
        if (end > start) out.push_back(hosts.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

std::pair<std::string, std::string> host_and_port(std::string_view entry)
{
    const std::size_t colon = entry.rfind(':');
    std::string_view host = entry.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    return {std::string(host), std::string(entry.substr(colon + 1))};
}

bool same_entries(std::string_view a, std::string_view b)
{
    auto x = server_entries(a), y = server_entries(b);
    for (auto* v : {&x, &y}) {
        std::sort(v->begin(), v->end());
        v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    return x == y;
}

namespace {

std::string_view trim(std::string_view s) noexcept
{
    const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
    while (!s.empty() && space(s.front())) s.remove_prefix(1);
    while (!s.empty() && space(s.back())) s.remove_suffix(1);
    return s;
}

std::optional<unsigned> parse_port(std::string_view s) noexcept
{
    unsigned v = 0;
    auto [p, e] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || e != std::errc{} || p != s.data() + s.size() || v == 0 || v > 65535) return std::nullopt;
    return v;
}

bool valid_id(std::string_view s) noexcept
{
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A host at the start of `s`, "[v6 address]" or up to the first ':', and what follows it.
struct host_and_rest {
    std::string_view host;
    std::string_view rest;
};

std::optional<host_and_rest> take_host(std::string_view s) noexcept
{
    if (!s.empty() && s.front() == '[') {
        const std::size_t close = s.find(']');
        if (close == std::string_view::npos || close < 2) return std::nullopt;
        return host_and_rest{s.substr(1, close - 1), s.substr(close + 1)};
    }
    const std::size_t colon = s.find(':');
    if (colon == std::string_view::npos) return host_and_rest{s, {}};
    return host_and_rest{s.substr(0, colon), s.substr(colon)};
}

bool is_wildcard(std::string_view host) noexcept
{
    return host.empty() || host == "0.0.0.0" || host == "::" || host == "0:0:0:0:0:0:0:0";
}

// One quorum address, "host:quorumport:electionport[:role]"; returns its host.
std::optional<std::string_view> quorum_host(std::string_view address) noexcept
{
    auto h = take_host(trim(address));
    if (!h || h->host.empty() || h->rest.empty() || h->rest.front() != ':') return std::nullopt;
    std::vector<std::string_view> parts;
    std::string_view rest = h->rest.substr(1);
    for (std::size_t start = 0; start <= rest.size();) {
        std::size_t end = rest.find(':', start);
        if (end == std::string_view::npos) end = rest.size();
        parts.push_back(rest.substr(start, end - start));
        start = end + 1;
    }
    if (parts.size() < 2 || parts.size() > 3 || !parse_port(parts[0]) || !parse_port(parts[1])) return std::nullopt;
    if (parts.size() == 3 && parts[2] != "participant" && parts[2] != "observer") return std::nullopt;
    return h->host;
}

// The client address of one server line's value ("quorum part;client part"): "host:port", ""
// when it has no client part, nullopt when it does not parse.
std::optional<std::string> client_address(std::string_view value)
{
    const std::size_t semi = value.find(';');
    const std::string_view quorum = value.substr(0, semi);
    // Several quorum addresses (ZooKeeper 3.6+) are separated by '|': the first one names the host.
    std::optional<std::string_view> host;
    for (std::size_t start = 0; start <= quorum.size();) {
        std::size_t end = quorum.find('|', start);
        if (end == std::string_view::npos) end = quorum.size();
        auto h = quorum_host(quorum.substr(start, end - start));
        if (!h) return std::nullopt;
        if (!host) host = h;
        start = end + 1;
    }
    if (semi == std::string_view::npos) return std::string();
    const std::string_view client = trim(value.substr(semi + 1));
    if (client.find(';') != std::string_view::npos) return std::nullopt;
    std::string_view client_host, port_text;
    if (client.find(':') == std::string_view::npos) {
        port_text = client;  // only a port: every address of the server
    } else {
        auto h = take_host(client);
        if (!h || h->rest.size() < 2 || h->rest.front() != ':') return std::nullopt;
        client_host = h->host;
        port_text = h->rest.substr(1);
    }
    const auto port = parse_port(port_text);
    if (!port) return std::nullopt;
    const std::string_view name = is_wildcard(client_host) ? *host : client_host;
    std::string out;
    if (name.find(':') != std::string_view::npos) out.append("[").append(name).append("]");
    else out.append(name);
    return out.append(":").append(std::to_string(*port));
}

}  // namespace

std::optional<std::string> ensemble_client_list(std::string_view config)
{
    std::vector<std::string> entries;
    for (std::size_t start = 0; start < config.size();) {
        std::size_t end = config.find('\n', start);
        if (end == std::string_view::npos) end = config.size();
        const std::string_view line = trim(config.substr(start, end - start));
        start = end + 1;
        if (!line.starts_with("server.")) continue;
        const std::size_t eq = line.find('=');
        if (eq == std::string_view::npos || !valid_id(trim(line.substr(7, eq - 7)))) return std::nullopt;
        auto addr = client_address(trim(line.substr(eq + 1)));
        if (!addr) return std::nullopt;
        if (!addr->empty() && std::find(entries.begin(), entries.end(), *addr) == entries.end())
            entries.push_back(std::move(*addr));
    }
    if (entries.empty()) return std::nullopt;
    std::string out;
    for (const auto& e : entries) {
        if (!out.empty()) out += ',';
        out += e;
    }
    return out;
}

}  // namespace zklock::detail
