// Mixed fleets (issue 13): zklock, Apache Curator 5.4 (a Java program compiled here with Debian's
// JDK, against Debian's libcurator-*-java) and Kazoo 2.8 (Debian's python3-kazoo) contend on one
// lock path of one real server. Every contender logs its grants and releases on CLOCK_MONOTONIC
// (Java's System.nanoTime, Python's time.monotonic_ns and std::chrono::steady_clock all read it),
// and does a read → pause → write of a counter node inside the lock. The merged history must show
// no overlap, grants in queue order across the libraries, and no lost update. The election tests
// (further down) do the same for leader election, one foreign election recipe at a time.
#include "fault_common.hpp"

#include "support/curator_worker.hpp"
#include "support/process_util.hpp"
#include "support/tls_certs.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <signal.h>
#include <unistd.h>

using namespace zklock;
using namespace zklock::test;
namespace fs = std::filesystem;

namespace {

const fs::path interop_dir = fs::path(ZKLOCK_SOURCE_DIR) / "test" / "interop";

// The Curator worker's classpath (support/curator_worker.hpp compiles it once per test process).
const std::string& curator_classpath() { return curator_worker_classpath(interop_dir / "CuratorWorker.java"); }

// A worker (java, python3: looked up in PATH) sharing the test's standard streams.
using child = std::unique_ptr<child_process>;

child spawn(const std::vector<std::string>& argv)
{
    auto c = std::make_unique<child_process>();
    c->start(argv, {.inherit_stdin = true, .search_path = true});
    return c;
}

// Waits (polling, so the io_context keeps serving zklock's contenders) for every child to exit;
// past `limit`, kills those still running.
awaitable<void> reap(std::vector<child>& kids, std::chrono::seconds limit)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        if (std::all_of(kids.begin(), kids.end(), [](const child& k) { return k->poll(); })) co_return;
        if (std::chrono::steady_clock::now() >= deadline) {
            for (auto& k : kids) k->kill_and_reap();
            co_return;
        }
        co_await sleep_for(50ms);
    }
}

std::vector<std::string> curator(const std::string& servers, const std::string& path, const std::string& mode, int rounds,
                                 int hold_ms, const fs::path& log)
{
    return curator_worker_argv(interop_dir / "CuratorWorker.java", servers, path, mode, rounds, hold_ms, log);
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
        if (what == "queue") continue;  // a leader's listing: see read_queues
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
        const std::string node{zklock::detail::base_name(l.node())};
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
        const auto q = zklock::detail::parse_queue_node(e.node);
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
        for (const auto& k : kids) CHECK_MESSAGE(k->status == 0, "worker status " << k->status.value_or(-1));
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
        const auto held_node = std::string(zklock::detail::base_name(l.node()));
        std::vector<child> kids;
        kids.push_back(spawn(curator(servers, path, "mutex", 1, 0, dir / "curator")));
        REQUIRE(co_await wait_children(admin, path, 2, 30s) == 2);  // Curator queued behind us

        proxy.blackhole();  // the holder is cut off: its session expires on the server
        auto [lost_ec] = co_await l.async_wait_lost(tuple);
        const auto told = std::chrono::steady_clock::now().time_since_epoch().count();
        CHECK(lost_ec == errc::session_expired);
        co_await reap(kids, 60s);
        REQUIRE(kids[0]->status < 128);  // exited, not killed by a signal
        CHECK(kids[0]->status == 0);
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

TEST_CASE("interop: over TLS, a Curator client holds the lock and a zklock client waits on the same path" * doctest::skip(!ZKLOCK_TEST_TLS))
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
        std::vector<child> kids;
        kids.push_back(spawn(curator_tls(server.tls_connect_string(), path, "mutex", 1, 1500, dir / "curator", "alice")));
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
        REQUIRE(kids[0]->status < 128);  // exited, not killed by a signal
        CHECK(kids[0]->status == 0);
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

// ---- Revocation ----------------------------------------------------------------------------------
//
// One request for both libraries: zklock::revocation_request is Curator's revocation message
// ("__REVOKE__", LockInternals.REVOKE_MESSAGE), so a zklock holder hears Curator's Revoker, and an
// InterProcessMutex made revocable hears a zklock client that writes the request into its node.
// (Kazoo's locks have no revocation.)

namespace {

// A worker's log as words per line: {"grant", ns, node, kind}, {"revoked", ns, node}, ...
std::vector<std::vector<std::string>> log_words(const fs::path& file)
{
    std::vector<std::vector<std::string>> out;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
        std::istringstream ls(line);
        std::vector<std::string> words;
        for (std::string w; ls >> w;) words.push_back(w);
        if (!words.empty()) out.push_back(std::move(words));
    }
    return out;
}

}  // namespace

