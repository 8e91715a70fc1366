// The `zklock` command-line tool, driven as a real binary against a real ZooKeeper server
// (cli_fixture.hpp starts it, waits for it and kills what is left).
#include "cli_fixture.hpp"
#include "cli_peers.hpp"
#include "support/curator_worker.hpp"
#include "support/tls_certs.hpp"

// Boost.JSON compiled into this test (its header-only mode), to read `zklock list --json`.
#include <boost/json/src.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <termios.h>

using namespace zklock;
using namespace zklock::test;
using namespace zklock::test::cli;

TEST_CASE("zklock cli: usage errors exit 64 with a one-line message, --help documents the statuses")
{
    run_cli([](fixture& t) -> awaitable<void> {
        const std::vector<usage_case> cases{
            {{"--bogus", "/l", "true"}, "unknown option '--bogus'"},
            {{"-x", "/l", "true"}, "unknown option '-x'"},
            {{}, "missing LOCKPATH"},
            {{"--shared"}, "missing LOCKPATH"},
            {{"/l"}, "missing COMMAND"},
            {{"/l", "--"}, "missing COMMAND"},
            {{"relative/path", "true"}, "invalid lock path 'relative/path': the path is not absolute"},
            {{"/l/", "true"}, "invalid lock path '/l/': the path ends with '/'"},
            {{"/a/../b", "true"}, "invalid lock path '/a/../b': a component is '..'"},
            {{"/zookeeper/x", "true"}, "the path is under /zookeeper, which the server reserves"},
            {{"list", "/a//b"}, "invalid lock path '/a//b': a component is empty ('//')"},
            {{"--timeout", "soon", "/l", "true"}, "invalid duration 'soon' for --timeout"},
            {{"--timeout"}, "option '--timeout' needs a value"},
            {{"--kill-after=-1s", "/l", "true"}, "invalid duration '-1s' for --kill-after"},
            {{"--session-timeout", "0", "/l", "true"}, "--session-timeout must be greater than zero"},
            {{"--try", "--timeout", "1s", "/l", "true"}, "--try and --timeout exclude each other"},
            {{"--try=yes", "/l", "true"}, "option '--try' takes no value"},
            {{"--servers", "nohostport", "/l", "true"}, "The server list is empty or malformed"},
            {{"list"}, "missing LOCKPATH"},
            {{"list", "/l", "extra"}, "'zklock list' takes one LOCKPATH"},
            {{"list", "--shared", "/l"}, "option '--shared' does not apply to 'zklock list'"},
        };
        // --help: the sections and the exit statuses.
        const std::vector<std::string> help{"SYNOPSIS", "DESCRIPTION", "OPTIONS", "ENVIRONMENT", "EXIT STATUS",
                                            "--kill-after", "ZKLOCK_FENCING_TOKEN", "ZKLOCK_NODE", "ZK_SERVERS", "\n  64 ",
                                            "\n  69 ", "\n  75 ", "\n  79 ", "\n  80 ", "\n  126 ", "\n  127 "};
        co_await expect_usage_errors(t, cases, help);
    });
}

TEST_CASE("zklock cli: no server within --connect-timeout exits 69")
{
    const auto nobody = "127.0.0.1:" + std::to_string(free_ports(1).front());  // nothing listens there
    run_cli(nobody, [](fixture& t) -> awaitable<void> {
        const std::string none_within = "no ZooKeeper server at " + t.servers + " accepted a session within 1s";
        const std::vector<run_case> runs{
            {{"--servers", t.servers, "--connect-timeout", "1s", "/l", "--", "touch", t / "ran"},
             {.status = st_unavailable, .err_has = {none_within}, .under = 10}},
            {{"list", "--servers", t.servers, "--connect-timeout", "500ms", "/l"}, {.status = st_unavailable}},
        };
        const auto results = co_await t.expect(runs);
        CHECK(lines_of(results[0].err).size() == 1);
        CHECK_FALSE(fs::exists(t / "ran"));
    });
}

TEST_CASE("zklock cli: concurrent runs exclude each other")
{
    run_cli(shared_server().connect_string(), [](fixture& t, session& zk) -> awaitable<void> {
        const auto path = unique_path("cli-mutex"), log = t / "log";
        const std::string script = "echo start $$ >> " + log + "; sleep 0.3; echo end $$ >> " + log;
        const int n = 4;
        std::vector<process*> procs;
        for (int i = 0; i < n; ++i)
            procs.push_back(&t.start("run" + std::to_string(i), path, "--", "sh", "-c", script));
        const auto t0 = clock_type::now();
        for (auto* p : procs) CHECK(co_await finish(*p, 30s) == 0);
        CHECK(seconds_since(t0) >= 0.3 * n);  // serialised
        const auto lines = lines_of(slurp(log));
        REQUIRE(lines.size() == 2 * n);
        for (std::size_t i = 0; i < lines.size(); i += 2) {
            CAPTURE(slurp(log));
            REQUIRE(lines[i].rfind("start ", 0) == 0);
            CHECK(lines[i + 1] == "end " + lines[i].substr(6));  // never interleaved
        }
        CHECK((co_await children_of(zk, path)).empty());
    });
}

TEST_CASE("zklock cli: COMMAND's environment, fencing tokens, exit status and descriptors")
{
    run_cli(shared_server().connect_string(), [](fixture& t, session& zk) -> awaitable<void> {
        const auto path = unique_path("cli-env"), log = t / "env", servers = t.servers;
        const std::string script = "echo \"$ZKLOCK_FENCING_TOKEN $ZKLOCK_NODE\" >> " + log;
        // Three runs, one shared, the last with the server list from $ZK_SERVERS.
        const std::vector<run_case> runs{
            {{"--servers", servers, path, "sh", "-c", script}},
            {{"--servers", servers, "--shared", path, "--", "sh", "-c", script}},
            {{path, "sh", "-c", script}, {}, {"ZK_SERVERS=" + servers}},
        };
        co_await t.expect(runs);
        const auto lines = lines_of(slurp(log));
        REQUIRE(lines.size() == 3);
        long long token = 0;
        for (std::size_t i = 0; i < lines.size(); ++i) {
            CAPTURE(lines[i]);
            const auto f = check_fields(lines[i], {"", ""});  // TOKEN NODE
            const long long previous = std::exchange(token, std::stoll(f[0]));
            CHECK(token > previous);  // above 0, and increasing
            CHECK(f[1].rfind(path + (i == 1 ? "/r-" : "/x-"), 0) == 0);
            CHECK(zklock::detail::parse_queue_node(zklock::detail::base_name(f[1])).has_value());
        }

        // COMMAND's status passes through; 128+N when signal N killed it; 127 / 126 when it
        // cannot be run. COMMAND gets our descriptors 0-2 (and whatever we inherited), not the
        // ZooKeeper socket.
        const std::vector<run_case> statuses{
            {{"--servers", servers, path, "sh", "-c", "exit 7"}, {.status = 7}},
            {{"--servers", servers, path, "sh", "-c", "kill -USR1 $$"}, {.status = 128 + SIGUSR1}},
            {{"--servers", servers, path, "no-such-command-zklock"},
             {.status = 127, .err_has = {"cannot run 'no-such-command-zklock'"}}},
            {{"--servers", servers, path, "/dev/null"}, {.status = 126}},
            {{"--servers", servers, path, "sh", "-c", "ls -l /proc/$$/fd"}, {.out_lacks = {"socket:", "anon_inode"}}},
        };
        co_await t.expect(statuses);
        CHECK((co_await children_of(zk, path)).empty());
    });
}

TEST_CASE("zklock cli: --try and --timeout exit 75 while another zklock holds the lock")
{
    run_cli(shared_server().connect_string(), [](fixture& t, session& zk) -> awaitable<void> {
        const auto path = unique_path("cli-try"), ran = t / "ran";
        process& holder = co_await t.holder("holder", path);

        const std::vector<run_case> refused{
            {{"--servers", t.servers, "--try", path, "--", "touch", ran},
             {.status = st_not_acquired, .err_has = {"is taken (--try)"}, .under = 5}},
            {{"--servers", t.servers, "-w", "500ms", path, "touch", ran},
             {.status = st_not_acquired, .err_has = {"timed out after 500ms"}, .at_least = 0.5, .under = 8}},
            // --shared does not get past an exclusive holder either; --timeout 0 means --try.
            {{"--servers", t.servers, "--shared", "--timeout", "0", path, "touch", ran}, {.status = st_not_acquired}},
        };
        co_await t.expect(refused);
        CHECK_FALSE(fs::exists(ran));
        CHECK((co_await children_of(zk, path)).size() == 1);  // only the holder's node is left

        // SIGTERM to the holder reaches `sleep`, whose death is the holder's status.
        CHECK(co_await terminate(holder) == 128 + SIGTERM);
        CHECK((co_await children_of(zk, path)).empty());
    });
}

