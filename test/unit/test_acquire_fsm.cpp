// The acquire state machine fed scripted events: every path, and a cancel (or timeout) at every step.
#include <zklock/detail/acquire_fsm.hpp>

#include <boost/asio/error.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <random>

using namespace zklock;
using namespace zklock::detail;
using ak = acquire_fsm::action_kind;

namespace {

// A semaphore's policy whose stored permit count was verified before (no read of it).
queue_policy verified_permits(std::uint32_t n)
{
    queue_policy p{node_kind::permit, n};
    p.count_known = true;
    return p;
}

constexpr std::uint64_t me = 1;
const std::string dir = "/l";

std::string name(std::uint64_t id, int seq, char kind = 'x')
{
    return node_prefix(*kind_of_letter(kind), id) + std::string(10 - std::to_string(seq).size(), '0') +
           std::to_string(seq);
}
std::string path(std::uint64_t id, int seq, char kind = 'x') { return dir + "/" + name(id, seq, kind); }

std::vector<std::string_view> sorted(std::vector<std::string_view> v)
{
    std::sort(v.begin(), v.end());
    return v;
}

const error_code ok{};
const error_code loss = zk_errc::connection_loss;
const error_code aborted = boost::asio::error::operation_aborted;

// A machine whose node (seq 5) was created behind a holder (seq 1) and a reader (seq 3, of a
// shared_mutex on the same path): it watches seq 3, which was not the head and never leaves with
// a handoff mark (only exclusive holders write one), so its deletion means "list again".
acquire_fsm waiting_machine()
{
    acquire_fsm f(dir, {}, me, false);
    f.start();
    auto a = f.on_create(ok, path(me, 5), 500, ok, {name(8, 1), name(9, 3, 'r'), name(me, 5)});
    REQUIRE(a.kind == ak::watch);
    REQUIRE(a.path == path(9, 3, 'r'));
    REQUIRE(a.watch_own);  // for the look-ahead on seq 1 (unconfirmed: on_own_watch never came)
    REQUIRE(f.on_watch_set(ok).kind == ak::wait_event);
    return f;
}

}  // namespace

TEST_CASE("uncontended: create and list in one step, granted at the head")
{
    acquire_fsm f(dir, {}, me, false);
    auto a = f.start();
    CHECK(a.kind == ak::create);
    CHECK(a.path == "/l/x-0000000000000001-lock-");
    a = f.on_create(ok, path(me, 0), 77, ok, {name(me, 0), "not-a-lock-node"});
    CHECK(a.kind == ak::done);
    CHECK_FALSE(a.ec);
    CHECK(f.own_node() == path(me, 0));
    CHECK(f.fencing_token() == 77);
}

TEST_CASE("contended: watch only the predecessor, re-check when it fires")
{
    acquire_fsm f(dir, {}, me, false);
    f.start();
    auto a = f.on_create(ok, path(me, 7), 1, ok, {name(2, 1), name(3, 4), name(me, 7), name(4, 9)});
    CHECK(a.kind == ak::watch);
    CHECK(a.path == path(3, 4));  // the immediate predecessor, not the head
    CHECK(f.on_watch_set(ok).kind == ak::wait_event);
    CHECK(f.on_watch_fired().kind == ak::list);  // a short queue: list again
    // The predecessor left, the head did not: now watch the head.
    a = f.on_children(ok, {name(2, 1), name(me, 7), name(4, 9)});
    CHECK(a.kind == ak::watch);
    CHECK(a.path == path(2, 1));
    // The watched node was already gone: look again instead of waiting for nothing.
    CHECK(f.on_watch_set(zk_errc::no_node).kind == ak::list);
    a = f.on_children(ok, {name(me, 7), name(4, 9)});
    CHECK(a.kind == ak::done);
    CHECK_FALSE(a.ec);
}

TEST_CASE("missing parents are created as containers, with a bounded retry")
{
    acquire_fsm f(dir, {}, me, false);
    f.start();
    auto a = f.on_create(zk_errc::no_node, "", 0, zk_errc::no_node, {});
    CHECK(a.kind == ak::create_parents);
    CHECK(a.path == dir);
    CHECK(f.on_parents_created(ok).kind == ak::create);
    // A container reclaimed between its creation and our create: again.
    CHECK(f.on_create(zk_errc::no_node, "", 0, zk_errc::no_node, {}).kind == ak::create_parents);
    CHECK(f.on_parents_created(zk_errc::node_exists).kind == ak::create);
    for (int i = 2; i < acquire_fsm::max_parent_retries; ++i) {
        REQUIRE(f.on_create(zk_errc::no_node, "", 0, zk_errc::no_node, {}).kind == ak::create_parents);
        REQUIRE(f.on_parents_created(ok).kind == ak::create);
    }
    a = f.on_create(zk_errc::no_node, "", 0, zk_errc::no_node, {});
    CHECK(a.kind == ak::done);
    CHECK(a.ec == zk_errc::no_node);
}

TEST_CASE("lost create reply: find our node by attempt id, never create a second one")
{
    acquire_fsm f(dir, {}, me, false);
    f.start();
    CHECK(f.on_create(loss, "", 0, loss, {}).kind == ak::wait_connected);
    // The listing that looks for our node comes behind a sync: a follower that has not applied
    // the create yet would list none.
    const auto looking = f.on_connected();
    CHECK(looking.kind == ak::list);
    CHECK(looking.sync);

    SUBCASE("the server had created it")
    {
        auto a = f.on_children(ok, {name(2, 1), name(me, 3)});
        CHECK(a.kind == ak::stat_node);
        CHECK(a.path == path(me, 3));
        a = f.on_stat(ok, 33, true);
        CHECK(a.kind == ak::list);
        CHECK(!a.sync);  // our node is known: an ordinary listing
        CHECK(f.fencing_token() == 33);
        a = f.on_children(ok, {name(2, 1), name(me, 3)});
        CHECK(a.kind == ak::watch);
        CHECK(a.path == path(2, 1));
    }
    SUBCASE("the server had not: create again")
    {
        CHECK(f.on_children(ok, {name(2, 1)}).kind == ak::create);
    }
    SUBCASE("two nodes of ours (a retried create raced): keep the oldest, the other is a duplicate")
    {
        auto a = f.on_children(ok, {name(me, 8), name(me, 3)});
        CHECK(a.kind == ak::stat_node);
        CHECK(a.path == path(me, 3));
        CHECK(a.duplicates.empty());  // nothing is deleted before ownership is known
        CHECK(f.on_stat(ok, 33, true).kind == ak::list);
        a = f.on_children(ok, {name(me, 8), name(me, 3)});
        CHECK(a.kind == ak::done);
        REQUIRE(a.duplicates.size() == 1);  // the driver deletes it if our session owns it
        CHECK(a.duplicates[0] == path(me, 8));
        CHECK(f.own_node() == path(me, 3));
    }
    SUBCASE("a node with our attempt id that another session owns is not ours (fork, forgery)")
    {
        auto a = f.on_children(ok, {name(2, 1), name(me, 3)});
        CHECK(a.kind == ak::stat_node);
        CHECK(f.on_stat(ok, 33, false).kind == ak::create);  // never adopted, never deleted
        a = f.on_create(ok, path(me, 9), 90, ok, {name(2, 1), name(me, 3), name(me, 9)});
        CHECK(a.kind == ak::watch);
        CHECK(a.path == path(me, 3));  // it is a contender like any other: we wait behind it
        CHECK(f.own_node() == path(me, 9));
        CHECK(f.fencing_token() == 90);
    }
    SUBCASE("the oldest candidate is another session's, the next one is ours")
    {
        auto a = f.on_children(ok, {name(me, 8), name(me, 3)});
        CHECK(a.path == path(me, 3));
        a = f.on_stat(ok, 33, false);
        CHECK(a.kind == ak::stat_node);
        CHECK(a.path == path(me, 8));
        CHECK(f.on_stat(ok, 88, true).kind == ak::list);
        CHECK(f.own_node() == path(me, 8));
        CHECK(f.fencing_token() == 88);
    }
    SUBCASE("a cancel and a connection loss while a candidate is checked: ask again, delete only ours")
    {
        f.on_children(ok, {name(me, 3)});
        CHECK(f.on_cancel(aborted).kind == ak::none);
        CHECK(f.on_stat(loss, 0, false).kind == ak::wait_connected);
        auto a = f.on_connected();
        CHECK(a.kind == ak::stat_node);  // not a remove: ownership is not known yet
        a = f.on_stat(ok, 33, false);
        CHECK(a.kind == ak::done);
        CHECK(a.ec == aborted);
    }
}

