// Mixed fleets (issue 13): zklock, Apache Curator 5.4 (a Java program compiled here with Debian's
// JDK, against Debian's libcurator-*-java) and Kazoo 2.8 (Debian's python3-kazoo) contend on one
// lock path of one real server. Every contender logs its grants and releases on CLOCK_MONOTONIC
// (Java's System.nanoTime, Python's time.monotonic_ns and std::chrono::steady_clock all read it),
// and does a read → pause → write of a counter node inside the lock. The merged history must show
// no overlap, grants in queue order across the libraries, and no lost update.
#include "fault_common.hpp"

#include "support/tls_certs.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace zklock;
using namespace zklock::test;
namespace fs = std::filesystem;

namespace {

const fs::path interop_dir = fs::path(ZKLOCK_SOURCE_DIR) / "test" / "interop";

// The Curator worker, compiled once per test process into a temp dir. Returns the classpath.
const std::string& curator_classpath()
{
    static const std::string cp = [] {
        const fs::path out = fs::temp_directory_path() / ("zklock-curator-" + std::to_string(::getpid()));
        fs::create_directories(out);
        std::string jars;
        for (const auto& e : fs::directory_iterator("/usr/share/java")) {
            const std::string n = e.path().filename().string();
            for (const char* want : {"curator-client.jar", "curator-framework.jar", "curator-recipes.jar", "guava.jar",
                                     "slf4j-api.jar", "slf4j-nop.jar", "zookeeper.jar", "zookeeper-jute.jar"})
                if (n == want) jars += ":" + e.path().string();
        }
        const std::string cmd = "javac -nowarn -cp '" + jars.substr(jars.empty() ? 0 : 1) + "' -d '" + out.string() + "' '" +
                                (interop_dir / "CuratorWorker.java").string() + "' 2>&1";
        if (std::system(cmd.c_str()) != 0)
            throw std::runtime_error("cannot compile the Curator worker (javac and libcurator-recipes-java are installed "
                                     "by scripts/install-deps.sh): " + cmd);
        return out.string() + jars;
    }();
    return cp;
}

struct child {
    pid_t pid = -1;
    int status = -1;
};

child spawn(std::vector<std::string> argv)
{
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    child c;
    c.pid = ::fork();
    if (c.pid == 0) {
        ::execvp(args[0], args.data());
        ::_exit(127);
    }
    return c;
}

// Waits (polling, so the io_context keeps serving zklock's contenders) for every child to exit.
awaitable<void> reap(std::vector<child>& kids, std::chrono::seconds limit)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        bool all = true;
        for (auto& k : kids)
            if (k.status < 0) {
                int st = 0;
                if (::waitpid(k.pid, &st, WNOHANG) == k.pid) k.status = st;
                else all = false;
            }
        if (all) co_return;
        if (std::chrono::steady_clock::now() >= deadline) {
            for (auto& k : kids)
                if (k.status < 0) {
                    ::kill(k.pid, SIGKILL);
                    ::waitpid(k.pid, &k.status, 0);
                }
            co_return;
        }
        co_await sleep_for(50ms);
    }
}

std::vector<std::string> curator(const std::string& servers, const std::string& path, const std::string& mode, int rounds,
                                 int hold_ms, const fs::path& log)
{
    return {"java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", curator_classpath(), "CuratorWorker", servers, path, mode,
            std::to_string(rounds), std::to_string(hold_ms), log.string()};
}

