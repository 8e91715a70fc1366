// session_impl's server list: session::set_servers, handing a list to the C client, and
// following the ensemble's own configuration (session_config::follow_ensemble).
//
// zoo_set_servers alone (3.8 C client, update_addrs() in zookeeper.c) is not enough:
//  * It compares addresses without their ports (addrvec_contains), so a list that differs from
//    the one it has only in ports (several servers on one host) is taken for the same list and
//    dropped, then and at every later reconnect.
//  * To spread sessions over the new servers it may close the socket of a live connection by
//    itself, without failing the requests in flight or telling the watcher: they stay queued,
//    their replies never come, pings stop (none is sent while requests are outstanding), and the
//    first reply on the next connection does not match and drops that one too.
// So the session decides itself whether to leave its server: it stays while its server is in the
// new list, and otherwise drops the connection the way a lost one goes (the C client fails what
// was in flight and reports the loss; the session reconnects at once, keeping its ZooKeeper
// session). The list reaches the C client only while the client has no socket (drive() hands it
// over before the next connect), where zoo_set_servers never closes anything, and by way of a
// one-address list no real list shares an address with, so that the change is always seen.
#include "bridge/session_impl.hpp"

#include "bridge/tls_context.hpp"

#include <zklock/detail/zk_path.hpp>
#include <zklock/detail/server_list.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

namespace zklock::detail {

void session_impl::pending_list::add(const sockaddr* a, socklen_t len, const std::string& host)
{
    if ((a->sa_family != AF_INET && a->sa_family != AF_INET6) || len > sizeof(sockaddr_storage)) return;
    server_address s;
    std::memcpy(&s.addr, a, len);
    s.len = len;
    if (std::any_of(addresses.begin(), addresses.end(), [&](const server_address& x) { return same_address(x.addr, s.addr); }))
        return;
    char ip[NI_MAXHOST], serv[NI_MAXSERV];
    if (::getnameinfo(a, len, ip, sizeof ip, serv, sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) != 0) return;
    // The C client cuts "host:port" at the last ':', so an IPv6 address goes without brackets; it
    // reads the port with strtol(..., 0), so in plain decimal ("010" is octal).
    if (!numeric.empty()) numeric += ',';
    numeric.append(ip).append(":").append(serv);
    addresses.push_back(s);
    hosts.push_back(host);
}

error_code session_impl::pending_list::finish()
{
    if (addresses.empty()) return errc::unresolvable_host;
    // After a failed attempt the 3.8 C client moves two places along its list (handle_error's
    // addrvec_next, then zookeeper_interest's): through a list of even length it only ever tries
    // every other server, and one whose live servers sit on the other places never reconnects.
    // An odd length reaches every place: an even list gets its first address once more.
    if (addresses.size() % 2 == 0) {
        // (Appends, not `"," + std::string(...)`: GCC 12 at -O3 takes that for an overlapping
        // memcpy, -Wrestrict. A copy of the entry first: it views `numeric`, which may move.)
        const std::string first(server_entries(numeric).front());
        numeric.append(",").append(first);
        addresses.push_back(addresses.front());
        hosts.push_back(hosts.front());
    }
    return {};
}

std::optional<session_impl::pending_list> session_impl::numeric_servers(std::string_view hosts)
{
    // AI_NUMERICHOST: getaddrinfo parses the address (a scope id included) and never looks a
    // name up, so this does not block.
    pending_list l;
    for (std::string_view entry : server_entries(hosts)) {
        auto [host, port] = host_and_port(entry);
        addrinfo hints{};
        hints.ai_family = AF_UNSPEC;
        hints.ai_socktype = SOCK_STREAM;
        hints.ai_protocol = IPPROTO_TCP;
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
        addrinfo* res = nullptr;
        if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &res) != 0) return std::nullopt;  // a name
        for (addrinfo* a = res; a; a = a->ai_next) l.add(a->ai_addr, a->ai_addrlen, host);
        ::freeaddrinfo(res);
    }
    return l;
}

// One lookup of a host list: its entries in turn, each by resolver_ (getaddrinfo on Asio's
// resolver thread), the addresses gathered in list order.
struct session_impl::resolve_job {
    std::vector<std::pair<std::string, std::string>> entries;  // host, port
    std::size_t next = 0;
    pending_list list;
    unique_function<void(error_code, pending_list)> done;
};

