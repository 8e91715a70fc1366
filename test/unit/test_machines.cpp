// The sans-io machines of the reading operations (src/ops/read_machines.hpp), driven by hand: the
// steps each asks for, what it makes of every outcome, error and cancellation in every state; and
// the observer against a small model of an election, with random changes, interleavings and waits.
#include "ops/lease_fsm.hpp"
#include "ops/lease_machines.hpp"
#include "ops/multi_lock_fsm.hpp"
#include "ops/read_machines.hpp"

#include <zklock/detail/acquire_fsm.hpp>
#include <zklock/detail/path.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <deque>
#include <map>
#include <random>

using namespace zklock;
using zklock::detail::zk_outcome;
using zklock::detail::zk_step;
using zklock::detail::zk_steps;
namespace asio = boost::asio;

namespace {

std::string name(int seq)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "x-%016x-lock-%010d", static_cast<unsigned>(seq) + 1000u, seq);
    return buf;
}

std::string describe(const zk_step& s)
{
    static const char* const ops[] = {"get_data", "get_children", "exists", "check_chroot", "wait_connected",
                                      "wait_watch", "set_data", "remove", "multi"};
    std::string d = ops[static_cast<int>(s.what)];
    if (!s.path.empty()) d += " " + s.path;
    if (s.watch) d += " +watch";
    return d;
}

std::vector<std::string> describe(const std::vector<zk_step>& steps)
{
    std::vector<std::string> v;
    for (const auto& s : steps) v.push_back(describe(s));
    return v;
}

std::vector<std::string> describe(const zk_steps& out) { return describe(out.list()); }

zk_outcome outcome(std::uint32_t tag, error_code ec = {}) { return zk_outcome{tag, ec}; }

zk_outcome children(std::uint32_t tag, std::vector<std::string> c)
{
    zk_outcome r{tag};
    r.children = std::move(c);
    return r;
}

zk_outcome data(std::uint32_t tag, std::string d, std::int64_t czxid = 0)
{
    zk_outcome r{tag};
    r.data = std::move(d);
    r.stat.czxid = czxid;
    return r;
}

using strings = std::vector<std::string>;

}  // namespace

// ---- list_queue_machine ----

TEST_CASE("list_queue machine: the path's data and the listing at once, then every node's data")
{
    using m_t = detail::list_queue_machine;
    m_t m("/q");
    zk_steps out;
    m.start(out);
    CHECK(describe(out) == strings{"get_data /q", "get_children /q"});
    CHECK(out.list()[0].tag == m_t::path_data);
    CHECK(out.list()[1].tag == m_t::listing);
    out.take();

    m.resume(out, data(m_t::path_data, "zklock-semaphore permits=3"));
    m.resume(out, children(m_t::listing, {name(2), "other", name(1)}));
    REQUIRE(describe(out) == strings{"get_data /q/" + name(1), "get_data /q/" + name(2)});
    CHECK(out.list()[0].tag == m_t::node_data);
    CHECK(out.list()[1].tag == m_t::node_data + 1);
    CHECK_FALSE(m.done());

    m.resume(out, outcome(m_t::node_data + 1, zk_errc::no_node));  // gone meanwhile
    CHECK_FALSE(m.done());
    m.resume(out, data(m_t::node_data, "host:1", 5));
    REQUIRE(m.done());
    auto [ec, l] = m.take_result();
    CHECK(!ec);
    CHECK(l.permits == 3);
    CHECK(l.other_children == 1);
    REQUIRE(l.entries.size() == 2);
    CHECK(l.entries[0].name == name(1));
    CHECK(l.entries[0].data == "host:1");
    CHECK(l.entries[0].stat.czxid == 5);
    CHECK_FALSE(l.entries[0].gone);
    CHECK(l.entries[1].gone);
}

TEST_CASE("list_queue machine: a permit count is read only in its exact form")
{
    using m_t = detail::list_queue_machine;
    for (const char* d : {"zklock-semaphore permits=3x", "zklock-semaphore permits=", "permits=3", "zklock-semaphore permits=03"}) {
        CAPTURE(d);
        m_t m("/q");
        zk_steps out;
        m.start(out);
        m.resume(out, data(m_t::path_data, d));
        m.resume(out, children(m_t::listing, {}));
        REQUIRE(m.done());
        CHECK(std::get<1>(m.take_result()).permits == 0);
    }
}

