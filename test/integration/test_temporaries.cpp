// Recipe objects (and sessions) built as temporaries inside a co_await full-expression, as in
// `co_await mutex{s, path}.async_acquire(5s)` (issue 10, item 7).
//
// GCC 12 miscompiles an aggregate temporary with non-trivial members (lock_options,
// session_config) created in a full-expression that contains co_await: it destroys an object it
// never constructed (free(): invalid pointer). A defaulted `lock_options options = {}` constructor
// argument created exactly such a temporary, so every line below aborted under GCC 12 before the
// constructors became overloads. Each case acquires through a temporary, with the default
// (deferred) token and with use_awaitable, checks that the lease holds and releases it.
#include "../common.hpp"
#include "server.hpp"

#include <vector>

using namespace zklock;
using namespace zklock::test;

namespace {

/// The lease holds, its node is the only `prefix` node under `path`; then released, nothing left.
awaitable<void> expect_held_then_release(session& s, lease& l, const std::string& path, const char* prefix,
                                         std::size_t holders = 1)
{
    CHECK(l.owns_lock());
    CHECK(l.status() == lease_status::held);
    CHECK(l.fencing_token() > 0);
    CHECK(l.node().rfind(path + prefix, 0) == 0);
    CHECK((co_await children_of(s, path)).size() == holders);
    co_await l.async_release();
    CHECK(l.status() == lease_status::released);
    CHECK((co_await children_of(s, path)).size() == holders - 1);
}

awaitable<void> connected(session& s)
{
    co_await connect(s);
    REQUIRE(s.state() == session_state::connected);
}

std::vector<lock_spec> specs_of(const std::string& a, const std::string& b)
{
    return {lock_spec::exclusive(a), lock_spec::shared(b)};
}

}  // namespace

TEST_CASE("temporaries: mutex{s, path} in a co_await full-expression")
{
    run([]() -> awaitable<void> {
        session s{co_await asio::this_coro::executor, config_for(shared_server().connect_string())};
        co_await connected(s);
        const auto path = unique_path("temp-mutex");

        {
            auto l = co_await mutex{s, path}.async_acquire(5s);  // default token (deferred)
            co_await expect_held_then_release(s, l, path, "/x-");
        }
        {
            auto l = co_await mutex{s, path}.async_acquire(5s, asio::use_awaitable);
            co_await expect_held_then_release(s, l, path, "/x-");
        }
        {
            auto l = co_await mutex{s, path}.async_acquire();  // no deadline
            co_await expect_held_then_release(s, l, path, "/x-");
        }
        {
            auto l = co_await mutex{s, path}.async_acquire(asio::use_awaitable);
            co_await expect_held_then_release(s, l, path, "/x-");
        }
        {
            auto l = co_await mutex{s, path}.async_try_acquire();
            co_await expect_held_then_release(s, l, path, "/x-");
        }
        {
            auto [ec, l] = co_await mutex(s, path).async_acquire(5s, tuple);
            CHECK_FALSE(ec);
            co_await expect_held_then_release(s, l, path, "/x-");
        }
        {
            // A temporary path too, and a held lock seen through another temporary.
            auto l = co_await mutex{s, std::string(path)}.async_acquire(5s);
            auto [ec, other] = co_await mutex{s, path}.async_try_acquire(tuple);
            CHECK(ec == errc::would_block);
            CHECK_FALSE(other.owns_lock());
            co_await l.async_release();
        }
        {
            // The options overload, with named options (a braced lock_options built in the
            // co_await full-expression itself is the caller's temporary: still unsafe on GCC 12).
            lock_options opts{.owner_info = "temporaries-test-owner"};
            auto l = co_await mutex{s, path, opts}.async_acquire(5s, asio::use_awaitable);
            auto [ec, data, st] = co_await s.async_get_data(l.node(), tuple);
            CHECK_FALSE(ec);
            CHECK(data == opts.owner_info);
            co_await expect_held_then_release(s, l, path, "/x-");
        }
        co_await s.async_close();
    });
}