TEST_CASE("zklock cli: SIGTERM or SIGINT while waiting leaves the queue and exits 80")
{
    run_cli(shared_server().connect_string(), [](fixture& t, session& zk) -> awaitable<void> {
        const auto path = unique_path("cli-interrupt");
        process& holder = co_await t.holder("holder", path);
        const std::array<int, 2> signals{SIGTERM, SIGINT};
        for (int sig : signals) {
            CAPTURE(sig);
            // Queued behind the holder.
            process& w = co_await t.start_queued(path, 2, "waiter" + std::to_string(sig), path, "--", "touch", t / "ran");
            const auto r = co_await signal_and_finish(w, sig, 10s);
            check_run(r, {.status = st_interrupted,
                          .err_has = {"interrupted by " + std::string(signal_text(sig)) + " while waiting for " + path +
                                      "; left the queue"}});
            // The node is gone when zklock exits (the cancelled acquire deletes it first).
            CHECK((co_await children_of(zk, path)).size() == 1);
        }
        CHECK_FALSE(fs::exists(t / "ran"));
        co_await terminate(holder);
    });
}

TEST_CASE("zklock cli: SIGTERM while COMMAND runs is passed on to it")
{
    run_cli(shared_server().connect_string(), [](fixture& t, session& zk) -> awaitable<void> {
        const auto path = unique_path("cli-forward"), log = t / "log";
        process& p = co_await t.start_ready("run", "-v", path, "--", "sh", "-c",
                                            t.trap_and_loop("run", "echo term >> " + log + "; exit 3"));
        const auto r = co_await signal_and_finish(p, SIGTERM, 10s);
        check_run(r, {.status = 3, .err_has = {"passing SIGTERM on to COMMAND"}});  // COMMAND's own status
        CHECK(slurp(log) == "term\n");
        CHECK((co_await children_of(zk, path)).empty());
    });
}

TEST_CASE("zklock cli: ^C from the terminal reaches COMMAND once (not forwarded again)")
{
    run_cli(shared_server().connect_string(), [](fixture& t) -> awaitable<void> {
        const auto path = unique_path("cli-tty"), log = t / "log";
        // A pseudo-terminal whose foreground process group is zklock's (and so COMMAND's).
        const int master = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        REQUIRE(master >= 0);
        REQUIRE(::grantpt(master) == 0);
        REQUIRE(::unlockpt(master) == 0);
        const int slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
        REQUIRE(slave >= 0);
        termios tio{};
        REQUIRE(::tcgetattr(slave, &tio) == 0);
        CHECK((tio.c_lflag & ISIG) != 0);

        const std::string script = t.trap_and_loop("run", "echo int >> " + log + "; exit 4", "INT");
        process& p = t.start_program("run", {ZKLOCK_CLI_PATH, "--servers", t.servers, "-v", path, "--", "sh", "-c", script},
                                     {.controlling_tty = slave});
        co_await t.wait_ready(p);
        REQUIRE(::write(master, "\x03", 1) == 1);  // the terminal's ^C: SIGINT to the foreground group
        CHECK(co_await finish(p, 10s) == 4);
        ::close(slave);
        ::close(master);
        CHECK(slurp(log) == "int\n");
        CHECK_FALSE(has(p.err(), "passing SIGINT"));  // COMMAND had it from the terminal
    });
}

TEST_CASE("zklock cli: a lost lock terminates COMMAND and exits 79")
{
    run_cli(shared_server().connect_string(), [](fixture& t, session& zk) -> awaitable<void> {
        // The holder's node is deleted by another session: COMMAND gets SIGTERM and obeys.
        const auto path = unique_path("cli-lost"), log = t / "log";
        process& p =
            co_await t.start_ready("run", path, "--", "sh", "-c", t.trap_and_loop("run", log_term_and_exit(log)));
        co_await delete_only_node(zk, path);
        const auto r = co_await result_of(p, 10s);
        check_run(r, {.status = st_lost, .err_has = {"lost the lock on " + path}});
        CHECK(slurp(log) == "term\n");

        // COMMAND ignores SIGTERM: SIGKILL after --kill-after.
        const auto path2 = unique_path("cli-lost-kill");
        process& p2 =
            co_await t.start_ready("run2", "--kill-after", "1s", path2, "--", "sh", "-c", t.trap_and_loop("run2", ""));
        const auto t0 = co_await delete_only_node(zk, path2);
        co_await check_killed(p2, st_lost, t0, "killed by SIGKILL after the lock was lost");
    });
}

TEST_CASE("zklock cli: list shows holders and waiters in queue order")
{
    run_cli(shared_server().connect_string(), [](fixture& t, session& zk) -> awaitable<void> {
        const auto path = unique_path("cli-list");
        const auto missing = co_await t.run("list", "--servers", t.servers, path);
        check_run(missing, {.out_has = {"no such lock"}});

        process& holder = co_await t.holder("holder", path);
        process& reader = co_await t.start_queued(path, 2, "reader", "--shared", "--owner", "the reader", path, "true");
        process& writer = co_await t.start_queued(path, 3, "writer", "--owner", "the writer", path, "true");
        // Two nodes as Apache Curator and Kazoo name theirs, queued behind.
        const auto curator_node = co_await create_foreign(zk, path + "/" + curator_name + "-lock-", "java");
        const auto kazoo_node = co_await create_foreign(zk, path + "/" + kazoo_name + "__rlock__", "python");

        const auto lines = co_await t.output_lines(7, "list", "--servers", t.servers, path);  // title, header, 5 nodes
        CHECK(lines[0] == path + ": 5 in the queue");
        const auto self = host_name() + ":" + std::to_string(holder.pid);
        const auto r1 = check_fields(lines[2], {"1", "holder", "exclusive", "zklock", "mutex", "", "", self});
        const auto r2 = check_fields(lines[3], {"2", "waiting", "shared", "", "shared_mutex", "", "", "", ""});
        check_fields(lines[4], {"", "waiting", "exclusive", "", "", "", "", "", ""});
        const auto r4 = check_fields(lines[5], {"", "waiting", "exclusive", "curator", "mutex", "", "", "java"});
        const auto r5 = check_fields(lines[6], {"", "", "shared", "kazoo", "shared_mutex", "", "", "python"});
        CHECK(r1[5].rfind("x-", 0) == 0);
        CHECK(r1[6].ends_with("s"));  // an age
        CHECK(r2[5].rfind("r-", 0) == 0);
        CHECK(lines[3].ends_with("the reader"));
        CHECK(lines[4].ends_with("the writer"));
        CHECK(path + "/" + r4[5] == curator_node);
        CHECK(path + "/" + r5[5] == kazoo_node);
        co_await zk.async_remove(curator_node, -1, tuple);
        co_await zk.async_remove(kazoo_node, -1, tuple);

        // Once the writer is gone, the holder hands over to the reader; shared holders together.
        co_await terminate(holder);
        co_await finish(reader);
        co_await finish(writer);
        const auto path2 = unique_path("cli-list-shared");
        process& r_a = co_await t.holder("ra", path2, "--shared");
        process& r_b = co_await t.holder("rb", path2, "--shared");
        process& w2 = co_await t.start_queued(path2, 3, "w2", path2, "true");
        const auto lines2 = co_await t.output_lines(5, "list", "--servers", t.servers, path2);
        CHECK_MESSAGE(has(lines2[2], " holder   shared "), lines2[2]);
        CHECK_MESSAGE(has(lines2[3], " holder   shared "), lines2[3]);
        CHECK_MESSAGE(has(lines2[4], " waiting  exclusive "), lines2[4]);
        co_await terminate(r_a);
        co_await terminate(r_b);
        CHECK(co_await finish(w2) == 0);
        const auto empty = co_await t.run("list", "--servers", t.servers, path2);
        check_run(empty, {.out_has = {path2 + ": free"}});
    });
}

TEST_CASE("zklock cli: --verbose reports the waiter's place in the queue as it changes (plain lines off a terminal)")
{
    run_cli(shared_server().connect_string(), [](fixture& t, session& zk) -> awaitable<void> {
        const auto path = unique_path("cli-verbose");
        process& holder = co_await t.holder("holder", path);
        // first: 1 ahead (the holder); it holds for 2 s once granted, so that second, queued
        // behind both (2 ahead), sees its place become 1 by polling the queue.
        const std::string hold = "touch " + t.ready_file("first") + "; sleep 2";
        process& first = co_await t.start_queued(path, 2, "first", "--verbose", path, "--", "sh", "-c", hold);
        process& second = co_await t.start_queued(path, 3, "second", "--verbose", path, "--", "true");
        co_await terminate(holder);
        CHECK(co_await finish(first) == 0);
        CHECK(co_await finish(second) == 0);

        const std::string acquired = "zklock: acquired " + path;
        auto check_places = [&](const process& p, const std::vector<std::string>& places) {
            const auto err = p.err();
            CAPTURE(err);
            CHECK(err.find('\r') == std::string::npos);  // stderr is a file here: no progress line
            std::vector<std::string> seen;  // its "waiting: " lines up to "acquired" (cut after the path)
            for (const auto& l : lines_of(err)) {
                const bool done = l.rfind("zklock: acquired ", 0) == 0;
                if (done || has(l, "waiting: ")) seen.push_back(done ? l.substr(0, acquired.size()) : l);
                if (done) break;
            }
            CHECK(seen == places);
        };
        check_places(first, {"zklock: waiting: 1 ahead", acquired});
        // One line per change, none repeated.
        check_places(second, {"zklock: waiting: 2 ahead", "zklock: waiting: 1 ahead", acquired});
        CHECK((co_await children_of(zk, path)).empty());
    });
}