TEST_CASE("list_queue machine: every error path, and a cancel in every state")
{
    using m_t = detail::list_queue_machine;
    SUBCASE("an invalid path: done at start, nothing asked")
    {
        m_t m("no-slash");
        zk_steps out;
        m.start(out);
        CHECK(out.empty());
        REQUIRE(m.done());
        CHECK(std::get<0>(m.take_result()) == errc::invalid_path);
    }
    SUBCASE("no such path, and no chroot missing: no_node")
    {
        m_t m("/q");
        zk_steps out;
        m.start(out);
        out.take();
        m.resume(out, outcome(m_t::listing, zk_errc::no_node));
        CHECK(describe(out) == strings{"check_chroot"});
        m.resume(out, outcome(m_t::chroot));
        REQUIRE(m.done());
        CHECK(std::get<0>(m.take_result()) == zk_errc::no_node);
    }
    SUBCASE("no such path under a missing chroot: chroot_missing")
    {
        m_t m("/q");
        zk_steps out;
        m.start(out);
        m.resume(out, outcome(m_t::listing, zk_errc::no_node));
        m.resume(out, outcome(m_t::chroot, errc::chroot_missing));
        CHECK(std::get<0>(m.take_result()) == errc::chroot_missing);
    }
    SUBCASE("the listing fails")
    {
        m_t m("/q");
        zk_steps out;
        m.start(out);
        m.resume(out, outcome(m_t::listing, zk_errc::connection_loss));
        REQUIRE(m.done());
        auto [ec, l] = m.take_result();
        CHECK(ec == zk_errc::connection_loss);
        CHECK(l.entries.empty());
    }
    SUBCASE("a node's read fails: the whole listing does, later outcomes change nothing")
    {
        m_t m("/q");
        zk_steps out;
        m.start(out);
        m.resume(out, children(m_t::listing, {name(1), name(2)}));
        m.resume(out, outcome(m_t::node_data, zk_errc::operation_timeout));
        REQUIRE(m.done());
        m.resume(out, data(m_t::node_data + 1, "late"));
        auto [ec, l] = m.take_result();
        CHECK(ec == zk_errc::operation_timeout);
        CHECK(l.entries.empty());
    }
    SUBCASE("an outcome with a tag it never gave is ignored")
    {
        m_t m("/q");
        zk_steps out;
        m.start(out);
        m.resume(out, children(m_t::listing, {name(1)}));
        out.take();
        m.resume(out, data(m_t::node_data + 7, "stray"));
        CHECK_FALSE(m.done());
        CHECK(out.empty());
    }
    for (int at = 0; at < 4; ++at) {
        CAPTURE(at);
        m_t m("/q");
        zk_steps out;
        m.start(out);
        if (at >= 1) m.resume(out, data(m_t::path_data, "x"));
        if (at == 2) m.resume(out, outcome(m_t::listing, zk_errc::no_node));  // asking about the chroot
        if (at == 3) m.resume(out, children(m_t::listing, {name(1)}));        // reading the nodes
        out.take();
        m.cancel(out, asio::error::operation_aborted);
        CHECK(out.empty());
        REQUIRE(m.done());
        CHECK(std::get<0>(m.take_result()) == asio::error::operation_aborted);
    }
}

// ---- leader_machine ----

TEST_CASE("leader machine: the first candidate that still exists, one read at a time")
{
    using m_t = detail::leader_machine;
    m_t m("/e");
    zk_steps out;
    m.start(out);
    CHECK(describe(out) == strings{"get_children /e"});
    out.take();
    m.resume(out, children(m_t::listing, {name(3), "junk", name(1), name(2)}));
    CHECK(describe(out.take()) == strings{"get_data /e/" + name(1)});
    m.resume(out, outcome(m_t::candidate, zk_errc::no_node));
    CHECK(describe(out.take()) == strings{"get_data /e/" + name(2)});
    m.resume(out, data(m_t::candidate, "me", 9));
    REQUIRE(m.done());
    auto [ec, info] = m.take_result();
    CHECK(!ec);
    CHECK(info.node == name(2));
    CHECK(info.value == "me");
    CHECK(info.sequence == 2);
    CHECK(info.stat.czxid == 9);
}

TEST_CASE("leader machine: every error path, and a cancel in every state")
{
    using m_t = detail::leader_machine;
    const auto run = [](std::vector<zk_outcome> outcomes) {
        m_t m("/e");
        zk_steps out;
        m.start(out);
        for (auto& r : outcomes) m.resume(out, std::move(r));
        REQUIRE(m.done());
        return std::get<0>(m.take_result());
    };
    CHECK(run({children(m_t::listing, {})}) == errc::no_leader);
    CHECK(run({children(m_t::listing, {name(1)}), outcome(m_t::candidate, zk_errc::no_node)}) == errc::no_leader);
    CHECK(run({outcome(m_t::listing, zk_errc::no_node), outcome(m_t::chroot)}) == errc::no_leader);
    CHECK(run({outcome(m_t::listing, zk_errc::no_node), outcome(m_t::chroot, errc::chroot_missing)}) == errc::chroot_missing);
    CHECK(run({outcome(m_t::listing, zk_errc::no_node), outcome(m_t::chroot, zk_errc::connection_loss)}) == errc::no_leader);
    CHECK(run({outcome(m_t::listing, zk_errc::connection_loss)}) == zk_errc::connection_loss);
    CHECK(run({children(m_t::listing, {name(1)}), outcome(m_t::candidate, zk_errc::no_auth)}) == zk_errc::no_auth);
    {
        m_t m("bad//path");
        zk_steps out;
        m.start(out);
        CHECK(out.empty());
        REQUIRE(m.done());
        CHECK(std::get<0>(m.take_result()) == errc::invalid_path);
    }
    for (int at = 0; at < 3; ++at) {
        CAPTURE(at);
        m_t m("/e");
        zk_steps out;
        m.start(out);
        if (at == 1) m.resume(out, outcome(m_t::listing, zk_errc::no_node));
        if (at == 2) m.resume(out, children(m_t::listing, {name(1)}));
        out.take();
        m.cancel(out, asio::error::operation_aborted);
        CHECK(out.empty());
        REQUIRE(m.done());
        CHECK(std::get<0>(m.take_result()) == asio::error::operation_aborted);
        m.resume(out, data(m_t::candidate, "late"));
        CHECK(out.empty());
    }
}