// The same over TLS, as Curator users configure it: ZooKeeper's Netty client socket and its
// zookeeper.ssl.* properties, with `who`'s certificate (a PEM key store) and the test CA.
std::vector<std::string> curator_tls(const std::string& servers, const std::string& path, const std::string& mode,
                                     int rounds, int hold_ms, const fs::path& log, std::string_view who)
{
    const auto& certs = shared_tls_certs();
    std::string cp = curator_classpath();
    for (const char* jar : {"netty-buffer", "netty-codec", "netty-common", "netty-handler", "netty-resolver",
                            "netty-transport", "netty-transport-native-epoll", "netty-transport-native-unix-common"})
        cp += ":/usr/share/java/" + std::string(jar) + ".jar";
    return {"java", "-Xshare:auto", "-XX:TieredStopAtLevel=1",
            "-Dzookeeper.client.secure=true",
            "-Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty",
            "-Dzookeeper.ssl.keyStore.location=" + certs.client_keystore(who).string(),
            "-Dzookeeper.ssl.keyStore.type=PEM",
            "-Dzookeeper.ssl.trustStore.location=" + certs.ca_cert().string(),
            "-Dzookeeper.ssl.trustStore.type=PEM",
            "-cp", cp, "CuratorWorker", servers, path, mode, std::to_string(rounds), std::to_string(hold_ms), log.string()};
}

std::vector<std::string> kazoo(const std::string& servers, const std::string& path, const std::string& mode, int rounds,
                               int hold_ms, const fs::path& log)
{
    return {"/usr/bin/python3", (interop_dir / "kazoo_worker.py").string(), servers, path, mode, std::to_string(rounds),
            std::to_string(hold_ms), log.string()};
}

struct event {
    std::int64_t t = 0;
    bool grant = false;
    std::string who;   // library:worker
    std::string node;  // the queue node's name
    bool writer = true;
};

std::vector<event> read_log(const fs::path& file, const std::string& who)
{
    std::vector<event> out;
    std::ifstream in(file);
    std::map<std::string, bool> writer_of;
    for (std::string line; std::getline(in, line);) {
        std::istringstream ls(line);
        std::string what, node, kind;
        event e;
        ls >> what >> e.t >> node >> kind;
        e.grant = what == "grant";
        e.who = who;
        e.node = node;
        if (e.grant) writer_of[node] = kind != "r";
        e.writer = writer_of[node];
        out.push_back(e);
    }
    return out;
}

// A zklock contender: the same loop as the workers, logging into `log`.
template <class Acquire>
awaitable<void> zklock_worker(session& s, std::string counter, int rounds, std::chrono::milliseconds hold, bool writer,
                              std::string who, std::vector<event>& log, Acquire acquire, int& errors)
{
    for (int i = 0; i < rounds; ++i) {
        auto [ec, l] = co_await acquire();
        if (ec) {
            ++errors;
            MESSAGE(who << ": " << ec.message());
            continue;
        }
        const std::string node{detail::base_name(l.node())};
        log.push_back({std::chrono::steady_clock::now().time_since_epoch().count(), true, who, node, writer});
        auto [gec, data, st] = co_await s.async_get_data(counter, tuple);
        co_await sleep_for(hold);
        if (writer && !gec) co_await s.async_set_data(counter, std::to_string(std::atoll(data.c_str()) + 1), -1, tuple);
        log.push_back({std::chrono::steady_clock::now().time_since_epoch().count(), false, who, node, writer});
        co_await l.async_release(tuple);
    }
}

struct verdict {
    std::vector<std::string> problems;
    std::size_t grants = 0, writer_grants = 0;
    std::set<std::string> libraries;
};

// Overlaps (a writer with anyone), and, when `ordered`, grants out of queue-sequence order.
verdict check_history(std::vector<event> events, bool ordered)
{
    verdict v;
    std::sort(events.begin(), events.end(), [](const event& a, const event& b) { return a.t < b.t; });
    std::map<std::string, event> holding;  // node -> its grant
    std::int64_t last_seq = std::numeric_limits<std::int64_t>::min();
    for (const auto& e : events) {
        if (!e.grant) {
            holding.erase(e.node);
            continue;
        }
        ++v.grants;
        v.writer_grants += e.writer;
        v.libraries.insert(e.who.substr(0, e.who.find(':')));
        for (const auto& [node, h] : holding)
            if (e.writer || h.writer) v.problems.push_back("overlap: " + e.who + " (" + e.node + ") granted while " + h.who + " (" + node + ") held");
        holding[e.node] = e;
        const auto q = detail::parse_queue_node(e.node);
        if (!q) {
            v.problems.push_back("not a queue node: " + e.node);
            continue;
        }
        if (ordered && q->seq < last_seq) v.problems.push_back("out of queue order: " + e.who + " (" + e.node + ")");
        last_seq = std::max(last_seq, q->seq);
    }
    for (const auto& [node, h] : holding) v.problems.push_back("never released: " + h.who + " (" + node + ")");
    return v;
}