TEST_CASE("zklock cli: an IPv6 server address in brackets works ([::1]:PORT)")
{
    if (!ipv6_loopback_available()) {
        WARN_MESSAGE(false, "not run: this host has no IPv6 loopback address (::1)");
        return;
    }
    zk_server v6{server_options{.tick_time = 200ms, .client_address = "::1"}};  // listens on ::1 only
    run_cli(v6.connect_string(), [&](fixture& t) -> awaitable<void> {
        REQUIRE(t.servers.rfind("[::1]:", 0) == 0);
        const auto path = unique_path("cli-ipv6");
        const auto p = co_await t.run("--servers", t.servers, "-v", path, "--", "touch", t / "ran");
        check_run(p, {.err_has = {"zklock: connected to " + t.servers}});
        CHECK_MESSAGE(fs::exists(t / "ran"), p.err);
        const auto l = co_await t.run("list", "--servers", t.servers, path);
        CHECK(l.status == 0);
        CHECK(l.out.rfind(path + ": ", 0) == 0);
    });
}

TEST_CASE("zklock cli: a host name that does not resolve, and a chroot that does not exist, are named")
{
    run_cli([](fixture& t) -> awaitable<void> {
        const auto path = unique_path("cli-names"), ran = t / "ran";
        // ".invalid" never resolves (RFC 6761).
        const std::string nowhere = "nonexistent.invalid:2181", chroot = "/zklock-no-chroot-" + std::to_string(::getpid());
        const std::string servers = shared_server().connect_string() + chroot;
        const std::string absent = ": the chroot " + chroot + " of " + servers + " does not exist on the server";
        const std::string no_chroot = absent + " (zklock does not create it)\n";
        const std::vector<run_case> runs{
            {{"--servers", nowhere, path, "--", "touch", ran},
             {.status = st_unavailable,
              .err = "zklock: cannot resolve host name: no host of nonexistent.invalid:2181 resolves to an address\n"}},
            {{"list", "--servers", nowhere, path}, {.status = st_unavailable, .err_has = {"cannot resolve host name"}}},
            {{"--servers", servers, path, "--", "touch", ran},
             {.status = st_unavailable, .err = "zklock: cannot acquire " + path + no_chroot}},
            {{"list", "--servers", servers, path},  // not "no such lock"
             {.status = st_unavailable, .out = "", .err = "zklock: cannot list " + path + no_chroot}},
        };
        co_await t.expect(runs);
        CHECK_FALSE(fs::exists(ran));
    });
}

TEST_CASE("zklock cli: over TLS with --tls-ca, --tls-cert, --tls-key or their variables, refusals are named" * doctest::skip(!ZKLOCK_TEST_TLS))
{
    const auto& certs = shared_tls_certs();
    zk_server server{server_options{.tick_time = 200ms, .tls = certs.server_tls(tls_server_options::client_auth::need)}};
    run_cli(server.tls_connect_string(), [&](fixture& t) -> awaitable<void> {
        const auto path = unique_path("cli-tls"), servers = t.servers;
        const std::string ca = certs.ca_cert().string(), cert = certs.client_cert("alice").string(),
                          key = certs.client_key("alice").string();
        const std::vector<std::string> env{"ZKLOCK_TLS_CA=" + ca, "ZKLOCK_TLS_CERT=" + cert, "ZKLOCK_TLS_KEY=" + key};
        const std::vector<run_case> runs{
            {{"--servers", servers, "--tls-ca", ca, "--tls-cert", cert, "--tls-key", key, "-v", path, "--", "touch",
              t / "ran"}},
            {{"--servers", servers, path, "--", "touch", t / "ran-env"}, {}, env},
            {{"list", "--servers", servers, path}, {}, env},
            // Refused: no client certificate; the system's CAs; a TLS-only port without --tls.
            {{"--servers", servers, "--tls-ca", ca, path, "--", "true"},
             {.status = st_unavailable,
              .err_has = {"the server refused the client certificate (check --tls-cert and --tls-key)"}}},
            {{"--servers", servers, "--tls", path, "--", "true"},
             {.status = st_unavailable, .err_has = {"not signed by a trusted CA (check --tls-ca)"}}},
            {{"--servers", servers, path, "--", "true"},
             {.status = st_unavailable, .err_has = {"accepts only TLS on this port: add --tls"}}},
            // Usage errors, before any connection.
            {{"--servers", servers, "--tls-ca", t / "nonexistent.pem", path, "--", "true"},
             {.status = st_usage, .err_has = {"cannot read --tls-ca file"}}},
            {{"--servers", servers, "--tls-cert", cert, path, "--", "true"},
             {.status = st_usage, .err = "zklock: --tls-cert needs --tls-key (or $ZKLOCK_TLS_KEY)\n"}},
        };
        const auto results = co_await t.expect(runs);
        CHECK_MESSAGE(fs::exists(t / "ran"), results[0].err);
        CHECK_MESSAGE(fs::exists(t / "ran-env"), results[1].err);
    });
}

TEST_CASE("zklock cli: -v shows the session timeout the server granted, and warns when it was changed")
{
    // The shared server's tickTime is 200 ms: it grants 400 ms to 4 s.
    run_cli(shared_server().connect_string(), [](fixture& t) -> awaitable<void> {
        const auto path = unique_path("cli-session-timeout"), servers = t.servers;
        const std::string raised =
            "zklock: warning: the server granted a session timeout of 400ms, not the 100ms asked for (--session-timeout)\n";
        const std::vector<run_case> runs{
            {{"--servers", servers, "-v", "--session-timeout", "100ms", path, "true"},
             {.err_has = {"zklock: connected to " + servers + " (session 0x", ", session timeout 400ms)\n", raised}}},
            // Asked for explicitly: the warning comes without -v too, and alone.
            {{"--servers", servers, "--session-timeout", "100ms", path, "true"}, {.err = raised}},
            // Granted as asked: no warning.
            {{"--servers", servers, "-v", "--session-timeout", "2s", path, "true"},
             {.err_has = {", session timeout 2s)\n"}, .err_lacks = {"warning"}}},
            // The default (10s, lowered to 4s here) nobody asked for: silent without -v.
            {{"--servers", servers, path, "true"}, {.err = ""}},
            {{"list", "-v", "--servers", servers, path}, {.err_has = {", session timeout 4s)\n"}}},
        };
        co_await t.expect(runs);
    });
}

TEST_CASE("zklock cli: SIGTERM and SIGINT while connecting exit 80: a silent peer, an HTTP peer, a frozen server")
{
    zk_server server;  // started before the test's io_context runs
    run_cli([&](fixture& t) -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        fake_peer silent{ex, false}, http{ex, true};
        freeze frozen{server.pid()};
        struct target {
            std::string name, servers;
            const fake_peer* peer;
        };
        const std::vector<target> targets{{"silent", silent.connect_string(), &silent},
                                          {"http", http.connect_string(), &http},
                                          {"frozen", server.connect_string(), nullptr}};
        const std::array<int, 2> signals{SIGTERM, SIGINT};
        for (const auto& to : targets)
            for (int sig : signals) {
                CAPTURE(to.name);
                CAPTURE(sig);
                const std::size_t before = to.peer ? to.peer->connections() : 0;
                process& p = t.start_program(to.name + std::to_string(sig),
                                             {ZKLOCK_CLI_PATH, "--servers", to.servers, "--connect-timeout", "60s", "-v", "/l",
                                              "--", "touch", t / "ran"});
                if (to.peer) CHECK(co_await eventually([&] { return to.peer->connections() > before; }, 10s));
                co_await sleep_for(500ms);  // the HTTP peer has answered by now, and been refused
                REQUIRE_FALSE(p.poll());   // still connecting
                const auto signalled = clock_type::now();
                const auto r = co_await signal_and_finish(p, sig, 10s);
                MESSAGE(to.name << ", " << signal_text(sig) << ": exited " << seconds_since(signalled) << " s after it");
                check_run(r, {.status = st_interrupted,
                              .err = "zklock: interrupted by " + std::string(signal_text(sig)) + " while connecting\n"});
            }
        CHECK_FALSE(fs::exists(t / "ran"));
    });
}