// ---- observer_machine ----

namespace {

// Drives an observer machine step by step: the steps it asked for and has not had an outcome for.
struct observer_driver {
    detail::observer_machine m{"/e"};
    std::deque<zk_step> pending;

    void take(zk_steps& out)
    {
        for (auto& s : out.take()) pending.push_back(std::move(s));
    }
    void start()
    {
        zk_steps out;
        m.start(out);
        take(out);
    }
    zk_step next()
    {
        REQUIRE(!pending.empty());
        auto s = std::move(pending.front());
        pending.pop_front();
        return s;
    }
    void feed(zk_outcome r)
    {
        zk_steps out;
        m.resume(out, std::move(r));
        take(out);
    }
};

}  // namespace

TEST_CASE("observer machine: a listing, the leader's data with a watch, then the next one when it goes")
{
    observer_driver d;
    d.start();
    auto s = d.next();
    CHECK(describe(s) == "get_children /e +watch");
    d.feed(children(s.tag, {name(2), name(1)}));
    s = d.next();
    CHECK(describe(s) == "get_data /e/" + name(1) + " +watch");
    CHECK_FALSE(d.m.has_news());
    d.feed(data(s.tag, "a"));
    REQUIRE(d.m.has_news());
    CHECK(d.m.take_news().second.node == name(1));
    CHECK_FALSE(d.m.has_news());
    auto w = d.next();
    CHECK(describe(w) == "wait_watch");
    CHECK(w.tag == s.tag);  // the watch its read set

    zk_outcome fired{w.tag};
    fired.event = watch_event{watch_event_type::deleted, "/e/" + name(1)};
    d.feed(fired);
    s = d.next();
    CHECK(describe(s) == "get_data /e/" + name(2) + " +watch");  // no new listing
    d.feed(data(s.tag, "b"));
    REQUIRE(d.m.has_news());
    auto [ec, info] = d.m.take_news();
    CHECK(!ec);
    CHECK(info.node == name(2));
    CHECK(info.value == "b");
}

TEST_CASE("observer machine: no path waits for it, a lost connection looks again, a stale outcome is ignored")
{
    observer_driver d;
    d.start();
    auto s = d.next();
    d.feed(outcome(s.tag, zk_errc::no_node));
    s = d.next();
    CHECK(describe(s) == "check_chroot");
    d.feed(outcome(s.tag));
    REQUIRE(d.m.has_news());  // nobody leads
    CHECK(d.m.take_news().second.node.empty());
    s = d.next();
    CHECK(describe(s) == "exists /e +watch");
    d.feed(outcome(s.tag));  // not there: wait for it
    auto w = d.next();
    CHECK(describe(w) == "wait_watch");
    d.feed(outcome(w.tag, zk_errc::connection_loss));  // the watch's wait ends with the connection
    s = d.next();
    CHECK(describe(s) == "wait_connected");
    d.feed(outcome(w.tag));  // stale: ignored
    CHECK(d.pending.empty());
    d.feed(outcome(s.tag));
    s = d.next();
    CHECK(describe(s) == "get_children /e +watch");
    CHECK_FALSE(d.m.has_news());  // still nobody: not news
}

TEST_CASE("observer machine: what ends it, and what a wait gets then")
{
    SUBCASE("a missing chroot")
    {
        observer_driver d;
        d.start();
        d.feed(outcome(d.next().tag, zk_errc::no_node));
        d.feed(outcome(d.next().tag, errc::chroot_missing));
        CHECK(d.pending.empty());
        REQUIRE(d.m.has_news());
        CHECK(d.m.take_news().first == errc::chroot_missing);
        CHECK(d.m.has_news());  // every later wait too
    }
    SUBCASE("an error that is not a lost connection")
    {
        observer_driver d;
        d.start();
        d.feed(outcome(d.next().tag, zk_errc::no_auth));
        CHECK(d.pending.empty());
        CHECK(d.m.failed() == zk_errc::no_auth);
    }
    SUBCASE("no connection to wait for any more")
    {
        observer_driver d;
        d.start();
        d.feed(outcome(d.next().tag, zk_errc::session_expired));
        auto s = d.next();
        CHECK(describe(s) == "wait_connected");
        d.feed(outcome(s.tag, errc::session_closed));
        CHECK(d.pending.empty());
        CHECK(d.m.failed() == errc::session_closed);
    }
    SUBCASE("an invalid path")
    {
        detail::observer_machine m("e");
        zk_steps out;
        m.start(out);
        CHECK(out.empty());
        CHECK(m.failed() == errc::invalid_path);
    }
}

namespace {

// A small model of an election under one path, for the observer: candidates by sequence number
// with their values, the one watch the runner keeps, and replies made from the model as it is
// when the request is answered (as ZooKeeper answers one session's requests in order).
struct election_model {
    bool path = true;
    std::map<int, std::string> candidates;  // seq -> value
    int next_seq = 1;

    struct watch {
        enum kind { none, children, data, exists } what = none;
        int seq = 0;
        std::uint32_t tag = 0;
        bool fired = false;
        watch_event event;
    } w;

    std::optional<int> leader() const
    {
        if (candidates.empty()) return std::nullopt;
        return candidates.begin()->first;
    }

