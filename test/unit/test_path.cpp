#include <zklock/detail/path.hpp>

#include <doctest/doctest.h>

#include <set>

using namespace zklock;
using namespace zklock::detail;

TEST_CASE("lock paths: canonical absolute paths are accepted")
{
    CHECK_FALSE(validate_lock_path("/a"));
    CHECK_FALSE(validate_lock_path("/locks/orders"));
    CHECK_FALSE(validate_lock_path("/a.b/c..d/.e"));
    CHECK_FALSE(validate_lock_path("/zookeeperish/x"));
    CHECK_FALSE(validate_lock_path(std::string(1024, 'a').replace(0, 1, "/")));
}

TEST_CASE("lock paths: bad input is rejected with errc::invalid_path")
{
    using namespace std::string_literals;
    for (std::string bad : {""s, "/"s, "a"s, "locks/x"s, "/locks/"s, "//locks"s, "/a//b"s, "/a/./b"s, "/a/../b"s,
                            "/."s, "/.."s, "/a\0b"s, "/a\nb"s, "/a\x7f"s, "/zookeeper"s, "/zookeeper/quota"s,
                            "/" + std::string(1024, 'a')}) {
        CAPTURE(bad);
        CHECK(validate_lock_path(bad) == errc::invalid_path);
    }
}

TEST_CASE("server lists")
{
    CHECK_FALSE(validate_servers("127.0.0.1:2181"));
    CHECK_FALSE(validate_servers("a:1,b:2,c:65535"));
    CHECK_FALSE(validate_servers("[::1]:2181"));
    CHECK_FALSE(validate_servers("h:2181/app/root"));
    for (const char* bad : {"", ",", "host", "host:", ":2181", "h:0", "h:65536", "h:21x", "h:2181,", "h:1,,h:2",
                            "::1:2181", "h:2181/bad/", "h 1:2"}) {
        CAPTURE(bad);
        CHECK(validate_servers(bad) == errc::invalid_servers);
    }
}

TEST_CASE("queue node names round-trip and order by sequence")
{
    const std::uint64_t id = 0x00ab12cd34ef5678ULL;
    std::string name = node_prefix(node_kind::exclusive, id) + "0000000042";
    CHECK(name == "x-00ab12cd34ef5678-0000000042");
    auto n = parse_queue_node(name);
    REQUIRE(n);
    CHECK(n->id == id);
    CHECK(n->seq == 42);
    CHECK(n->kind == node_kind::exclusive);
    CHECK(parse_queue_node("r-00ab12cd34ef5678--2147483648")->seq == -2147483648LL);

    for (const char* junk : {"", "lock", "x-00ab12cd34ef5678-", "x-00AB12CD34EF5678-0000000001", "q-00ab12cd34ef5678-0000000001",
                             "x-00ab12cd34ef5678-00000001", "x-00ab12cd34ef567-00000000001", "x_00ab12cd34ef5678-0000000001",
                             "x-00ab12cd34ef5678-000000000x"}) {
        CAPTURE(junk);
        CHECK_FALSE(parse_queue_node(junk));
    }

    auto q = make_queue({"x-0000000000000003-0000000010", "readme", "r-0000000000000001-0000000002",
                         "s-0000000000000002-0000000007", "lock-0001"});
    REQUIRE(q.size() == 3);
    CHECK(q[0].seq == 2);
    CHECK(q[1].seq == 7);
    CHECK(q[2].seq == 10);
}

TEST_CASE("attempt ids are distinct and never zero")
{
    std::set<std::uint64_t> seen;
    for (int i = 0; i < 10000; ++i) {
        auto id = new_attempt_id();
        CHECK(id != 0);
        seen.insert(id);
    }
    CHECK(seen.size() == 10000);
}