TEST_CASE("zklock cli: SIGTERM and SIGINT are answered while waiting and while holding, the server frozen")
{
    zk_server server;  // tickTime 2 s: the 20 s sessions below outlive the freeze
    run_cli(server.connect_string(), [&](fixture& t) -> awaitable<void> {
        const auto path = unique_path("cli-frozen"), ran = t / "ran";
        auto ex = co_await asio::this_coro::executor;
        session zk{ex, config_for(t.servers, 20000ms)};
        co_await connect(zk);
        // Two shared holders running COMMAND, two exclusive waiters queued behind them.
        process& h_term = co_await t.holder("holder-term", path, "--shared", "--session-timeout", "20s");
        process& h_int = co_await t.holder("holder-int", path, "--shared", "--session-timeout", "20s");
        process& w_term = t.start("waiter-term", "--session-timeout", "20s", path, "--", "touch", ran);
        process& w_int = t.start("waiter-int", "--session-timeout", "20s", path, "--", "touch", ran);
        REQUIRE(co_await wait_children(zk, path, 4) == 4);
        co_await zk.async_close();

        freeze frozen{server.pid()};
        const std::string left = path + "; left the queue";
        struct phase {
            process* p;
            int sig;
            expected want;
        };
        const std::vector<phase> phases{
            {&w_term, SIGTERM, {.status = st_interrupted, .err_has = {"interrupted by SIGTERM while waiting for " + left}}},
            {&w_int, SIGINT, {.status = st_interrupted, .err_has = {"interrupted by SIGINT while waiting for " + left}}},
            {&h_term, SIGTERM, {.status = 128 + SIGTERM}},  // passed on to COMMAND (sleep), whose status it is
            {&h_int, SIGINT, {.status = 128 + SIGINT}},
        };
        for (const auto& ph : phases) {
            CAPTURE(ph.p->err_file);
            const auto signalled = clock_type::now();
            const auto r = co_await signal_and_finish(*ph.p, ph.sig, 10s);
            MESSAGE(ph.p->err_file << ": exited " << seconds_since(signalled) << " s after " << signal_text(ph.sig));
            check_run(r, ph.want);
        }
        CHECK_FALSE(fs::exists(ran));

        // Thawed, the server finds their sessions closed (or expires them): nothing of theirs stays.
        frozen.thaw();
        session after{ex, config_for(t.servers, 20000ms)};
        co_await connect(after);
        const auto thawed = clock_type::now();
        CHECK(co_await wait_children(after, path, 0, 40s) == 0);
        MESSAGE("their nodes gone " << seconds_since(thawed) << " s after the thaw");
        co_await after.async_close();
    });
}

// ---- zklock elect, zklock leader -----------------------------------------------------------------

TEST_CASE("zklock cli: elect and leader usage errors exit 64 naming the problem")
{
    run_cli([](fixture& t) -> awaitable<void> {
        const std::vector<usage_case> cases{
            {{"elect"}, "missing election PATH; usage: zklock elect"},
            {{"elect", "relative/path", "true"}, "invalid election path 'relative/path': the path is not absolute"},
            {{"elect", "/e"}, "missing COMMAND to run while leading"},
            {{"elect", "/e", "--"}, "missing COMMAND to run while leading"},
            {{"elect", "--names", "zookeeper", "/e", "true"},
             "invalid --names 'zookeeper' (expected curator-latch, kazoo or curator-selector)"},
            {{"elect", "--names"}, "option '--names' needs a value (NAMES)"},
            {{"elect", "--try", "--timeout", "1s", "/e", "true"}, "--try and --timeout exclude each other"},
            {{"elect", "--timeout", "soon", "/e", "true"}, "invalid duration 'soon' for --timeout"},
            {{"elect", "--owner", "me", "/e", "true"}, "option '--owner' does not apply to 'zklock elect' (use --value)"},
            {{"elect", "--shared", "/e", "true"}, "option '--shared' does not apply to 'zklock elect'"},
            {{"elect", "--watch", "/e", "true"}, "option '--watch' does not apply to 'zklock elect'"},
            {{"leader"}, "missing election PATH; usage: zklock leader"},
            {{"leader", "relative"}, "invalid election path 'relative': the path is not absolute"},
            {{"leader", "/e", "true"}, "'zklock leader' takes one PATH; unexpected 'true'"},
            {{"leader", "--value", "v", "/e"}, "option '--value' does not apply to 'zklock leader'"},
            {{"leader", "--try", "/e"}, "option '--try' does not apply to 'zklock leader'"},
            {{"leader", "--watch=yes", "/e"}, "option '--watch' takes no value"},
            {{"--value", "v", "/l", "true"}, "option '--value' applies only to 'zklock elect'"},
            {{"--watch", "/l", "true"}, "option '--watch' applies only to 'zklock leader'"},
            {{"list", "--names", "kazoo", "/l"}, "option '--names' does not apply to 'zklock list'"},
        };
        const std::vector<std::string> help{"zklock elect [--value TEXT] [--names NAMES]", "zklock leader [--watch]",
                                            "--value TEXT", "--names NAMES", "curator-selector", "--watch",
                                            "'zklock leader': 0"};
        co_await expect_usage_errors(t, cases, help);
    });
}

TEST_CASE("zklock cli: elect runs COMMAND while leading, in campaign order, and leader prints the leader")
{
    run_cli(shared_server().connect_string(), [](fixture& t, session& zk) -> awaitable<void> {
        const auto path = unique_path("cli-elect"), log = t / "log", first_node = t / "first.node";
        // first leads (its COMMAND records its node, then holds until first.go); second
        // campaigns behind it.
        const std::string record = "echo \"$ZKLOCK_NODE $ZKLOCK_FENCING_TOKEN\" > " + first_node + "; ";
        process& first = co_await t.start_ready("first", "elect", "--value", "first", path, "--", "sh", "-c",
                                                record + hold_until_go(t, "first", log));
        process& second = co_await t.start_queued(path, 2, "second", "elect", "--value", "second", path, "sh", "-c",
                                                  "echo second-start >> " + log + "; exit 3");

        // The leader, as `zklock leader` sees it: first's value and node.
        const auto lines = co_await t.output_lines(2, "leader", "--servers", t.servers, path);
        CHECK(fields_of(lines[0]) == std::vector<std::string>{"NODE", "LIBRARY", "AGE", "VALUE"});
        const auto row = check_fields(lines[1], {"", "zklock", "", "first"});
        const auto recorded = fields_of(slurp(first_node));
        REQUIRE(recorded.size() == 2);
        CHECK(path + "/" + row[0] == recorded[0]);  // ZKLOCK_NODE: our candidate node
        CHECK(has(row[0], "-lock-"));                // Curator LeaderSelector's names by default
        CHECK(row[2].ends_with("s"));
        CHECK(std::stoll(recorded[1]) > 0);  // ZKLOCK_FENCING_TOKEN

        // --try (and --timeout 0) while someone leads: 75, and COMMAND does not run.
        const std::vector<run_case> refused{
            {{"elect", "--servers", t.servers, "--try", path, "touch", t / "ran"},
             {.status = st_not_acquired, .err = "zklock: " + path + " has a leader (--try)\n"}},
            {{"elect", "--servers", t.servers, "-w", "300ms", path, "touch", t / "ran"},
             {.status = st_not_acquired, .err = "zklock: timed out after 300ms campaigning for " + path + "\n"}},
        };
        co_await t.expect(refused);
        CHECK_FALSE(fs::exists(t / "ran"));

        // second's COMMAND has not started; it starts once first's has ended, and its status
        // is second's.
        co_await sleep_for(300ms);
        CHECK(slurp(log).empty());
        touch(t / "first.go");
        CHECK(co_await finish(first) == 0);
        CHECK(co_await finish(second) == 3);
        CHECK(slurp(log) == "first-end\nsecond-start\n");
        CHECK((co_await children_of(zk, path)).empty());  // both resigned
    });
}

TEST_CASE("zklock cli: leader with no candidate exits 75 and says nobody leads")
{
    run_cli(shared_server().connect_string(), [](fixture& t) -> awaitable<void> {
        const auto path = unique_path("cli-no-leader"), servers = t.servers;
        const std::string nobody = "zklock: " + path + " has no leader (nobody is campaigning)\n";
        const std::string chroot = "/zklock-no-chroot-" + std::to_string(::getpid());
        const std::string no_chroot = "the chroot " + chroot + " of " + servers + chroot + " does not exist";
        const std::vector<run_case> runs{
            // No such path yet; then the path left empty by a campaign that ended.
            {{"leader", "--servers", servers, path}, {.status = st_not_acquired, .out = "", .err = nobody}},
            {{"elect", "--servers", servers, path, "true"}},
            {{"leader", "--servers", servers, path}, {.status = st_not_acquired, .out = "", .err = nobody}},
            // A chroot that does not exist is an error (69), not "no leader".
            {{"leader", "--servers", servers + chroot, path}, {.status = st_unavailable, .err_has = {no_chroot}}},
            {{"leader", "--watch", "--servers", servers + chroot, path},
             {.status = st_unavailable, .out = "", .err_has = {no_chroot}}},
        };
        co_await t.expect(runs);
    });
}

