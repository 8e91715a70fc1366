// support/zk_ensemble.hpp — a real ZooKeeper quorum of n servers on 127.0.0.1 for tests.
#pragma once

#include "support/fault_proxy.hpp"
#include "support/zk_server.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace zklock::test {

/// n ZooKeeper servers (myid 1..n, indexed 0..n-1 here) with distinct client, quorum and election
/// ports, each in a subdir of one temp dir. With options.start the constructor waits (30 s at
/// most) until the quorum has a leader. Lifetime rules are those of zk_server: the destructor
/// stops every server and removes the dir unless keep_files(), an exception or a noted failure.
///
/// With options.proxy_server_links, server i connects to server k through two fault_proxy of
/// the pair (i, k), one for k's quorum port and one for k's election port: server i's zoo.cfg
/// has its own entry at its real ports and every other server at the ports of i's proxies
/// towards it. A server that gets an election connection from a lower id drops it and connects
/// back to the election address the sender announced, so the election proxy i -> k announces
/// the proxy k -> i instead of i's real port (fault_proxy::rewrite_election_address): every
/// link between two servers then goes through a proxy, and isolate() cuts them all. The
/// quorum proxies retry a refused upstream connect for 1 s (fault_proxy::retry_connect), as
/// a follower does when the leader it just elected has not opened its quorum port yet. The
/// proxies live as long as the ensemble (stop, kill and start keep them) and outlive the
/// servers. Clients connect to the servers directly.
///
/// With options.dynamic_config the servers run with dynamic reconfiguration, and the ensemble can
/// be changed while it runs: add_server() starts a new server (the next myid, new ports) that
/// joins as a non-voting follower, reconfig() adds and removes members (ZooKeeper's own CLI, as
/// `reconfig -add ... -remove ...`), and stop() ends a removed one.
class zk_ensemble {
public:
    explicit zk_ensemble(int n = 3, server_options options = {});
    ~zk_ensemble();
    zk_ensemble(const zk_ensemble&) = delete;
    zk_ensemble& operator=(const zk_ensemble&) = delete;

    /// "127.0.0.1:P1,127.0.0.1:P2,..." (all servers, running or not).
    std::string connect_string() const;
    /// "127.0.0.1:Pi".
    std::string connect_string(int i) const;
    /// With server_options::tls (not with dynamic_config): every server's TLS port, as
    /// connect_string() lists the plaintext ones; server(i).tls_port() is one of them.
    std::string tls_connect_string() const;
    /// Servers started so far (members or not), indexed 0..size()-1.
    int size() const { return static_cast<int>(servers_.size()); }

    /// With options.dynamic_config: the servers in the current configuration (the first n, then
    /// as reconfig() left them), and their connect string, in that order.
    const std::vector<int>& members() const { return members_; }
    std::string members_connect_string() const;
    /// Server i's line of the dynamic configuration:
    /// "server.<i+1>=127.0.0.1:<quorum>:<election>:participant;127.0.0.1:<client>".
    std::string server_line(int i) const;
    /// Starts a new server that joins the ensemble (its dynamic configuration: the members and
    /// itself) and waits (60 s at most) until it follows the leader; it votes once reconfig() has
    /// added it. Returns its index. Throws std::logic_error without options.dynamic_config.
    int add_server();
    /// Adds the servers `add` (from add_server()) to the configuration and removes `remove`, in
    /// one reconfiguration, sent through a running member that stays. Throws std::runtime_error
    /// with the CLI's output unless the new configuration was committed. A removed server keeps
    /// running until stop().
    void reconfig(const std::vector<int>& add, const std::vector<int>& remove);

    /// Index of the server whose `srvr` says "Mode: leader", -1 if none.
    int leader() const;
    /// True once every running server serves (leader or follower) and exactly one leads.
    bool wait_quorum(std::chrono::milliseconds timeout);

    void stop(int i) { server(i).stop(); }
    void kill(int i) { server(i).kill(); }
    /// Restarts server i (same ports and data) and waits until it answers ruok (not for quorum).
    void start(int i) { server(i).start(); }
    bool running(int i) const { return server(i).running(); }
    pid_t pid(int i) const { return server(i).pid(); }
    std::uint16_t port(int i) const { return server(i).port(); }
    std::string four_letter(int i, const std::string& cmd) const { return server(i).four_letter(cmd); }
    std::string log_tail(int i, std::size_t lines = 80) const { return server(i).log_tail(lines); }

    /// A network partition around server i (needs options.proxy_server_links, else throws
    /// std::logic_error): blackholes every link between server i and the others (quorum and
    /// election, both directions), which holds their traffic on existing and new connections;
    /// clients' connections to every server are untouched. Followers drop a leader they have
    /// not heard from in syncLimit ticks, and a leader steps down as soon as it has been out of
    /// touch with a majority for that long.
    void isolate(int i);
    /// Ends every isolate(): the held traffic between servers goes on in order, as TCP's
    /// retransmissions would after a partition heals.
    void heal();

    zk_server& server(int i);
    const zk_server& server(int i) const;

    void keep_files() { keep_ = true; }
    std::filesystem::path dir() const { return dir_; }

private:
    // Server `from`'s connections to server `to` (with options.proxy_server_links).
    struct server_link {
        int from = 0;
        int to = 0;
        std::unique_ptr<fault_proxy> quorum;
        std::unique_ptr<fault_proxy> election;
    };

    // A server's own ports (its quorum and election ports as the others reach them may be proxies).
    struct server_ports {
        std::uint16_t client = 0;
        std::uint16_t quorum = 0;
        std::uint16_t election = 0;
        std::uint16_t tls = 0;  // with server_options::tls: its secureClientPort
    };

    void launch(int n);
    void make_links(int n);
    server_link& link(int from, int to);
    /// Server i's dir, myid and config (with dynamic_config: its static part, and the dynamic
    /// part listing `members`); returns its dir.
    // Makes member i's directory and myid, and writes the zoo.cfg lines every member shares.
    std::filesystem::path write_member(int i, std::ostringstream& cfg);
    std::filesystem::path write_dynamic_member(int i, const std::vector<int>& members);

    server_options options_;
    std::filesystem::path dir_;
    std::vector<server_link> links_;  // before servers_: destroyed after them
    std::vector<std::unique_ptr<zk_server>> servers_;
    std::vector<server_ports> ports_;  // per server
    std::vector<int> members_;
    bool keep_ = false;
    int uncaught_ = 0;
};

}  // namespace zklock::test
