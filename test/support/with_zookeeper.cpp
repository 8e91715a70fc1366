// with_zookeeper PROGRAM [ARGS...] — starts a throwaway ZooKeeper server on a free loopback port,
// runs PROGRAM with ZK_SERVERS=127.0.0.1:PORT in its environment, stops the server, and exits
// with PROGRAM's status. Used by ctest to run the examples against a real server.
#include "support/zk_server.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

int main(int argc, char** argv)
{
    if (argc < 2) {
        std::fprintf(stderr, "usage: with_zookeeper PROGRAM [ARGS...]\n");
        return 2;
    }
    try {
        zklock::test::zk_server server;
        ::setenv("ZK_SERVERS", server.connect_string().c_str(), 1);
        pid_t child = ::fork();
        if (child == 0) {
            ::execvp(argv[1], argv + 1);
            std::perror("exec");
            ::_exit(127);
        }
        int status = 0;
        ::waitpid(child, &status, 0);
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
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