TEST_CASE("zklock cli: leader --watch prints each change of leader at once, SIGINT or SIGTERM end it with 0")
{
    run_cli(shared_server().connect_string(), [](fixture& t) -> awaitable<void> {
        const auto path = unique_path("cli-watch"), log = t / "log";
        process& first = co_await t.start_ready("first", "elect", "--value", "first", path, "sh", "-c",
                                                hold_until_go(t, "first", log));
        process& watch_int = t.start("watch-int", "leader", "--watch", path);
        process& watch_term = t.start("watch-term", "leader", "--watch", path);
        const std::array<process*, 2> watchers{&watch_int, &watch_term};
        // At once: the leader now (TIME NODE LIBRARY AGE VALUE).
        const std::vector<std::string> first_leads{"", "", "zklock", "", "first"}, second_leads{"", "", "", "", "second"};
        for (auto* w : watchers) {
            const auto f = co_await fields_of_line(*w, 1, first_leads);
            CHECK(f[0].size() >= 23);
            CHECK(has(f[1], "-lock-"));
        }

        // first's COMMAND ends: second leads, and the watchers say so (stdout is a file here:
        // each line is flushed as it is printed).
        process& second = co_await t.start_queued(path, 2, "second", "elect", "--value", "second", "--names", "kazoo", path,
                                                  "sh", "-c", hold_until_go(t, "second", log));
        touch(t / "first.go");
        CHECK(co_await finish(first) == 0);
        co_await t.wait_ready(second);
        for (auto* w : watchers) {
            const auto f = co_await fields_of_line(*w, 2, second_leads);
            CHECK(has(f[1], "__lock__"));  // --names kazoo
        }

        // Nobody left: a "no leader" line.
        touch(t / "second.go");
        CHECK(co_await finish(second) == 0);
        const std::vector<std::string> no_leader{"", "-", "-", "-", "(no", "leader)"};
        for (auto* w : watchers) co_await fields_of_line(*w, 3, no_leader);

        // Nothing changes: no more lines; a signal ends the watch with status 0 and nothing on stderr.
        co_await sleep_for(300ms);
        watch_int.signal(SIGINT);
        watch_term.signal(SIGTERM);
        for (auto* w : watchers) {
            CHECK(co_await finish(*w) == 0);
            CHECK(lines_of(w->out()).size() == 3);
            CHECK(w->err().empty());
        }
        CHECK(slurp(log) == "first-end\nsecond-end\n");
    });
}

TEST_CASE("zklock cli: a lost leadership terminates COMMAND and exits 79, SIGTERM while campaigning exits 80")
{
    run_cli(shared_server().connect_string(), [](fixture& t, session& zk) -> awaitable<void> {
        const auto path = unique_path("cli-elect-lost"), log = t / "log";
        // A leader, and a candidate behind it.
        const std::string trap = t.trap_and_loop("leader", log_term_and_exit(log));
        process& leader = co_await t.start_ready("leader", "elect", "--kill-after", "2s", path, "--", "sh", "-c", trap);
        process& waiter = co_await t.start_queued(path, 2, "waiter", "elect", path, "--", "touch", t / "ran");

        // SIGTERM to the candidate: it withdraws (its node goes) and exits 80.
        const auto w = co_await signal_and_finish(waiter, SIGTERM, 10s);
        check_run(w, {.status = st_interrupted,
                      .err = "zklock: interrupted by SIGTERM while campaigning for " + path + "; withdrew our candidate\n"});

        // The leader's node is deleted by another session: COMMAND gets SIGTERM, zklock exits 79.
        co_await delete_only_node(zk, path);
        const auto l = co_await result_of(leader, 10s);
        check_run(l, {.status = st_lost, .err_has = {"lost the leadership of " + path, "sending SIGTERM to COMMAND"}});
        CHECK(slurp(log) == "term\n");
        CHECK_FALSE(fs::exists(t / "ran"));
    });
}

// ---- --version, -E, -c, --semaphore -------------------------------------------------------------

TEST_CASE("zklock cli: --version, -E, --semaphore, -c, revoke and --json usage errors exit 64")
{
    run_cli([](fixture& t) -> awaitable<void> {
        const std::vector<usage_case> cases{
            {{"-E", "256", "/l", "true"}, "invalid --conflict-exit-code '256' (expected a number from 0 to 255)"},
            {{"--conflict-exit-code=-1", "/l", "true"}, "invalid --conflict-exit-code '-1'"},
            {{"-E", "3x", "/l", "true"}, "invalid --conflict-exit-code '3x'"},
            {{"-E"}, "option '-E' needs a value (N)"},
            {{"--semaphore", "0", "/l", "true"}, "invalid --semaphore '0' (expected a number of permits, 1 or more)"},
            {{"--semaphore", "4294967296", "/l", "true"}, "invalid --semaphore '4294967296'"},
            {{"--semaphore", "2", "--shared", "/l", "true"}, "--shared and --semaphore exclude each other"},
            {{"elect", "--semaphore", "2", "/e", "true"},
             "option '--semaphore' does not apply to 'zklock elect' (leadership is exclusive)"},
            {{"list", "--semaphore", "2", "/l"}, "option '--semaphore' does not apply to 'zklock list'"},
            {{"/l", "-c", "echo a", "extra"},
             "-c takes the whole shell command as one argument: quote it (unexpected 'extra')"},
            {{"-c"}, "option '-c' needs a value (CMDLINE)"},
            {{"-c", "true"}, "missing LOCKPATH"},
            {{"list", "-c", "true", "/l"}, "option '--command' does not apply to 'zklock list'"},
            {{"--json", "/l", "true"}, "option '--json' applies only to 'zklock list'"},
            {{"leader", "--json", "/e"}, "option '--json' does not apply to 'zklock leader'"},
            {{"revoke"}, "missing LOCKPATH; usage: zklock revoke [OPTIONS] LOCKPATH"},
            {{"revoke", "/l", "extra"}, "'zklock revoke' takes one LOCKPATH; unexpected 'extra'"},
            {{"revoke", "relative"}, "invalid lock path 'relative': the path is not absolute"},
            {{"revoke", "--try", "/l"}, "option '--try' does not apply to 'zklock revoke'"},
            {{"revoke", "--session-timeout", "1s", "/l"}, "option '--session-timeout' does not apply to 'zklock revoke'"},
        };
        const std::vector<std::string> help{"zklock [OPTIONS] LOCKPATH -c CMDLINE", "zklock revoke [--servers H:P,...]",
                                            "zklock list [--json]", "-E, --conflict-exit-code N", "--semaphore N",
                                            "-c, --command CMDLINE", "-V, --version", "--json", "\n  81 ",
                                            "'zklock revoke': 0 (every holder asked), 75 (no holder to ask), 64, 69."};
        co_await expect_usage_errors(t, cases, help);

        // --version and -V: the project's version, on stdout, status 0, whatever else is given.
        const std::string version = cmake_cache("CMAKE_PROJECT_VERSION");
        REQUIRE_FALSE(version.empty());
        const expected said{.out = "zklock " + version + "\n", .err = ""};
        const std::vector<run_case> versions{
            {{"--version"}, said},
            {{"-V"}, said},
            {{"list", "--version", "/l"}, said},
            {{"--servers", "nohostport", "--version"}, said},
        };
        co_await t.expect(versions);
    });
}

TEST_CASE("zklock cli: -E sets the status of a lock not acquired, -c runs a command line with /bin/sh")
{
    run_cli(shared_server().connect_string(), [](fixture& t) -> awaitable<void> {
        const auto path = unique_path("cli-conflict"), ran = t / "ran", servers = t.servers;
        process& holder = co_await t.holder("holder", path);

        // --try and --timeout with -E: its status instead of 75, the message as before.
        const std::vector<run_case> conflicts{
            {{"--servers", servers, "-n", "-E", "3", path, "touch", ran},
             {.status = 3, .err = "zklock: " + path + " is taken (--try)\n"}},
            {{"--servers", servers, "--try", "--conflict-exit-code=0", path, "touch", ran}},
            {{"--servers", servers, "-E1", "-w", "300ms", path, "touch", ran},
             {.status = 1, .err = "zklock: timed out after 300ms waiting for " + path + "\n"}},
            {{"--servers", servers, "-n", path, "touch", ran}, {.status = st_not_acquired}},
        };
        co_await t.expect(conflicts);
        CHECK_FALSE(fs::exists(ran));

        // elect: someone leads.
        const auto election = unique_path("cli-conflict-elect");
        process& leader = co_await t.start_ready("leader", "elect", election, "-c", t.ready_then_sleep("leader"));
        const auto e = co_await t.run("elect", "--servers", servers, "-n", "-E", "9", election, "touch", ran);
        check_run(e, {.status = 9, .err = "zklock: " + election + " has a leader (--try)\n"});
        CHECK(co_await terminate(leader) == 128 + SIGTERM);  // -c: sh exec'd sleep, which SIGTERM killed

        // -c CMDLINE: /bin/sh -c, with the environment, status passed on; options after it too.
        const std::string out = t / "c.out";
        const std::string cmdline = "echo \"$0 $ZKLOCK_NODE\" | tr a-z A-Z > " + out + " && test -s " + out + "; exit 4";
        const auto c = co_await t.run("--servers", servers, path + "-c", "-c", cmdline);
        CHECK(c.status == 4);
        const auto written = slurp(out);
        CAPTURE(written);
        std::string upper = "/BIN/SH " + path + "-c/";
        for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
        CHECK(written.rfind(upper, 0) == 0);
        const auto c2 = co_await t.run("--command=exit 5", "--servers", servers, path + "-c");
        CHECK(c2.status == 5);
        CHECK(co_await terminate(holder) == 128 + SIGTERM);
    });
}

