// The cohort state machine fed scripted events: turns, local handoffs, the budget, revocation,
// loss, cancellation at every phase; then random event orders checked against its invariants.
#include "queue/cohort_fsm.hpp"

#include <zklock/detail/recipe.hpp>

#include <boost/asio/error.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>

using namespace zklock;
using namespace zklock::detail;
using ak = cohort_fsm::action::kind_t;
using ns = cohort_fsm::node_status;

namespace {

const error_code ok{};
const error_code aborted = boost::asio::error::operation_aborted;

std::string name(node_kind kind, std::uint64_t id, int seq)
{
    return node_prefix(kind, id) + std::string(10 - std::to_string(seq).size(), '0') + std::to_string(seq);
}
const std::string own = name(node_kind::exclusive, 1, 5);

// The actions of one step, as "kind:id" strings (id only where it names a waiter or holder).
std::vector<std::string> show(const cohort_fsm::actions& out)
{
    static const char* const names[] = {"start",  "cancel", "follow", "grant", "fail",
                                        "lose",   "list",   "wait",   "drop",  "release"};
    std::vector<std::string> r;
    for (const auto& a : out) {
        std::string s = names[static_cast<int>(a.kind)];
        if (a.kind == ak::grant || a.kind == ak::fail || a.kind == ak::lose) s += ":" + std::to_string(a.id);
        r.push_back(s);
    }
    return r;
}
using v = std::vector<std::string>;

const cohort_fsm::action* find(const cohort_fsm::actions& out, ak kind)
{
    for (const auto& a : out)
        if (a.kind == kind) return &a;
    return nullptr;
}

// A mutex cohort with waiters 1 and 2 whose turn was just granted: 1 holds, the others-listing
// is in flight.
cohort_fsm held_with_two(std::uint32_t budget)
{
    cohort_fsm f(node_kind::exclusive, budget);
    REQUIRE(show(f.arrive(1)) == v{"start"});
    REQUIRE(show(f.arrive(2)).empty());
    REQUIRE(show(f.on_turn_acquired(f.turn(), ok, own)) == v{"follow", "list", "grant:1"});
    return f;
}

}  // namespace

TEST_CASE("cohort: one turn serves the local waiters in order, with one node")
{
    auto f = held_with_two(4);
    const auto turn = f.turn();
    // The grant carries its number in the turn (the fencing token's second half).
    CHECK(show(f.on_local_release(turn, 1)) == v{"grant:2"});
    CHECK(show(f.arrive(3)).empty());  // 2 holds: 3 waits locally
    CHECK(show(f.on_local_release(turn, 2)) == v{"grant:3"});
    CHECK(show(f.on_local_release(turn, 3)) == v{"drop", "release"});
    CHECK(f.idle());
}

TEST_CASE("cohort: grant numbers and turns")
{
    cohort_fsm f(node_kind::exclusive, 4);
    f.arrive(1);
    f.arrive(2);
    auto out = f.on_turn_acquired(f.turn(), ok, own);
    const auto* g = find(out, ak::grant);
    REQUIRE(g);
    CHECK(g->n == 1);
    CHECK(g->turn == f.turn());
    out = f.on_local_release(f.turn(), 1);
    REQUIRE(find(out, ak::grant));
    CHECK(find(out, ak::grant)->n == 2);
    out = f.on_local_release(f.turn(), 2);
    const auto* r = find(out, ak::release_node);
    REQUIRE(r);
    CHECK(r->turn + 1 == f.turn());  // the release names the turn that ended
}

TEST_CASE("cohort: a turn with one waiter releases its node when it leaves")
{
    cohort_fsm f(node_kind::exclusive, 4);
    CHECK(show(f.arrive(1)) == v{"start"});
    CHECK(show(f.on_turn_acquired(f.turn(), ok, own)) == v{"follow", "list", "grant:1"});
    CHECK(show(f.on_local_release(f.turn(), 1)) == v{"drop", "release"});
    CHECK(f.idle());
}

