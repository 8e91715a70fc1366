// with_zookeeper PROGRAM [ARGS...] — starts a throwaway ZooKeeper server on a free loopback port,
// runs PROGRAM with ZK_SERVERS=127.0.0.1:PORT in its environment, stops the server, and exits
// with PROGRAM's status. Used by ctest to run the examples against a real server.
#include "support/process_util.hpp"
#include "support/zk_server.hpp"

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: with_zookeeper PROGRAM [ARGS...]\n");
        return 2;
    }
    try {
        zklock::test::zk_server server;
        // PROGRAM shares our standard streams.
        zklock::test::child_process program;
        program.start(std::vector<std::string>(argv + 1, argv + argc),
                      {.inherit_stdin = true, .env = {"ZK_SERVERS=" + server.connect_string()}, .search_path = true});
        const int code = program.wait();
        if (code != 0) {
            server.keep_files();
            std::fprintf(stderr, "with_zookeeper: %s exited with %d; server log:\n%s\n", argv[1], code,
                         server.log_tail(40).c_str());
        }
        return code;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "with_zookeeper: %s\n", e.what());
        return 1;
    }
}