TEST_CASE("a create the server never applies (it drops the connection) fails after a bounded number of tries")
{
    acquire_fsm f(dir, {}, me, false);
    CHECK(f.start().kind == ak::create);
    acquire_fsm::action a;
    for (int i = 1; i < acquire_fsm::max_lost_creates; ++i) {
        REQUIRE(f.on_create(loss, "", 0, loss, {}).kind == ak::wait_connected);
        REQUIRE(f.on_connected().kind == ak::list);
        REQUIRE(f.on_children(ok, {name(2, 1)}).kind == ak::create);
    }
    REQUIRE(f.on_create(loss, "", 0, loss, {}).kind == ak::wait_connected);
    REQUIRE(f.on_connected().kind == ak::list);
    a = f.on_children(ok, {name(2, 1)});
    CHECK(a.kind == ak::done);
    CHECK(a.ec == errc::request_dropped);
}

TEST_CASE("a duplicate of ours seen later is handed to the driver")
{
    acquire_fsm f(dir, {}, me, false);
    f.start();
    auto a = f.on_create(ok, path(me, 2), 5, ok, {name(me, 2), name(me, 6)});
    CHECK(a.kind == ak::done);
    REQUIRE(a.duplicates.size() == 1);
    CHECK(a.duplicates[0] == path(me, 6));
}

TEST_CASE("one recipe per path: a permit and an exclusive or shared node refuse to queue behind each other")
{
    SUBCASE("a semaphore behind a mutex holder")
    {
        acquire_fsm f(dir, verified_permits(1), me, false);  // count verified before
        f.start();
        auto a = f.on_create(ok, path(me, 5, 's'), 1, ok, {name(9, 3, 'x'), name(me, 5, 's')});
        CHECK(a.kind == ak::remove);  // our node goes first
        CHECK(a.path == path(me, 5, 's'));
        a = f.on_removed(ok);
        CHECK(a.kind == ak::done);
        CHECK(a.ec == errc::recipe_mismatch);
    }
    SUBCASE("a reader or a writer behind a permit")
    {
        for (char k : {'x', 'r'}) {
            acquire_fsm f(dir, {*kind_of_letter(k), 1}, me, false);
            f.start();
            auto a = f.on_create(ok, path(me, 5, k), 1, ok, {name(9, 3, 's'), name(me, 5, k)});
            CHECK(a.kind == ak::remove);
            CHECK(f.on_removed(ok).ec == errc::recipe_mismatch);
        }
    }
    SUBCASE("another recipe's node behind ours is not our business: it refuses itself")
    {
        acquire_fsm f(dir, {}, me, false);
        f.start();
        auto a = f.on_create(ok, path(me, 5), 1, ok, {name(me, 5), name(9, 7, 's')});
        CHECK(a.kind == ak::done);
        CHECK_FALSE(a.ec);
    }
    SUBCASE("a node of another recipe that appears before ours later (after a lost create) is refused too")
    {
        auto f = waiting_machine();
        f.on_watch_fired();
        auto a = f.on_children(ok, {name(7, 4, 's'), name(me, 5)});
        CHECK(a.kind == ak::remove);
        CHECK(f.on_removed(ok).ec == errc::recipe_mismatch);
    }
}

TEST_CASE("our node deleted by someone else while waiting: lock_lost")
{
    auto f = waiting_machine();
    CHECK(f.on_watch_fired().kind == ak::list);
    auto a = f.on_children(ok, {name(8, 1), name(9, 3)});
    CHECK(a.kind == ak::done);
    CHECK(a.ec == errc::lock_lost);
}

TEST_CASE("connection loss while listing or watching: wait, then list again")
{
    auto f = waiting_machine();
    CHECK(f.on_watch_fired().kind == ak::list);
    CHECK(f.on_children(loss, {}).kind == ak::wait_connected);
    const auto again = f.on_connected();
    CHECK(again.kind == ak::list);
    CHECK(!again.sync);  // our node is known: no sync before the listing
    CHECK(f.on_children(ok, {name(8, 1), name(9, 3), name(me, 5)}).kind == ak::watch);
    CHECK(f.on_watch_set(loss).kind == ak::wait_connected);
    CHECK(f.on_connected().kind == ak::list);
}

TEST_CASE("session expiry at any step completes with session_expired")
{
    auto f = waiting_machine();
    auto a = f.on_session_lost(zk_errc::session_expired);
    CHECK(a.kind == ak::done);
    CHECK(a.ec == errc::session_expired);
    CHECK(f.on_watch_fired().kind == ak::none);  // late events are ignored
}

TEST_CASE("try: taken means delete our node and would_block")
{
    acquire_fsm f(dir, {}, me, true);
    f.start();
    auto a = f.on_create(ok, path(me, 5), 1, ok, {name(9, 3), name(me, 5)});
    CHECK(a.kind == ak::remove);
    CHECK(a.path == path(me, 5));
    a = f.on_removed(ok);
    CHECK(a.kind == ak::done);
    CHECK(a.ec == errc::would_block);
}

// Every cancellation reason at every step: the node (if any) is deleted before completing.
TEST_CASE("cancel or timeout at every step")
{
    for (error_code reason : {aborted, error_code(errc::timeout)}) {
        CAPTURE(reason.message());
        SUBCASE("before the create is sent")
        {
            acquire_fsm f(dir, {}, me, false);
            auto a = f.on_cancel(reason);
            CHECK(a.kind == ak::done);
            CHECK(a.ec == reason);
        }
        SUBCASE("create in flight, reply arrives")
        {
            acquire_fsm f(dir, {}, me, false);
            f.start();
            CHECK(f.on_cancel(reason).kind == ak::none);
            auto a = f.on_create(ok, path(me, 5), 1, ok, {name(me, 5)});
            CHECK(a.kind == ak::remove);  // even though it would have been granted
            CHECK(a.path == path(me, 5));
            a = f.on_removed(ok);
            CHECK(a.kind == ak::done);
            CHECK(a.ec == reason);
        }
        SUBCASE("create in flight, reply lost: find the node, confirm it is ours, then delete it")
        {
            acquire_fsm f(dir, {}, me, false);
            f.start();
            CHECK(f.on_cancel(reason).kind == ak::none);
            CHECK(f.on_create(loss, "", 0, loss, {}).kind == ak::wait_connected);
            CHECK(f.on_connected().kind == ak::list);
            auto a = f.on_children(ok, {name(me, 4)});
            CHECK(a.kind == ak::stat_node);
            CHECK(a.path == path(me, 4));
            a = f.on_stat(ok, 4, true);
            CHECK(a.kind == ak::remove);
            CHECK(a.path == path(me, 4));
            CHECK(f.on_removed(zk_errc::no_node).kind == ak::done);
        }
        SUBCASE("create in flight, reply lost, node not there: nothing to delete")
        {
            acquire_fsm f(dir, {}, me, false);
            f.start();
            f.on_cancel(reason);
            f.on_create(loss, "", 0, loss, {});
            f.on_connected();
            auto a = f.on_children(ok, {name(2, 1)});
            CHECK(a.kind == ak::done);
            CHECK(a.ec == reason);
        }
        SUBCASE("creating parents")
        {
            acquire_fsm f(dir, {}, me, false);
            f.start();
            f.on_create(zk_errc::no_node, "", 0, zk_errc::no_node, {});
            auto a = f.on_cancel(reason);  // nothing of ours exists: at once
            CHECK(a.kind == ak::done);
            CHECK(a.ec == reason);
            CHECK(f.on_parents_created(ok).kind == ak::none);
        }
        SUBCASE("setting the watch")
        {
            acquire_fsm f(dir, {}, me, false);
            f.start();
            f.on_create(ok, path(me, 5), 1, ok, {name(9, 3), name(me, 5)});
            CHECK(f.on_cancel(reason).kind == ak::none);
            CHECK(f.on_watch_set(ok).kind == ak::remove);
        }
        SUBCASE("waiting for the predecessor")
        {
            auto f = waiting_machine();
            auto a = f.on_cancel(reason);
            CHECK(a.kind == ak::remove);
            CHECK(a.path == path(me, 5));
            CHECK(f.on_watch_fired().kind == ak::none);
            SUBCASE("delete reply lost: retried after reconnecting")
            {
                CHECK(f.on_removed(loss).kind == ak::wait_connected);
                CHECK(f.on_connected().kind == ak::remove);
                CHECK(f.on_removed(zk_errc::no_node).kind == ak::done);
            }
            SUBCASE("deleted")
            {
                a = f.on_removed(ok);
                CHECK(a.kind == ak::done);
                CHECK(a.ec == reason);
            }
        }
        SUBCASE("re-checking the queue")
        {
            auto f = waiting_machine();
            f.on_watch_fired();
            CHECK(f.on_cancel(reason).kind == ak::none);
            CHECK(f.on_children(ok, {name(8, 1), name(me, 5)}).kind == ak::remove);
        }
        SUBCASE("waiting for the connection")
        {
            auto f = waiting_machine();
            f.on_watch_fired();
            f.on_children(loss, {});
            CHECK(f.on_cancel(reason).kind == ak::none);
            CHECK(f.on_connected().kind == ak::remove);
        }
        SUBCASE("the session expires while the delete is pending: the node went with it")
        {
            auto f = waiting_machine();
            f.on_cancel(reason);
            auto a = f.on_removed(zk_errc::session_expired);
            CHECK(a.kind == ak::done);
            CHECK(a.ec == reason);
        }
        SUBCASE("a second cancel changes nothing")
        {
            auto f = waiting_machine();
            f.on_cancel(reason);
            CHECK(f.on_cancel(aborted).kind == ak::none);
            CHECK(f.on_removed(ok).ec == reason);
        }
    }
}