TEST_CASE("cohort: with the budget spent, the listing decides")
{
    SUBCASE("someone waits behind our node: the node goes back to the end of the queue")
    {
        auto f = held_with_two(1);
        const auto turn = f.turn();
        CHECK(show(f.on_local_release(turn, 1)).empty());  // budget spent, listing in flight: wait
        CHECK_FALSE(f.idle());
        const std::vector<std::string> children{own, name(node_kind::exclusive, 7, 6)};
        CHECK(show(f.on_others_listed(turn, ok, children)) == v{"drop", "release", "start"});
        CHECK(f.turn() > turn);
        CHECK(f.waiting() == 1);
    }
    SUBCASE("nobody waits: local grants go on, and a child change asks again")
    {
        auto f = held_with_two(1);
        const auto turn = f.turn();
        CHECK(show(f.on_others_listed(turn, ok, {own})) == v{"wait"});
        CHECK(show(f.on_local_release(turn, 1)) == v{"grant:2"});
        CHECK(show(f.arrive(3)).empty());
        CHECK(show(f.on_others_changed(turn, ok)) == v{"list"});
        CHECK(show(f.on_local_release(turn, 2)).empty());  // over budget, not known: wait for the listing
        const std::vector<std::string> children{own, name(node_kind::exclusive, 7, 6)};
        CHECK(show(f.on_others_listed(turn, ok, children)) == v{"drop", "release", "start"});
    }
    SUBCASE("a failed listing counts as someone waiting")
    {
        auto f = held_with_two(1);
        const auto turn = f.turn();
        CHECK(show(f.on_others_listed(turn, zk_errc::connection_loss, {})).empty());
        CHECK(show(f.on_local_release(turn, 1)) == v{"drop", "release", "start"});
    }
    SUBCASE("within the budget, nobody waits for the listing")
    {
        auto f = held_with_two(2);
        CHECK(show(f.on_local_release(f.turn(), 1)) == v{"grant:2"});
    }
}

TEST_CASE("cohort: who counts as waiting behind our node")
{
    const auto x = node_kind::exclusive;
    const auto r = node_kind::shared;
    const auto w = writer_recipe;
    // A mutex node behind ours, not one before it; other children are ignored.
    CHECK(cohort_fsm::anyone_behind({name(x, 1, 5), name(x, 2, 6)}, name(x, 1, 5)));
    CHECK_FALSE(cohort_fsm::anyone_behind({name(x, 2, 3), name(x, 1, 5), "not-a-lock-node"}, name(x, 1, 5)));
    // Behind a reader: a writer waits, a reader does not (it holds with us).
    const auto writer = node_prefix(w, 3) + "0000000007";
    CHECK(cohort_fsm::anyone_behind({name(r, 1, 5), writer}, name(r, 1, 5)));
    CHECK_FALSE(cohort_fsm::anyone_behind({name(r, 1, 5), name(r, 2, 6)}, name(r, 1, 5)));
    // Behind a writer: a reader waits.
    CHECK(cohort_fsm::anyone_behind({node_prefix(w, 1) + "0000000005", name(r, 2, 6)}, node_prefix(w, 1) + "0000000005"));
    // Curator's and Kazoo's mutex nodes count too.
    CHECK(cohort_fsm::anyone_behind({name(x, 1, 5), "_c_0f4e0c3a-4a4b-4a4b-9a4b-0123456789ab-lock-0000000006"},
                                    name(x, 1, 5)));
    CHECK(cohort_fsm::anyone_behind({name(x, 1, 5), "0f4e0c3a4a4b4a4b9a4b0123456789ab__lock__0000000006"}, name(x, 1, 5)));
}