awaitable<std::int64_t> read_counter(session& s, const std::string& counter)
{
    auto [ec, data, st] = co_await s.async_get_data(counter, tuple);
    co_return ec ? -1 : std::atoll(data.c_str());
}

// Who contends in one run: peer processes, and zklock contenders on two sessions of this process.
struct fleet {
    struct peer {
        std::string library;  // "curator" or "kazoo"
        std::string mode;     // "mutex", "read" or "write"
    };
    std::vector<peer> peers;
    bool zklock_mutex = true;   // zklock's contenders use mutex (else shared_mutex)
    int zklock_writers = 4;
    int zklock_readers = 0;
    bool ordered = true;  // check that grants follow the queue's sequence order
};

// Runs every contender `rounds` times on one fresh path and checks the merged history: no overlap
// (a writer with anyone), queue order if asked, every worker done, no lost update, no orphan.
void run_fleet(const fleet& f, const std::string& name)
{
    constexpr int rounds = 6, hold_ms = 5;
    const fs::path dir = fs::temp_directory_path() / ("zklock-" + name + "-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    (void)curator_classpath();  // compile before the clock starts
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const std::string servers = fault_server().connect_string();
        session a{ex, config_for(servers)}, b{ex, config_for(servers)};
        co_await connect(a);
        co_await connect(b);
        const auto path = unique_path(name);
        const auto counter = path + "-counter";
        co_await a.async_create("/zklock-test", "", create_mode::persistent, tuple);
        auto [cec, cp, cst] = co_await a.async_create(counter, "0", create_mode::persistent, tuple);
        REQUIRE_FALSE(cec);

        std::vector<child> kids;
        for (std::size_t w = 0; w < f.peers.size(); ++w) {
            const auto& p = f.peers[w];
            const auto log = dir / (p.library + "-" + std::to_string(w));
            kids.push_back(spawn(p.library == "curator" ? curator(servers, path, p.mode, rounds, hold_ms, log)
                                                        : kazoo(servers, path, p.mode, rounds, hold_ms, log)));
        }
        std::vector<event> events;
        int errors = 0, done = 0;
        const int contenders = f.zklock_writers + f.zklock_readers;
        for (int w = 0; w < contenders; ++w) {
            session& s = w % 2 ? b : a;
            const bool writer = w < f.zklock_writers;
            asio::co_spawn(ex, [&, w, writer]() -> awaitable<void> {
                mutex m{s, path};
                shared_mutex rw{s, path};
                constexpr auto token = asio::as_tuple(asio::use_awaitable);
                co_await zklock_worker(s, counter, rounds, std::chrono::milliseconds(hold_ms), writer,
                                       "zklock:" + std::to_string(w), events,
                                       [&] {
                                           return f.zklock_mutex ? m.async_acquire(60s, token)
                                                  : writer       ? rw.async_acquire(60s, token)
                                                                 : rw.async_acquire_shared(60s, token);
                                       },
                                       errors);
                ++done;
            }, asio::detached);
        }
        co_await reap(kids, 150s);
        CHECK(co_await wait_until([&] { return done == contenders; }, 60s));
        for (const auto& k : kids) {
            const bool exited_ok = WIFEXITED(k.status) && WEXITSTATUS(k.status) == 0;
            CHECK_MESSAGE(exited_ok, "worker status " << k.status);
        }
        CHECK(errors == 0);

        std::set<std::string> libraries{"zklock"};
        for (std::size_t w = 0; w < f.peers.size(); ++w) {
            const auto& lib = f.peers[w].library;
            auto more = read_log(dir / (lib + "-" + std::to_string(w)), lib + ":" + std::to_string(w));
            events.insert(events.end(), more.begin(), more.end());
            libraries.insert(lib);
        }
        const auto v = check_history(events, f.ordered);
        for (const auto& p : v.problems) FAIL_CHECK(p);
        CHECK(v.grants == (f.peers.size() + static_cast<std::size_t>(contenders)) * rounds);
        CHECK(v.libraries == libraries);
        CHECK(co_await read_counter(a, counter) == static_cast<std::int64_t>(v.writer_grants));  // no lost update
        CHECK((co_await children_of(a, path)).empty());                                        // no orphan
        co_await a.async_close();
        co_await b.async_close();
    }, std::chrono::seconds(240));
    fs::remove_all(dir);
}

}  // namespace

