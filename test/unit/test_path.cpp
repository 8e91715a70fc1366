#include <zklock/detail/path.hpp>
#include <zklock/detail/recipe.hpp>

#include <doctest/doctest.h>

#include <set>

#include <sys/wait.h>
#include <unistd.h>

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

TEST_CASE("lock paths: invalid UTF-8 and every character the server refuses are invalid_path, not a server error")
{
    using namespace std::string_literals;
    for (std::string bad : {"/a\xc2\x85"s,            // U+0085 (C1 control)
                            "/a\xc2\x9f"s,            // U+009F
                            "/a\xff"s, "/a\x80"s,      // not UTF-8
                            "/a\xc0\xaf"s,            // overlong '/'
                            "/a\xe0\x80\xaf"s,        // overlong
                            "/a\xc3"s,                // truncated
                            "/a\xed\xa0\x80"s,        // an encoded surrogate
                            "/a\xee\x80\x80"s,        // U+E000 (refused by the server: U+D800..U+F8FF)
                            "/a\xef\xbf\xb0"s,        // U+FFF0
                            "/a\xef\xbf\xbf"s,        // U+FFFF
                            "/a\xf0\x9f\x94\x92"s,    // U+1F512: outside the BMP (a surrogate pair to the server)
                            "/a\xf4\x90\x80\x80"s}) {  // above U+10FFFF
        CAPTURE(bad);
        CHECK(validate_lock_path(bad) == errc::invalid_path);
    }
    for (std::string good : {"/verrou-\xc3\xa9t\xc3\xa9"s, "/\xe9\x8e\x96"s, "/a\xc2\xa0" "b"s, "/\xef\xbf\xaf"s}) {
        CAPTURE(good);
        CHECK_FALSE(validate_lock_path(good));
    }
}

TEST_CASE("lock paths: each refusal names the rule it breaks, the error code stays invalid_path")
{
    using namespace std::string_literals;
    struct rule {
        std::string path;
        std::string_view problem;
    };
    const std::string long_path = "/" + std::string(1024, 'a');
    const rule rules[] = {
        {""s, "the path is empty"},
        {"locks/x"s, "the path is not absolute (it must start with '/')"},
        {"/"s, "the path is the root '/' (a lock needs a node of its own)"},
        {long_path, "the path is longer than 1024 bytes"},
        {"/locks/"s, "the path ends with '/'"},
        {"//locks"s, "a component is empty ('//')"},
        {"/a//b"s, "a component is empty ('//')"},
        {"/a/./b"s, "a component is '.'"},
        {"/."s, "a component is '.'"},
        {"/a/../b"s, "a component is '..'"},
        {"/a\xff"s, "the path is not valid UTF-8"},
        {"/a\xed\xa0\x80"s, "the path is not valid UTF-8"},  // an encoded surrogate
        {"/a\0b"s, "the path contains a control character (C0 or C1, NUL included)"},
        {"/a\nb"s, "the path contains a control character (C0 or C1, NUL included)"},
        {"/a\x7f"s, "the path contains a control character (C0 or C1, NUL included)"},
        {"/a\xc2\x85"s, "the path contains a control character (C0 or C1, NUL included)"},  // U+0085
        {"/a\xee\x80\x80"s,
         "the path contains a character ZooKeeper refuses (U+D800..U+F8FF, U+FFF0..U+FFFF, or one outside the BMP)"},
        {"/a\xf0\x9f\x94\x92"s,
         "the path contains a character ZooKeeper refuses (U+D800..U+F8FF, U+FFF0..U+FFFF, or one outside the BMP)"},
        {"/zookeeper"s, "the path is under /zookeeper, which the server reserves"},
        {"/zookeeper/quota"s, "the path is under /zookeeper, which the server reserves"},
    };
    for (const auto& r : rules) {
        CAPTURE(r.path);
        CHECK(lock_path_problem(r.path) == r.problem);
        CHECK(validate_lock_path(r.path) == errc::invalid_path);
    }
    // The first rule broken is the one named; an accepted path has none.
    CHECK(lock_path_problem("/a/../b/") == "the path ends with '/'");
    CHECK(lock_path_problem("/zookeeper/..") == "the path is under /zookeeper, which the server reserves");
    CHECK(lock_path_problem("/a/./b\n") == "a component is '.'");
    CHECK(lock_path_problem("/locks/orders").empty());
    CHECK(lock_path_problem("/zookeeperish/x").empty());
}

