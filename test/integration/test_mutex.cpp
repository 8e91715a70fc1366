// The exclusive lock against a real ZooKeeper server.
#include "../common.hpp"
#include "server.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>

#include <algorithm>
#include <map>
#include <random>

using namespace zklock;
using namespace zklock::test;

namespace {

std::int64_t seq_of(const std::string& node) { return detail::parse_queue_node(detail::base_name(node))->seq; }

}  // namespace

TEST_CASE("uncontended acquire and release")
{
    run([]() -> awaitable<void> {
        session s{co_await asio::this_coro::executor, config_for(shared_server().connect_string())};
        co_await connect(s);
        CHECK(s.state() == session_state::connected);
        const auto path = unique_path("uncontended");
        mutex m{s, path};
        auto l = co_await m.async_acquire(5s);
        CHECK(l.owns_lock());
        CHECK(l.status() == lease_status::held);
        CHECK(l.fencing_token() > 0);
        CHECK(l.node().rfind(path + "/x-", 0) == 0);
        auto kids = co_await children_of(s, path);
        REQUIRE(kids.size() == 1);
        CHECK(path + "/" + kids[0] == l.node());
        auto [data_ec, data, st] = co_await s.async_get_data(l.node(), tuple);
        CHECK_FALSE(data_ec);
        CHECK(st.ephemeral_owner == s.session_id());
        CHECK(st.czxid == l.fencing_token());
        CHECK(data.find(':') != std::string::npos);  // "<host>:<pid>" by default
        co_await l.async_release();
        CHECK(l.status() == lease_status::released);
        CHECK((co_await children_of(s, path)).empty());
        auto [ec2] = co_await l.async_release(tuple);
        CHECK(ec2 == errc::already_released);
        co_await s.async_close();
    });
}

TEST_CASE("two sessions hand the lock over, and fencing tokens increase")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session a{ex, config_for(shared_server().connect_string())};
        session b{ex, config_for(shared_server().connect_string())};
        co_await connect(a);
        co_await connect(b);
        const auto path = unique_path("handoff");
        mutex ma{a, path}, mb{b, path};
        auto la = co_await ma.async_acquire(5s);
        bool b_got = false;
        lease lb;
        asio::co_spawn(ex, [&]() -> awaitable<void> {
            lb = co_await mb.async_acquire(10s);
            b_got = true;
        }, asio::detached);
        CHECK(co_await wait_children(a, path, 2) == 2);
        co_await sleep_for(100ms);
        CHECK_FALSE(b_got);  // still held by a
        const auto ta = la.fencing_token();
        co_await la.async_release();
        for (int i = 0; i < 500 && !b_got; ++i) co_await sleep_for(10ms);
        REQUIRE(b_got);
        CHECK(lb.fencing_token() > ta);
        co_await lb.async_release();
    });
}

TEST_CASE("50 waiters over 5 sessions: strict queue order and mutual exclusion")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto sessions = co_await open_sessions(shared_server().connect_string(), 5);
        const auto path = unique_path("fifo");
        mutex blocker_lock{sessions[0], path};
        auto blocker = co_await blocker_lock.async_acquire(5s);

        int counter = 0, inside = 0, max_inside = 0, finished = 0;
        std::vector<std::int64_t> grant_seqs;
        std::vector<std::int64_t> tokens;
        const int n = 50;
        for (int i = 0; i < n; ++i) {
            asio::co_spawn(ex, [&, i]() -> awaitable<void> {
                mutex m{sessions[i % 5], path};
                auto l = co_await m.async_acquire(60s);
                grant_seqs.push_back(seq_of(l.node()));
                tokens.push_back(l.fencing_token());
                max_inside = std::max(max_inside, ++inside);
                int read = counter;         // read
                co_await sleep_for(1ms);    // suspend inside the critical section
                counter = read + 1;         // write
                --inside;
                co_await l.async_release();
                ++finished;
            }, asio::detached);
        }
        CHECK(co_await wait_children(sessions[0], path, n + 1) == n + 1);
        co_await blocker.async_release();
        for (int i = 0; i < 3000 && finished < n; ++i) co_await sleep_for(10ms);
        REQUIRE(finished == n);
        CHECK(counter == n);
        CHECK(max_inside == 1);
        CHECK(std::is_sorted(grant_seqs.begin(), grant_seqs.end()));
        CHECK(std::adjacent_find(tokens.begin(), tokens.end(), std::greater_equal<>()) == tokens.end());
        CHECK((co_await children_of(sessions[0], path)).empty());
    });
}