TEST_CASE("interop: zklock, Curator and Kazoo contend on one exclusive lock: no overlap, queue order, no lost update")
{
    run_fleet({.peers = {{"curator", "mutex"}, {"kazoo", "mutex"}, {"curator", "mutex"}, {"kazoo", "mutex"}}}, "interop-x");
}

TEST_CASE("interop: read/write locks: zklock's shared_mutex with Curator's InterProcessReadWriteLock, and with Kazoo's WriteLock")
{
    SUBCASE("Curator readers and writers")
    {
        run_fleet({.peers = {{"curator", "read"}, {"curator", "write"}, {"curator", "read"}},
                   .zklock_mutex = false, .zklock_writers = 2, .zklock_readers = 2, .ordered = false},
                  "interop-rw-curator");
    }
    SUBCASE("Kazoo writers")
    {
        // Kazoo 2.8's ReadLock waits on the youngest writer in the queue, even one queued after it,
        // which deadlocks with any writer behind it until a timeout (a Kazoo bug: Kazoo alone shows
        // it), so Kazoo takes part as a writer only.
        run_fleet({.peers = {{"kazoo", "write"}, {"kazoo", "write"}},
                   .zklock_mutex = false, .zklock_writers = 2, .zklock_readers = 2, .ordered = false},
                  "interop-rw-kazoo");
    }
}

TEST_CASE("interop: a zklock holder whose session expires while a Curator waiter is next is told before Curator is granted")
{
    const fs::path dir = fs::temp_directory_path() / ("zklock-interop-exp-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    (void)curator_classpath();
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto& server = fault_server();
        const std::string servers = server.connect_string();
        fault_proxy proxy{server.port()};
        session admin{ex, config_for(servers)};
        session h{ex, config_for(proxy.connect_string(), 4000ms)};  // told at 3.6 s, expired at 4-4.2 s
        co_await connect(admin);
        co_await connect(h);
        const auto path = unique_path("interop-expiry");
        co_await admin.async_create("/zklock-test", "", create_mode::persistent, tuple);
        auto [cec, cp, cst] = co_await admin.async_create(path + "-counter", "0", create_mode::persistent, tuple);
        REQUIRE_FALSE(cec);
        mutex m{h, path};
        auto l = co_await m.async_acquire(5s);
        REQUIRE(l.owns_lock());
        const auto held_node = std::string(detail::base_name(l.node()));
        std::vector<child> kids{spawn(curator(servers, path, "mutex", 1, 0, dir / "curator"))};
        REQUIRE(co_await wait_children(admin, path, 2, 30s) == 2);  // Curator queued behind us

        proxy.blackhole();  // the holder is cut off: its session expires on the server
        auto [lost_ec] = co_await l.async_wait_lost(tuple);
        const auto told = std::chrono::steady_clock::now().time_since_epoch().count();
        CHECK(lost_ec == errc::session_expired);
        co_await reap(kids, 60s);
        REQUIRE(WIFEXITED(kids[0].status));
        CHECK(WEXITSTATUS(kids[0].status) == 0);
        auto events = read_log(dir / "curator", "curator:0");
        REQUIRE(events.size() == 2);
        CHECK(events[0].grant);
        CHECK(events[0].node != held_node);
        CHECK(events[0].t > told);  // the holder knew before Curator held the lock
        proxy.pass();
        co_await l.async_release(tuple);
        co_await h.async_close(tuple);
        co_await admin.async_close();
    }, std::chrono::seconds(120));
    fs::remove_all(dir);
}