TEST_CASE("cohort: readers share a turn")
{
    cohort_fsm f(node_kind::shared, 4);
    f.arrive(1);
    f.arrive(2);
    f.arrive(3);
    CHECK(show(f.on_turn_acquired(f.turn(), ok, name(node_kind::shared, 1, 5))) ==
          v{"follow", "list", "grant:1", "grant:2", "grant:3"});
    CHECK(f.holders() == 3);
    // A try-acquire joins at once while the turn holds and nobody waits.
    cohort_fsm::actions out;
    CHECK(f.try_arrive(4, out) == cohort_fsm::try_verdict::granted);
    CHECK(show(out) == v{"grant:4"});
    for (std::uint64_t i = 1; i < 4; ++i) CHECK(show(f.on_local_release(f.turn(), i)).empty());
    CHECK(show(f.on_local_release(f.turn(), 4)) == v{"drop", "release"});
    CHECK(f.idle());
}

TEST_CASE("cohort: try-acquire")
{
    cohort_fsm f(node_kind::exclusive, 4);
    cohort_fsm::actions out;
    CHECK(f.try_arrive(1, out) == cohort_fsm::try_verdict::plain);  // nothing runs: a plain try
    CHECK(out.empty());
    f.arrive(2);
    CHECK(f.try_arrive(3, out) == cohort_fsm::try_verdict::busy);  // a turn is queued in ZooKeeper
    f.on_turn_acquired(f.turn(), ok, own);
    CHECK(f.try_arrive(3, out) == cohort_fsm::try_verdict::busy);  // a writer holds
    CHECK(out.empty());
}

TEST_CASE("cohort: leaving")
{
    SUBCASE("the last waiter leaves while the turn is queued: the turn's acquire is cancelled")
    {
        cohort_fsm f(node_kind::exclusive, 4);
        f.arrive(1);
        f.arrive(2);
        CHECK(show(f.leave(1, errc::timeout)) == v{"fail:1"});
        CHECK(show(f.leave(2, aborted)) == v{"fail:2", "cancel"});
        CHECK_FALSE(f.idle());  // until the acquire says its node is gone
        CHECK(show(f.leave(2, aborted)).empty());  // a second signal: nothing left to do
        CHECK(show(f.on_turn_acquired(f.turn(), aborted)).empty());
        CHECK(f.idle());
    }
    SUBCASE("someone came after the cancel: a new turn")
    {
        cohort_fsm f(node_kind::exclusive, 4);
        f.arrive(1);
        const auto turn = f.turn();
        CHECK(show(f.leave(1, aborted)) == v{"fail:1", "cancel"});
        CHECK(show(f.arrive(2)).empty());
        CHECK(show(f.on_turn_acquired(turn, aborted)) == v{"start"});
        CHECK(f.turn() > turn);
    }
    SUBCASE("the cancel came too late: the node was granted, and goes at once")
    {
        cohort_fsm f(node_kind::exclusive, 4);
        f.arrive(1);
        f.leave(1, aborted);
        CHECK(show(f.on_turn_acquired(f.turn(), ok, own)) == v{"release"});
        CHECK(f.idle());
    }
    SUBCASE("the cancel came too late, and a waiter came: it is served")
    {
        cohort_fsm f(node_kind::exclusive, 4);
        f.arrive(1);
        f.leave(1, aborted);
        f.arrive(2);
        CHECK(show(f.on_turn_acquired(f.turn(), ok, own)) == v{"follow", "list", "grant:2"});
    }
    SUBCASE("a waiter behind a holder leaves; a granted one cannot")
    {
        auto f = held_with_two(4);
        CHECK(show(f.leave(1, aborted)).empty());  // 1 holds
        CHECK(show(f.leave(2, errc::timeout)) == v{"fail:2"});
        CHECK(show(f.on_local_release(f.turn(), 1)) == v{"drop", "release"});
        CHECK(f.idle());
    }
    SUBCASE("the turn's acquire fails: every waiter is told")
    {
        cohort_fsm f(node_kind::exclusive, 4);
        f.arrive(1);
        f.arrive(2);
        CHECK(show(f.on_turn_acquired(f.turn(), errc::timeout)) == v{"fail:1", "fail:2"});
        CHECK(f.idle());
    }
}