TEST_CASE("a non-retryable error with our node in place deletes it first")
{
    auto f = waiting_machine();
    f.on_watch_fired();
    auto a = f.on_children(zk_errc::no_auth, {});
    CHECK(a.kind == ak::remove);
    a = f.on_removed(ok);
    CHECK(a.kind == ak::done);
    CHECK(a.ec == zk_errc::no_auth);
}

TEST_CASE("handoff without a re-list")
{
    SUBCASE("the watched node was the head of our listing")
    {
        acquire_fsm f(dir, {}, me, false);
        f.start();
        auto w = f.on_create(ok, path(me, 5), 1, ok, {name(9, 3), name(me, 5)});
        CHECK(w.kind == ak::watch);
        CHECK(w.watch_own);  // the grant will come without a listing: our own node is watched first
        CHECK(f.on_own_watch(true).kind == ak::none);  // its reply comes first
        CHECK(f.on_watch_set(ok).kind == ak::wait_event);
        auto a = f.on_watch_fired(true);
        CHECK(a.kind == ak::done);
        CHECK_FALSE(a.ec);
        CHECK(f.fast_handoff());
    }
    SUBCASE("the head of our listing goes, but our own node's watch is not confirmed: list")
    {
        for (int variant = 0; variant < 2; ++variant) {
            CAPTURE(variant);
            acquire_fsm f(dir, {}, me, false);
            f.start();
            REQUIRE(f.on_create(ok, path(me, 5), 1, ok, {name(9, 3), name(me, 5)}).watch_own);
            if (variant == 0) {
                f.on_own_watch(false);  // its read failed (no_auth on a re-ACLed node, a lost connection)
            } else {
                f.on_own_watch(true);
                f.on_own_watch(false);  // it fired for a data change: being set again
            }
            f.on_watch_set(ok);
            CHECK(f.on_watch_fired(true).kind == ak::list);  // never a grant on a node that may be gone
            CHECK(f.on_children(ok, {name(9, 4)}).ec == errc::lock_lost);
        }
    }
    SUBCASE("data written into a node that was not the head (a forged holder mark) grants nothing")
    {
        auto f = waiting_machine();  // watches seq 3, not the head
        auto w = f.on_watch_fired(false);
        CHECK(w.kind == ak::watch);  // data changed: watch it again,
        CHECK_FALSE(f.armed());      // and nothing about it can let its deletion grant us the lock
        CHECK(f.on_watch_set(ok).kind == ak::wait_event);
        CHECK(f.on_watch_fired(false).kind == ak::watch);  // written again
        CHECK(f.on_watch_set(ok).kind == ak::wait_event);
        CHECK(f.on_watch_fired(true).kind == ak::list);  // its deletion: list, the holder is still there
        auto a = f.on_children(ok, {name(8, 1), name(me, 5)});
        CHECK(a.kind == ak::watch);
        CHECK(a.path == path(8, 1));
        CHECK_FALSE(f.fast_handoff());
    }
    SUBCASE("an unwritten node that was not the head: list")
    {
        auto f = waiting_machine();
        CHECK(f.on_watch_fired(true).kind == ak::list);
    }
    SUBCASE("permit waiters never watch their own node")
    {
        acquire_fsm f(dir, verified_permits(1), me, false);  // count verified before
        f.start();
        auto w = f.on_create(ok, path(me, 5, 's'), 1, ok, {name(9, 3, 's'), name(me, 5, 's')});
        CHECK(w.kind == ak::watch);
        CHECK_FALSE(w.watch_own);
        f.on_watch_set(ok);
        auto again = f.on_watch_fired(false);
        CHECK(again.kind == ak::watch);
        CHECK_FALSE(again.watch_own);
    }
    SUBCASE("a reader that was not the head says nothing about readers before it")
    {
        acquire_fsm f(dir, {node_kind::exclusive, 1}, me, false);
        f.start();
        CHECK(f.on_create(ok, path(me, 5), 1, ok, {name(7, 1, 'r'), name(9, 3, 'r'), name(me, 5)}).kind == ak::watch);
        CHECK(f.on_watch_set(ok).kind == ak::wait_event);
        CHECK(f.on_watch_fired(false).kind == ak::watch);
        CHECK(f.on_watch_set(ok).kind == ak::wait_event);
        CHECK(f.on_watch_fired(true).kind == ak::list);
    }
    SUBCASE("permits never skip the listing")
    {
        acquire_fsm f(dir, verified_permits(1), me, false);  // count verified before
        f.start();
        CHECK(f.on_create(ok, path(me, 5, 's'), 1, ok, {name(9, 3, 's'), name(me, 5, 's')}).kind == ak::watch);
        CHECK(f.on_watch_set(ok).kind == ak::wait_event);
        CHECK(f.on_watch_fired(true).kind == ak::list);
    }
    SUBCASE("a reader behind a head writer")
    {
        acquire_fsm f(dir, {node_kind::shared, 1}, me, false);
        f.start();
        auto a = f.on_create(ok, path(me, 5, 'r'), 1, ok, {name(9, 1), name(7, 3, 'r'), name(me, 5, 'r')});
        CHECK(a.kind == ak::watch);
        CHECK(a.path == path(9, 1));
        f.on_own_watch(true);
        f.on_watch_set(ok);
        CHECK(f.on_watch_fired(true).kind == ak::done);
        CHECK(f.fast_handoff());
    }
    SUBCASE("cancel while the watch is being read again")
    {
        auto f = waiting_machine();
        f.on_watch_fired(false);
        CHECK(f.on_cancel(aborted).kind == ak::none);
        CHECK(f.on_watch_set(ok).kind == ak::remove);
    }
}