TEST_CASE("interop: over TLS, a Curator client holds the lock and a zklock client waits on the same path")
{
    const fs::path dir = fs::temp_directory_path() / ("zklock-interop-tls-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    (void)curator_classpath();
    const auto& certs = shared_tls_certs();
    zk_server server{server_options{.tick_time = 200ms, .tls = certs.server_tls()}};
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        // Both with alice's certificate: one x509 identity, so both may write the nodes.
        session_config cfg = config_for(server.tls_connect_string());
        cfg.tls.enabled = true;
        cfg.tls.ca_file = certs.ca_cert().string();
        cfg.tls.cert_file = certs.client_cert("alice").string();
        cfg.tls.key_file = certs.client_key("alice").string();
        session z{ex, cfg};
        co_await connect(z);
        const auto root = "/zklock-interop-tls-" + std::to_string(::getpid());
        const auto path = root + "/lock";
        co_await z.async_create(root, "", create_mode::persistent);
        co_await z.async_create(path + "-counter", "0", create_mode::persistent);
        std::vector<child> kids{spawn(curator_tls(server.tls_connect_string(), path, "mutex", 1, 1500, dir / "curator", "alice"))};
        REQUIRE(co_await wait_children(z, path, 1, 30s) == 1);  // Curator holds the lock
        mutex m{z, path};
        std::int64_t granted_at = 0;
        bool done = false;
        asio::co_spawn(ex, [&]() -> awaitable<void> {
            auto l = co_await m.async_acquire(60s);
            granted_at = std::chrono::steady_clock::now().time_since_epoch().count();
            auto [gec, data, st] = co_await z.async_get_data(path + "-counter", tuple);
            CHECK(data == "1");  // Curator's write, made over TLS while it held the lock
            co_await l.async_release();
            done = true;
        }, asio::detached);
        CHECK(co_await wait_children(z, path, 2, 10s) == 2);  // we wait behind Curator
        co_await reap(kids, 60s);
        REQUIRE(WIFEXITED(kids[0].status));
        CHECK(WEXITSTATUS(kids[0].status) == 0);
        CHECK(co_await wait_until([&] { return done; }, 20s));
        auto events = read_log(dir / "curator", "curator:0");
        REQUIRE(events.size() == 2);
        CHECK(events[0].grant);
        CHECK_FALSE(events[1].grant);
        CHECK(granted_at > events[1].t);  // granted after Curator released
        co_await z.async_close();
    }, std::chrono::seconds(120));
    fs::remove_all(dir);
}