TEST_CASE("cohort: the node lost tells every holder and waiter, and later releases are stale")
{
    cohort_fsm f(node_kind::shared, 4);
    f.arrive(1);
    f.arrive(2);
    f.on_turn_acquired(f.turn(), ok, name(node_kind::shared, 1, 5));
    const auto turn = f.turn();
    cohort_fsm f2(node_kind::exclusive, 1);
    f2.arrive(1);
    f2.arrive(2);
    f2.on_turn_acquired(f2.turn(), ok, own);
    const auto turn2 = f2.turn();
    const auto out = f2.on_node_status(turn2, ns::lost, zk_errc::session_expired);
    CHECK(show(out) == v{"drop", "lose:1", "release", "fail:2"});
    CHECK(find(out, ak::lose)->ec == zk_errc::session_expired);
    CHECK(find(out, ak::fail)->ec == zk_errc::session_expired);
    CHECK(f2.idle());
    CHECK(show(f2.on_local_release(turn2, 1)).empty());
    CHECK(show(f2.on_others_listed(turn2, ok, {own})).empty());

    CHECK(show(f.on_node_status(turn, ns::lost, errc::lock_lost)) == v{"drop", "lose:1", "lose:2", "release"});
    CHECK(f.idle());
}

TEST_CASE("cohort: a node granted already lost")
{
    cohort_fsm f(node_kind::exclusive, 4);
    f.arrive(1);
    CHECK(show(f.on_turn_acquired(f.turn(), ok, own, ns::lost, errc::lock_lost)) == v{"release", "fail:1"});
    CHECK(f.idle());
}

TEST_CASE("cohort: no local grant while the session is suspended")
{
    auto f = held_with_two(4);
    const auto turn = f.turn();
    CHECK(show(f.on_node_status(turn, ns::suspended)).empty());
    CHECK(show(f.on_local_release(turn, 1)).empty());  // 2 waits for the connection
    CHECK_FALSE(f.idle());
    CHECK(show(f.on_node_status(turn, ns::held)) == v{"grant:2"});
}

TEST_CASE("cohort: a revocation request stops local grants")
{
    SUBCASE("during the turn: the node goes when its holder leaves, and queues again")
    {
        auto f = held_with_two(4);
        const auto turn = f.turn();
        CHECK(show(f.on_revocation(turn)).empty());
        CHECK(show(f.on_local_release(turn, 1)) == v{"drop", "release", "start"});
    }
    SUBCASE("seen before the first grant: one holder still gets the node and sees the request")
    {
        cohort_fsm f(node_kind::shared, 4);
        f.arrive(1);
        f.arrive(2);
        CHECK(show(f.on_turn_acquired(f.turn(), ok, name(node_kind::shared, 1, 5), ns::held, {}, true)) ==
              v{"follow", "list", "grant:1"});
        CHECK(show(f.on_local_release(f.turn(), 1)) == v{"drop", "release", "start"});
    }
}

TEST_CASE("cohort: a presumed expiry fails the waiters of a queued turn at once")
{
    cohort_fsm f(node_kind::exclusive, 4);
    f.arrive(1);
    f.arrive(2);
    const auto out = f.on_presumed_expired();
    CHECK(show(out) == v{"fail:1", "fail:2", "cancel"});
    CHECK(find(out, ak::fail)->ec == errc::session_expired);
    CHECK(show(f.on_turn_acquired(f.turn(), aborted)).empty());
    CHECK(f.idle());
    // A held turn hears of it through its node's status instead.
    auto g = held_with_two(4);
    CHECK(show(g.on_presumed_expired()).empty());
}

TEST_CASE("cohort: replies of an earlier turn are ignored")
{
    auto f = held_with_two(1);
    const auto turn = f.turn();
    f.on_local_release(turn, 1);
    f.on_others_listed(turn, ok, {own, name(node_kind::exclusive, 7, 6)});  // ends the turn, starts another
    CHECK(show(f.on_others_listed(turn, ok, {own})).empty());
    CHECK(show(f.on_others_changed(turn, ok)).empty());
    CHECK(show(f.on_node_status(turn, ns::lost, errc::lock_lost)).empty());
    CHECK(show(f.on_revocation(turn)).empty());
    CHECK(show(f.on_turn_acquired(turn, ok, own)).empty());
    CHECK(f.waiting() == 1);
}