TEST_CASE("look-ahead: an exclusive waiter learns ahead of time that its predecessor is the head")
{
    // We (seq 7) wait on seq 4, behind the head seq 1 (and seq 9 behind us): seq 1 is the node ahead.
    auto waiting = [](std::vector<std::string> q = {name(2, 1), name(3, 4), name(me, 7), name(4, 9)},
                      std::string ahead = path(2, 1)) {
        acquire_fsm f(dir, {}, me, false);
        f.start();
        auto a = f.on_create(ok, path(me, 7), 1, ok, q);
        REQUIRE(a.kind == ak::watch);
        REQUIRE(a.path == path(3, 4));
        REQUIRE(a.watch_own);  // with the first watch: arming is then one request
        auto w = f.on_watch_set(ok);
        REQUIRE(w.kind == ak::wait_event);
        REQUIRE(w.ahead == ahead);
        CHECK_FALSE(f.armed());
        return f;
    };
    SUBCASE("the node ahead goes, the listing behind our own watch shows the predecessor at the head: armed")
    {
        auto f = waiting();
        auto a = f.on_ahead_fired();
        f.on_own_watch(true);  // the own watch's reply comes first
        CHECK(a.kind == ak::arm);
        CHECK(a.path == dir);
        CHECK_FALSE(a.mark);
        a = f.on_children(ok, {name(3, 4), name(me, 7), name(4, 9)});
        CHECK(a.kind == ak::wait_event);  // nothing to send: the watch on seq 4 still stands
        CHECK(a.ahead.empty());
        CHECK(f.armed());
        a = f.on_watch_fired(true);
        CHECK(a.kind == ak::done);  // its deletion alone grants
        CHECK_FALSE(a.ec);
        CHECK(f.fast_handoff());
        CHECK(f.mark_on_release());
    }
    SUBCASE("in a queue longer than max_queue_for_early_own_watch, the own watch waits for the arming")
    {
        std::vector<std::string> q{name(2, 1), name(3, 4), name(me, 7)};
        for (int i = 0; q.size() <= acquire_fsm::max_queue_for_early_own_watch; ++i) q.push_back(name(100 + i, 10 + i));
        acquire_fsm f(dir, {}, me, false);
        f.start();
        auto a = f.on_create(ok, path(me, 7), 1, ok, q);
        REQUIRE(a.kind == ak::watch);
        CHECK(a.path == path(3, 4));
        CHECK_FALSE(a.watch_own);  // memory: a watch held for the whole wait in a long queue
        auto w = f.on_watch_set(ok);
        CHECK(w.ahead == path(2, 1));  // the look-ahead still runs
        q.pop_back();
        auto shorter = acquire_fsm(dir, {}, me, false);
        shorter.start();
        CHECK(shorter.on_create(ok, path(me, 7), 1, ok, q).watch_own);  // at the limit: with the first watch
    }
    SUBCASE("armed, then our own node is deleted: lock_lost (the own watch was set before the listing)")
    {
        auto f = waiting();
        f.on_ahead_fired();
        f.on_own_watch(true);  // the own watch's reply comes first
        f.on_children(ok, {name(3, 4), name(me, 7)});
        REQUIRE(f.armed());
        auto a = f.on_own_deleted();
        CHECK(a.kind == ak::done);
        CHECK(a.ec == errc::lock_lost);
        CHECK(f.on_watch_fired(true).kind == ak::none);
    }
    SUBCASE("the own watch fails but the listing behind it succeeds: the predecessor's deletion means a listing")
    {
        auto f = waiting();
        f.on_ahead_fired();
        f.on_own_watch(false);  // no_auth, or a lost connection with the listing sent after the reconnect
        REQUIRE(f.on_children(ok, {name(3, 4), name(me, 7)}).kind == ak::wait_event);
        CHECK(f.on_watch_fired(true).kind == ak::list);
        CHECK(f.on_children(ok, {name(4, 9)}).ec == errc::lock_lost);  // our node went meanwhile
    }
    SUBCASE("armed, then our node's data changes (its watch is being set again): the deletion means a listing")
    {
        auto f = waiting();
        f.on_ahead_fired();
        f.on_own_watch(true);
        f.on_children(ok, {name(3, 4), name(me, 7)});
        REQUIRE(f.armed());
        f.on_own_watch(false);
        CHECK(f.on_watch_fired(true).kind == ak::list);
        CHECK(f.on_children(ok, {name(me, 7)}).kind == ak::done);
    }
    SUBCASE("a mark naming the predecessor after its deletion, with the own watch not confirmed: list")
    {
        auto f = waiting();
        REQUIRE(f.on_ahead_fired(acquire_fsm::min_queue_for_mark).mark);
        f.on_own_watch(false);
        f.on_watch_fired(true);
        CHECK(f.on_mark_read(ok, handoff_mark(name(3, 4)), 43, 43, true).kind == ak::list);
    }
    SUBCASE("our own node is gone when the look-ahead's own watch is set: lock_lost")
    {
        auto f = waiting();
        f.on_ahead_fired();
        auto a = f.on_own_deleted();
        CHECK(a.kind == ak::done);
        CHECK(a.ec == errc::lock_lost);
        CHECK(f.on_children(ok, {name(3, 4), name(4, 9)}).kind == ak::none);
    }
    SUBCASE("the predecessor went too, before the listing: the listing decides (held)")
    {
        auto f = waiting();
        f.on_ahead_fired();
        f.on_own_watch(true);  // the own watch's reply comes first
        CHECK(f.on_watch_fired(true).kind == ak::none);  // the listing's reply comes next and tells
        auto a = f.on_children(ok, {name(me, 7), name(4, 9)});
        CHECK(a.kind == ak::done);
        CHECK_FALSE(a.ec);
        CHECK_FALSE(f.fast_handoff());
    }
    SUBCASE("the node ahead was not the head (it left the queue): watch the new node ahead")
    {
        auto f = waiting({name(5, 2), name(2, 3), name(3, 4), name(me, 7)}, path(2, 3));
        auto a = f.on_ahead_fired();
        f.on_own_watch(true);  // the own watch's reply comes first
        REQUIRE(a.kind == ak::arm);
        a = f.on_children(ok, {name(5, 2), name(3, 4), name(me, 7)});
        CHECK(a.kind == ak::wait_event);
        CHECK(a.ahead == path(5, 2));
        CHECK_FALSE(f.armed());
        // Its deletion (the predecessor still waiting) means a listing, as without the look-ahead.
        CHECK(f.on_watch_fired(true).kind == ak::list);
    }
    SUBCASE("the predecessor's data changed during the listing: watch it again")
    {
        auto f = waiting();
        f.on_ahead_fired();
        f.on_own_watch(true);  // the own watch's reply comes first
        CHECK(f.on_watch_fired(false).kind == ak::none);
        auto a = f.on_children(ok, {name(3, 4), name(me, 7)});
        CHECK(a.kind == ak::watch);
        CHECK(a.path == path(3, 4));
        CHECK(a.watch_own);
        CHECK(f.on_watch_set(ok).kind == ak::wait_event);
        CHECK(f.armed());
        CHECK(f.on_watch_fired(true).kind == ak::done);
    }
    SUBCASE("cancelled while the look-ahead lists: our node is removed when the reply comes")
    {
        auto f = waiting();
        f.on_ahead_fired();
        f.on_own_watch(true);  // the own watch's reply comes first
        CHECK(f.on_cancel(aborted).kind == ak::none);
        auto a = f.on_children(ok, {name(3, 4), name(me, 7)});
        CHECK(a.kind == ak::remove);
        CHECK(f.on_removed(ok).ec == aborted);
    }
    SUBCASE("a connection loss during the look-ahead: list again once connected")
    {
        auto f = waiting();
        f.on_ahead_fired();
        f.on_own_watch(true);  // the own watch's reply comes first
        CHECK(f.on_children(loss, {}).kind == ak::wait_connected);
        CHECK(f.on_connected().kind == ak::list);
    }
    SUBCASE("in a long queue the look-ahead reads the handoff mark")
    {
        constexpr std::size_t long_queue = acquire_fsm::min_queue_for_mark;
        auto f = waiting();
        auto a = f.on_ahead_fired(long_queue);
        f.on_own_watch(true);  // the own watch's reply comes first
        REQUIRE(a.kind == ak::arm);
        CHECK(a.mark);
        SUBCASE("naming the node ahead, written with the last child change: armed")
        {
            a = f.on_mark_read(ok, handoff_mark(name(2, 1)), 42, 42, true);
            CHECK(a.kind == ak::wait_event);
            CHECK(f.armed());
            CHECK(f.on_watch_fired(true).kind == ak::done);
        }
        SUBCASE("naming our predecessor, whose deletion came first: held")
        {
            CHECK(f.on_watch_fired(true).kind == ak::none);
            a = f.on_mark_read(ok, handoff_mark(name(3, 4)), 43, 43, true);
            CHECK(a.kind == ak::done);
            CHECK_FALSE(a.ec);
            CHECK(f.marked_handoff());
        }
        SUBCASE("naming our predecessor, whose deletion we have not seen (a forgery): not held")
        {
            a = f.on_mark_read(ok, handoff_mark(name(3, 4)), 43, 43, true);
            CHECK(a.kind == ak::wait_event);
            CHECK_FALSE(f.armed());
        }
        SUBCASE("written by a set_data alone (a forgery): not armed, wait as without the look-ahead")
        {
            a = f.on_mark_read(ok, handoff_mark(name(2, 1)), 43, 42, true);
            CHECK(a.kind == ak::wait_event);
            CHECK(a.ahead.empty());
            CHECK_FALSE(f.armed());
            CHECK(f.on_watch_fired(true, long_queue).kind == ak::read_mark);
        }
        SUBCASE("no mark, and the predecessor went meanwhile: list")
        {
            f.on_watch_fired(true);
            CHECK(f.on_mark_read(ok, "", 42, 44, true).kind == ak::list);
        }
    }
    SUBCASE("no look-ahead for readers or permits")
    {
        acquire_fsm r(dir, {node_kind::shared}, me, false);
        r.start();
        r.on_create(ok, path(me, 7, 'r'), 1, ok, {name(2, 1), name(3, 4), name(me, 7, 'r')});
        CHECK(r.on_watch_set(ok).ahead.empty());
        acquire_fsm p(dir, verified_permits(1), me, false);
        p.start();
        p.on_create(ok, path(me, 7, 's'), 1, ok, {name(2, 1, 's'), name(3, 4, 's'), name(me, 7, 's')});
        CHECK(p.on_watch_set(ok).ahead.empty());
    }
    SUBCASE("look-ahead in a queue of any length (W10000: 10 000 children)")
    {
        acquire_fsm g(dir, {}, me, false);
        g.start();
        std::vector<std::string> q;
        for (int i = 0; i < 10000; ++i) q.push_back(name(100 + i, 10 + i));
        q.push_back(name(me, 20000));
        auto a = g.on_create(ok, path(me, 20000), 1, ok, q);
        REQUIRE(a.kind == ak::watch);
        CHECK(a.path == path(100 + 9999, 10 + 9999));
        CHECK(g.watched_node() == a.path);
        auto w = g.on_watch_set(ok);
        REQUIRE(w.kind == ak::wait_event);
        CHECK(w.ahead == path(100 + 9998, 10 + 9998));
        CHECK(g.ahead_node() == w.ahead);
        // The node ahead goes: arming reads the handoff mark (a long queue), and a mark naming it
        // arms the wait: the predecessor's deletion alone grants.
        auto arm = g.on_ahead_fired(q.size());
        REQUIRE(arm.kind == ak::arm);
        CHECK(arm.mark);
        g.on_own_watch(true);
        auto armed = g.on_mark_read(ok, handoff_mark(name(100 + 9998, 10 + 9998)), 44, 44, true);
        CHECK(armed.kind == ak::wait_event);
        CHECK(g.armed());
        auto granted = g.on_watch_fired(true, q.size());
        CHECK(granted.kind == ak::done);
        CHECK_FALSE(granted.ec);
        CHECK(g.fast_handoff());
    }
}

