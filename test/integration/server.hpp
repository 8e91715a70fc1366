// One real ZooKeeper server per test process (ctest runs each case in its own process, so cases
// run in parallel against servers of their own). tickTime 200 ms: session timeouts 0.4 s to 4 s.
#pragma once

#include "support/zk_server.hpp"

namespace zklock::test {

inline zk_server& shared_server()
{
    static zk_server server{server_options{.tick_time = std::chrono::milliseconds(200)}};
    return server;
}

}  // namespace zklock::test