TEST_CASE("interop: revocation: Curator's Revoker asks zklock holders, whose async_wait_revocation completes")
{
    const fs::path dir = fs::temp_directory_path() / ("zklock-interop-revoke-z-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    (void)curator_classpath();
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const std::string servers = fault_server().connect_string();
        session z{ex, config_for(servers)};
        co_await connect(z);
        co_await z.async_create("/zklock-test", "", create_mode::persistent, tuple);
        // A mutex holder, and a shared_mutex writer that downgraded (a mark in its node's data,
        // which the request replaces).
        const auto path = unique_path("interop-revoke-z");
        mutex m{z, path + "-mutex"};
        shared_mutex rw{z, path + "-rw"};
        std::vector<lease> held;
        held.push_back(co_await m.async_acquire(5s));
        held.push_back(co_await rw.async_acquire(5s));
        co_await held[1].async_downgrade();
        // Shared with the handlers: a lease destroyed by a failed REQUIRE completes them later.
        auto heard = std::make_shared<std::vector<std::optional<error_code>>>(held.size());
        for (std::size_t i = 0; i < held.size(); ++i) {
            REQUIRE(held[i].owns_lock());
            held[i].async_wait_revocation([heard, i](error_code ec) { (*heard)[i] = ec; });
        }

        std::vector<child> kids;
        for (std::size_t i = 0; i < held.size(); ++i)
            kids.push_back(spawn(curator(servers, held[i].node(), "revoke", 1, 0, dir / ("revoke-" + std::to_string(i)))));
        co_await reap(kids, 60s);
        for (std::size_t i = 0; i < held.size(); ++i) {
            REQUIRE(kids[i]->status < 128);  // exited, not killed by a signal
            CHECK(kids[i]->status == 0);
            const auto words = log_words(dir / ("revoke-" + std::to_string(i)));
            REQUIRE(words.size() == 1);
            CHECK(words[0][0] == "revoke");
            CHECK(words[0].back() == std::string(zklock::detail::base_name(held[i].node())));
        }
        CHECK(co_await wait_until([&] { return (*heard)[0] && (*heard)[1]; }, 10s));
        for (std::size_t i = 0; i < held.size(); ++i) {
            CAPTURE(held[i].node());
            CHECK(((*heard)[i] && !*(*heard)[i]));  // completed without error: a request
            CHECK(held[i].revocation_requested());
            CHECK(held[i].owns_lock());  // nothing is enforced: the holder decides
            auto [gec, data, st] = co_await z.async_get_data(held[i].node(), tuple);
            CHECK(data == revocation_request);  // Curator's bytes, as written by its Revoker
        }
        // The holders cooperate: Curator's request asked for exactly this.
        for (auto& l : held) co_await l.async_release();
        co_await z.async_close();
    }, std::chrono::seconds(120));
    fs::remove_all(dir);
}