void session_impl::resolve_servers(std::string_view hosts, unique_function<void(error_code, pending_list)> done)
{
    auto job = std::make_shared<resolve_job>();
    for (std::string_view entry : server_entries(hosts)) job->entries.push_back(host_and_port(entry));
    job->done = std::move(done);
    resolve_next(std::move(job));
}

void session_impl::resolve_next(std::shared_ptr<resolve_job> job)
{
    if (job->next == job->entries.size()) {
        const error_code ec = job->list.finish();
        return job->done(ec, std::move(job->list));
    }
    const auto& [host, port] = job->entries[job->next++];
    // No flags: the hints of the C client's own lookup (no AI_ADDRCONFIG, which would drop
    // "localhost" on a host with loopback addresses only). A host that does not resolve is
    // skipped, as the C client does.
    resolver_.async_resolve(host, port, asio::ip::resolver_base::flags(),
                            [weak = weak_from_this(), job](error_code ec, asio::ip::tcp::resolver::results_type r) mutable {
                                auto self = weak.lock();
                                if (!self || ec == asio::error::operation_aborted) return;  // closed
                                const std::string& name = job->entries[job->next - 1].first;
                                for (const auto& e : r) job->list.add(e.endpoint().data(), static_cast<socklen_t>(e.endpoint().size()), name);
                                self->resolve_next(std::move(job));
                            });
}

error_code session_impl::set_servers(std::string servers)
{
    if (state() == session_state::closed) return errc::session_closed;
    if (auto ec = validate_servers(servers)) return ec;
    const split_servers next = split_chroot(servers);
    const split_servers current = split_chroot(cfg_.servers);
    // A list that names a chroot ("/" included: none) must name the session's; one that names
    // none keeps it.
    if (servers.find('/') != std::string::npos && next.chroot != current.chroot) return errc::chroot_mismatch;
    if (same_entries(next.hosts, current.hosts)) return {};

    servers_lookup_ = 0;  // a lookup still under way is superseded
    if (cfg_.tls.enabled && !tls_) {  // no handle yet: the first one resolves the list
        cfg_.servers = std::string(next.hosts) + std::string(current.chroot);
        return {};
    }
    std::string with_chroot = std::string(next.hosts) + std::string(current.chroot);
    if (auto l = numeric_servers(next.hosts)) {
        if (auto ec = l->finish()) return ec;
        take_servers(std::move(with_chroot), std::move(*l));
        return {};
    }
    // A host name: looked up off the executor. The list is taken when the lookup ends (a later
    // set_servers supersedes it); if no host resolves, the session keeps the addresses it has.
    const std::uint64_t lookup = servers_lookup_ = ++lookups_;
    resolve_servers(next.hosts, [this, lookup, with_chroot = std::move(with_chroot)](error_code ec, pending_list l) mutable {
        if (lookup != servers_lookup_ || state() == session_state::closed) return;
        servers_lookup_ = 0;
        if (ec) {
            client_log(("the server list " + with_chroot + " was not taken: " + ec.message()).c_str());
            return;
        }
        take_servers(std::move(with_chroot), std::move(l));
    });
    return {};
}

void session_impl::take_servers(std::string servers_with_chroot, pending_list l)
{
    cfg_.servers = std::move(servers_with_chroot);
    if (!zh_) return;  // the next handle starts with cfg_.servers
    pending_servers_ = std::move(l);
    // From a posted handler: dropping the connection completes the requests in flight, and a
    // handler must not run inside set_servers.
    if (!servers_posted_) {
        servers_posted_ = true;
        asio::post(ex_, [w = weak_from_this()] {
            if (auto self = w.lock()) self->apply_servers();
        });
    }
}

bool session_impl::peer_listed(const pending_list& l) const
{
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    if (fd_ == -1 || ::getpeername(fd_, reinterpret_cast<sockaddr*>(&peer), &len) != 0) return false;
    return std::any_of(l.addresses.begin(), l.addresses.end(),
                       [&](const server_address& a) { return same_address(a.addr, peer); });
}