TEST_CASE("zklock cli: --semaphore N runs N holders at once, in queue order, and names a mismatch")
{
    run_cli(shared_server().connect_string(), [](fixture& t, session& zk) -> awaitable<void> {
        const auto path = unique_path("cli-semaphore"), ran = t / "ran", servers = t.servers;
        // Two permits: two holders at once.
        process& a = co_await t.holder("a", path, "--semaphore", "2");
        process& b = co_await t.holder("b", path, "--semaphore", "2");
        const std::vector<run_case> refused{
            // A third: --try finds no permit free (75, or -E's status).
            {{"--servers", servers, "--semaphore", "2", "-n", path, "touch", ran},
             {.status = st_not_acquired, .err = "zklock: " + path + " has no free permit (--try)\n"}},
            // Another count, or a lock on the semaphore's path: refused (69), the reason named.
            {{"--servers", servers, "--semaphore", "3", path, "touch", ran},
             {.status = st_unavailable,
              .err = "zklock: cannot acquire " + path + ": it is a semaphore of 2 permits, not 3 (--semaphore)\n"}},
            {{"--servers", servers, "--try", path, "touch", ran},
             {.status = st_unavailable,
              .err = "zklock: cannot acquire " + path + ": it is a semaphore (add --semaphore N)\n"}},
        };
        co_await t.expect(refused);
        CHECK_FALSE(fs::exists(ran));

        // list: two permit holders.
        const auto rows = co_await t.output_lines(4, "list", "--servers", servers, path);
        for (std::size_t i = 2; i < 4; ++i) {
            CAPTURE(rows[i]);
            const auto f = fields_of(rows[i]);
            REQUIRE(f.size() >= 6);
            CHECK(f[1] == "holder");
            CHECK(f[2] == "permit");
            CHECK(f[4] == "semaphore");
        }

        // A third holder waits for a permit, -v saying so, and gets one when a holder ends.
        process& third =
            co_await t.start_queued(path, 3, "third", "-v", "--semaphore", "2", path, "-c", t.ready_then_sleep("third"));
        co_await sleep_for(300ms);
        CHECK_FALSE(fs::exists(t.ready_file("third")));
        CHECK(co_await terminate(a) == 128 + SIGTERM);
        co_await t.wait_ready(third);
        CHECK(has(third.err(), "zklock: waiting for one of the 2 permits of " + path));
        CHECK(has(third.err(), "zklock: waiting: 2 ahead\n"));
        const std::array<process*, 2> rest{&b, &third};
        for (auto* p : rest) CHECK(co_await terminate(*p) == 128 + SIGTERM);
        CHECK((co_await children_of(zk, path)).empty());
    });
}

// ---- zklock revoke ------------------------------------------------------------------------------

TEST_CASE("zklock cli: revoke asks every holder to let go, a holder ends COMMAND and exits 81")
{
    run_cli(shared_server().connect_string(), [](fixture& t, session& zk) -> awaitable<void> {
        // An exclusive holder whose COMMAND cleans up on SIGTERM, and a waiter behind it.
        const auto path = unique_path("cli-revoke"), log = t / "log";
        const std::string trap = t.trap_and_loop("holder", log_term_and_exit(log));
        process& holder = co_await t.start_ready("holder", "--owner", "the holder", path, "--", "sh", "-c", trap);
        process& waiter = co_await t.start_queued(path, 2, "waiter", path, "-c", "echo waiter >> " + log);
        const auto kids = co_await children_of(zk, path);
        const auto holder_node =
            *std::ranges::min_element(kids, {}, [](const std::string& n) { return queue_sequence(n).value_or(0); });

        const auto r = co_await t.run("revoke", "--servers", t.servers, path);
        check_run(r, {.out = path + ": asked " + holder_node + " (the holder) to let go\n", .err = ""});
        const auto h = co_await result_of(holder, 10s);
        CHECK(h.status == st_revoked);
        CHECK(co_await finish(waiter, 10s) == 0);
        CHECK(slurp(log) == "term\nwaiter\n");  // COMMAND ended, then the waiter held
        CAPTURE(h.err);
        CHECK(h.err.find("zklock: revocation of the lock on " + path + " requested; sending SIGTERM to COMMAND (pid ") == 0);
        CHECK(has(h.err, "COMMAND exited with status 0 after the revocation request; released " + path));

        // Shared holders: every one is asked, and the writer waiting behind them gets the lock.
        const auto shared = unique_path("cli-revoke-shared");
        process& r1 = co_await t.holder("r1", shared, "--shared");
        process& r2 = co_await t.holder("r2", shared, "--shared");
        process& writer = co_await t.start_queued(shared, 3, "writer", shared, "true");
        const auto asked = co_await t.output_lines(2, "revoke", "--servers", t.servers, shared);
        for (const auto& line : asked) CHECK_MESSAGE(has(line, ": asked r-"), line);
        CHECK(co_await finish(r1, 10s) == st_revoked);
        CHECK(co_await finish(r2, 10s) == st_revoked);
        CHECK(co_await finish(writer, 10s) == 0);

        // A COMMAND that ignores SIGTERM gets SIGKILL after --kill-after.
        const auto stubborn_path = unique_path("cli-revoke-kill");
        process& stubborn =
            co_await t.start_ready("stubborn", "--kill-after", "1s", stubborn_path, "-c", t.trap_and_loop("stubborn", ""));
        co_await t.output_lines(1, "revoke", "--servers", t.servers, stubborn_path);
        const std::string killed = "COMMAND killed by SIGKILL after the revocation request";
        co_await check_killed(stubborn, st_revoked, clock_type::now(), killed);
        CHECK((co_await children_of(zk, stubborn_path)).empty());
    });
}

TEST_CASE("zklock cli: revoke with nobody to ask exits 75, a Kazoo holder is left alone, a leader resigns")
{
    run_cli(shared_server().connect_string(), [](fixture& t, session& zk) -> awaitable<void> {
        // No such path; a path with nobody in it.
        const auto path = unique_path("cli-revoke-none");
        co_await zk.async_create(path.substr(0, path.rfind('/')), "", create_mode::persistent, tuple);  // may exist
        const auto missing = co_await t.run("revoke", "--servers", t.servers, path);
        check_run(missing, {.status = st_not_acquired, .out = "",
                            .err = "zklock: " + path + " has no holder (no such lock); nothing to revoke\n"});
        auto [pec, created, pst] = co_await zk.async_create(path, "", create_mode::persistent, tuple);
        REQUIRE_FALSE(pec);
        const auto empty = co_await t.run("revoke", "--servers", t.servers, path);
        check_run(empty, {.status = st_not_acquired, .err = "zklock: " + path + " has no holder; nothing to revoke\n"});

        // A Kazoo holder: not written to (its data stays), 75.
        const auto kazoo_node = co_await create_foreign(zk, path + "/" + kazoo_name + "__lock__", "python");
        const auto foreign = co_await t.run("revoke", "--servers", t.servers, path);
        check_run(foreign, {.status = st_not_acquired, .out = "",
                            .err = "zklock: " + path + " is held by " + kazoo_node.substr(path.size() + 1) +
                                   " (a kazoo node): Kazoo's locks have no revocation; left alone\n"});
        auto [gec, data, gst] = co_await zk.async_get_data(kazoo_node, tuple);
        REQUIRE_FALSE(gec);
        CHECK(data == "python");
        co_await zk.async_remove(kazoo_node, -1, tuple);
        co_await zk.async_remove(path, -1, tuple);

        // An election's leader is asked to resign: COMMAND ends, the next candidate leads.
        const auto election = unique_path("cli-revoke-elect"), log = t / "log";
        const std::string trap = t.trap_and_loop("leader", log_term_and_exit(log));
        process& leader = co_await t.start_ready("leader", "elect", "--value", "first", election, "-c", trap);
        process& next = co_await t.start_queued(election, 2, "next", "elect", election, "-c", "echo next >> " + log);
        const auto r = co_await t.run("revoke", "--servers", t.servers, election);
        check_run(r, {.out_has = {": asked ", " (first) to let go\n"}});
        const auto l = co_await result_of(leader, 10s);
        check_run(l, {.status = st_revoked,
                      .err_has = {"revocation of the leadership of " + election + " requested",
                                  "after the revocation request; resigned " + election}});
        CHECK(co_await finish(next, 10s) == 0);
        CHECK(slurp(log) == "term\nnext\n");
    });
}

TEST_CASE("zklock cli: revoke asks a Curator holder, whose lock made revocable lets go")
{
    run_cli(shared_server().connect_string(), [](fixture& t, session& zk) -> awaitable<void> {
        // A real Curator 5.4 holder of an InterProcessMutex made revocable (makeRevocable): it
        // holds until its revocation listener is called (exit 0), or 30 s pass (exit 3).
        const auto path = unique_path("cli-revoke-curator"), log = t / "curator.log";
        child_options java;
        java.search_path = true;
        process& curator = t.start_program(
            "curator", curator_worker_argv(source_tree() / "test" / "interop" / "CuratorWorker.java", t.servers, path,
                                           "hold-revocable", 1, 30000, log),
            java);
        const bool granted = co_await eventually([&] { return has(slurp(log), "grant "); }, 60s);
        REQUIRE_MESSAGE(granted, "the Curator worker never held; stderr: " << curator.err());
        const auto kids = co_await children_of(zk, path);
        REQUIRE(kids.size() == 1);
        const std::string node = kids[0];
        CHECK(node.rfind("_c_", 0) == 0);  // Curator's protected name
        auto [gec, data, gst] = co_await zk.async_get_data(path + "/" + node, tuple);
        REQUIRE_FALSE(gec);

        // The request is written into its node; the note says who hears it.
        const auto r = co_await t.run("revoke", "--servers", t.servers, path);
        const std::string owner = data.empty() ? "-" : data;  // the worker's Curator stores no data
        check_run(r, {.out = path + ": asked " + node + " (" + owner + ") to let go\n",
                      .err = "zklock: " + node + " is a Curator node: its holder hears the request only if its program "
                             "made the lock revocable (InterProcessMutex.makeRevocable)\n"});
        // Its listener was called: it let go and exited 0, and its node is gone.
        CHECK(co_await finish(curator, 30s) == 0);
        const auto words = lines_of(slurp(log));
        REQUIRE(words.size() == 3);
        CHECK(words[0].rfind("grant ", 0) == 0);
        CHECK(words[1].rfind("revoked ", 0) == 0);
        CHECK(words[2].rfind("release ", 0) == 0);
        CHECK((co_await children_of(zk, path)).empty());
    });
}