TEST_CASE("handoff marks")
{
    // We (seq 7) watch seq 4, an exclusive node behind the head (seq 1), in a long queue.
    constexpr std::size_t long_queue = acquire_fsm::min_queue_for_mark;
    auto waiting = [] {
        acquire_fsm f(dir, {}, me, false);
        f.start();
        auto a = f.on_create(ok, path(me, 7), 1, ok, {name(2, 1), name(3, 4), name(me, 7), name(4, 9)});
        REQUIRE(a.kind == ak::watch);
        REQUIRE(a.path == path(3, 4));
        REQUIRE(a.watch_own);  // for the look-ahead (seq 1 is ahead); a mark read checks our node itself
        REQUIRE(f.on_watch_set(ok).kind == ak::wait_event);
        auto m = f.on_watch_fired(true, long_queue);
        REQUIRE(m.kind == ak::read_mark);
        REQUIRE(m.path == dir);
        return f;
    };
    SUBCASE("in a short queue (our listing, and the latest of our session) the waiter lists again")
    {
        acquire_fsm f(dir, {}, me, false);
        f.start();
        f.on_create(ok, path(me, 7), 1, ok, {name(2, 1), name(3, 4), name(me, 7)});
        f.on_watch_set(ok);
        CHECK(f.on_watch_fired(true, acquire_fsm::min_queue_for_mark - 1).kind == ak::list);
        // Our own listing is enough to know the queue is long.
        acquire_fsm g(dir, {}, me, false);
        g.start();
        std::vector<std::string> q;
        for (int i = 0; i < static_cast<int>(acquire_fsm::min_queue_for_mark); ++i) q.push_back(name(100 + i, 10 + i));
        q.push_back(name(me, 5000));
        REQUIRE(g.on_create(ok, path(me, 5000), 1, ok, q).kind == ak::watch);
        g.on_watch_set(ok);
        CHECK(g.on_watch_fired(true).kind == ak::read_mark);
    }
    SUBCASE("our own node is gone (the exists in the same round trip says so): lock_lost, whatever the mark says")
    {
        auto f = waiting();
        auto a = f.on_mark_read(ok, handoff_mark(name(3, 4)), 42, 42, false);
        CHECK(a.kind == ak::done);
        CHECK(a.ec == errc::lock_lost);
        CHECK(f.own_node().empty());
    }
    SUBCASE("the watched node left with a mark naming it, written with the path's last child change: held")
    {
        auto f = waiting();
        auto a = f.on_mark_read(ok, handoff_mark(name(3, 4)), 42, 42, true);
        CHECK(a.kind == ak::done);
        CHECK_FALSE(a.ec);
        CHECK(f.fast_handoff());
        CHECK(f.marked_handoff());
        CHECK(f.mark_on_release());  // a successor of ours cannot tell we are the head
    }
    SUBCASE("a mark written by a set_data alone (mzxid is not the last child change): list")
    {
        auto f = waiting();
        CHECK(f.on_mark_read(ok, handoff_mark(name(3, 4)), 43, 42, true).kind == ak::list);
        CHECK(f.on_children(ok, {name(2, 1), name(me, 7)}).kind == ak::watch);
        CHECK_FALSE(f.marked_handoff());
    }
    SUBCASE("a later child change (a new waiter) hides the mark: list")
    {
        auto f = waiting();
        CHECK(f.on_mark_read(ok, handoff_mark(name(3, 4)), 42, 44, true).kind == ak::list);
    }
    SUBCASE("a mark that names another node (the one before it): list")
    {
        auto f = waiting();
        CHECK(f.on_mark_read(ok, handoff_mark(name(2, 1)), 42, 42, true).kind == ak::list);
        auto g = waiting();
        CHECK(g.on_mark_read(ok, handoff_mark(name(3, 4)) + "x", 42, 42, true).kind == ak::list);
        auto h = waiting();
        CHECK(h.on_mark_read(ok, permit_count_data(1), 42, 42, true).kind == ak::list);
    }
    SUBCASE("the read fails: connection loss waits and lists; other errors list")
    {
        auto f = waiting();
        CHECK(f.on_mark_read(loss, "", 0, 0, true).kind == ak::wait_connected);
        CHECK(f.on_connected().kind == ak::list);
        auto g = waiting();
        CHECK(g.on_mark_read(zk_errc::no_auth, "", 0, 0, true).kind == ak::list);
        auto h = waiting();
        CHECK(h.on_mark_read(zk_errc::session_expired, "", 0, 0, true).ec == errc::session_expired);
    }
    SUBCASE("cancel while the mark is read: our node is deleted, whatever the mark says")
    {
        auto f = waiting();
        CHECK(f.on_cancel(aborted).kind == ak::none);
        auto a = f.on_mark_read(ok, handoff_mark(name(3, 4)), 42, 42, true);
        CHECK(a.kind == ak::remove);
        CHECK(f.on_removed(ok).ec == aborted);
    }
    SUBCASE("our own node deleted while the mark is read: lock_lost, and the mark grants nothing")
    {
        auto f = waiting();
        CHECK(f.on_own_deleted().ec == errc::lock_lost);
        CHECK(f.on_mark_read(ok, handoff_mark(name(3, 4)), 42, 42, true).kind == ak::none);
    }
    SUBCASE("only an exclusive node's deletion is worth a read; a reader's is listed")
    {
        acquire_fsm f(dir, {}, me, false);
        f.start();
        auto a = f.on_create(ok, path(me, 7), 1, ok, {name(2, 1), name(3, 4, 'r'), name(me, 7)});
        CHECK(a.watch_own);  // for the look-ahead on seq 1, not for a mark
        f.on_watch_set(ok);
        CHECK(f.on_watch_fired(true, long_queue).kind == ak::list);
    }
    SUBCASE("readers use a writer's mark; permits never read one")
    {
        acquire_fsm r(dir, {node_kind::shared, 1}, me, false);
        r.start();
        auto a = r.on_create(ok, path(me, 7, 'r'), 1, ok, {name(2, 1), name(3, 4), name(5, 5, 'r'), name(me, 7, 'r')});
        CHECK(a.path == path(3, 4));  // the nearest writer
        r.on_watch_set(ok);
        CHECK(r.on_watch_fired(true, long_queue).kind == ak::read_mark);
        CHECK(r.on_mark_read(ok, handoff_mark(name(3, 4)), 9, 9, true).kind == ak::done);
        CHECK_FALSE(r.mark_on_release());  // a reader never writes one

        acquire_fsm p(dir, verified_permits(1), me, false);
        p.start();
        CHECK_FALSE(p.on_create(ok, path(me, 7, 's'), 1, ok, {name(2, 1, 's'), name(3, 4, 's'), name(me, 7, 's')}).watch_own);
        p.on_watch_set(ok);
        CHECK(p.on_watch_fired(true, long_queue).kind == ak::list);
    }
    SUBCASE("who releases with a mark")
    {
        acquire_fsm alone(dir, {}, me, false);
        alone.start();
        REQUIRE(alone.on_create(ok, path(me, 1), 1, ok, {name(me, 1)}).kind == ak::done);
        CHECK_FALSE(alone.mark_on_release());  // whoever queues later sees us as the head
        acquire_fsm followed(dir, {}, me, false);
        followed.start();
        REQUIRE(followed.on_create(ok, path(me, 1), 1, ok, {name(me, 1), name(2, 2)}).kind == ak::done);
        CHECK(followed.mark_on_release());  // seq 2 may have listed while seq 0 still held
        acquire_fsm behind_head(dir, {}, me, false);
        behind_head.start();
        REQUIRE(behind_head.on_create(ok, path(me, 5), 1, ok, {name(2, 1), name(me, 5)}).kind == ak::watch);
        behind_head.on_own_watch(true);
        behind_head.on_watch_set(ok);
        REQUIRE(behind_head.on_watch_fired(true).kind == ak::done);
        CHECK(behind_head.mark_on_release());
    }
}