TEST_CASE("1 500 waiters over 3 sessions, past the look-ahead's window: queue order, and deep timeouts leave nothing")
{
    // Waiters more than lookahead_window::span (1024) places back defer their look-ahead watch
    // and set it as grants on their session bring them near; some of them time out while deferred.
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto sessions = co_await open_sessions(shared_server().connect_string(), 3);
        const auto path = unique_path("window");
        mutex blocker_lock{sessions[0], path};
        auto blocker = co_await blocker_lock.async_acquire(5s);

        const int n = 1500;
        int inside = 0, max_inside = 0, granted = 0, timed_out = 0, failed = 0;
        std::vector<std::int64_t> grant_seqs;
        for (int i = 0; i < n; ++i) {
            // Every 50th past the 1 025th gives up after 2 s, while the blocker still holds.
            const bool gives_up = i >= 1025 && i % 50 == 0;
            asio::co_spawn(ex, [&, i, gives_up]() -> awaitable<void> {
                mutex m{sessions[i % 3], path};
                auto [ec, l] = co_await m.async_acquire(gives_up ? 2s : 120s, tuple);
                if (ec) {
                    ++(ec == errc::timeout && gives_up ? timed_out : failed);
                    co_return;
                }
                grant_seqs.push_back(seq_of(l.node()));
                max_inside = std::max(max_inside, ++inside);
                co_await asio::post(ex, asio::use_awaitable);  // hold across a turn of the executor
                --inside;
                co_await l.async_release();
                ++granted;
            }, asio::detached);
        }
        int giving_up = 0;
        for (int i = 1025; i < n; ++i) giving_up += i % 50 == 0;
        CHECK(co_await wait_children(sessions[0], path, n + 1) == n + 1);
        for (int i = 0; i < 3000 && timed_out + failed < giving_up; ++i) co_await sleep_for(10ms);
        CHECK(timed_out == giving_up);
        CHECK((co_await children_of(sessions[0], path)).size() == static_cast<std::size_t>(n + 1 - giving_up));
        co_await blocker.async_release();
        for (int i = 0; i < 12000 && granted + timed_out + failed < n; ++i) co_await sleep_for(10ms);
        REQUIRE(granted == n - giving_up);
        CHECK(failed == 0);
        CHECK(max_inside == 1);
        CHECK(std::is_sorted(grant_seqs.begin(), grant_seqs.end()));
        CHECK((co_await children_of(sessions[0], path)).empty());
    });
}

TEST_CASE("timeout: errc::timeout after the deadline, and our node is gone")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session s{ex, config_for(shared_server().connect_string())};
        co_await connect(s);
        const auto path = unique_path("timeout");
        mutex m{s, path};
        auto holder = co_await m.async_acquire(5s);
        auto t0 = std::chrono::steady_clock::now();
        auto [ec, l] = co_await m.async_acquire(300ms, tuple);
        auto waited = std::chrono::steady_clock::now() - t0;
        CHECK(ec == errc::timeout);
        CHECK_FALSE(l.owns_lock());
        CHECK(waited >= 300ms);
        auto kids = co_await children_of(s, path);
        REQUIRE(kids.size() == 1);
        CHECK(path + "/" + kids[0] == holder.node());

        auto [ec2, l2] = co_await m.async_try_acquire(tuple);
        CHECK(ec2 == errc::would_block);
        CHECK((co_await children_of(s, path)).size() == 1);
        auto [ec3, l3] = co_await m.async_acquire(0s, tuple);
        CHECK(ec3 == errc::would_block);
        CHECK((co_await children_of(s, path)).size() == 1);
        co_await holder.async_release();
        auto free = co_await m.async_try_acquire();
        CHECK(free.owns_lock());
    });
}