void session_impl::apply_servers()
{
    servers_posted_ = false;
    if (!zh_ || !pending_servers_) return;
    const int st = zoo_state(zh_);
    if (st < 0) return;  // expired or refused: the next handle starts with cfg_.servers
    const bool no_socket = st == 0 || st == ZOO_NOTCONNECTED_STATE;
    // On a server of the new list (or on the way to one, TCP connected): stay. The list goes to
    // the C client when this connection ends.
    if (!no_socket && peer_listed(*pending_servers_)) return;
    // The next attempt goes at once, to the new list: set_servers while the old servers were
    // unreachable must not wait for their back-off.
    reconnect_attempts_ = 0;
    reconnect_at_ = {};
    if (no_socket || fd_ == -1) return drive();
    const char* server = zoo_get_current_server(zh_);
    client_log((std::string("leaving ") + (server ? server : "the server") + ": not in the new server list").c_str());
    drop_connection();
    run_client(ZOOKEEPER_READ);
}

void session_impl::install_servers()
{
    pending_list l = std::move(*pending_servers_);
    pending_servers_.reset();
    // A one-address list first, of an address the new list does not have: the C client compares
    // addresses without ports, and from a list of the same addresses it would not take the new one.
    std::uint32_t sentinel = 0;  // 0.0.0.0, or the next one the list does not hold
    while (std::any_of(l.addresses.begin(), l.addresses.end(), [&](const server_address& a) {
        return a.addr.ss_family == AF_INET &&
               reinterpret_cast<const sockaddr_in&>(a.addr).sin_addr.s_addr == htonl(sentinel);
    }))
        ++sentinel;
    const std::string first = "0.0." + std::to_string(sentinel >> 8) + "." + std::to_string(sentinel & 0xff) + ":1";
    const log_scope scope(log_.get());
    int rc = zoo_set_servers(zh_, first.c_str());
    if (rc == ZOK) rc = zoo_set_servers(zh_, l.numeric.c_str());
    if (rc == ZOK) {
        if (tls_) set_tls_setup(l);
        installed_servers_ = std::move(l.numeric);
        return;
    }
    client_log(("the C client refused the server list " + l.numeric + " (" + make_zk_error(rc).message() +
                "): it keeps " + installed_servers_).c_str());
    zoo_set_servers(zh_, installed_servers_.c_str());
}

// ---- following the ensemble ---------------------------------------------------------------------

void session_impl::follow_ensemble()
{
    if (!cfg_.follow_ensemble || !zh_ || state() != session_state::connected) return;
    // The configuration names each member's plaintext client port only (its secureClientPort is
    // not in it): a TLS session cannot take its addresses.
    if (cfg_.tls.enabled) {
        client_log("follow_ensemble is ignored with TLS: the ensemble's configuration lists plaintext client "
                   "ports only (use session::set_servers)");
        return;
    }
    // One read per connection and per change. The new watch replaces the last one: the watch table
    // holds watches weakly, so the next event of the node reaches this one only.
    auto w = make_watch();
    config_watch_ = w;
    const std::uint64_t read = ++config_reads_;
    get_config(w, [weak = weak_from_this(), w, read](error_code ec, std::string data, zklock::stat) {
        auto self = weak.lock();
        if (!self || read != self->config_reads_) return;
        if (ec) return;  // no watch was set: read again at the next connect
        self->on_ensemble_config(data);
        w->wait([weak](error_code ec, watch_event) {
            auto self = weak.lock();
            if (self && !ec) self->follow_ensemble();  // else expired or closed: a new session reads on connect
        });
    });
}

void session_impl::on_ensemble_config(const std::string& data)
{
    auto list = ensemble_client_list(data);
    if (!list) {
        // A standalone server's config is empty; a line we cannot read might drop a server we need.
        client_log("the ensemble's configuration gives no client address list: the server list is kept");
        return;
    }
    if (same_entries(*list, split_chroot(cfg_.servers).hosts)) return;
    if (auto ec = set_servers(*list))  // no chroot given: the session's is kept
        client_log(("the ensemble's server list " + *list + " was not taken: " + ec.message()).c_str());
}

void session_impl::set_tls_setup(const pending_list& l)
{
    tls_hosts_.clear();
    for (std::size_t i = 0; i < l.addresses.size() && i < l.hosts.size(); ++i) tls_hosts_.emplace_back(l.addresses[i].addr, l.hosts[i]);
    refresh_tls();
}

void session_impl::refresh_tls()
{
    auto setup = std::make_shared<tls_setup>();
    setup->ctx = tls_->context();
    setup->verify_host = cfg_.tls.verify_host;
    setup->hosts = tls_hosts_;
    chan_->use_tls(std::move(setup));
}

}  // namespace zklock::detail
