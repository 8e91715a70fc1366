// bench/server_stats.cpp — the server's statistics: four-letter words to any host:port (srst, srvr), packet counts.
#include "bench.hpp"

namespace zklock_bench {


std::string four_letter(const std::string& host, const std::string& port, const std::string& cmd)
{
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) return {};
    std::string reply;
    for (addrinfo* ai = res; ai && reply.empty(); ai = ai->ai_next) {
        int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) continue;
        timeval tv{3, 0};  // bounds connect, send and every recv
        ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
            ::send(fd, cmd.data(), cmd.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(cmd.size())) {
            char buf[4096];
            for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<std::size_t>(n));
        }
        ::close(fd);
    }
    ::freeaddrinfo(res);
    return reply;
}


/// Resets every server's statistics (`srst`), the packet counters included.
void reset_server_stats(const endpoint_list& servers)
{
    for (const auto& [host, port] : servers) four_letter(host, port, "srst");
}


/// The sum over the servers of the packets they received (`srvr`: "Received: N"); nullopt when
/// one does not answer.
std::optional<std::int64_t> packets_received(const endpoint_list& servers)
{
    std::int64_t sum = 0;
    for (const auto& [host, port] : servers) {
        const std::string reply = four_letter(host, port, "srvr");
        const std::string key = "Received: ";
        const auto p = reply.find(key);
        if (p == std::string::npos) return std::nullopt;
        sum += std::atoll(reply.c_str() + p + key.size());
    }
    return sum;
}


std::optional<std::int64_t> open_packet_window(const endpoint_list& servers)
{
    reset_server_stats(servers);
    return packets_received(servers);
}


double packets_in_window(const endpoint_list& servers, std::optional<std::int64_t> base)
{
    if (!base) return std::nan("");
    const auto now = packets_received(servers);
    return now ? static_cast<double>(*now - *base - static_cast<std::int64_t>(servers.size())) : std::nan("");
}


/// "h1:p1,[::1]:p2/chroot" -> {(h1, p1), (::1, p2)}.
endpoint_list parse_endpoints(const std::string& servers)
{
    endpoint_list out;
    const std::string list = servers.substr(0, servers.find('/'));
    for (std::size_t pos = 0; pos < list.size();) {
        const std::size_t comma = std::min(list.find(',', pos), list.size());
        const std::string hp = list.substr(pos, comma - pos);
        pos = comma + 1;
        const auto colon = hp.rfind(':');
        if (colon == std::string::npos) continue;
        std::string host = hp.substr(0, colon);
        if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
        out.emplace_back(host, hp.substr(colon + 1));
    }
    return out;
}


std::string version_of(const std::string& srvr)
{
    const std::string key = "Zookeeper version: ";
    auto p = srvr.find(key);
    if (p == std::string::npos) return "unknown";
    auto e = srvr.find_first_of(",\n", p);
    return srvr.substr(p + key.size(), e - p - key.size());
}

}  // namespace zklock_bench