// ---- list --json, columns sized from the data, -v -----------------------------------------------

namespace {

/// A JSON string's text.
std::string str(const boost::json::value& v)
{
    const auto& s = v.as_string();
    return std::string(s.data(), s.size());
}

/// `zklock list --json --servers SERVERS PATH`: status 0 and one line, the object it holds.
awaitable<boost::json::object> list_json(fixture& t, const std::string& path)
{
    const auto lines = co_await t.output_lines(1, "list", "--json", "--servers", t.servers, path);
    co_return boost::json::parse(lines[0]).as_object();
}

}  // namespace

TEST_CASE("zklock cli: list --json, and columns that stay aligned with long foreign node names")
{
    run_cli(shared_server().connect_string(), [](fixture& t, session& zk) -> awaitable<void> {
        const auto path = unique_path("cli-json"), servers = t.servers;
        // Missing: exists false, no entries, status 0.
        const auto none = co_await list_json(t, path);
        CHECK(str(none.at("path")) == path);
        CHECK(none.at("exists").as_bool() == false);
        CHECK(none.at("entries").as_array().empty());

        // A zklock holder, a shared zklock waiter, a Kazoo reader (a 50-character name) and a
        // Curator writer behind them.
        process& holder = co_await t.holder("holder", path, "--owner", "the holder");
        process& reader =
            co_await t.start_queued(path, 2, "reader", "--shared", "--owner", "a \"quoted\"\treader", path, "true");
        const auto kazoo_node = co_await create_foreign(zk, path + "/" + kazoo_name + "__rlock__", "python");
        const auto curator_node = co_await create_foreign(zk, path + "/" + curator_name + "-__WRIT__", "java");

        const auto doc = co_await list_json(t, path);
        CAPTURE(boost::json::serialize(doc));
        CHECK(doc.at("exists").as_bool());
        CHECK(doc.at("permits").is_null());
        CHECK(doc.at("other_children").as_int64() == 0);
        const auto& entries = doc.at("entries").as_array();
        REQUIRE(entries.size() == 4);
        // Each entry's text fields, the reader's owner as stored (escaped by JSON).
        const std::vector<std::map<std::string, std::string>> texts{
            {{"state", "holder"}, {"kind", "exclusive"}, {"library", "zklock"}, {"recipe", "mutex"},
             {"owner", "the holder"}},
            {{"state", "waiting"}, {"kind", "shared"}, {"recipe", "shared_mutex"}, {"owner", "a \"quoted\"\treader"}},
            {{"library", "kazoo"}, {"owner", "python"}},
            {{"library", "curator"}, {"kind", "exclusive"}},
        };
        const auto e = [&](std::size_t i) -> const boost::json::object& { return entries[i].as_object(); };
        for (std::size_t i = 0; i < 4; ++i) {
            CAPTURE(i);
            CHECK(e(i).at("position").as_int64() == static_cast<std::int64_t>(i + 1));
            CHECK(e(i).at("age_ms").as_int64() >= 0);
            CHECK(e(i).at("created_ms").as_int64() > 0);
            CHECK(str(e(i).at("session")).rfind("0x", 0) == 0);
            CHECK(e(i).at("gone").as_bool() == false);
            CHECK(e(i).at("revocation_requested").as_bool() == false);
            if (i > 0) CHECK(e(i).at("sequence").as_int64() > e(i - 1).at("sequence").as_int64());
            for (const auto& [key, value] : texts[i]) CHECK_MESSAGE(str(e(i).at(key)) == value, key);
        }
        CHECK(str(e(0).at("node")).rfind("x-", 0) == 0);
        CHECK(path + "/" + str(e(2).at("node")) == kazoo_node);
        CHECK(path + "/" + str(e(3).at("node")) == curator_node);

        // The table: every column starts where its header does, however long the names.
        const auto rows = co_await t.output_lines(6, "list", "--servers", servers, path);
        REQUIRE(column_starts(rows[1]).size() == 8);
        check_aligned(rows[1], {rows.begin() + 2, rows.end()});
        CHECK_MESSAGE(has(rows[4], kazoo_node.substr(path.size() + 1) + " "), rows[4]);
        CHECK_MESSAGE(rows[3].ends_with("a \"quoted\"?reader"), rows[3]);  // a control character shown as '?'

        // A revocation request in a node (the Curator one: nobody watches it, so it stays):
        // owner null, revocation_requested true; the table says so in the owner column.
        auto [rec, rst] = co_await zk.async_set_data(curator_node, std::string(zklock::revocation_request), -1, tuple);
        REQUIRE_FALSE(rec);
        const auto doc2 = co_await list_json(t, path);
        const auto& last = doc2.at("entries").as_array().at(3).as_object();
        CHECK(last.at("revocation_requested").as_bool());
        CHECK(last.at("owner").is_null());
        const auto rows2 = co_await t.output_lines(6, "list", "--servers", servers, path);
        CHECK_MESSAGE(rows2[5].ends_with(" (revocation requested)"), rows2[5]);
        CHECK(co_await terminate(holder, 10s) == 128 + SIGTERM);
        co_await zk.async_remove(kazoo_node, -1, tuple);
        co_await zk.async_remove(curator_node, -1, tuple);
        CHECK(co_await finish(reader, 10s) == 0);

        // A semaphore's listing: its permit count.
        const auto sem = unique_path("cli-json-semaphore");
        process& permit = co_await t.holder("permit", sem, "--semaphore", "3");
        const auto doc3 = co_await list_json(t, sem);
        CHECK(doc3.at("permits").as_int64() == 3);
        CHECK(str(doc3.at("entries").as_array().at(0).as_object().at("kind")) == "permit");
        CHECK(co_await terminate(permit) == 128 + SIGTERM);

        // `zklock leader`: a Kazoo-named candidate (37 characters) keeps its columns aligned too.
        const auto election = unique_path("cli-json-elect");
        process& leader = co_await t.start_ready("leader", "elect", "--names", "kazoo", "--value", "v",
                                                 election, "-c", t.ready_then_sleep("leader"));
        const auto leader_rows = co_await t.output_lines(2, "leader", "--servers", servers, election);
        CHECK(fields_of(leader_rows[1])[0].size() > 36);
        check_aligned(leader_rows[0], {leader_rows[1]});
        CHECK(co_await terminate(leader) == 128 + SIGTERM);
    });
}

TEST_CASE("zklock cli: -v says waiting only when the acquire waits, and shows the session timeout granted")
{
    run_cli(shared_server().connect_string(), [](fixture& t) -> awaitable<void> {
        const auto path = unique_path("cli-verbose-grant"), servers = t.servers;
        // Granted at once: connected (with the granted timeout), acquired, released; no "waiting".
        const std::string acquired = "zklock: acquired " + path, released = "; released " + path;
        const std::vector<run_case> free_runs{
            {{"--servers", servers, "-v", "--session-timeout", "2s", path, "true"},
             {.err_has = {acquired, released, ", session timeout 2s)\n"}, .err_lacks = {"waiting"}}},
            {{"--servers", servers, "-v", "-s", path, "true"}, {.err_has = {acquired, released}, .err_lacks = {"waiting"}}},
            {{"--servers", servers, "-v", "--semaphore", "2", path + "-sem", "true"},
             {.err_has = {acquired, released}, .err_lacks = {"waiting"}}},
        };
        const auto granted = co_await t.expect(free_runs);
        CHECK(granted[0].err.rfind("zklock: connected to " + servers + " (session 0x", 0) == 0);

        // Behind a holder: it says what it waits for and where it stands, then acquires.
        process& holder = co_await t.holder("holder", path);
        process& waiter = co_await t.start_queued(path, 2, "waiter", "-v", "--shared", path, "true");
        CHECK(co_await terminate(holder) == 128 + SIGTERM);
        CHECK(co_await finish(waiter) == 0);
        const auto lines = lines_of(waiter.err());
        CAPTURE(waiter.err());
        const auto waiting = std::ranges::find_if(lines, [](const std::string& l) { return has(l, "waiting"); });
        REQUIRE(lines.end() - waiting >= 3);
        CHECK(waiting[0].rfind("zklock: waiting for a shared lock on " + path + " (node r-", 0) == 0);
        CHECK(waiting[1] == "zklock: waiting: 1 ahead");
        CHECK(waiting[2].rfind("zklock: acquired " + path, 0) == 0);

        // elect: campaigning, and waiting only behind a leader.
        const auto election = unique_path("cli-verbose-elect");
        const auto alone = co_await t.run("elect", "--servers", servers, "-v", election, "true");
        check_run(alone, {.err_has = {"zklock: campaigning for " + election, "zklock: leading " + election},
                          .err_lacks = {"waiting"}});
        process& leader = co_await t.start_ready("leader", "elect", election, "-c", t.ready_then_sleep("leader"));
        process& candidate = co_await t.start_queued(election, 2, "candidate", "elect", "-v", election, "true");
        co_await eventually([&] { return has(candidate.err(), "waiting: 1 ahead"); }, 10s);
        CHECK(co_await terminate(leader) == 128 + SIGTERM);
        const auto c = co_await result_of(candidate);
        check_run(c, {.err_has = {"zklock: waiting for the leadership of " + election + " (node x-",
                                  "zklock: waiting: 1 ahead\n"}});
    });
}

