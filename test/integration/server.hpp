// One real ZooKeeper server per test process (ctest runs each case in its own process, so cases
// run in parallel against servers of their own). tickTime 200 ms: session timeouts 0.4 s to 4 s.
#pragma once

#include "../common.hpp"
#include "support/zk_server.hpp"

namespace zklock::test {

inline zk_server& shared_server()
{
    static zk_server server{server_options{.tick_time = std::chrono::milliseconds(200)}};
    return server;
}

/// `n` sessions to the shared server.
inline awaitable<sessions> open_sessions(int n) { return open_sessions(shared_server().connect_string(), n); }

}  // namespace zklock::test