TEST_CASE("server lists")
{
    CHECK_FALSE(validate_servers("127.0.0.1:2181"));
    CHECK_FALSE(validate_servers("a:1,b:2,c:65535"));
    CHECK_FALSE(validate_servers("[::1]:2181"));
    CHECK_FALSE(validate_servers("h:2181/app/root"));
    for (const char* bad : {"", ",", "host", "host:", ":2181", "h:0", "h:65536", "h:21x", "h:2181,", "h:1,,h:2",
                            "::1:2181", "h:2181/bad/", "h 1:2", "[h]:2181", "[::1:2181", "[::1%]:2181", "h]:1"}) {
        CAPTURE(bad);
        CHECK(validate_servers(bad) == errc::invalid_servers);
    }
    CHECK_FALSE(validate_servers("[fe80::1%eth0]:2181"));
    CHECK_FALSE(validate_servers("[::ffff:10.0.0.1]:2181,h:1"));
}

TEST_CASE("queue node names round-trip and order by sequence")
{
    const std::uint64_t id = 0x00ab12cd34ef5678ULL;
    std::string name = node_prefix(node_kind::exclusive, id) + "0000000042";
    CHECK(name == "x-00ab12cd34ef5678-lock-0000000042");  // Curator's InterProcessMutex marker
    CHECK(node_prefix(writer_recipe, id) == "x-00ab12cd34ef5678-__WRIT__");
    CHECK(node_prefix(*find_recipe("election"), id) == "x-00ab12cd34ef5678-lock-");
    CHECK(node_prefix(*find_recipe("election"), id, 1) == "x-00ab12cd34ef5678-latch-");
    CHECK(node_prefix(*find_recipe("election"), id, 2) == "x-00ab12cd34ef5678-__lock__");
    CHECK(node_prefix(node_kind::shared, id) == "r-00ab12cd34ef5678-__READ__");
    CHECK(node_prefix(node_kind::permit, id) == "s-00ab12cd34ef5678-");
    for (std::string own : {"x-00ab12cd34ef5678-__WRIT__0000000042", "r-00ab12cd34ef5678-__READ__0000000042",
                            "x-00ab12cd34ef5678-0000000042" /* zklock < 0.2 */}) {
        CAPTURE(own);
        auto v = parse_queue_node(own);
        REQUIRE(v);
        CHECK(v->id == id);
        CHECK(v->seq == 42);
        CHECK(v->library == lock_library::zklock);
    }
    auto n = parse_queue_node(name);
    REQUIRE(n);
    CHECK(n->id == id);
    CHECK(n->seq == 42);
    CHECK(n->kind == node_kind::exclusive);
    CHECK(parse_queue_node("r-00ab12cd34ef5678--2147483648")->seq == -2147483648LL);
    CHECK(parse_queue_node("r-00ab12cd34ef5678-__READ__-2147483648")->seq == -2147483648LL);
    CHECK(parse_queue_node("x-00ab12cd34ef5678-lock--000000001")->seq == -1);
    // Every negative width after the 32-bit counter wrapped, old and new names, ours and foreign.
    for (std::string seq : {"-000000001", "-999999999", "-1000000000", "-1500000000", "-2000000000", "-2147483647"}) {
        CAPTURE(seq);
        const std::int64_t want = std::stoll(seq);
        for (std::string name : {"s-00ab12cd34ef5678-" + seq, "x-00ab12cd34ef5678-" + seq, "x-00ab12cd34ef5678-lock-" + seq,
                                 "r-00ab12cd34ef5678-__READ__" + seq, "_c_u-lock-" + seq, "k__lock__" + seq}) {
            CAPTURE(name);
            auto v = parse_queue_node(name);
            REQUIRE(v);
            CHECK(v->seq == want);
        }
    }
    CHECK(parse_queue_node("_c_u-lock--000000001")->seq == -1);
    CHECK(parse_queue_node("_c_u-lock-0000000001")->seq == 1);
    // A reader's marker on an exclusive zklock name is not ours; Curator would take it for a reader.
    CHECK(parse_queue_node("x-00ab12cd34ef5678-__READ__0000000001")->library == lock_library::curator);

    for (const char* junk : {"", "lock", "x-00ab12cd34ef5678-", "x-00AB12CD34EF5678-0000000001", "q-00ab12cd34ef5678-0000000001",
                             "x-00ab12cd34ef5678-00000001", "x-00ab12cd34ef567-00000000001", "x_00ab12cd34ef5678-0000000001",
                             "x-00ab12cd34ef5678-000000000x", "lock-000000001", "lock-2147483648", "x-00ab12cd34ef5678-lock-2147483648", "_c_1-lock-00000000001", "abc__lock__+000000001", "lease-0000000001"}) {
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

TEST_CASE("Curator's and Kazoo's lock nodes are contenders, with their kinds and libraries")
{
    struct expect {
        const char* name;
        node_kind kind;
        lock_library lib;
        std::int64_t seq;
    };
    for (const auto& e : {
             expect{"_c_5e1c3b10-7f3a-4c4e-9a53-2f1d0c8a9b7e-lock-0000000007", node_kind::exclusive, lock_library::curator, 7},
             expect{"lock-0000000008", node_kind::exclusive, lock_library::curator, 8},
             expect{"_c_5e1c3b10-7f3a-4c4e-9a53-2f1d0c8a9b7e-__READ__0000000009", node_kind::shared, lock_library::curator, 9},
             expect{"_c_5e1c3b10-7f3a-4c4e-9a53-2f1d0c8a9b7e-__WRIT__0000000010", node_kind::exclusive, lock_library::curator, 10},
             expect{"4b1d3c1e2f8a4b6c9d0e1f2a3b4c5d6e__lock__0000000011", node_kind::exclusive, lock_library::kazoo, 11},
             expect{"4b1d3c1e2f8a4b6c9d0e1f2a3b4c5d6e__rlock__0000000012", node_kind::shared, lock_library::kazoo, 12},
             expect{"4b1d3c1e2f8a4b6c9d0e1f2a3b4c5d6e__lock__-000000003", node_kind::exclusive, lock_library::kazoo, -3},
         }) {
        CAPTURE(e.name);
        auto v = parse_queue_node(e.name);
        REQUIRE(v);
        CHECK(v->kind == e.kind);
        CHECK(v->library == e.lib);
        CHECK(v->seq == e.seq);
        CHECK(v->id == 0);  // never one of our attempt ids
    }
    // One queue across libraries, in sequence order.
    auto q = make_queue({"abc__lock__0000000003", "x-0000000000000001-lock-0000000001", "_c_u-__READ__0000000002",
                         "lease-x", "r-0000000000000002-__READ__0000000004"});
    REQUIRE(q.size() == 4);
    CHECK(q[0].library == lock_library::zklock);
    CHECK(q[1].library == lock_library::curator);
    CHECK(q[2].library == lock_library::kazoo);
    CHECK(q[3].kind == node_kind::shared);
}

TEST_CASE("attempt ids differ between a process and its fork() child (no generator state is inherited)")
{
    (void)new_attempt_id();  // the parent has used zklock before forking
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        std::uint64_t ids[4];
        for (auto& id : ids) id = new_attempt_id();
        const bool ok = ::write(fds[1], ids, sizeof ids) == static_cast<ssize_t>(sizeof ids);
        ::_exit(ok ? 0 : 1);
    }
    ::close(fds[1]);  // a child that dies before writing gives EOF, not a hang
    std::uint64_t child[4] = {};
    std::set<std::uint64_t> mine;
    for (int i = 0; i < 4; ++i) mine.insert(new_attempt_id());
    std::size_t got = 0;
    while (got < sizeof child) {
        const ssize_t n = ::read(fds[0], reinterpret_cast<char*>(child) + got, sizeof child - got);
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(fds[0]);
    REQUIRE(got == sizeof child);
    for (auto id : child) CHECK(mine.count(id) == 0);
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

TEST_CASE("lock kinds: one enum, its node letters and its names")
{
    using zklock::lock_kind;
    kind_set bits = 0;
    for (std::size_t i = 0; i < std::size(zklock::lock_kinds); ++i) {
        const lock_kind k = zklock::lock_kinds[i];
        CAPTURE(zklock::to_string(k));
        CHECK(static_cast<std::size_t>(k) == i);  // in the order of their values: the metrics index by it
        CHECK(std::string(zklock::to_string(k)) != "?");
        CHECK((bits & kind_bit(k)) == 0);  // each kind its own bit
        bits = static_cast<kind_set>(bits | kind_bit(k));
        CHECK(kind_of_letter(kind_letter(k)) == k);
        const auto v = parse_queue_view(node_prefix(k, 0x1234) + "0000000042");
        REQUIRE(v);
        CHECK(v->kind == k);
        CHECK(v->seq == 42);
    }
    CHECK_FALSE(kind_of_letter('q'));
    CHECK(std::string(zklock::to_string(lock_kind::shared)) == "shared");
    CHECK(std::string(zklock::to_string(zklock::lock_library::curator)) == "curator");
    // No kind after the last one listed: to_string names every kind (the compiler sees to that),
    // so a kind missing from lock_kinds has a name here.
    CHECK(std::string(zklock::to_string(static_cast<lock_kind>(std::size(zklock::lock_kinds)))) == "?");
}

TEST_CASE("recipes: every name is one recipe's, and the election's names are recognised")
{
    // Each recipe's own names parse back to it, whatever marker the lock object picked.
    for (const recipe* r : recipes()) {
        for (std::size_t m = 0; m < r->markers.size(); ++m) {
            const auto v = parse_queue_view(node_prefix(*r, 0x77, m) + "0000000007");
            CAPTURE(r->name);
            CAPTURE(m);
            REQUIRE(v);
            CHECK(v->kind == r->kind);
            CHECK(v->library == zklock::lock_library::zklock);
            CHECK(v->id == 0x77);
            // A marker two recipes share names the first of them (a "lock-" candidate is a mutex).
            const recipe* first = nullptr;
            for (const recipe* o : recipes())
                for (auto om : o->markers)
                    if (!first && o->kind == r->kind && om == r->markers[m]) first = o;
            CHECK(v->what == (r->markers[m].empty() ? &base_recipe(r->kind) : first));
        }
    }
    // Curator's LeaderLatch: "latch-" (protected or not); Kazoo's Election is a Kazoo Lock.
    for (std::string_view name : {"_c_0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0-latch-0000000012", "latch-0000000012"}) {
        const auto v = parse_queue_view(name);
        REQUIRE(v);
        CHECK(v->what == find_recipe("election"));
        CHECK(v->library == zklock::lock_library::curator);
        CHECK(v->kind == node_kind::exclusive);
        CHECK(v->seq == 12);
    }
    const auto kazoo = parse_queue_view("0123456789abcdef0123456789abcdef__lock__0000000003");
    REQUIRE(kazoo);
    CHECK(kazoo->library == zklock::lock_library::kazoo);
    CHECK(kazoo->what == &mutex_recipe);
    // Cohort mode applies to the locks, not to the semaphore nor the election.
    CHECK(mutex_recipe.cohort);
    CHECK(writer_recipe.cohort);
    CHECK(reader_recipe.cohort);
    CHECK_FALSE(semaphore_recipe.cohort);
    CHECK_FALSE(find_recipe("election")->cohort);
}