    void fire(watch_event_type t)
    {
        if (w.what == watch::none || w.fired) return;
        w.fired = true;
        w.event = watch_event{t, "/e"};
    }
    void join(std::string value)
    {
        if (!path) return;
        candidates[next_seq++] = std::move(value);
        if (w.what == watch::children) fire(watch_event_type::child);
    }
    void leave(int seq)
    {
        if (candidates.erase(seq) == 0) return;
        if (w.what == watch::children) fire(watch_event_type::child);
        if (w.what == watch::data && w.seq == seq) fire(watch_event_type::deleted);
    }
    void set(int seq, std::string value)
    {
        auto it = candidates.find(seq);
        if (it == candidates.end()) return;
        it->second = std::move(value);
        if (w.what == watch::data && w.seq == seq) fire(watch_event_type::changed);
    }
    void remove_path()
    {
        if (!path || !candidates.empty()) return;
        path = false;
        if (w.what == watch::children) fire(watch_event_type::deleted);
    }
    void create_path()
    {
        if (path) return;
        path = true;
        if (w.what == watch::exists) fire(watch_event_type::created);
    }

    static int seq_of(const std::string& p) { return std::stoi(p.substr(p.size() - 10)); }

    // The outcome of a read or a check; a watched read sets the one watch kept (replacing it).
    zk_outcome answer(const zk_step& s)
    {
        zk_outcome r{s.tag};
        switch (s.what) {
        case zk_step::op::get_children:
            if (!path) {
                r.ec = zk_errc::no_node;
                break;
            }
            for (const auto& [seq, v] : candidates) r.children.push_back(name(seq));
            if (s.watch) w = {watch::children, 0, s.tag};
            break;
        case zk_step::op::get_data: {
            const int seq = seq_of(s.path);
            auto it = candidates.find(seq);
            if (it == candidates.end()) {
                r.ec = zk_errc::no_node;
                break;
            }
            r.data = it->second;
            r.stat.czxid = seq;
            if (s.watch) w = {watch::data, seq, s.tag};
            break;
        }
        case zk_step::op::exists:
            if (path) r.exists = zklock::stat{};
            if (s.watch) w = {watch::exists, 0, s.tag};
            break;
        default: break;  // check_chroot: no chroot; wait_connected: connected
        }
        return r;
    }
};

}  // namespace