TEST_CASE("interop: revocation: a zklock client asks a revocable Curator holder, whose listener lets go to a zklock waiter")
{
    const fs::path dir = fs::temp_directory_path() / ("zklock-interop-revoke-c-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    (void)curator_classpath();
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const std::string servers = fault_server().connect_string();
        session z{ex, config_for(servers)};
        co_await connect(z);
        co_await z.async_create("/zklock-test", "", create_mode::persistent, tuple);
        const auto path = unique_path("interop-revoke-c");
        const auto log = dir / "curator";
        // The Curator holder waits for its listener up to 30 s (exit status 3 if never called).
        std::vector<child> kids;
        kids.push_back(spawn(curator(servers, path, "hold-revocable", 1, 30000, log)));
        REQUIRE(co_await wait_until([&] { return !log_words(log).empty(); }, 30s));  // "grant <ns> <node> x"
        const std::string curator_node = log_words(log)[0].at(2);

        // How a zklock user finds the holder to ask: the queue's listing.
        auto [lec, listing] = co_await async_list_queue(z, path, tuple);
        REQUIRE_FALSE(lec);
        REQUIRE(listing.entries.size() == 1);
        const queue_entry& holder = listing.entries[0];
        CHECK(holder.status == queue_entry::state::holder);
        CHECK(holder.library == lock_library::curator);
        CHECK(holder.name == curator_node);

        // A zklock waiter queues behind it; then the request.
        task_group tasks{ex};
        mutex m{z, path};
        std::int64_t granted_at = 0;
        tasks.spawn([&]() -> awaitable<void> {
            auto [ec, l] = co_await m.async_acquire(60s, asio::as_tuple(asio::use_awaitable));
            CHECK_FALSE(ec);
            if (ec) co_return;
            granted_at = std::chrono::steady_clock::now().time_since_epoch().count();
            co_await l.async_release();
        });
        REQUIRE(co_await wait_children(z, path, 2, 10s) == 2);
        auto [sec, sst] = co_await z.async_set_data(path + "/" + holder.name, std::string(revocation_request), -1, tuple);
        REQUIRE_FALSE(sec);

        co_await reap(kids, 60s);
        REQUIRE(kids[0]->status < 128);  // exited, not killed by a signal
        CHECK_MESSAGE(kids[0]->status == 0, "3: Curator's revocation listener was never called");
        CHECK(co_await tasks.join(20s));
        const auto words = log_words(log);
        REQUIRE(words.size() == 3);
        CHECK(words[0][0] == "grant");
        CHECK(words[1][0] == "revoked");  // its listener heard zklock's request
        CHECK(words[2][0] == "release");
        for (const auto& w : words) CHECK(w.at(2) == curator_node);
        CHECK(granted_at > std::stoll(words[2][1]));  // zklock acquired after Curator let go
        co_await z.async_close();
    }, std::chrono::seconds(120));
    fs::remove_all(dir);
}

// ---- Leader election ----------------------------------------------------------------------------
//
// zklock's election shares one path with one foreign election recipe, zklock naming its candidates
// as that recipe does (election_options::names). Each flavour pairs the two so that each side sees
// the other's candidates in sequence order (see the workers' header comments for what the foreign
// side sorts, and how):
//  * Curator's LeaderLatch with zklock's default names "x-<id>-latch-<seq>";
//  * Curator's LeaderSelector (an InterProcessMutex) with election_names::curator_selector,
//    "x-<id>-lock-<seq>";
//  * Kazoo's Election (a Kazoo Lock) with election_names::kazoo, "x-<id>-__lock__<seq>".
// Other pairings are not tested because they cannot work, from the foreign side: LeaderLatch and
// LeaderSelector sort every child by the text after their own marker ("latch-", "lock-") or, when
// it is absent, by the whole name ("x-...": after every sequence), so they would put zklock's
// candidates of another naming behind all of their own (LockInternals.getSortedChildren,
// StandardLockInternalsDriver.standardFixForSorting); Kazoo's Election counts only names matching
// "__lock__<seq>" (Lock._contenders_re; Election takes no extra_lock_patterns) and ignores the rest.
// zklock itself sees every one of those names as a candidate, in sequence order.
//
// Every leader logs its grant, then lists the election path while it leads ("queue" lines), then
// reads the counter, holds, writes it back + 1 and logs its release. The checks: no two leaders at
// once (no overlapping grant intervals, no lost counter update), grants in increasing sequence
// order, and each leader's node the oldest candidate present while it led (no older candidate in
// its listing): leadership went to the head of the queue.
//
// zklock's leaders do not proclaim here: a LeaderLatch candidate that waits on a zklock leader
// watches its node with getData and acts only on NodeDeleted (LeaderLatch.checkLeadership's
// watcher), so the NodeDataChanged of async_proclaim spends its one-shot watch, and it never
// hears of the resignation that follows.