TEST_CASE("guarded writes: a holder whose node is gone cannot write, even before it has heard of the loss")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const std::string servers = fault_server().connect_string();
        session h{ex, config_for(servers)}, other{ex, config_for(servers)};
        co_await connect(h);
        co_await connect(other);
        const auto path = unique_path("guarded");
        const auto data = path + "-data";
        mutex m{h, path};
        auto l = co_await m.async_acquire(5s);
        co_await h.async_create(data, "0", create_mode::persistent, tuple);

        // While held: the ops commit, one result per op (the check is not among them).
        std::vector<multi_op> ops;
        ops.push_back(multi_op::set_data(data, "1"));
        ops.push_back(multi_op::create(data + "-child", "c"));
        auto [ec, results] = co_await l.async_guarded_multi(ops, tuple);
        CHECK_FALSE(ec);
        CHECK(results.size() == 2);
        auto [gec, value, st] = co_await other.async_get_data(data, tuple);
        CHECK(value == "1");

        // Someone deletes our node. Nothing awaits the lease, so it has not heard (status held).
        co_await other.async_remove(l.node(), -1);
        co_await sleep_for(100ms);
        CHECK(l.status() == lease_status::held);
        std::vector<multi_op> late;
        late.push_back(multi_op::set_data(data, "2"));
        late.push_back(multi_op::remove(data + "-child"));
        auto [lec, lres] = co_await l.async_guarded_multi(late, tuple);
        CHECK(lec == errc::lock_lost);
        CHECK(l.status() == lease_status::lost);  // and now it knows
        auto [gec2, value2, st2] = co_await other.async_get_data(data, tuple);
        CHECK(value2 == "1");  // no partial effect
        auto [eec, exists] = co_await other.async_exists(data + "-child", tuple);
        CHECK(exists.has_value());
        CHECK(lres.size() == late.size());
        for (auto& r : lres) CHECK(r.ec == errc::lock_lost);
        // A lost lease refuses at once; an empty or released one too: one result per op, each
        // carrying the error.
        auto [lec2, lres2] = co_await l.async_guarded_multi(late, tuple);
        CHECK(lec2 == errc::lock_lost);
        REQUIRE(lres2.size() == late.size());
        for (auto& r : lres2) CHECK(r.ec == errc::lock_lost);
        lease empty;
        auto [eec2, eres] = co_await empty.async_guarded_multi(late, tuple);
        CHECK(eec2 == errc::already_released);
        REQUIRE(eres.size() == late.size());
        for (auto& r : eres) CHECK(r.ec == errc::already_released);
        auto released = co_await m.async_acquire(5s);
        co_await released.async_release();
        auto [rec, rres] = co_await released.async_guarded_multi(late, tuple);
        CHECK(rec == errc::already_released);
        REQUIRE(rres.size() == late.size());
        for (auto& r : rres) CHECK(r.ec == errc::already_released);
        co_await h.async_close();
        co_await other.async_close();
    });
}

TEST_CASE("guarded writes: a write in flight when the connection times out reports a connection loss")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        fault_proxy proxy{fault_server().port()};
        session h{ex, config_for(proxy.connect_string(), 3000ms)};
        co_await connect(h);
        const auto path = unique_path("guarded-timeout");
        mutex m{h, path};
        auto l = co_await m.async_acquire(5s);
        proxy.blackhole();  // the C client gives up on the silent connection after 2/3 of 3 s
        std::vector<multi_op> ops;
        ops.push_back(multi_op::create(path + "-data", "x"));
        ops.push_back(multi_op::set_data(path, "y"));
        auto [ec, res] = co_await l.async_guarded_multi(ops, tuple);
        MESSAGE("guarded write cut off: " << ec.message());
        CHECK(ec == zk_errc::connection_loss);
        REQUIRE(res.size() == ops.size());
        for (auto& r : res) CHECK(r.ec == zk_errc::connection_loss);
        proxy.pass();
        co_await h.async_close();
    });
}

TEST_CASE("guarded writes: a holder whose session expired cannot write through the session that replaced it")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto& server = fault_server();
        fault_proxy proxy{server.port()};
        session h{ex, config_for(proxy.connect_string(), 2000ms)}, other{ex, config_for(server.connect_string())};
        co_await connect(h);
        co_await connect(other);
        const auto path = unique_path("guarded-expiry");
        const auto data = path + "-data";
        co_await other.async_create("/zklock-test", "", create_mode::persistent, tuple);
        co_await other.async_create(data, "0", create_mode::persistent, tuple);
        mutex m{h, path};
        auto l = co_await m.async_acquire(5s);
        const auto gen = h.generation();
        proxy.blackhole();
        CHECK(co_await wait_children(other, path, 0, 20s) == 0);  // the server expired the session
        proxy.pass();
        CHECK(co_await wait_until([&] { return h.generation() > gen && h.state() == session_state::connected; }, 20s));
        std::vector<multi_op> ops;
        ops.push_back(multi_op::set_data(data, "stale"));
        auto [ec, res] = co_await l.async_guarded_multi(ops, tuple);
        CHECK((ec == errc::lock_lost || ec == errc::session_expired));
        auto [gec, value, st] = co_await other.async_get_data(data, tuple);
        CHECK(value == "0");
        co_await h.async_close();
        co_await other.async_close();
    });
}