TEST_CASE("a semaphore treats a handoff mark as no count stored")
{
    acquire_fsm f(dir, {node_kind::permit, 2}, me, false);
    CHECK(f.start().kind == ak::read_count);
    auto a = f.on_count_read(ok, handoff_mark(name(2, 1)), 3);
    CHECK(a.kind == ak::claim_count);
    CHECK(a.data == permit_count_data(2));
    CHECK(a.version == 3);
}

TEST_CASE("queue policies")
{
    auto q = make_queue({name(1, 1, 'r'), name(2, 2, 'x'), name(3, 3, 'r'), name(4, 4, 'r'), name(5, 5, 'x'),
                         name(6, 6, 'r')});
    // exclusive: the node just before
    CHECK(evaluate(q, 0, {node_kind::exclusive, 1}).acquired);
    CHECK(evaluate(q, 4, {node_kind::exclusive, 1}).watch == 3);
    // shared: the nearest exclusive node before us
    CHECK(evaluate(q, 0, {node_kind::shared, 1}).acquired);
    CHECK(evaluate(q, 3, {node_kind::shared, 1}).watch == 1);
    CHECK(evaluate(q, 5, {node_kind::shared, 1}).watch == 4);
    // permits: held while fewer than N permit nodes are ahead; the first waiter watches all N
    // (the nearest, and the others as `also`), every one behind it the nearest permit node
    auto p = make_queue({name(1, 1, 's'), name(2, 2, 's'), name(3, 3, 's'), name(4, 4, 's'), name(5, 5, 's')});
    CHECK(evaluate(p, 1, {node_kind::permit, 2}).acquired);
    const verdict first = evaluate(p, 2, {node_kind::permit, 2});
    CHECK_FALSE(first.acquired);
    CHECK(first.watch == 1);
    CHECK(first.also == std::vector<std::size_t>{0});
    CHECK_FALSE(first.behind);
    const verdict behind = evaluate(p, 3, {node_kind::permit, 2});
    CHECK(behind.watch == 2);
    CHECK(behind.also.empty());
    CHECK(behind.behind);
    CHECK(evaluate(p, 3, {node_kind::permit, 3}).watch == 2);
    CHECK(evaluate(p, 3, {node_kind::permit, 3}).also == std::vector<std::size_t>{1, 0});
    CHECK(evaluate(p, 4, {node_kind::permit, 3}).watch == 3);
    CHECK(evaluate(p, 4, {node_kind::permit, 3}).behind);
    // one permit: the nearest, as a mutex
    CHECK(evaluate(p, 3, {node_kind::permit, 1}).watch == 2);
    CHECK(evaluate(p, 3, {node_kind::permit, 1}).also.empty());
    CHECK_FALSE(evaluate(p, 3, {node_kind::permit, 1}).behind);
}

TEST_CASE("our own node deleted by someone else while we wait: lock_lost, never a grant on a node that is gone")
{
    SUBCASE("waiting behind a waiter")
    {
        auto f = waiting_machine();
        auto a = f.on_own_deleted();
        CHECK(a.kind == ak::done);
        CHECK(a.ec == errc::lock_lost);
        CHECK(f.own_node().empty());
        CHECK(f.on_watch_fired().kind == ak::none);  // the predecessor going later changes nothing
        CHECK(f.on_own_deleted().kind == ak::none);
    }
    SUBCASE("waiting on the head, whose deletion alone would grant the lock")
    {
        acquire_fsm f(dir, {}, me, false);
        f.start();
        REQUIRE(f.on_create(ok, path(me, 5), 500, ok, {name(8, 1), name(me, 5)}).kind == ak::watch);
        REQUIRE(f.on_watch_set(ok).kind == ak::wait_event);
        auto a = f.on_own_deleted();
        CHECK(a.kind == ak::done);
        CHECK(a.ec == errc::lock_lost);
        CHECK(f.on_watch_fired(true).kind == ak::none);
    }
    SUBCASE("while the watch on the predecessor is being set, or the queue listed again")
    {
        auto f = waiting_machine();
        REQUIRE(f.on_watch_fired().kind == ak::list);
        CHECK(f.on_own_deleted().kind == ak::done);
        CHECK(f.on_children(ok, {name(8, 1)}).kind == ak::none);
    }
    SUBCASE("a pending cancel keeps its reason")
    {
        auto f = waiting_machine();
        REQUIRE(f.on_watch_fired().kind == ak::list);
        CHECK(f.on_cancel(errc::timeout).kind == ak::none);
        auto a = f.on_own_deleted();
        CHECK(a.kind == ak::done);
        CHECK(a.ec == errc::timeout);
    }
    SUBCASE("ignored before our node is known and while we delete it ourselves")
    {
        acquire_fsm f(dir, {}, me, false);
        f.start();
        CHECK(f.on_own_deleted().kind == ak::none);  // creating
        REQUIRE(f.on_create(ok, path(me, 5), 500, ok, {name(8, 1), name(me, 5)}).kind == ak::watch);
        REQUIRE(f.on_watch_set(ok).kind == ak::wait_event);
        REQUIRE(f.on_cancel(aborted).kind == ak::remove);
        CHECK(f.on_own_deleted().kind == ak::none);  // our own delete's watch event
        auto a = f.on_removed(ok);
        CHECK(a.kind == ak::done);
        CHECK(a.ec == aborted);
    }
    SUBCASE("after a lost create reply, until the node is found again")
    {
        acquire_fsm f(dir, {}, me, false);
        f.start();
        REQUIRE(f.on_create(loss, "", 0, loss, {}).kind == ak::wait_connected);
        CHECK(f.on_own_deleted().kind == ak::none);
    }
}