TEST_CASE("cancellation at each phase deletes the node and strands no waiter")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session s{ex, config_for(shared_server().connect_string())};
        co_await connect(s);
        const auto path = unique_path("cancel");
        mutex m{s, path};
        auto holder = co_await m.async_acquire(5s);

        for (auto type : {asio::cancellation_type::terminal, asio::cancellation_type::partial,
                          asio::cancellation_type::total}) {
            // (a) right after initiation: the create is in flight
            {
                asio::cancellation_signal sig;
                bool done = false;
                error_code got;
                m.async_acquire(10s, asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, lease) {
                    got = ec;
                    done = true;
                }));
                sig.emit(type);
                for (int i = 0; i < 500 && !done; ++i) co_await sleep_for(10ms);
                REQUIRE(done);
                CHECK(got == asio::error::operation_aborted);
                CHECK((co_await children_of(s, path)).size() == 1);
            }
            // (b) while waiting for the predecessor
            {
                asio::cancellation_signal sig;
                bool done = false;
                error_code got;
                m.async_acquire(asio::bind_cancellation_slot(sig.slot(), [&](error_code ec, lease) {
                    got = ec;
                    done = true;
                }));
                CHECK(co_await wait_children(s, path, 2) == 2);
                co_await sleep_for(20ms);  // past the watch being set
                sig.emit(type);
                for (int i = 0; i < 500 && !done; ++i) co_await sleep_for(10ms);
                REQUIRE(done);
                CHECK(got == asio::error::operation_aborted);
                CHECK((co_await children_of(s, path)).size() == 1);
            }
        }
        // (c) cancellation through awaitable operators (the losing branch is cancelled)
        {
            using namespace asio::experimental::awaitable_operators;
            asio::steady_timer t{ex, 100ms};
            auto r = co_await (m.async_acquire(asio::use_awaitable) || t.async_wait(asio::use_awaitable));
            CHECK(r.index() == 1);
            CHECK((co_await children_of(s, path)).size() == 1);
        }
        // A waiter behind cancelled ones is not stranded.
        co_await holder.async_release();
        auto l = co_await m.async_acquire(5s);
        CHECK(l.owns_lock());
    });
}

TEST_CASE("1000 acquires cancelled at random moments leave nothing behind")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto sessions = co_await open_sessions(shared_server().connect_string(), 4);
        const auto path = unique_path("random-cancel");
        mutex holder_lock{sessions[0], path};
        auto holder = co_await holder_lock.async_acquire(5s);
        std::mt19937 rng(12345);
        const int n = 1000;
        int finished = 0, acquired = 0, aborted = 0;
        for (int i = 0; i < n; ++i) {
            auto delay = std::chrono::microseconds(std::uniform_int_distribution<int>(0, 30000)(rng));
            asio::co_spawn(ex, [&, i, delay]() -> awaitable<void> {
                auto sig = std::make_shared<asio::cancellation_signal>();
                auto timer = std::make_shared<asio::steady_timer>(ex, delay);
                timer->async_wait([sig](error_code ec) {
                    if (!ec) sig->emit(asio::cancellation_type::terminal);
                });
                mutex m{sessions[i % 4], path};
                auto [ec, l] = co_await m.async_acquire(asio::bind_cancellation_slot(sig->slot(), asio::as_tuple(asio::use_awaitable)));
                timer->cancel();
                if (!ec) {
                    ++acquired;
                    co_await l.async_release();
                } else if (ec == asio::error::operation_aborted)
                    ++aborted;
                ++finished;
            }, asio::detached);
        }
        // Let the holder go half-way, so grants and cancellations race.
        co_await sleep_for(15ms);
        co_await holder.async_release();
        for (int i = 0; i < 6000 && finished < n; ++i) co_await sleep_for(10ms);
        REQUIRE(finished == n);
        CHECK(acquired + aborted == n);
        MESSAGE("acquired " << acquired << ", cancelled " << aborted);
        // A cancellation whose delete the server has not confirmed within the grace completes all
        // the same, and the delete goes on in the background (on a loaded machine, some do): wait
        // for those to end, then nothing may be left.
        CHECK(co_await eventually([&] {
            return std::all_of(sessions.all.begin(), sessions.all.end(),
                               [](const auto& s) { return s->metrics().background_cleanups_pending == 0; });
        }));
        std::uint64_t background = 0;
        for (const auto& s : sessions.all) background += s->metrics().background_cleanups;
        MESSAGE(background << " of them deleted their node in the background");
        CHECK((co_await children_of(sessions[0], path)).empty());
        auto t0 = std::chrono::steady_clock::now();
        auto fresh = co_await holder_lock.async_try_acquire();
        CHECK(fresh.owns_lock());
        CHECK(std::chrono::steady_clock::now() - t0 < 2s);
    });
}

