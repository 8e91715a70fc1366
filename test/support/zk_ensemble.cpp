#include "support/zk_ensemble.hpp"

#include "support/failure.hpp"
#include "support/process_util.hpp"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace zklock::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

zk_ensemble::zk_ensemble(int n, server_options options)
    : options_(std::move(options)),
      dir_(detail::make_temp_dir("zklock-zk-ensemble")),
      uncaught_(std::uncaught_exceptions())
{
    if (n < 1) throw std::invalid_argument("zk_ensemble needs at least one server");
    if (options_.tls.enabled() && options_.dynamic_config)
        throw std::invalid_argument("zk_ensemble: server_options::tls does not go with dynamic_config");
    if (options_.dynamic_config && options_.proxy_server_links)
        throw std::invalid_argument("zk_ensemble: dynamic_config does not go with proxy_server_links");
    // Reconfiguration is an admin operation: the test's clients may do it without credentials.
    if (options_.dynamic_config) options_.jvm_flags.push_back("-Dzookeeper.skipACL=yes");
    try {
        launch(n);
    } catch (...) {
        servers_.clear();
        std::fprintf(stderr, "zklock::test::zk_ensemble: start failed, kept %s\n", dir_.c_str());
        throw;
    }
}

zk_ensemble::~zk_ensemble()
{
    for (auto& s : servers_) s->terminate();  // all at once: JVMs take a while to exit
    servers_.clear();
    links_.clear();
    if (keep_ || std::uncaught_exceptions() > uncaught_ || should_keep_files()) {
        std::fprintf(stderr, "zklock::test::zk_ensemble: kept %s\n", dir_.c_str());
    } else {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
}

void zk_ensemble::make_links(int n)
{
    // The proxies take their ports before free_ports() picks the servers', so they cannot clash;
    // launch() points them at the servers' ports.
    for (int from = 0; from < n; ++from)
        for (int to = 0; to < n; ++to)
            if (from != to)
                links_.push_back({from, to, std::make_unique<fault_proxy>(0), std::make_unique<fault_proxy>(0)});
    for (auto& l : links_) {
        // A follower connects to the leader's quorum port as soon as the election is decided,
        // maybe before the leader opens it; it retries a refused connect, so the proxy does too.
        l.quorum->retry_connect(1s);
        l.election->rewrite_election_address(link(l.to, l.from).election->connect_string());
    }
}

zk_ensemble::server_link& zk_ensemble::link(int from, int to)
{
    for (auto& l : links_)
        if (l.from == from && l.to == to) return l;
    throw std::out_of_range("zk_ensemble: no link between these servers");
}

namespace {

// How many ticks make `at_least`, and never fewer than `min_ticks`.
long ticks(const server_options& o, std::chrono::milliseconds at_least, long min_ticks)
{
    return std::max(min_ticks, static_cast<long>((at_least + o.tick_time - 1ms) / o.tick_time));
}

}  // namespace

std::string zk_ensemble::server_line(int i) const
{
    const server_ports& p = ports_.at(static_cast<std::size_t>(i));
    return "server." + std::to_string(i + 1) + "=127.0.0.1:" + std::to_string(p.quorum) + ":" +
           std::to_string(p.election) + ":participant;127.0.0.1:" + std::to_string(p.client);
}

fs::path zk_ensemble::write_member(int i, std::ostringstream& cfg)
{
    std::string name = "s";  // not "s" + to_string(): GCC 12's -Wrestrict false positive (PR 105651)
    name += std::to_string(i + 1);
    const fs::path sdir = dir_ / name;
    fs::remove_all(sdir);
    fs::create_directories(sdir / "data");
    detail::write_file(sdir / "data/myid", std::to_string(i + 1) + "\n");
    cfg << "tickTime=" << options_.tick_time.count() << "\n"
        // Generous sync limits: small ticks must not make busy CI machines drop followers.
        << "initLimit=" << ticks(options_, 10s, 10) << "\n"
        << "syncLimit=" << ticks(options_, 5s, 5) << "\n"
        << "dataDir=" << (sdir / "data").string() << "\n"
        << "forceSync=no\n"
        << "maxClientCnxns=0\n"
        << "admin.enableServer=false\n"
        << "4lw.commands.whitelist=*\n";
    if (options_.max_session_timeout_ms > 0) cfg << "maxSessionTimeout=" << options_.max_session_timeout_ms << "\n";
    if (options_.tls.enabled()) {
        const std::uint16_t tls_port = ports_.at(static_cast<std::size_t>(i)).tls;
        cfg << "secureClientPort=" << tls_port << "\n"
            << "secureClientPortAddress=127.0.0.1\n";
        // ZooKeeper's PEM key store is one file: the key, then the certificate chain (the name
        // zk_server's JVM flags give it).
        detail::write_file(sdir / "tls-keystore.pem",
                           detail::read_file_from(options_.tls.key) + detail::read_file_from(options_.tls.cert));
    }
    return sdir;
}

fs::path zk_ensemble::write_dynamic_member(int i, const std::vector<int>& members)
{
    std::ostringstream cfg;
    const fs::path sdir = write_member(i, cfg);
    cfg << "reconfigEnabled=true\n"
        << "standaloneEnabled=false\n"
        // The server moves this to zoo.cfg.dynamic.<version> and rewrites zoo.cfg on its first start.
        << "dynamicConfigFile=" << (sdir / "zoo.cfg.dynamic").string() << "\n";
    for (const auto& line : options_.extra_config) cfg << line << "\n";
    detail::write_file(sdir / "zoo.cfg", cfg.str());
    std::string dynamic;
    for (int m : members) dynamic += server_line(m) + "\n";
    if (std::find(members.begin(), members.end(), i) == members.end()) dynamic += server_line(i) + "\n";
    detail::write_file(sdir / "zoo.cfg.dynamic", dynamic);
    return sdir;
}

void zk_ensemble::launch(int n)
{
    if (options_.proxy_server_links) make_links(n);
    for (int attempt = 0;; ++attempt) {
        servers_.clear();
        const std::size_t per = options_.tls.enabled() ? 4 : 3;  // client, quorum, election, TLS
        const auto ports = free_ports(per * static_cast<std::size_t>(n));
        ports_.clear();
        members_.clear();
        for (std::size_t i = 0; i < static_cast<std::size_t>(n); ++i) {
            ports_.push_back({ports[per * i], ports[per * i + 1], ports[per * i + 2],
                              options_.tls.enabled() ? ports[per * i + 3] : std::uint16_t{0}});
            members_.push_back(static_cast<int>(i));
        }
        for (int i = 0; i < n && options_.dynamic_config; ++i) {
            const fs::path sdir = write_dynamic_member(i, members_);
            servers_.push_back(std::unique_ptr<zk_server>(new zk_server(zk_server::member_tag{}, sdir, ports_[i].client, options_)));
        }
        for (int i = 0; i < n && !options_.dynamic_config; ++i) {
            std::ostringstream cfg;
            const fs::path sdir = write_member(i, cfg);
            cfg << "clientPort=" << ports_[i].client << "\n"
                << "clientPortAddress=127.0.0.1\n";
            if (n == 1) cfg << "standaloneEnabled=false\n";
            for (int k = 0; k < n; ++k) {
                std::uint16_t quorum = ports_[k].quorum, election = ports_[k].election;
                if (options_.proxy_server_links && k != i) {
                    server_link& l = link(i, k);
                    l.quorum->set_target(quorum);
                    l.election->set_target(election);
                    quorum = l.quorum->port();
                    election = l.election->port();
                }
                cfg << "server." << k + 1 << "=127.0.0.1:" << quorum << ":" << election << "\n";
            }
            for (const auto& line : options_.extra_config) cfg << line << "\n";
            detail::write_file(sdir / "zoo.cfg", cfg.str());
            servers_.push_back(std::unique_ptr<zk_server>(
                new zk_server(zk_server::member_tag{}, sdir, ports_[i].client, options_, ports_[i].tls)));
        }
        if (!options_.start) return;

        try {
            for (auto& s : servers_) s->spawn();  // start the JVMs in parallel
            const auto deadline = std::chrono::steady_clock::now() + 30s;
            for (auto& s : servers_) s->wait_up(deadline);
            const auto left = deadline - std::chrono::steady_clock::now();
            if (!wait_quorum(std::max(std::chrono::duration_cast<std::chrono::milliseconds>(left), 1000ms))) {
                std::string logs;
                for (auto& s : servers_) logs += "---- " + s->dir().string() + ":\n" + s->log_tail(20);
                throw std::runtime_error("ZooKeeper ensemble in " + dir_.string() +
                                         " elected no leader in time:\n" + logs);
            }
            return;
        } catch (const std::runtime_error&) {
            // A port picked as free may have been taken since; then try again with new ones.
            bool bind_failed = false;
            for (auto& s : servers_)
                bind_failed = bind_failed || s->log_tail(200).find("Address already in use") != std::string::npos;
            if (!bind_failed || attempt >= 2) throw;
        }
    }
}

std::string zk_ensemble::connect_string() const
{
    std::string out;
    for (const auto& s : servers_) {
        if (!out.empty()) out += ',';
        out += s->connect_string();
    }
    return out;
}

std::string zk_ensemble::connect_string(int i) const { return server(i).connect_string(); }

std::string zk_ensemble::tls_connect_string() const
{
    std::string out;
    for (const auto& s : servers_) {
        if (!out.empty()) out += ',';
        out += s->tls_connect_string();
    }
    return out;
}

std::string zk_ensemble::members_connect_string() const
{
    std::string out;
    for (int i : members_) {
        if (!out.empty()) out += ',';
        out += connect_string(i);
    }
    return out;
}

int zk_ensemble::add_server()
{
    if (!options_.dynamic_config) throw std::logic_error("zk_ensemble::add_server() needs dynamic_config");
    const int i = size();
    const auto p = free_ports(3);
    ports_.push_back({p[0], p[1], p[2]});
    const fs::path sdir = write_dynamic_member(i, members_);
    servers_.push_back(std::unique_ptr<zk_server>(new zk_server(zk_server::member_tag{}, sdir, p[0], options_)));
    zk_server& s = server(i);
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    s.spawn();
    s.wait_up(deadline);
    // It serves once it has synced with the leader, as a follower (not voting until added).
    for (;;) {
        const std::string reply = s.four_letter("srvr");
        if (reply.find("Mode: follower") != std::string::npos || reply.find("Mode: observer") != std::string::npos)
            return i;
        if (std::chrono::steady_clock::now() >= deadline)
            throw std::runtime_error("zk_ensemble: server " + std::to_string(i + 1) + " did not join in time:\n" +
                                     s.log_tail(40));
        std::this_thread::sleep_for(100ms);
    }
}

void zk_ensemble::reconfig(const std::vector<int>& add, const std::vector<int>& remove)
{
    if (!options_.dynamic_config) throw std::logic_error("zk_ensemble::reconfig() needs dynamic_config");
    std::vector<std::string> command = {"reconfig"};
    if (!add.empty()) {
        std::string joining;
        for (int i : add) joining += (joining.empty() ? "" : ",") + server_line(i);
        command.insert(command.end(), {"-add", joining});
    }
    if (!remove.empty()) {
        std::string leaving;
        for (int i : remove) leaving += (leaving.empty() ? "" : ",") + std::to_string(i + 1);
        command.insert(command.end(), {"-remove", leaving});
    }
    int via = -1;
    for (int m : members_)
        if (running(m) && std::find(remove.begin(), remove.end(), m) == remove.end()) {
            via = m;
            break;
        }
    if (via < 0) throw std::logic_error("zk_ensemble::reconfig(): no running member stays");
    // Whether server `via` serves the new configuration.
    const auto committed = [&] {
        const std::string conf = four_letter(via, "conf");
        for (int i : add)
            if (conf.find(server_line(i)) == std::string::npos) return false;
        for (int i : remove)
            if (conf.find("server." + std::to_string(i + 1) + "=") != std::string::npos) return false;
        return conf.find("version=") != std::string::npos;
    };
    std::string out;
    for (int attempt = 0; attempt < 3; ++attempt) {
        out = zookeeper_cli(port(via), command);
        if (out.find("Committed new configuration") != std::string::npos) break;
        // Committed all the same, maybe: when the leader removes itself every follower restarts,
        // which drops the CLI's connection before the answer. The members serve again after the
        // new leader's election.
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        bool done = false;
        while (!(done = committed()) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(200ms);
        if (done) break;
        if (attempt == 2)
            throw std::runtime_error("zk_ensemble: the reconfiguration " + command[1] + " " + command[2] +
                                     " was not committed:\n" + out);
    }
    std::erase_if(members_, [&](int m) { return std::find(remove.begin(), remove.end(), m) != remove.end(); });
    for (int i : add)
        if (std::find(members_.begin(), members_.end(), i) == members_.end()) members_.push_back(i);
}

zk_server& zk_ensemble::server(int i) { return *servers_.at(static_cast<std::size_t>(i)); }

const zk_server& zk_ensemble::server(int i) const { return *servers_.at(static_cast<std::size_t>(i)); }

void zk_ensemble::isolate(int i)
{
    if (!options_.proxy_server_links) throw std::logic_error("zk_ensemble::isolate() needs proxy_server_links");
    server(i);  // range check
    for (auto& l : links_) {
        if (l.from != i && l.to != i) continue;
        l.quorum->blackhole();
        l.election->blackhole();
    }
}

void zk_ensemble::heal()
{
    if (!options_.proxy_server_links) throw std::logic_error("zk_ensemble::heal() needs proxy_server_links");
    for (auto& l : links_) {
        l.quorum->pass();
        l.election->pass();
    }
}

int zk_ensemble::leader() const
{
    for (int i = 0; i < size(); ++i)
        if (running(i) && four_letter(i, "srvr").find("Mode: leader") != std::string::npos) return i;
    return -1;
}

bool zk_ensemble::wait_quorum(std::chrono::milliseconds timeout)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        int leaders = 0, serving = 0, up = 0;
        for (int i = 0; i < size(); ++i) {
            if (!running(i)) continue;
            ++up;
            const std::string reply = four_letter(i, "srvr");
            const auto has = [&](const char* mode) { return reply.find(mode) != std::string::npos; };
            if (has("Mode: leader")) ++leaders;
            if (has("Mode: leader") || has("Mode: follower") || has("Mode: observer")) ++serving;
        }
        if (up > 0 && serving == up && leaders == 1) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(100ms);
    }
}

}  // namespace zklock::test