namespace {

struct election_flavor {
    std::string library;   // the worker: "curator" or "kazoo"
    std::string mode;      // its election mode: "latch", "selector" or "election"
    election_names names;  // zklock's candidate names for it
    lock_library foreign;  // what zklock reports as the foreign leader's library
};

const election_flavor curator_latch{"curator", "latch", election_names::curator_latch, lock_library::curator};
const election_flavor curator_selector{"curator", "selector", election_names::curator_selector, lock_library::curator};
const election_flavor kazoo_election{"kazoo", "election", election_names::kazoo, lock_library::kazoo};

std::vector<std::string> election_worker(const election_flavor& f, const std::string& servers, const std::string& path,
                                         int rounds, int hold_ms, const fs::path& log, int session_ms = 10000)
{
    auto argv = f.library == "curator" ? curator(servers, path, f.mode, rounds, hold_ms, log)
                                       : kazoo(servers, path, f.mode, rounds, hold_ms, log);
    argv.push_back(std::to_string(session_ms));
    return argv;
}

// The value (node data) a foreign worker campaigns with in round `round`: its library, pid, round.
std::string foreign_value(const election_flavor& f, const child& k, int round)
{
    return f.library + "-" + std::to_string(k->pid) + "-" + std::to_string(round);
}

// A leader's listing of the election path, taken while it led.
struct sighting {
    std::int64_t t = 0;
    std::string who;
    std::string node;
    std::vector<std::string> children;
};

std::vector<sighting> read_queues(const fs::path& file, const std::string& who)
{
    std::vector<sighting> out;
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);) {
        std::istringstream ls(line);
        std::string what;
        sighting s;
        ls >> what >> s.t >> s.node;
        if (what != "queue") continue;
        s.who = who;
        for (std::string c; ls >> c;) s.children.push_back(c);
        out.push_back(std::move(s));
    }
    return out;
}

// Each leader's node was the head of the queue while it led: present, every child a candidate
// zklock recognises, none older.
std::vector<std::string> check_heads(const std::vector<sighting>& seen)
{
    std::vector<std::string> problems;
    for (const auto& s : seen) {
        const auto own = zklock::detail::parse_queue_node(s.node);
        if (!own) {
            problems.push_back("not a candidate node: " + s.who + " (" + s.node + ")");
            continue;
        }
        bool present = false;
        for (const auto& c : s.children) {
            present = present || c == s.node;
            const auto q = zklock::detail::parse_queue_node(c);
            if (!q) problems.push_back("not a candidate: " + c + " (listed by " + s.who + ")");
            else if (q->seq < own->seq)
                problems.push_back(s.who + " (" + s.node + ") led while an older candidate was present: " + c);
        }
        if (!present) problems.push_back(s.who + " (" + s.node + ") led without its node in the listing");
    }
    return problems;
}

// Waits (polling, so the io_context keeps running) for a line starting with `what` in `file`;
// returns that line's node, empty on time-out.
awaitable<std::string> wait_log_line(const fs::path& file, const std::string& what, std::chrono::milliseconds limit)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        std::ifstream in(file);
        for (std::string line; std::getline(in, line);) {
            std::istringstream ls(line);
            std::string w, t, node;
            ls >> w >> t >> node;
            if (w == what && !node.empty()) co_return node;
        }
        if (std::chrono::steady_clock::now() >= deadline) co_return std::string{};
        co_await sleep_for(10ms);
    }
}

std::int64_t steady_now() { return std::chrono::steady_clock::now().time_since_epoch().count(); }

// A zklock candidate's term as leader, as the workers do it: grant (at `granted`: when its campaign
// completed), listing, counter, release.
awaitable<void> lead(session& s, const std::string& path, leadership& l, std::int64_t granted, std::chrono::milliseconds hold,
                     const std::string& who, std::vector<event>& log, std::vector<sighting>& queues)
{
    const std::string node{zklock::detail::base_name(l.node())};
    log.push_back({granted, true, who, node, true});
    auto [lec, kids] = co_await s.async_get_children(path, tuple);
    CHECK_FALSE(lec);
    queues.push_back({steady_now(), who, node, kids});
    auto [gec, data, st] = co_await s.async_get_data(path + "-counter", tuple);
    CHECK_FALSE(gec);
    co_await sleep_for(hold);
    auto [sec, sst] = co_await s.async_set_data(path + "-counter", std::to_string(std::atoll(data.c_str()) + 1), -1, tuple);
    CHECK_FALSE(sec);
    log.push_back({steady_now(), false, who, node, true});
    auto [rec] = co_await l.async_resign(tuple);
    CHECK_FALSE(rec);
}