TEST_CASE("scan_queue agrees with evaluate on the sorted queue, for random listings")
{
    // Random queues of every kind mix, shuffled as ZooKeeper lists them, with junk children and
    // duplicates of our attempt id: the one-pass scan must decide exactly what sorting decides.
    std::mt19937_64 rng(20261123);
    const char kinds[] = {'x', 'r', 's'};
    for (int round = 0; round < 3000; ++round) {
        const int n = 1 + static_cast<int>(rng() % 40);
        std::vector<std::string> children;
        std::vector<int> seqs(static_cast<std::size_t>(3 * n));
        std::iota(seqs.begin(), seqs.end(), 0);
        std::shuffle(seqs.begin(), seqs.end(), rng);
        for (int i = 0; i < n; ++i) {
            const std::uint64_t id = rng() % 7 == 0 ? me : 100 + static_cast<std::uint64_t>(i);
            children.push_back(name(id, seqs[static_cast<std::size_t>(i)], kinds[rng() % 3]));
        }
        if (rng() % 2) children.push_back("junk-" + std::to_string(round));
        const std::size_t own_index = rng() % children.size();
        if (children[own_index].starts_with("junk")) continue;
        const std::string own = children[own_index];
        const auto own_node = *parse_queue_node(own);
        const queue_policy policy{own_node.kind, 1 + static_cast<std::uint32_t>(rng() % 4)};
        std::shuffle(children.begin(), children.end(), rng);

        const auto q = make_queue(children);
        const auto pos = static_cast<std::size_t>(
            std::find_if(q.begin(), q.end(), [&](const queue_node& x) { return x.name == own; }) - q.begin());
        const verdict v = evaluate(q, pos, policy);
        const listing l(children);
        const scan_result r = scan_queue(l, own, own_node.id, policy);
        // A second scan of the same listing (a coalesced one serving another acquire) goes through
        // its sorted index: the same answer.
        const scan_result r2 = scan_queue(l, own, own_node.id, policy);
        CHECK(r2.found == r.found);
        CHECK(r2.acquired == r.acquired);
        CHECK(r2.recipe_mismatch == r.recipe_mismatch);
        CHECK(r2.position == r.position);
        CHECK(r2.has_successor == r.has_successor);
        CHECK(r2.watch == r.watch);
        CHECK(r2.watch_kind == r.watch_kind);
        CHECK(r2.watch_is_head == r.watch_is_head);
        CHECK(r2.ahead == r.ahead);
        CHECK(r2.behind == r.behind);
        CHECK(sorted(r2.also) == sorted(r.also));
        CHECK(r2.duplicates.size() == r.duplicates.size());
        CHECK(r2.size == r.size);
        CAPTURE(round);
        REQUIRE(r.found);
        const bool mixed = std::any_of(q.begin(), q.begin() + static_cast<std::ptrdiff_t>(pos), [&](const queue_node& x) {
            return (x.kind == node_kind::permit) != (policy.kind() == node_kind::permit);
        });
        CHECK(r.recipe_mismatch == mixed);
        if (mixed) {
            CHECK_FALSE(r.acquired);  // never granted behind another recipe's node
            continue;
        }
        REQUIRE(r.acquired == v.acquired);
        CHECK(r.position == pos);
        CHECK(r.has_successor == (pos + 1 < q.size()));
        if (!v.acquired) {
            CHECK(r.watch == q[v.watch].name);
            CHECK(r.watch_kind == q[v.watch].kind);
            CHECK(r.watch_is_head == (v.watch == 0));
            CHECK(r.behind == v.behind);
            std::vector<std::string_view> also;
            for (auto i : v.also) also.push_back(q[i].name);
            CHECK(sorted(r.also) == sorted(also));
            // Exclusive: the look-ahead's node is the one just before the watched one.
            if (policy.kind() == node_kind::exclusive && v.watch > 0) {
                CHECK(r.ahead == q[v.watch - 1].name);
                CHECK(r.ahead_kind == q[v.watch - 1].kind);
            } else {
                CHECK(r.ahead.empty());
            }
        }
        std::size_t dups = 0;
        for (const auto& x : q) dups += x.id == own_node.id && x.name != own;
        CHECK(r.duplicates.size() == dups);
    }
    // Our node missing from the listing: not found, nothing decided.
    CHECK_FALSE(scan_queue(listing({name(2, 1)}), name(me, 5), me, {}).found);
}

TEST_CASE("a semaphore's waits: the first waiter hears every holder, the one behind it hears its grant")
{
    // Two permits, held by 1 and 3; 5 is the first waiter, 7 (ours, in some cases) behind it.
    const std::vector<std::string> queue{name(9, 1, 's'), name(8, 3, 's'), name(6, 5, 's'), name(me, 7, 's')};
    SUBCASE("the first waiter watches both holders, and lists when either goes")
    {
        acquire_fsm f(dir, verified_permits(2), me, false);
        f.start();
        auto w = f.on_create(ok, path(me, 5, 's'), 1, ok, {name(9, 1, 's'), name(8, 3, 's'), name(me, 5, 's')});
        CHECK(w.kind == ak::watch);
        CHECK(w.path == path(8, 3, 's'));
        CHECK(w.also == std::vector<std::string>{path(9, 1, 's')});
        CHECK(f.on_watch_set(ok, {}, 0).kind == ak::wait_event);
        // The holder nearer the head leaves first: the permit it frees is ours.
        CHECK(f.on_also_fired().kind == ak::list);
        auto g = f.on_children(ok, {name(8, 3, 's'), name(me, 5, 's')});
        CHECK(g.kind == ak::done);
        CHECK_FALSE(g.ec);
        CHECK_FALSE(g.touch);  // nobody after us in the listing that granted us
    }
    SUBCASE("a holder's data written: nothing, the watches stay")
    {
        acquire_fsm f(dir, verified_permits(2), me, false);
        f.start();
        f.on_create(ok, path(me, 5, 's'), 1, ok, {name(9, 1, 's'), name(8, 3, 's'), name(me, 5, 's')});
        f.on_watch_set(ok, {}, 0);
        auto again = f.on_watch_fired(false);
        CHECK(again.kind == ak::watch);
        CHECK(f.on_watch_set(ok, {}, 1).kind == ak::wait_event);  // a holder's version says nothing
    }
    SUBCASE("a holder gone while the watch is being set: list once it is")
    {
        acquire_fsm f(dir, verified_permits(2), me, false);
        f.start();
        f.on_create(ok, path(me, 5, 's'), 1, ok, {name(9, 1, 's'), name(8, 3, 's'), name(me, 5, 's')});
        f.on_watch_set(ok, {}, 0);
        f.on_watch_fired(false);
        CHECK(f.on_also_fired().kind == ak::none);
        CHECK(f.on_watch_set(ok, {}, 0).kind == ak::list);
    }
    SUBCASE("granted with a waiter behind: the grant writes into our node")
    {
        acquire_fsm f(dir, verified_permits(2), me, false);
        f.start();
        f.on_create(ok, path(me, 5, 's'), 1, ok, {name(9, 1, 's'), name(8, 3, 's'), name(me, 5, 's')});
        f.on_watch_set(ok, {}, 0);
        f.on_also_fired();
        auto g = f.on_children(ok, {name(8, 3, 's'), name(me, 5, 's'), name(6, 7, 's')});
        CHECK(g.kind == ak::done);
        CHECK(g.touch);
    }
    SUBCASE("behind the first waiter: watch it alone, list when it is written into")
    {
        acquire_fsm f(dir, verified_permits(2), me, false);
        f.start();
        auto w = f.on_create(ok, path(me, 7, 's'), 1, ok, queue);
        CHECK(w.kind == ak::watch);
        CHECK(w.path == path(6, 5, 's'));
        CHECK(w.also.empty());
        CHECK(f.on_watch_set(ok, {}, 0).kind == ak::wait_event);
        // It is granted and writes: we are the first waiter now.
        CHECK(f.on_watch_fired(false).kind == ak::list);
        auto first = f.on_children(ok, {name(8, 3, 's'), name(6, 5, 's'), name(me, 7, 's')});
        CHECK(first.kind == ak::watch);
        CHECK(first.path == path(6, 5, 's'));
        CHECK(first.also == std::vector<std::string>{path(8, 3, 's')});
        CHECK(f.on_watch_set(ok, {}, 1).kind == ak::wait_event);  // no longer behind: its version says nothing
    }
    SUBCASE("behind the first waiter, which was granted and wrote before our watch: list")
    {
        acquire_fsm f(dir, verified_permits(2), me, false);
        f.start();
        f.on_create(ok, path(me, 7, 's'), 1, ok, queue);
        CHECK(f.on_watch_set(ok, {}, 1).kind == ak::list);
        // Listed after that write, and still behind it (a write that was no grant, a revocation
        // request): wait, without listing again for the same version.
        CHECK(f.on_children(ok, queue).kind == ak::watch);
        CHECK(f.on_watch_set(ok, {}, 1).kind == ak::wait_event);
        // Written again: list at once; still behind it, the newer version lists once more, then waits.
        CHECK(f.on_watch_fired(false).kind == ak::list);
        CHECK(f.on_children(ok, queue).kind == ak::watch);
        CHECK(f.on_watch_set(ok, {}, 2).kind == ak::list);
        CHECK(f.on_children(ok, queue).kind == ak::watch);
        CHECK(f.on_watch_set(ok, {}, 2).kind == ak::wait_event);
    }
    SUBCASE("behind the first waiter, which leaves: list")
    {
        acquire_fsm f(dir, verified_permits(2), me, false);
        f.start();
        f.on_create(ok, path(me, 7, 's'), 1, ok, queue);
        f.on_watch_set(ok, {}, 0);
        CHECK(f.on_watch_fired(true).kind == ak::list);
        CHECK(f.on_also_fired().kind == ak::none);  // no holder watched
    }
    SUBCASE("a cancel while the first waiter waits removes our node")
    {
        acquire_fsm f(dir, verified_permits(2), me, false);
        f.start();
        f.on_create(ok, path(me, 5, 's'), 1, ok, {name(9, 1, 's'), name(8, 3, 's'), name(me, 5, 's')});
        f.on_watch_set(ok, {}, 0);
        CHECK(f.on_cancel(aborted).kind == ak::remove);
        CHECK(f.on_also_fired().kind == ak::none);
    }
}