// ---- bash completion, man page ------------------------------------------------------------------

TEST_CASE("zklock cli: the bash completion offers the subcommands and the options each one takes")
{
    run_cli([](fixture& t) -> awaitable<void> {
        const fs::path completion = source_tree() / "tools/zklock.bash-completion";
        REQUIRE_MESSAGE(fs::exists(completion), completion);

        // The options --help lists, and which subcommand takes each, as the binary itself says: an
        // option it refuses is "does not apply" or "applies only", any other outcome (a bad path
        // here) means it took the option.
        const auto help = co_await zklock_help(t);
        const std::map<std::string, std::string> sample{{"DURATION", "1s"}, {"N", "1"}, {"FILE", "/dev/null"}, {"TEXT", "x"},
                                                        {"NAMES", "kazoo"}, {"H:P,...", "127.0.0.1:1"}, {"CMDLINE", "true"}};
        const std::vector<std::string> modes{"", "list", "elect", "leader", "revoke"};
        std::map<std::string, std::set<std::string>> takes;
        for (const auto& mode : modes)
            for (const auto& o : help.options) {
                std::vector<std::string> args;
                if (!mode.empty()) args.push_back(mode);
                args.push_back("--" + o.name);
                if (!o.value.empty()) {
                    REQUIRE_MESSAGE(sample.contains(o.value), o.value);
                    args.push_back(sample.at(o.value));
                }
                args.push_back("relative");
                const auto r = co_await t.run_argv(args);
                if (!has(r.err, "does not apply") && !has(r.err, "applies only")) takes[mode].insert("--" + o.name);
            }
        CHECK(takes[""].contains("--semaphore"));
        CHECK_FALSE(takes["elect"].contains("--semaphore"));
        CHECK(takes["list"].contains("--json"));

        // The completion, asked as bash asks it: one line per case, the words offered after a tab
        // (all of them, or where `some` is set, at least those).
        struct completion_case {
            std::string words;
            std::set<std::string> offered;
            bool some = false;
        };
        const std::vector<completion_case> cases{
            {"zklock ''", {"list", "elect", "leader", "revoke"}},
            {"zklock l", {"list", "leader"}},
            {"zklock --", takes[""]},
            {"zklock list --", takes["list"]},
            {"zklock elect --", takes["elect"]},
            {"zklock leader --", takes["leader"]},
            {"zklock revoke --", takes["revoke"]},
            {"zklock elect --names ''", {"curator-selector", "curator-latch", "kazoo"}},
            {"zklock elect --names = ku", {}},               // "ku" matches none
            {"zklock -w 5s /l ech", {"echo"}, true},         // COMMAND, after the lock path
            {"zklock -sn /l -- ech", {"echo"}, true},
            {"zklock /l -", takes[""]},                      // options may still come after LOCKPATH
            {"zklock --servers h:1 -c ''", {"echo"}, true},  // -c: a command line, starting with a command
        };
        std::string script = "source '" + completion.string() + "' || exit 9\n"
                             "t() { COMP_WORDS=(\"$@\"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _zklock;"
                             " printf '%s\\n' \"${COMPREPLY[*]}\"; }\n"
                             "complete -p zklock | grep -q -- '-F _zklock' || exit 8\n";
        for (const auto& c : cases) script += "t " + c.words + "\n";
        process& b = t.start_program("bash", {"/bin/bash", "--norc", "--noprofile", "-c", script});
        REQUIRE(co_await finish(b) == 0);
        CAPTURE(b.out());
        CAPTURE(b.err());
        CHECK(b.err().empty());
        const auto out = lines_of(b.out());
        REQUIRE(out.size() == cases.size());
        for (std::size_t i = 0; i < cases.size(); ++i) {
            CAPTURE(cases[i].words);
            const auto f = fields_of(out[i]);
            const std::set<std::string> offered(f.begin(), f.end());
            const auto& want = cases[i].offered;
            if (cases[i].some) CHECK(std::includes(offered.begin(), offered.end(), want.begin(), want.end()));
            else CHECK(offered == want);
        }
    });
}

TEST_CASE("zklock cli: the man page installs, renders, lints clean and documents every option and status")
{
    run_cli([](fixture& t) -> awaitable<void> {
        const fs::path page = source_tree() / "docs/zklock.1";
        REQUIRE_MESSAGE(fs::exists(page), page);
        const std::vector<std::string> no_env;
        const auto which = co_await t.run_shell("which-man", "command -v man && command -v groff", no_env);
        REQUIRE_MESSAGE(which.status == 0, "man or groff is missing: scripts/install-deps.sh --test installs man-db");

        // Installed (the whole project, into a scratch prefix) where man finds it, with the completion.
        const std::string cmake = cmake_cache("CMAKE_COMMAND");
        REQUIRE_FALSE(cmake.empty());
        const std::string prefix = t / "prefix", man_dir = prefix + "/share/man";
        process& install = t.start_program("install", {cmake, "--install", build_tree().string(), "--prefix", prefix});
        REQUIRE_MESSAGE(co_await finish(install, 60s) == 0, install.err());
        CHECK(fs::exists(man_dir + "/man1/zklock.1"));
        CHECK(fs::exists(prefix + "/share/bash-completion/completions/zklock"));
        CHECK(fs::exists(prefix + "/bin/zklock"));
        const std::vector<std::string> man_env{"MANPATH=" + man_dir, "MANWIDTH=80", "MANPAGER=cat", "PAGER=cat"};
        const auto where = co_await t.run_shell("man-w", "man -w zklock", man_env);
        check_run(where, {.out = man_dir + "/man1/zklock.1\n"});
        // Its sections, `zklock revoke` and every environment variable.
        const expected documented{
            .out_has = {"\nNAME\n", "\nSYNOPSIS\n", "\nDESCRIPTION\n", "\nOPTIONS\n", "\nENVIRONMENT\n", "\nEXIT STATUS\n",
                        "\nEXAMPLES\n", "zklock revoke", "ZK_SERVERS", "ZKLOCK_TLS_CA", "ZKLOCK_TLS_CERT", "ZKLOCK_TLS_KEY",
                        "ZKLOCK_FENCING_TOKEN", "ZKLOCK_NODE"}};
        const auto render = co_await t.run_shell("man", "man zklock", man_env);
        CAPTURE(render.err);
        check_run(render, documented);
        const auto& text = render.out;

        // The lint: groff's warnings, none.
        const std::vector<std::string> lint_env{"LC_ALL=C.UTF-8", "MANROFFSEQ=", "MANWIDTH=80"};
        const std::string lint_script = "man --warnings -E UTF-8 -l '" + page.string() + "' 2>&1 >/dev/null";
        const auto lint = co_await t.run_shell("lint", lint_script, lint_env);
        CHECK(lint.status == 0);
        CHECK_MESSAGE(lint.out.empty(), lint.out);

        // --help and the man page agree: every option (with its short name), every exit status, and
        // the version.
        const auto help = co_await zklock_help(t);
        for (const auto& o : help.options) {
            CHECK_MESSAGE(has(text, "--" + o.name), o.name);
            if (o.short_name) CHECK_MESSAGE(has(text, "-" + std::string(1, o.short_name) + ", --" + o.name), o.name);
        }
        int codes = 0;
        for (const auto& line : lines_of(help.text))
            if (line.size() > 4 && line.rfind("  ", 0) == 0 && std::isdigit(static_cast<unsigned char>(line[2]))) {
                const std::string code = line.substr(2, line.find(' ', 2) - 2);
                if (has(code, "-")) continue;  // "0-255": an en dash in the page
                ++codes;
                CHECK_MESSAGE(has(text, "\n       " + code + " "), code);
            }
        CHECK(codes >= 10);
        const auto version = co_await t.output_lines(1, "--version");
        const auto page_lines = lines_of(slurp(page));
        const auto th = std::ranges::find_if(page_lines, [](const std::string& l) { return l.rfind(".TH ", 0) == 0; });
        REQUIRE(th != page_lines.end());
        CHECK_MESSAGE(has(*th, "\"" + version[0] + "\""), *th);
    });
}