// Foreign workers and zklock candidates campaign `rounds` times each on one path; checks the
// merged history (see above), and that leadership passed both ways between the libraries.
void run_election_fleet(const election_flavor& f, const std::string& name)
{
    constexpr int rounds = 4, hold_ms = 100, workers = 2, candidates = 2;
    const fs::path dir = fs::temp_directory_path() / ("zklock-" + name + "-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    if (f.library == "curator") (void)curator_classpath();  // compile before the clock starts
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const auto t0 = std::chrono::steady_clock::now();
        const std::string servers = fault_server().connect_string();
        session a{ex, config_for(servers)}, b{ex, config_for(servers)};
        co_await connect(a);
        co_await connect(b);
        const auto path = unique_path(name);
        co_await a.async_create("/zklock-test", "", create_mode::persistent, tuple);
        auto [cec, cp, cst] = co_await a.async_create(path + "-counter", "0", create_mode::persistent, tuple);
        REQUIRE_FALSE(cec);

        // A gate: a zklock candidate leads until both workers campaign behind it, so that their
        // rounds overlap each other's and zklock's however far apart their JVMs start (one that
        // started seconds after the other found it done with its rounds, under load).
        election gate_election{a, path, election_options{.names = f.names}};
        auto gate = co_await gate_election.async_campaign("zklock-gate", 60s);
        std::vector<child> kids;
        for (int w = 0; w < workers; ++w)
            kids.push_back(spawn(election_worker(f, servers, path, rounds, hold_ms, dir / (f.library + "-" + std::to_string(w)))));
        // zklock joins once both workers campaign, so that leadership passes between the libraries
        // from the start rather than after the workers' start-up.
        REQUIRE(co_await wait_children(a, path, workers + 1, 60s) == static_cast<std::size_t>(workers + 1));
        co_await gate.async_resign();

        std::vector<event> events;
        std::vector<sighting> queues;
        int errors = 0, done = 0;
        for (int c = 0; c < candidates; ++c) {
            session& s = c % 2 ? b : a;
            asio::co_spawn(ex, [&, c]() -> awaitable<void> {
                election e{s, path, election_options{.names = f.names}};
                const std::string who = "zklock:" + std::to_string(c);
                for (int i = 0; i < rounds; ++i) {
                    auto [ec, l] = co_await e.async_campaign("zklock-" + std::to_string(c) + "-" + std::to_string(i), 60s,
                                                             asio::as_tuple(asio::use_awaitable));
                    if (ec) {
                        ++errors;
                        MESSAGE(who << ": " << ec.message());
                        continue;
                    }
                    co_await lead(s, path, l, steady_now(), std::chrono::milliseconds(hold_ms), who, events, queues);
                }
                ++done;
            }, asio::detached);
        }
        co_await reap(kids, 120s);
        CHECK(co_await wait_until([&] { return done == candidates; }, 60s));
        for (const auto& k : kids) CHECK_MESSAGE(k->status == 0, "worker status " << k->status.value_or(-1));
        CHECK(errors == 0);

        for (int w = 0; w < workers; ++w) {
            const auto file = dir / (f.library + "-" + std::to_string(w));
            const auto who = f.library + ":" + std::to_string(w);
            auto more = read_log(file, who);
            events.insert(events.end(), more.begin(), more.end());
            auto seen = read_queues(file, who);
            queues.insert(queues.end(), seen.begin(), seen.end());
        }
        const auto v = check_history(events, true);
        for (const auto& p : v.problems) FAIL_CHECK(p);
        for (const auto& p : check_heads(queues)) FAIL_CHECK(p);
        CHECK(v.grants == static_cast<std::size_t>((workers + candidates) * rounds));
        CHECK(queues.size() == v.grants);  // every leader listed the path
        CHECK(v.libraries == std::set<std::string>{"zklock", f.library});
        // Leadership passed from zklock to the other library and back.
        std::sort(events.begin(), events.end(), [](const event& x, const event& y) { return x.t < y.t; });
        int to_foreign = 0, to_zklock = 0;
        std::string last;
        for (const auto& e : events) {
            if (!e.grant) continue;
            const auto lib = e.who.substr(0, e.who.find(':'));
            if (last == "zklock" && lib != "zklock") ++to_foreign;
            if (!last.empty() && last != "zklock" && lib == "zklock") ++to_zklock;
            last = lib;
        }
        MESSAGE(f.library << " " << f.mode << ": " << v.grants << " terms, " << to_foreign << " passed from zklock, "
                          << to_zklock << " to zklock, in " << since(t0) << " s");
        CHECK(to_foreign >= 1);
        CHECK(to_zklock >= 1);
        CHECK(co_await read_counter(a, path + "-counter") == static_cast<std::int64_t>(v.grants));  // no lost update
        CHECK((co_await children_of(a, path)).empty());                                           // no orphan
        co_await a.async_close();
        co_await b.async_close();
    }, std::chrono::seconds(240));
    fs::remove_all(dir);
}

