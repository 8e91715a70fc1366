// support/zk_ensemble.hpp — a real ZooKeeper quorum of n servers on 127.0.0.1 for tests.
#pragma once

#include "support/zk_server.hpp"

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace zklock::test {

/// n ZooKeeper servers (myid 1..n, indexed 0..n-1 here) with distinct client, quorum and election
/// ports, each in a subdir of one temp dir. With options.start the constructor waits (30 s at
/// most) until the quorum has a leader. Lifetime rules are those of zk_server: the destructor
/// stops every server and removes the dir unless keep_files(), an exception or a noted failure.
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
    int size() const { return static_cast<int>(servers_.size()); }

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

    zk_server& server(int i);
    const zk_server& server(int i) const;

    void keep_files() { keep_ = true; }
    std::filesystem::path dir() const { return dir_; }

private:
    void launch(int n);

    server_options options_;
    std::filesystem::path dir_;
    std::vector<std::unique_ptr<zk_server>> servers_;
    bool keep_ = false;
    int uncaught_ = 0;
};

}  // namespace zklock::test