TEST_CASE("destroying a held lease releases it, and closing a session releases its locks")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session a{ex, config_for(shared_server().connect_string())};
        session b{ex, config_for(shared_server().connect_string())};
        co_await connect(a);
        co_await connect(b);
        const auto path = unique_path("raii");
        mutex ma{a, path}, mb{b, path};
        {
            auto l = co_await ma.async_acquire(5s);
            CHECK(l.owns_lock());
        }  // destroyed while held
        auto lb = co_await mb.async_acquire(5s);
        CHECK(lb.owns_lock());
        lb = lease{};  // move-assigning over a held lease releases it too
        CHECK(co_await wait_children(a, path, 0) == 0);

        auto la = co_await ma.async_acquire(5s);
        co_await a.async_close();
        CHECK(la.status() == lease_status::lost);
        CHECK(la.lost_reason() == errc::session_closed);
        auto again = co_await mb.async_try_acquire();
        CHECK(again.owns_lock());
    });
}

TEST_CASE("bad input gets a clear error code")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        session s{ex, config_for(shared_server().connect_string())};
        co_await connect(s);
        using namespace std::string_literals;
        for (std::string bad : {""s, "/"s, "relative"s, "/trailing/"s, "/a//b"s, "/a/./b"s, "/a/../b"s,
                                "/nul\0here"s, "/zookeeper"s, "/zookeeper/x"s, "/" + std::string(2000, 'p')}) {
            CAPTURE(bad);
            mutex m{s, bad};
            auto [ec, l] = co_await m.async_acquire(1s, tuple);
            CHECK(ec == errc::invalid_path);
        }
        for (std::string bad : {""s, "nohostport"s, "h:99999"s, "h:2181,,h:1"s}) {
            CAPTURE(bad);
            session bs{ex, {.servers = bad}};
            auto [ec] = co_await bs.async_connect(tuple);
            CHECK(ec == errc::invalid_servers);
        }
        // A session that never connected.
        session idle{ex, config_for(shared_server().connect_string())};
        mutex mi{idle, "/x"};
        auto [ec, l] = co_await mi.async_acquire(1s, tuple);
        CHECK(ec == errc::not_connected);
    });
}

TEST_CASE("a server that does not answer: connect times out, then a new connect works")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto port = free_ports(1).at(0);
        session s{ex, {.servers = "127.0.0.1:" + std::to_string(port), .connect_timeout = 800ms}};
        auto t0 = std::chrono::steady_clock::now();
        auto [ec] = co_await s.async_connect(tuple);
        auto took = std::chrono::steady_clock::now() - t0;
        CHECK(ec == errc::connect_timeout);
        CHECK(took >= 800ms);
        CHECK(took < 5s);
        CHECK(s.state() == session_state::disconnected);
        auto [ec2] = co_await s.async_connect(tuple);
        CHECK(ec2 == errc::connect_timeout);

        // An acquire started while connecting waits for the session, and is told when it fails.
        error_code acquire_ec;
        bool acquire_done = false;
        mutex m{s, "/locks/never"};
        s.async_connect([](error_code) {});
        m.async_acquire(10s, [&](error_code e, lease) {
            acquire_ec = e;
            acquire_done = true;
        });
        for (int i = 0; i < 500 && !acquire_done; ++i) co_await sleep_for(10ms);
        REQUIRE(acquire_done);
        CHECK(acquire_ec == errc::not_connected);
    });
}

TEST_CASE("NoAuth on the lock path")
{
    run([]() -> awaitable<void> {
        auto ex = co_await asio::this_coro::executor;
        auto owner_cfg = config_for(shared_server().connect_string());
        owner_cfg.digest_auth = "owner:secret";
        session owner{ex, owner_cfg};
        session other{ex, config_for(shared_server().connect_string())};
        co_await connect(owner);
        co_await connect(other);
        const auto path = unique_path("noauth");
        // Parent as an open node, the lock directory creator-only (created by an authenticated session).
        auto [pe, pp, ps] = co_await other.async_create("/zklock-test", "", create_mode::persistent, tuple);
        CHECK((!pe || pe == zk_errc::node_exists));
        co_await owner.async_create(path, "", create_mode::persistent);
        mutex theirs{other, path};
        auto [ec, l] = co_await theirs.async_acquire(2s, tuple);
        CHECK(ec == zk_errc::no_auth);
        mutex mine{owner, path};
        auto ok = co_await mine.async_acquire(2s);
        CHECK(ok.owns_lock());
        co_await ok.async_release();
        co_await owner.async_remove(path);
    });
}