TEST_CASE("temporaries: shared_mutex{s, path} in a co_await full-expression, both sides")
{
    run([]() -> awaitable<void> {
        session s{co_await asio::this_coro::executor, config_for(shared_server().connect_string())};
        co_await connected(s);
        const auto path = unique_path("temp-shared");

        // Writer side.
        {
            auto w = co_await shared_mutex{s, path}.async_acquire(5s);
            co_await expect_held_then_release(s, w, path, "/x-");
        }
        {
            auto w = co_await shared_mutex{s, path}.async_acquire(5s, asio::use_awaitable);
            co_await expect_held_then_release(s, w, path, "/x-");
        }
        {
            auto w = co_await shared_mutex{s, path}.async_try_acquire(asio::use_awaitable);
            co_await expect_held_then_release(s, w, path, "/x-");
        }
        // Reader side: two readers hold it at once, a writer is refused meanwhile.
        {
            auto r1 = co_await shared_mutex{s, path}.async_acquire_shared(5s);
            auto r2 = co_await shared_mutex{s, path}.async_acquire_shared(5s, asio::use_awaitable);
            CHECK(r1.owns_lock());
            CHECK(r2.owns_lock());
            auto [ec, w] = co_await shared_mutex{s, path}.async_try_acquire(tuple);
            CHECK(ec == errc::would_block);
            co_await expect_held_then_release(s, r2, path, "/r-", 2);
            co_await expect_held_then_release(s, r1, path, "/r-");
        }
        {
            auto r = co_await shared_mutex{s, path}.async_acquire_shared();
            co_await expect_held_then_release(s, r, path, "/r-");
        }
        {
            auto r = co_await shared_mutex{s, path}.async_try_acquire_shared(asio::use_awaitable);
            co_await expect_held_then_release(s, r, path, "/r-");
        }
        co_await s.async_close();
    });
}

TEST_CASE("temporaries: semaphore{s, path, n} in a co_await full-expression")
{
    run([]() -> awaitable<void> {
        session s{co_await asio::this_coro::executor, config_for(shared_server().connect_string())};
        co_await connected(s);
        const auto path = unique_path("temp-sem");

        {
            auto l = co_await semaphore{s, path, 2}.async_acquire(5s);
            co_await expect_held_then_release(s, l, path, "/s-");
        }
        {
            auto l = co_await semaphore{s, path, 2}.async_acquire(5s, asio::use_awaitable);
            co_await expect_held_then_release(s, l, path, "/s-");
        }
        {
            // Both permits through temporaries; a third is refused.
            auto a = co_await semaphore{s, path, 2}.async_acquire();
            auto b = co_await semaphore{s, path, 2}.async_acquire(asio::use_awaitable);
            auto [ec, c] = co_await semaphore(s, path, 2).async_try_acquire(tuple);
            CHECK(ec == errc::would_block);
            co_await expect_held_then_release(s, b, path, "/s-", 2);
            co_await expect_held_then_release(s, a, path, "/s-");
        }
        {
            auto l = co_await semaphore{s, path, 2}.async_try_acquire();
            co_await expect_held_then_release(s, l, path, "/s-");
        }
        co_await s.async_close();
    });
}

TEST_CASE("temporaries: multi_lock{s, specs} in a co_await full-expression")
{
    run([]() -> awaitable<void> {
        session s{co_await asio::this_coro::executor, config_for(shared_server().connect_string())};
        co_await connected(s);
        const auto a = unique_path("temp-multi-a"), b = unique_path("temp-multi-b");
        const auto specs = specs_of(a, b);

        auto check_and_release = [&](std::vector<lease>& ls) -> awaitable<void> {
            REQUIRE(ls.size() == 2);
            co_await expect_held_then_release(s, ls[0], a, "/x-");
            co_await expect_held_then_release(s, ls[1], b, "/r-");
        };
        {
            auto ls = co_await multi_lock{s, specs}.async_acquire(5s);
            co_await check_and_release(ls);
        }
        {
            auto ls = co_await multi_lock{s, specs}.async_acquire(5s, asio::use_awaitable);
            co_await check_and_release(ls);
        }
        {
            auto ls = co_await multi_lock{s, specs_of(a, b)}.async_acquire();
            co_await check_and_release(ls);
        }
        {
            auto ls = co_await multi_lock(s, specs).async_acquire(asio::use_awaitable);
            co_await check_and_release(ls);
        }
        co_await s.async_close();
    });
}

TEST_CASE("temporaries: session{co_await executor} with the default config")
{
    run([]() -> awaitable<void> {
        {
            session s{co_await asio::this_coro::executor};
            CHECK(s.config().servers == session_config{}.servers);
            CHECK(s.state() == session_state::disconnected);
        }
        {
            // A named config in the same full-expression as co_await.
            const auto config = config_for(shared_server().connect_string());
            session s{co_await asio::this_coro::executor, config};
            co_await connected(s);
            auto l = co_await mutex{s, unique_path("temp-session")}.async_acquire(5s);
            CHECK(l.owns_lock());
            co_await l.async_release();
            co_await s.async_close();
        }
    });
}