TEST_CASE("observer machine, property: it never misses the last leader, and never tells the same one twice")
{
    // Random changes to the election, random interleavings of its replies and watch events, and
    // waits at random moments. Whenever the machine has nothing left to do, what it saw is the
    // model's leader; every delivered leader differs from the one delivered before it; and once
    // quiet, a wait gets the leader unless the last wait already did.
    for (unsigned seed = 1; seed <= 300; ++seed) {
        CAPTURE(seed);
        std::mt19937 rng(seed);
        const auto roll = [&rng](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
        election_model model;
        for (int i = roll(3); i > 0; --i) model.join("v" + std::to_string(roll(3)));
        observer_driver d;
        d.start();
        std::optional<zk_step> waiting;  // the wait_watch asked for, until its watch fires
        std::optional<leader_info> last;  // what the last wait got
        int values = 0;

        const auto step_machine = [&]() -> bool {
            if (waiting && model.w.tag == waiting->tag && model.w.fired) {
                zk_outcome r{waiting->tag};
                r.event = model.w.event;
                waiting.reset();
                d.feed(std::move(r));
                return true;
            }
            if (d.pending.empty()) return false;
            auto s = d.next();
            if (s.what == zk_step::op::wait_watch) {
                waiting = s;
                return true;
            }
            d.feed(model.answer(s));
            return true;
        };
        const auto take = [&] {
            auto [ec, info] = d.m.take_news();
            REQUIRE(!ec);
            if (last) CHECK_FALSE((last->node == info.node && last->value == info.value));
            last = info;
        };

        for (int i = 0; i < 60; ++i) {
            switch (roll(8)) {
            case 0: model.join("v" + std::to_string(roll(3))); break;
            case 1:
                if (!model.candidates.empty()) model.leave(std::next(model.candidates.begin(), roll(static_cast<int>(model.candidates.size())))->first);
                break;
            case 2:
                if (auto l = model.leader()) model.set(*l, "w" + std::to_string(++values % 3));
                break;
            case 3:
                if (roll(4) == 0) model.remove_path();
                else model.create_path();
                break;
            case 4:
                if (d.m.has_news()) take();
                break;
            default: step_machine(); break;
            }
        }
        // Quiet: no more changes; the machine runs until it waits on a watch that has not fired.
        for (int i = 0; i < 1000 && step_machine(); ++i) {
        }
        REQUIRE(d.pending.empty());
        const auto l = model.leader();
        REQUIRE(d.m.seen());
        CHECK(d.m.current().node == (l ? name(*l) : std::string()));
        if (l) CHECK(d.m.current().value == model.candidates[*l]);
        const bool differs = !last || last->node != d.m.current().node || last->value != d.m.current().value;
        CHECK(d.m.has_news() == differs);
        if (d.m.has_news()) take();
        CHECK_FALSE(d.m.has_news());
    }
}

// ---- remove_node_machine ----

namespace {

const std::string lock_dir = "/l";
const std::string own = "/l/" + name(5);

zk_outcome multi_failed(error_code ec, error_code first, error_code second)
{
    zk_outcome r{detail::remove_node_machine::marked_delete, ec};
    r.results = {multi_result{first, {}, {}}, multi_result{second, {}, {}}};
    return r;
}

// Runs a removal through `outcomes` (each one answering the step it asked for last); returns the
// steps it asked for, described, and its result.
std::pair<strings, std::optional<error_code>> removal(bool mark, std::vector<zk_outcome> outcomes)
{
    detail::remove_node_machine m(own, 7, mark ? lock_dir : std::string());
    zk_steps out;
    strings asked;
    m.start(out);
    for (auto& r : outcomes) {
        for (const auto& st : out.take()) asked.push_back(describe(st));
        m.resume(out, std::move(r));
    }
    for (const auto& st : out.take()) asked.push_back(describe(st));
    if (!m.done()) return {asked, std::nullopt};
    return {asked, std::get<0>(m.take_result())};
}

}  // namespace

TEST_CASE("remove_node machine: the marked delete is one transaction, the plain one a delete")
{
    using m_t = detail::remove_node_machine;
    {
        m_t m(own, 7, lock_dir);
        zk_steps out;
        m.start(out);
        REQUIRE(out.list().size() == 1);
        const auto& st = out.list()[0];
        CHECK(describe(st) == "multi");
        REQUIRE(st.ops.size() == 2);
        CHECK(st.ops[0].path == lock_dir);
        CHECK(st.ops[0].data == detail::handoff_mark(name(5)));
        CHECK(st.ops[1].path == own);
    }
    auto [asked, ec] = removal(false, {outcome(m_t::plain_delete)});
    CHECK(asked == strings{"remove " + own});
    REQUIRE(ec);
    CHECK(!*ec);
}

TEST_CASE("remove_node machine: every outcome of the delete and of the transaction")
{
    using m_t = detail::remove_node_machine;
    // Gone is gone: deleted, already gone, or gone with its session.
    for (error_code gone : {error_code{}, error_code(zk_errc::no_node), error_code(zk_errc::session_expired),
                            error_code(errc::session_expired), error_code(errc::session_closed)}) {
        CAPTURE(gone.message());
        auto [asked, ec] = removal(false, {outcome(m_t::plain_delete, gone)});
        REQUIRE(ec);
        CHECK(!*ec);
    }
    // Cut off: again once connected within the node's session; that session over: the node too.
    for (error_code cut : {error_code(zk_errc::connection_loss), error_code(zk_errc::operation_timeout), error_code(errc::not_connected)}) {
        CAPTURE(cut.message());
        auto [asked, ec] = removal(false, {outcome(m_t::plain_delete, cut), outcome(m_t::reconnect), outcome(m_t::plain_delete)});
        CHECK(asked == strings{"remove " + own, "wait_connected", "remove " + own});
        REQUIRE(ec);
        CHECK(!*ec);
        auto [asked2, ec2] = removal(false, {outcome(m_t::plain_delete, cut), outcome(m_t::reconnect, errc::session_expired)});
        CHECK(asked2 == strings{"remove " + own, "wait_connected"});
        REQUIRE(ec2);
        CHECK(!*ec2);
        auto [asked3, ec3] = removal(false, {outcome(m_t::plain_delete, cut)});
        CHECK_FALSE(ec3);  // still waiting for the connection
    }
    {
        detail::remove_node_machine m(own, 7, {});
        zk_steps out;
        m.start(out);
        out.take();
        m.resume(out, outcome(m_t::plain_delete, zk_errc::connection_loss));
        REQUIRE(out.list().size() == 1);
        CHECK(out.list()[0].generation == 7);  // the node's session, not any
    }
    // Refused: the error, and nothing more.
    auto [asked, ec] = removal(false, {outcome(m_t::plain_delete, zk_errc::no_auth)});
    CHECK(asked == strings{"remove " + own});
    REQUIRE(ec);
    CHECK(*ec == zk_errc::no_auth);

    // The transaction: a refused mark becomes the plain delete; a node gone already is released;
    // a lost connection sends the transaction again.
    auto [a1, e1] = removal(true, {multi_failed(zk_errc::no_auth, zk_errc::no_auth, {}), outcome(m_t::plain_delete)});
    CHECK(a1 == strings{"multi", "remove " + own});
    REQUIRE(e1);
    CHECK(!*e1);
    auto [a2, e2] = removal(true, {multi_failed(zk_errc::no_node, zk_errc::runtime_inconsistency, zk_errc::no_node)});
    CHECK(a2 == strings{"multi"});
    REQUIRE(e2);
    CHECK(!*e2);
    auto [a3, e3] = removal(true, {outcome(m_t::marked_delete, zk_errc::connection_loss), outcome(m_t::reconnect),
                                   outcome(m_t::marked_delete)});
    CHECK(a3 == strings{"multi", "wait_connected", "multi"});
    REQUIRE(e3);
    CHECK(!*e3);
    auto [a4, e4] = removal(true, {outcome(m_t::marked_delete, zk_errc::session_expired)});
    REQUIRE(e4);
    CHECK(!*e4);
}

TEST_CASE("downgrade machine: the mark written on the version read, read again on a race")
{
    using m_t = detail::downgrade_machine;
    m_t m(own);
    zk_steps out;
    m.start(out);
    CHECK(describe(out.take()) == strings{"get_data " + own});
    auto r = data(m_t::read, "host:1");
    r.stat.version = 3;
    m.resume(out, std::move(r));
    REQUIRE(out.list().size() == 1);
    CHECK(describe(out.list()[0]) == "set_data " + own);
    CHECK(out.list()[0].data == detail::downgrade_mark("host:1"));
    CHECK(out.list()[0].version == 3);
    out.take();
    m.resume(out, outcome(m_t::write, zk_errc::bad_version));  // the data changed in between
    CHECK(describe(out.take()) == strings{"get_data " + own});
    m.resume(out, data(m_t::read, "host:2"));
    REQUIRE(out.list().size() == 1);
    CHECK(out.list()[0].data == detail::downgrade_mark("host:2"));
    out.take();
    m.resume(out, outcome(m_t::write));
    REQUIRE(m.done());
    CHECK(!std::get<0>(m.take_result()));
}

TEST_CASE("downgrade machine: a revocation request read is never overwritten")
{
    using m_t = detail::downgrade_machine;
    for (bool first : {true, false}) {
        CAPTURE(first);
        m_t m(own);
        zk_steps out;
        m.start(out);
        out.take();
        if (!first) {
            m.resume(out, data(m_t::read, "host:1"));
            out.take();
            m.resume(out, outcome(m_t::write, zk_errc::bad_version));  // the request came in between
            CHECK(describe(out.take()) == strings{"get_data " + own});
        }
        m.resume(out, data(m_t::read, std::string(revocation_request)));
        CHECK(out.empty());  // the holder's revocation watch still reads the request
        REQUIRE(m.done());
        CHECK(!std::get<0>(m.take_result()));
    }
}

TEST_CASE("downgrade machine: already marked, errors, and a race that does not end")
{
    using m_t = detail::downgrade_machine;
    {
        m_t m(own);
        zk_steps out;
        m.start(out);
        out.take();
        m.resume(out, data(m_t::read, detail::downgrade_mark("host:1")));
        CHECK(out.empty());
        REQUIRE(m.done());
        CHECK(!std::get<0>(m.take_result()));
    }
    for (error_code e : {error_code(zk_errc::no_node), error_code(zk_errc::connection_loss), error_code(zk_errc::no_auth)}) {
        CAPTURE(e.message());
        m_t read_fails(own), write_fails(own);
        zk_steps out;
        read_fails.start(out);
        read_fails.resume(out, outcome(m_t::read, e));
        REQUIRE(read_fails.done());
        CHECK(std::get<0>(read_fails.take_result()) == e);
        write_fails.start(out);
        write_fails.resume(out, data(m_t::read, "x"));
        write_fails.resume(out, outcome(m_t::write, e));
        REQUIRE(write_fails.done());
        CHECK(std::get<0>(write_fails.take_result()) == e);
    }
    m_t m(own);
    zk_steps out;
    m.start(out);
    int reads = 1;
    while (!m.done()) {
        out.take();
        m.resume(out, data(m_t::read, "x"));
        out.take();
        m.resume(out, outcome(m_t::write, zk_errc::bad_version));
        reads += out.empty() ? 0 : 1;
        REQUIRE(reads <= m_t::max_tries);
    }
    CHECK(reads == m_t::max_tries);
    CHECK(std::get<0>(m.take_result()) == zk_errc::bad_version);
}

// ---- lease_fsm ----

TEST_CASE("lease fsm: suspended and back, lost for each reason, released at last")
{
    detail::lease_fsm f(7);
    CHECK(f.status() == lease_status::held);
    auto c = f.session_changed(session_state::suspended, 7);
    CHECK(c.status);
    CHECK(f.status() == lease_status::suspended);
    c = f.session_changed(session_state::connecting, 7);
    CHECK_FALSE(c.status);
    c = f.session_changed(session_state::connected, 7);
    CHECK(c.status);
    CHECK(f.status() == lease_status::held);
    c = f.node_data("anything");
    CHECK_FALSE(c.revoked);
    c = f.node_data(revocation_request);
    CHECK(c.revoked);
    CHECK(f.revoke_requested());
    CHECK_FALSE(f.node_data(revocation_request).revoked);  // once
    c = f.session_changed(session_state::connected, 8);     // another session: ours expired
    CHECK(c.lost);
    CHECK(c.status);
    CHECK(f.status() == lease_status::lost);
    CHECK(f.lost_reason() == errc::session_expired);
    c = f.session_changed(session_state::closed, 8);
    CHECK_FALSE((c.status || c.lost));
    CHECK(f.lost_reason() == errc::session_expired);
    c = f.release();
    CHECK(c.released);
    CHECK(f.status() == lease_status::released);
    CHECK_FALSE(f.release().released);

    for (auto [st, reason] : {std::pair{session_state::expired, error_code(errc::session_expired)},
                              std::pair{session_state::closed, error_code(errc::session_closed)}}) {
        detail::lease_fsm g(1);
        CHECK(g.session_changed(st, 1).lost);
        CHECK(g.lost_reason() == reason);
    }
    detail::lease_fsm h(1), local(1);
    local.make_local();
    CHECK(h.presumed_expired().remove_plainly);
    CHECK(h.lost_reason() == errc::session_expired);
    auto lc = local.presumed_expired();
    CHECK(lc.lost);
    CHECK_FALSE(lc.remove_plainly);  // the cohort's node, not this holder's to delete
    detail::lease_fsm l2(1);
    l2.make_local();
    CHECK_FALSE(l2.node_data(revocation_request).revoked);  // it hears of one from the cohort
    CHECK(l2.revoked().revoked);
}

TEST_CASE("lease fsm, property: its status changes as the session and the node say, and never after the end")
{
    // Random events (session states of the node's session and of another, presumed expiry, the
    // node gone, its data, the cohort's revocation, the release), for local and plain holders.
    for (unsigned seed = 1; seed <= 500; ++seed) {
        CAPTURE(seed);
        std::mt19937 rng(seed);
        const auto roll = [&rng](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
        const bool local = roll(3) == 0;
        detail::lease_fsm f(5);
        if (local) f.make_local();
        int revocations = 0;
        error_code reason_at_loss;
        for (int i = 0; i < 40; ++i) {
            const auto before = f.status();
            const bool held_before = f.holds();
            const bool revoke_before = f.revoke_requested();
            detail::lease_fsm::change c;
            std::optional<lease_status> expect;  // the status the event must lead to, where it decides one
            const int e = roll(9);
            switch (e) {
            case 0:
            case 1: {
                const session_state states[] = {session_state::connecting, session_state::connected, session_state::suspended,
                                                session_state::expired, session_state::closed};
                const auto st = states[roll(5)];
                const std::uint64_t gen = roll(4) == 0 ? 6 : 5;
                c = f.session_changed(st, gen);
                if (held_before) {
                    if (st == session_state::suspended) expect = lease_status::suspended;
                    if (st == session_state::connected) expect = gen == 5 ? lease_status::held : lease_status::lost;
                    if (st == session_state::expired || st == session_state::closed) expect = lease_status::lost;
                    if (st == session_state::closed) CHECK((f.lost_reason() == errc::session_closed));
                    if (st == session_state::expired || (st == session_state::connected && gen != 5))
                        CHECK(f.lost_reason() == errc::session_expired);
                }
                break;
            }
            case 2:
                c = f.presumed_expired();
                CHECK(c.remove_plainly == (held_before && !local));
                if (held_before) expect = lease_status::lost;
                break;
            case 3:
                c = f.lose(errc::lock_lost);
                if (held_before) expect = lease_status::lost;
                break;
            case 4:
            case 5: c = f.node_data(roll(2) ? std::string_view(revocation_request) : std::string_view("data")); break;
            case 6: c = f.revoked(); break;
            case 7:
                c = f.release();
                expect = lease_status::released;
                CHECK(c.released == (before != lease_status::released));
                break;
            default: break;
            }
            if (e != 2) CHECK_FALSE(c.remove_plainly);
            if (expect) CHECK(f.status() == *expect);
            // A change is reported exactly when there is one.
            CHECK(c.status == (f.status() != before));
            CHECK(c.lost == (held_before && f.status() == lease_status::lost));
            CHECK(c.released == (before != lease_status::released && f.status() == lease_status::released));
            // Released is the end; lost leads only to released, keeping its reason.
            if (before == lease_status::released) CHECK(f.status() == lease_status::released);
            if (before == lease_status::lost) {
                CHECK((f.status() == lease_status::lost || f.status() == lease_status::released));
                CHECK(f.lost_reason() == reason_at_loss);
            }
            if (c.lost) {
                CHECK(f.lost_reason());
                reason_at_loss = f.lost_reason();
            }
            CHECK(static_cast<bool>(f.lost_reason()) == static_cast<bool>(reason_at_loss));
            // A revocation request is told once; a local holder hears it only from the cohort,
            // and only while it holds.
            if (c.revoked) {
                ++revocations;
                CHECK_FALSE(revoke_before);
                if (local) CHECK((e == 6 && held_before));
                else CHECK((e == 4 || e == 5 || (e == 6 && held_before)));
            }
            CHECK(f.revoke_requested() == (revocations > 0));
            CHECK(revocations <= 1);
        }
    }
}

// ---- multi_lock_fsm ----

namespace {

using mk = detail::multi_lock_fsm::kind;
using steady = std::chrono::steady_clock;

const std::vector<lock_spec> three{lock_spec::exclusive("/c"), lock_spec::shared("/a"), lock_spec::semaphore("/b", 2)};

}  // namespace

TEST_CASE("multi_lock fsm: canonical order under one deadline, the clock an input")
{
    const auto t0 = steady::time_point{} + std::chrono::hours(1);
    detail::multi_lock_fsm f(three, std::chrono::seconds(10), t0);
    CHECK(f.order() == std::vector<std::size_t>{1, 2, 0});
    auto a = f.start(t0);
    REQUIRE(a.what == mk::acquire);
    CHECK(a.index == 1);
    CHECK(a.time_left == std::chrono::seconds(10));
    a = f.acquired({}, {}, t0 + std::chrono::seconds(4));
    REQUIRE(a.what == mk::acquire);
    CHECK(a.index == 2);
    CHECK(a.time_left == std::chrono::seconds(6));
    a = f.acquired({}, {}, t0 + std::chrono::seconds(9));
    CHECK(a.index == 0);
    CHECK(a.time_left == std::chrono::seconds(1));
    a = f.acquired({}, {}, t0 + std::chrono::seconds(12));  // the last one came in late: it holds, all do
    CHECK(a.what == mk::complete);
    CHECK(!a.ec);
    CHECK(f.done());

    detail::multi_lock_fsm none(three, std::nullopt, t0), once(three, std::chrono::seconds(0), t0);
    CHECK_FALSE(none.start(t0).time_left);
    CHECK(once.try_only());
    CHECK_FALSE(once.start(t0).time_left);
}

TEST_CASE("multi_lock fsm: refused sets, the deadline passing between two locks, a failure")
{
    const auto t0 = steady::time_point{} + std::chrono::hours(1);
    for (const auto& bad : {std::vector<lock_spec>{}, std::vector<lock_spec>{lock_spec::exclusive("/a"), lock_spec::shared("/a")}}) {
        detail::multi_lock_fsm f(bad, std::chrono::seconds(1), t0);
        auto a = f.start(t0);
        CHECK(a.what == mk::complete);
        CHECK(a.ec == errc::invalid_argument);
    }
    {
        detail::multi_lock_fsm f(three, std::chrono::seconds(1), t0);
        f.start(t0);
        auto a = f.acquired({}, {}, t0 + std::chrono::seconds(1));  // none left for the next one
        REQUIRE(a.what == mk::release);
        a = f.releasing(1);
        REQUIRE(a.what == mk::arm_grace);
        a = f.released();
        CHECK(a.what == mk::complete);
        CHECK(a.ec == errc::timeout);
        CHECK(a.backgrounded == 0);
    }
    {
        detail::multi_lock_fsm f(three, std::nullopt, t0);
        f.start(t0);
        f.acquired({}, {}, t0);
        auto a = f.acquired(errc::would_block, {}, t0);
        REQUIRE(a.what == mk::release);
        a = f.releasing(1);
        REQUIRE(a.what == mk::arm_grace);
        a = f.grace_passed();  // the release not confirmed yet: it goes on in the background
        CHECK(a.what == mk::complete);
        CHECK(a.ec == errc::would_block);
        CHECK(a.backgrounded == 1);
        CHECK(f.released().what == mk::none);
        CHECK(f.grace_passed().what == mk::none);
    }
    {
        detail::multi_lock_fsm f(three, std::nullopt, t0);
        f.start(t0);
        auto a = f.acquired(zk_errc::no_auth, {}, t0);  // the first fails: nothing to release
        REQUIRE(a.what == mk::release);
        a = f.releasing(0);
        CHECK(a.what == mk::complete);
        CHECK(a.ec == zk_errc::no_auth);
    }
    {
        // The second was granted, but the first was lost meanwhile (its session presumed
        // expired): the set fails with that loss, and both are released.
        detail::multi_lock_fsm f(three, std::nullopt, t0);
        f.start(t0);
        f.acquired({}, {}, t0);
        auto a = f.acquired({}, errc::session_expired, t0);
        REQUIRE(a.what == mk::release);
        a = f.releasing(2);
        REQUIRE(a.what == mk::arm_grace);
        CHECK(f.released().what == mk::none);
        a = f.released();
        CHECK(a.what == mk::complete);
        CHECK(a.ec == errc::session_expired);
    }
}

TEST_CASE("multi_lock fsm: a cancel in every state")
{
    const auto t0 = steady::time_point{} + std::chrono::hours(1);
    const auto aborted = error_code(asio::error::operation_aborted);
    SUBCASE("while the first acquires: it is cancelled, nothing to release")
    {
        detail::multi_lock_fsm f(three, std::nullopt, t0);
        f.start(t0);
        CHECK(f.cancel().what == mk::cancel_acquire);
        CHECK(f.cancel().what == mk::none);  // once
        auto a = f.acquired(aborted, {}, t0);
        REQUIRE(a.what == mk::release);
        a = f.releasing(0);
        CHECK(a.what == mk::complete);
        CHECK(a.ec == aborted);
    }
    SUBCASE("while the second acquires: it is cancelled, the first released")
    {
        detail::multi_lock_fsm f(three, std::nullopt, t0);
        f.start(t0);
        f.acquired({}, {}, t0);
        CHECK(f.cancel().what == mk::cancel_acquire);
        REQUIRE(f.acquired(aborted, {}, t0).what == mk::release);
        REQUIRE(f.releasing(1).what == mk::arm_grace);
        auto a = f.released();
        CHECK(a.what == mk::complete);
        CHECK(a.ec == aborted);
    }
    SUBCASE("the acquire completed before the cancel reached it: released all the same")
    {
        detail::multi_lock_fsm f(three, std::nullopt, t0);
        f.start(t0);
        f.cancel();
        REQUIRE(f.acquired({}, {}, t0).what == mk::release);
        REQUIRE(f.releasing(1).what == mk::arm_grace);
        CHECK(f.released().ec == aborted);
    }
    SUBCASE("while releasing after a failure, and after the end: nothing more")
    {
        detail::multi_lock_fsm f(three, std::nullopt, t0);
        f.start(t0);
        f.acquired({}, {}, t0);
        f.acquired(errc::timeout, {}, t0);
        f.releasing(1);
        CHECK(f.cancel().what == mk::none);
        auto a = f.released();
        CHECK(a.ec == errc::timeout);
        CHECK(f.cancel().what == mk::none);
    }
}