// The machine driven through random event orders by a model of its environment (the turn's
// acquire, the listing and its watch, the node's status, local holders). After every step:
// an exclusive cohort has at most one holder; every grant is made on a held node of the current
// turn; no waiter completes twice; a turn whose listing said someone waits makes no grant past
// the budget; a revoked turn makes no grant after its first. At the end, with every async step
// answered and every holder gone, the machine is idle and every waiter completed once.
TEST_CASE("cohort: random event orders keep the invariants")
{
    for (const auto kind : {node_kind::exclusive, node_kind::shared}) {
        for (std::uint32_t seed = 1; seed <= 300; ++seed) {
            CAPTURE(seed);
            CAPTURE(static_cast<int>(kind));
            std::mt19937 rng(seed);
            const std::uint32_t budget = 1 + rng() % 3;
            cohort_fsm f(kind, budget);
            const auto own_name = name(kind, 1, 5);

            std::set<std::uint64_t> waiting, holders;
            std::map<std::uint64_t, std::uint64_t> holder_turn;
            std::set<std::uint64_t> completed;
            std::uint64_t next = 0;
            std::optional<std::uint64_t> acquiring;  // the turn whose acquire is in flight
            bool cancelled = false;
            std::optional<std::uint64_t> held;       // the turn whose node holds
            ns status = ns::held;
            bool listing = false, watch = false, revoked = false, someone_behind = false;
            std::uint64_t grants_in_turn = 0;
            bool bounded = true;  // the budget applies: no listing since a change said nobody waits

            auto apply = [&](const cohort_fsm::actions& out) {
                for (const auto& a : out) {
                    switch (a.kind) {
                    case ak::start_turn:
                        REQUIRE_FALSE(acquiring);
                        REQUIRE_FALSE(held);
                        acquiring = a.turn;
                        cancelled = false;
                        break;
                    case ak::cancel_turn:
                        REQUIRE(acquiring);
                        cancelled = true;
                        break;
                    case ak::follow_node: REQUIRE(held); break;
                    case ak::grant:
                        REQUIRE(held);
                        REQUIRE(a.turn == *held);
                        REQUIRE(status == ns::held);
                        REQUIRE(completed.insert(a.id).second);
                        waiting.erase(a.id);
                        holders.insert(a.id);
                        holder_turn[a.id] = a.turn;
                        ++grants_in_turn;
                        REQUIRE(a.n == grants_in_turn);
                        if (kind == node_kind::exclusive) REQUIRE(holders.size() == 1);
                        if (bounded) REQUIRE(grants_in_turn <= budget);
                        if (revoked) REQUIRE(grants_in_turn == 1);
                        break;
                    case ak::fail:
                        REQUIRE(completed.insert(a.id).second);
                        REQUIRE(waiting.erase(a.id) == 1);
                        break;
                    case ak::lose: REQUIRE(holders.erase(a.id) == 1); break;
                    case ak::list_others:
                        REQUIRE(held);
                        listing = true;
                        watch = false;
                        break;
                    case ak::wait_others: watch = true; break;
                    case ak::drop_others:
                        listing = false;
                        watch = false;
                        break;
                    case ak::release_node:
                        REQUIRE(held);
                        REQUIRE(a.turn == *held);
                        for (auto h : holders) REQUIRE(holder_turn[h] != *held);  // none left of it
                        held.reset();
                        listing = watch = revoked = false;
                        bounded = true;
                        grants_in_turn = 0;
                        status = ns::held;
                        break;
                    }
                }
            };

            for (int step = 0; step < 200; ++step) {
                switch (rng() % 13) {
                case 0:
                case 1: {
                    const auto id = ++next;
                    waiting.insert(id);
                    apply(f.arrive(id));
                    break;
                }
                case 2:
                    if (!waiting.empty()) {
                        auto it = waiting.begin();
                        std::advance(it, rng() % waiting.size());
                        apply(f.leave(*it, rng() % 2 ? aborted : error_code(errc::timeout)));
                    }
                    break;
                case 3:
                    if (acquiring) {
                        const auto t = *acquiring;
                        acquiring.reset();
                        const auto r = rng() % 4;
                        if (r == 0 || (cancelled && r == 1)) {
                            apply(f.on_turn_acquired(t, cancelled ? aborted : error_code(errc::timeout)));
                        } else {
                            held = t;
                            const bool rev = rng() % 8 == 0;
                            revoked = rev;
                            apply(f.on_turn_acquired(t, ok, own_name, ns::held, {}, rev));
                        }
                    }
                    break;
                case 4:
                case 5:
                    if (!holders.empty()) {
                        auto it = holders.begin();
                        std::advance(it, rng() % holders.size());
                        const auto id = *it;
                        holders.erase(it);
                        apply(f.on_local_release(holder_turn[id], id));
                    }
                    break;
                case 6:
                    if (held && listing) {
                        listing = false;
                        someone_behind = rng() % 2;
                        std::vector<std::string> children{own_name};
                        if (someone_behind) children.push_back(name(node_kind::exclusive, 9, 6));
                        const bool failed = rng() % 6 == 0;
                        bounded = someone_behind || failed;
                        apply(f.on_others_listed(*held, failed ? error_code(zk_errc::connection_loss) : ok, children));
                    }
                    break;
                case 7:
                    if (held && watch) {
                        watch = false;
                        bounded = true;
                        apply(f.on_others_changed(*held, ok));
                    }
                    break;
                case 8:
                    if (held) {
                        status = status == ns::held ? ns::suspended : ns::held;
                        apply(f.on_node_status(*held, status));
                    }
                    break;
                case 9:
                    if (held && rng() % 4 == 0) {
                        const auto t = *held;
                        status = ns::lost;
                        auto out = f.on_node_status(t, ns::lost, errc::lock_lost);
                        apply(out);
                        REQUIRE_FALSE(held);
                    }
                    break;
                case 10:
                    if (held && !revoked && rng() % 3 == 0) {
                        revoked = true;
                        apply(f.on_revocation(*held));
                    }
                    break;
                case 11:
                    if (rng() % 4 == 0) apply(f.on_presumed_expired());
                    break;
                case 12: {
                    const auto id = ++next;
                    cohort_fsm::actions out;
                    const auto verdict = f.try_arrive(id, out);
                    if (verdict == cohort_fsm::try_verdict::granted) {
                        REQUIRE(kind == node_kind::shared);
                        waiting.insert(id);
                        apply(out);
                    } else {
                        REQUIRE(out.empty());
                        if (verdict == cohort_fsm::try_verdict::plain) REQUIRE(f.idle());
                        completed.insert(id);  // the driver answers it (busy, or a plain try)
                    }
                    break;
                }
                }
            }
            // Drain: answer everything, resume the session, release every holder.
            for (int round = 0; round < 10000 && !f.idle(); ++round) {
                if (held && status != ns::held) {
                    status = ns::held;
                    apply(f.on_node_status(*held, ns::held));
                } else if (acquiring) {
                    const auto t = *acquiring;
                    acquiring.reset();
                    if (cancelled) {
                        apply(f.on_turn_acquired(t, aborted));
                    } else {
                        held = t;
                        revoked = false;
                        apply(f.on_turn_acquired(t, ok, own_name));
                    }
                } else if (!holders.empty()) {
                    const auto id = *holders.begin();
                    holders.erase(holders.begin());
                    apply(f.on_local_release(holder_turn[id], id));
                } else if (held && listing) {
                    listing = false;
                    bounded = true;
                    apply(f.on_others_listed(*held, ok, {own_name, name(node_kind::exclusive, 9, 6)}));
                } else {
                    FAIL("stuck: not idle and nothing to answer");
                }
            }
            REQUIRE(f.idle());
            CHECK(waiting.empty());
            CHECK(completed.size() == next);
            CHECK_FALSE(held);
            CHECK_FALSE(acquiring);
        }
    }
}