TEST_CASE("after a semaphore's grant write: what next")
{
    CHECK(after_touch(ok, false) == touch_next::done);
    CHECK(after_touch(loss, false) == touch_next::retry);
    CHECK(after_touch(loss, true) == touch_next::retry);
    CHECK(after_touch(zk_errc::bad_version, false) == touch_next::write_back);
    CHECK(after_touch(zk_errc::bad_version, true) == touch_next::done);
    CHECK(after_touch(zk_errc::no_node, false) == touch_next::done);
    CHECK(after_touch(zk_errc::session_expired, false) == touch_next::done);
}

TEST_CASE("a semaphore's permit count: read, claimed if absent, verified once per object")
{
    const queue_policy two{node_kind::permit, 2};
    const std::string ours = permit_count_data(2);
    SUBCASE("the stored count is ours: queue")
    {
        acquire_fsm f(dir, two, me, false);
        auto a = f.start();
        CHECK(a.kind == ak::read_count);
        CHECK(a.path == dir);
        CHECK_FALSE(f.count_verified());
        a = f.on_count_read(ok, ours, 3);
        CHECK(a.kind == ak::create);
        CHECK(f.count_verified());
    }
    SUBCASE("no count yet: claim it with the version read; someone wrote first: read again")
    {
        acquire_fsm f(dir, two, me, false);
        f.start();
        auto a = f.on_count_read(ok, "", 7);
        CHECK(a.kind == ak::claim_count);
        CHECK(a.data == ours);
        CHECK(a.version == 7);
        CHECK(f.on_count_claimed(zk_errc::bad_version).kind == ak::read_count);
        a = f.on_count_read(ok, permit_count_data(3), 8);
        CHECK(a.kind == ak::done);
        CHECK(a.ec == errc::permit_mismatch);
    }
    SUBCASE("claimed: queue")
    {
        acquire_fsm f(dir, two, me, false);
        f.start();
        f.on_count_read(ok, "", 0);
        CHECK(f.on_count_claimed(ok).kind == ak::create);
        CHECK(f.count_verified());
    }
    SUBCASE("no lock path: create it, then read")
    {
        acquire_fsm f(dir, two, me, false);
        f.start();
        CHECK(f.on_count_read(zk_errc::no_node, "", 0).kind == ak::create_parents);
        CHECK(f.on_parents_created(ok).kind == ak::read_count);
    }
    SUBCASE("a connection loss: wait, then read again")
    {
        acquire_fsm f(dir, two, me, false);
        f.start();
        CHECK(f.on_count_read(loss, "", 0).kind == ak::wait_connected);
        CHECK(f.on_connected().kind == ak::read_count);
    }
    SUBCASE("known count: no read; a path found gone is verified again")
    {
        acquire_fsm f(dir, verified_permits(2), me, false);
        CHECK(f.start().kind == ak::create);
        CHECK(f.on_create(zk_errc::no_node, "", 0, zk_errc::no_node, {}).kind == ak::create_parents);
        CHECK_FALSE(f.count_verified());
        CHECK(f.on_parents_created(ok).kind == ak::read_count);
    }
    SUBCASE("zero permits")
    {
        acquire_fsm f(dir, {node_kind::permit, 0}, me, false);
        auto a = f.start();
        CHECK(a.kind == ak::done);
        CHECK(a.ec == errc::invalid_argument);
    }
    for (error_code reason : {aborted, error_code(errc::timeout)}) {
        CAPTURE(reason.message());
        SUBCASE("cancel while reading, claiming or waiting for the connection: at once, nothing created")
        {
            for (int step = 0; step < 3; ++step) {
                acquire_fsm f(dir, two, me, false);
                f.start();
                if (step == 1) f.on_count_read(ok, "", 0);
                if (step == 2) f.on_count_read(loss, "", 0);
                auto a = f.on_cancel(reason);
                CHECK(a.kind == ak::done);
                CHECK(a.ec == reason);
                CHECK(f.on_count_read(ok, ours, 1).kind == ak::none);  // the late reply is ignored
                CHECK(f.on_count_claimed(ok).kind == ak::none);
                CHECK(f.on_connected().kind == ak::none);
            }
        }
    }
}

TEST_CASE("downgrade: a reader whose nearest writer holds a downgrade mark is granted, a writer is not")
{
    {
        // Our reader (seq 7) behind the holding writer (seq 2) and a reader (seq 4): the writer is
        // the head, so our own node's watch goes out with the first watch.
        acquire_fsm f(dir, {node_kind::shared}, me, false);
        f.start();
        auto a = f.on_create(ok, path(me, 7, 'r'), 70, ok, {name(2, 2), name(3, 4, 'r'), name(me, 7, 'r')});
        REQUIRE(a.kind == ak::watch);
        CHECK(a.path == path(2, 2));  // the nearest writer
        CHECK(a.watch_own);
        CHECK(f.on_own_watch(true).kind == ak::none);
        a = f.on_watch_set(ok, downgrade_mark("host:1"));
        CHECK(a.kind == ak::done);
        CHECK_FALSE(a.ec);
    }
    // Our reader behind a holder (seq 1) and a waiting writer (seq 2), which we wait on.
    const std::vector<std::string> queue{name(8, 1), name(2, 2), name(me, 7, 'r')};
    {
        // Seq 2 is granted and downgrades while we wait: the data change fires our watch; the mark
        // is read; our own node's watch is asked for, then the writer read again behind it.
        acquire_fsm f(dir, {node_kind::shared}, me, false);
        f.start();
        auto a = f.on_create(ok, path(me, 7, 'r'), 70, ok, queue);
        REQUIRE(a.kind == ak::watch);
        CHECK(a.path == path(2, 2));
        CHECK_FALSE(a.watch_own);
        CHECK(f.on_watch_set(ok, "host:1").kind == ak::wait_event);
        REQUIRE(f.on_watch_fired(false).kind == ak::watch);
        a = f.on_watch_set(ok, downgrade_mark("host:1"));
        REQUIRE(a.kind == ak::watch);
        CHECK(a.watch_own);
        f.on_own_watch(true);
        a = f.on_watch_set(ok, downgrade_mark("host:1"));
        CHECK(a.kind == ak::done);
        CHECK_FALSE(a.ec);
    }
    {
        // The own watch could not be set: no grant on the mark; wait for the writer to go.
        acquire_fsm f(dir, {node_kind::shared}, me, false);
        f.start();
        f.on_create(ok, path(me, 7, 'r'), 70, ok, queue);
        CHECK(f.on_watch_set(ok, downgrade_mark("h")).kind == ak::watch);
        f.on_own_watch(false);
        CHECK(f.on_watch_set(ok, downgrade_mark("h")).kind == ak::wait_event);
        CHECK(f.on_watch_fired(true).kind == ak::list);
    }
    {
        // A writer waits on whatever is before it, marked or not.
        acquire_fsm f(dir, queue_policy{writer_recipe}, me, false);
        f.start();
        auto a = f.on_create(ok, path(me, 7), 70, ok, {name(2, 2), name(me, 7)});
        REQUIRE(a.kind == ak::watch);
        f.on_own_watch(true);
        CHECK(f.on_watch_set(ok, downgrade_mark("h")).kind == ak::wait_event);
    }
    CHECK(is_downgrade_mark(downgrade_mark("x")));
    CHECK_FALSE(is_downgrade_mark("host:1"));
    CHECK_FALSE(is_downgrade_mark(handoff_mark("x-1")));
}
