#include <zklock/detail/path.hpp>
#include <zklock/detail/server_list.hpp>

#include <doctest/doctest.h>

#include <string>
#include <utility>

using namespace zklock;
using namespace zklock::detail;

TEST_CASE("server lists: the chroot is cut off, and \"/\" counts as none")
{
    auto s = split_chroot("h1:1,h2:2/app/x");
    CHECK(s.hosts == "h1:1,h2:2");
    CHECK(s.chroot == "/app/x");
    s = split_chroot("h1:1");
    CHECK(s.hosts == "h1:1");
    CHECK(s.chroot.empty());
    s = split_chroot("h1:1/");
    CHECK(s.hosts == "h1:1");
    CHECK(s.chroot.empty());
}

TEST_CASE("server lists: an entry as a resolver's host and service, IPv6 without brackets")
{
    CHECK(host_and_port("zk1.example:2181") == std::pair<std::string, std::string>{"zk1.example", "2181"});
    CHECK(host_and_port("127.0.0.1:0010") == std::pair<std::string, std::string>{"127.0.0.1", "0010"});
    CHECK(host_and_port("[::1]:2181") == std::pair<std::string, std::string>{"::1", "2181"});
    CHECK(host_and_port("[fe80::1%lo]:2181") == std::pair<std::string, std::string>{"fe80::1%lo", "2181"});
}

TEST_CASE("server lists: entries compare in any order, repeats ignored")
{
    CHECK(server_entries("a:1,b:2,,c:3") == std::vector<std::string_view>{"a:1", "b:2", "c:3"});
    CHECK(same_entries("a:1,b:2", "b:2,a:1"));
    CHECK(same_entries("a:1,b:2,a:1", "b:2,a:1"));
    CHECK_FALSE(same_entries("a:1,b:2", "a:1,b:3"));
    CHECK_FALSE(same_entries("a:1", "a:1,b:2"));
}

TEST_CASE("ensemble config: every member's client address, in the members' order")
{
    const char* config = "server.1=127.0.0.1:2888:3888:participant;127.0.0.1:2181\n"
                         "server.2=127.0.0.2:2888:3888:participant;127.0.0.2:2182\n"
                         "server.3=127.0.0.3:2888:3888:observer;127.0.0.3:2183\n"
                         "version=100000004\n";
    CHECK(ensemble_client_list(config) == "127.0.0.1:2181,127.0.0.2:2182,127.0.0.3:2183");
}

TEST_CASE("ensemble config: a wildcard or missing client address gives the quorum host")
{
    CHECK(ensemble_client_list("server.1=zk1.example:2888:3888:participant;0.0.0.0:2181\n") == "zk1.example:2181");
    CHECK(ensemble_client_list("server.1=zk1.example:2888:3888;2181") == "zk1.example:2181");
    CHECK(ensemble_client_list("server.1=zk1.example:2888:3888;[::]:2181") == "zk1.example:2181");
    CHECK(ensemble_client_list("server.7=[fd00::7]:2888:3888:participant;2181") == "[fd00::7]:2181");
}

TEST_CASE("ensemble config: IPv6, several quorum addresses, CRLF and spaces")
{
    CHECK(ensemble_client_list("server.1=[fd00::1]:2888:3888:participant;[fd00::1]:2181\r\n") == "[fd00::1]:2181");
    CHECK(ensemble_client_list("server.1=10.0.0.1:2888:3888|10.0.1.1:2888:3888:participant;0.0.0.0:2181") ==
          "10.0.0.1:2181");
    CHECK(ensemble_client_list("  server.1 = 10.0.0.1:2888:3888 ; 10.0.0.1:2181  \n\n") == "10.0.0.1:2181");
}

TEST_CASE("ensemble config: members without a client part and repeats are left out")
{
    CHECK(ensemble_client_list("server.1=h1:2888:3888:participant\n"
                               "server.2=h2:2888:3888:participant;h2:2181\n"
                               "server.3=h3:2888:3888:participant;h2:2181\n") == "h2:2181");
}

TEST_CASE("ensemble config: nothing usable, or a line that does not parse, gives nullopt")
{
    using namespace std::string_literals;
    for (std::string bad : {""s, "version=1\n"s, "server.1=h1:2888:3888\n"s,  // no client part anywhere
                            "server.x=h1:2888:3888;2181"s, "server.=h1:2888:3888;2181"s, "server.1"s,
                            "server.1=h1:2888;2181"s, "server.1=h1:2888:3888:leader;2181"s,
                            "server.1=h1:2888:3888;h1:0"s, "server.1=h1:2888:3888;h1:70000"s,
                            "server.1=h1:2888:3888;h1:"s, "server.1=h1:2888:3888;fd00::1:2181"s,
                            "server.1=:2888:3888;2181"s, "server.1=[fd00::1:2888:3888;2181"s,
                            "server.1=h1:2888:3888;2181;2182"s,
                            "server.1=h1:2888:3888;h1:2181\nserver.2=garbage\n"s}) {
        CAPTURE(bad);
        CHECK_FALSE(ensemble_client_list(bad));
    }
}

TEST_CASE("ensemble config: what it gives is a valid server list")
{
    auto l = ensemble_client_list("server.1=[fd00::1]:2888:3888;2181\nserver.2=h2:2888:3888;0.0.0.0:2182\n");
    REQUIRE(l);
    CHECK(*l == "[fd00::1]:2181,h2:2182");
    CHECK_FALSE(validate_servers(*l));
    CHECK_FALSE(validate_servers(*l + "/chroot"));
}