// Checks what async_leader reports while the foreign candidate `node` (campaigning with `value`)
// leads: that node, that value, the foreign library, the node's sequence, an ephemeral owner.
awaitable<void> check_foreign_leader(election& e, const election_flavor& f, const std::string& node, const std::string& value)
{
    auto [ec, who] = co_await e.async_leader(tuple);
    REQUIRE_FALSE(ec);
    CHECK(who.node == node);
    CHECK(who.value == value);
    CHECK(who.library == f.foreign);
    CHECK(who.sequence == seq_of(node));
    CHECK(who.stat.ephemeral_owner != 0);
}

// The leader dies, twice: a foreign leader's process is killed (its session expires after 1.5 s),
// and the zklock candidate next in the queue takes over; that one's session is closed while it
// leads, and the foreign candidate next in the queue takes over; after it resigns, the last
// (zklock) candidate leads. The queue: F1 (foreign, leads), Z1 (zklock, session z1), F2 (foreign),
// Z2 (zklock). async_leader is asked while each foreign candidate leads.
void run_election_takeover(const election_flavor& f, const std::string& name)
{
    const fs::path dir = fs::temp_directory_path() / ("zklock-" + name + "-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    if (f.library == "curator") (void)curator_classpath();
    run([&]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        const auto t0 = std::chrono::steady_clock::now();
        const std::string servers = fault_server().connect_string();
        session a{ex, config_for(servers)}, z1{ex, config_for(servers)};
        co_await connect(a);
        co_await connect(z1);
        const auto path = unique_path(name);
        const auto counter = path + "-counter";
        co_await a.async_create("/zklock-test", "", create_mode::persistent, tuple);
        auto [cec, cp, cst] = co_await a.async_create(counter, "0", create_mode::persistent, tuple);
        REQUIRE_FALSE(cec);
        election e{a, path, election_options{.names = f.names}};
        std::vector<event> events;
        std::vector<sighting> queues;

        // F1 leads (alone in the queue) and would hold for a minute: it is killed meanwhile.
        const auto f1_log = dir / "f1", f2_log = dir / "f2";
        std::vector<child> kids;
        kids.push_back(spawn(election_worker(f, servers, path, 1, 60000, f1_log, 1500)));
        const auto f1 = co_await wait_log_line(f1_log, "queue", 60s);  // it leads and has listed the path
        REQUIRE_FALSE(f1.empty());
        co_await check_foreign_leader(e, f, f1, foreign_value(f, kids[0], 0));

        // Z1, then F2, then Z2 queue behind it, in this order.
        election e1{z1, path, election_options{.names = f.names}};
        leadership l1, l2;
        bool z1_done = false, z2_done = false;
        std::int64_t z1_granted = 0, z2_granted = 0;
        asio::co_spawn(ex, [&]() -> awaitable<void> {
            auto [ec, l] = co_await e1.async_campaign("zklock-1", 60s, asio::as_tuple(asio::use_awaitable));
            z1_granted = steady_now();
            CHECK_FALSE(ec);
            l1 = std::move(l);
            z1_done = true;
        }, asio::detached);
        REQUIRE(co_await wait_children(a, path, 2, 20s) == 2);
        kids.push_back(spawn(election_worker(f, servers, path, 1, 1000, f2_log)));
        REQUIRE(co_await wait_children(a, path, 3, 60s) == 3);
        asio::co_spawn(ex, [&]() -> awaitable<void> {
            auto [ec, l] = co_await e.async_campaign("zklock-2", 60s, asio::as_tuple(asio::use_awaitable));
            z2_granted = steady_now();
            CHECK_FALSE(ec);
            l2 = std::move(l);
            z2_done = true;
        }, asio::detached);
        REQUIRE(co_await wait_children(a, path, 4, 20s) == 4);
        CHECK_FALSE(z1_done);

        // F1 dies. Its session expires; Z1 leads. F1's term ends, for the history, when it was killed.
        const auto killed = steady_now();
        kids[0]->kill_and_reap();
        events.push_back({killed, false, f.library + ":1", f1, true});
        REQUIRE(co_await wait_until([&] { return z1_done; }, 30s));
        CHECK(l1.is_leader());
        const std::string z1_node{zklock::detail::base_name(l1.node())};
        events.push_back({z1_granted, true, "zklock:1", z1_node, true});
        auto [lec, listing] = co_await z1.async_get_children(path, tuple);
        CHECK_FALSE(lec);
        queues.push_back({steady_now(), "zklock:1", z1_node, listing});
        MESSAGE(f.library << " " << f.mode << ": zklock led " << (z1_granted - killed) / 1000000 << " ms after the "
                          << "foreign leader was killed");

        // Z1 dies: after leading for a while (long enough for a second leader to show), its session
        // is closed (its node goes with it). F2 leads.
        co_await sleep_for(300ms);
        events.push_back({steady_now(), false, "zklock:1", z1_node, true});
        co_await z1.async_close(tuple);
        const auto f2 = co_await wait_log_line(f2_log, "queue", 30s);
        REQUIRE_FALSE(f2.empty());
        co_await check_foreign_leader(e, f, f2, foreign_value(f, kids[1], 0));
        const auto asked = steady_now();

        // F2 resigns after its term; Z2 leads.
        REQUIRE(co_await wait_until([&] { return z2_done; }, 30s));
        CHECK(l2.is_leader());
        const auto f2_events = read_log(f2_log, f.library + ":2");
        REQUIRE(f2_events.size() == 2);
        CHECK(f2_events[1].t > asked);  // F2 still led when async_leader answered
        co_await lead(a, path, l2, z2_granted, 10ms, "zklock:2", events, queues);
        co_await reap(kids, 60s);
        CHECK(kids[0]->status == 128 + SIGKILL);
        CHECK(kids[1]->status == 0);

        for (const auto& [file, who] : {std::pair{f1_log, f.library + ":1"}, std::pair{f2_log, f.library + ":2"}}) {
            auto more = read_log(file, who);
            events.insert(events.end(), more.begin(), more.end());
            auto seen = read_queues(file, who);
            queues.insert(queues.end(), seen.begin(), seen.end());
        }
        const auto v = check_history(events, true);
        for (const auto& p : v.problems) FAIL_CHECK(p);
        for (const auto& p : check_heads(queues)) FAIL_CHECK(p);
        CHECK(v.grants == 4);
        CHECK(queues.size() == 4);
        // The grants, in time order, went F1, Z1, F2, Z2: the queue's order.
        std::sort(events.begin(), events.end(), [](const event& x, const event& y) { return x.t < y.t; });
        std::vector<std::string> order;
        for (const auto& e2 : events)
            if (e2.grant) order.push_back(e2.who);
        CHECK(order == std::vector<std::string>{f.library + ":1", "zklock:1", f.library + ":2", "zklock:2"});
        CHECK(co_await read_counter(a, counter) == 2);  // F2 and Z2 wrote; the two that died did not
        CHECK((co_await children_of(a, path)).empty());
        MESSAGE(f.library << " " << f.mode << ": takeovers done in " << since(t0) << " s");
        co_await a.async_close();
    }, std::chrono::seconds(180));
    fs::remove_all(dir);
}

}  // namespace

TEST_CASE("interop: election with Curator's LeaderLatch (zklock's default names): one leader at a time, in queue order")
{
    run_election_fleet(curator_latch, "interop-elect-latch");
}

TEST_CASE("interop: election with Curator's LeaderLatch: each dead leader's successor in queue order takes over")
{
    run_election_takeover(curator_latch, "interop-elect-latch-death");
}

TEST_CASE("interop: election with Curator's LeaderSelector (curator_selector names): one leader at a time, in queue order")
{
    run_election_fleet(curator_selector, "interop-elect-selector");
}

TEST_CASE("interop: election with Curator's LeaderSelector: each dead leader's successor in queue order takes over")
{
    run_election_takeover(curator_selector, "interop-elect-selector-death");
}

TEST_CASE("interop: election with Kazoo's Election (kazoo names): one leader at a time, in queue order")
{
    run_election_fleet(kazoo_election, "interop-elect-kazoo");
}

TEST_CASE("interop: election with Kazoo's Election: each dead leader's successor in queue order takes over")
{
    run_election_takeover(kazoo_election, "interop-elect-kazoo-death");
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
