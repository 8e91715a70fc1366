// The model (zk_model) against a real ZooKeeper server: random sequences of the requests zklock
// makes, from three sessions, on both, and every reply, stat and watch event compared. A
// simulation over a model that disagrees with ZooKeeper would prove nothing.
//
// Compared: error codes (of the request, and of each op of a multi), created paths (sequence
// numbers included), data, version, cversion, aversion, dataLength, numChildren, ephemeralOwner
// (as the session's index), the zxids by their order (czxid, mzxid, pzxid: a real zxid and the
// model's are paired when first seen, and every later pair must keep the order), children as
// sets (the real server lists a hash set), and the watch events each session received after each
// step, as sets (type and path). Not compared: ctime and mtime, the order of two events of one
// step, what a follower would answer (one server here: the replication path is the model's own,
// tested in test_model.cpp).
//
// Sessions end by close, and (in the expiry case) by the server's expiry: the session's
// connection goes through a fault_proxy that holds its traffic until the server has expired it;
// the model's leader expires it on its clock (zk_model::expire_due).
#include "splitmix.hpp"
#include "zk_model.hpp"

#include "support/fault_proxy.hpp"
#include "support/zk_server.hpp"

#include <zklock/session.hpp>

#include <boost/asio/io_context.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace zklock;
using namespace zklock::sim;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

std::uint64_t env_u64(const char* name, std::uint64_t fallback)
{
    const char* v = std::getenv(name);
    return v && *v ? std::strtoull(v, nullptr, 0) : fallback;
}

using event_set = std::set<std::pair<int, std::string>>;

// What one request got, in the terms both sides share.
struct outcome {
    error_code ec;
    std::string path;
    std::string data;
    std::optional<zklock::stat> st;
    std::set<std::string> children;
    std::vector<multi_result> results;
};

/// What a differential run adds to the plain one.
struct extras {
    /// If not 0, two more parents are made first by ZooKeeper's own client on this port, with an
    /// ACL that lets everyone do all but write their data ("no-write") or all but create children
    /// ("no-create"); the model is told the same (deny_write, deny_create).
    std::uint16_t acl_cli_port = 0;
    /// If not 0: the server's port, each session's connection goes through its own fault_proxy
    /// to it, and sessions time out after `expiry_timeout` (so that expiry_step() is quick).
    std::uint16_t expiry_port = 0;
    std::chrono::milliseconds expiry_timeout{2000};
    /// The server's tickTime (server_options::tick_time): it expires a session within its
    /// timeout plus one tick.
    std::chrono::milliseconds tick{2000};
};

class differential {
public:
    differential(std::uint64_t seed, const std::string& connect, extras x = {})
        : rng_{seed}, connect_(connect), x_(x)
    {
        if (x_.expiry_port != 0) {
            timeout_ = x_.expiry_timeout;
            for (auto& p : proxy_) p = std::make_unique<zklock::test::fault_proxy>(x_.expiry_port);
        }
        base_ = "/diff-" + std::to_string(seed % 1000000007);
        for (int i = 0; i < 3; ++i) open(i);
        // The base path, on both.
        multi_op op = multi_op::create(base_, "", create_mode::persistent);
        run_real(0, [&](auto done) { s_[0]->async_create(base_, "", create_mode::persistent, done_create(done)); });
        model_request(0, to_request(op));
        if (const auto cli_port = x_.acl_cli_port; cli_port != 0) {
            for (const auto& [name, acl] : {std::pair{"/no-write", "world:anyone:crda"}, std::pair{"/no-create", "world:anyone:rwda"}}) {
                const auto path = base_ + name;
                const auto out = zklock::test::zookeeper_cli(cli_port, {"create", path, "x", acl});
                REQUIRE_MESSAGE(out.find("Created " + path) != std::string::npos, out);
                model_.seed_persistent(path, "x");
                if (std::string_view(name) == "/no-write") model_.deny_write(path);
                else model_.deny_create(path);
                parents_.push_back(name);
            }
        }
        settle();
    }

    /// One random step on both sides; a mismatch fails the test case with the step's description.
    void step(int index)
    {
        const int i = static_cast<int>(rng_.below(3));
        std::ostringstream what;
        what << "step " << index << ", session " << i << ": ";
        const auto pick = rng_.below(100);
        outcome real, mod;
        if (pick < 4) {
            what << "close and reopen";
            close(i);
            reopen(i, what.str());
            return;
        }
        request r;
        if (pick < 34) {
            r.type = request::kind::create;
            r.path = random_parent() + "/" + (rng_.below(2) ? "n" : "s-") + std::to_string(rng_.below(3));
            const create_mode modes[] = {create_mode::persistent, create_mode::ephemeral, create_mode::persistent_sequential,
                                         create_mode::ephemeral_sequential, create_mode::container};
            r.mode = modes[rng_.below(5)];
            r.data = rng_.below(2) ? "" : "d" + std::to_string(rng_.below(100));
        } else if (pick < 48) {
            r.type = request::kind::remove;
            r.path = random_known();
            r.version = random_version();
        } else if (pick < 58) {
            r.type = request::kind::set_data;
            r.path = random_known();
            r.data = "v" + std::to_string(rng_.below(1000));
            r.version = random_version();
        } else if (pick < 90) {
            const request::kind reads[] = {request::kind::exists, request::kind::get_data, request::kind::get_children};
            r.type = reads[rng_.below(3)];
            r.path = rng_.below(4) == 0 ? random_parent() + "/absent" : random_known();
            r.watch = rng_.below(2) == 0;
        } else {
            r.type = request::kind::multi;
            const std::size_t n = 1 + rng_.below(3);
            for (std::size_t k = 0; k < n; ++k) {
                const auto t = rng_.below(4);
                if (t == 0) r.ops.push_back(multi_op::create(random_parent() + "/m" + std::to_string(rng_.below(3)), "m",
                                                            rng_.below(2) ? create_mode::persistent : create_mode::ephemeral_sequential));
                else if (t == 1) r.ops.push_back(multi_op::remove(random_known(), random_version()));
                else if (t == 2) r.ops.push_back(multi_op::set_data(random_known(), "mv", random_version()));
                else r.ops.push_back(multi_op::check(random_known(), random_version()));
            }
        }
        what << describe(r);
        real = real_request(i, r);
        mod = model_request(i, r);
        if (trace_) std::cout << what.str() << " -> " << real.ec.message() << " " << real.path << std::endl;
        settle();
        compare(what.str(), i, real, mod);
        check_events(what.str());
        if (!real.ec && r.type == request::kind::create) known_.insert(real.path);
        if (!real.ec && r.type == request::kind::multi)
            for (const auto& x : real.results)
                if (!x.path.empty()) known_.insert(x.path);
    }

    /// A step in which the server expires a random session (the run must have extras::expiry_port),
    /// which is then opened again.
    void expiry_step(int index)
    {
        const int i = static_cast<int>(rng_.below(3));
        const auto what = "step " + std::to_string(index) + ", session " + std::to_string(i) + ": expired by the server, then reopened";
        expire(i, what);
        reopen(i, what);
    }

    void finish()
    {
        for (int i = 0; i < 3; ++i) close(i);
    }

private:
    // ---- sessions ----
    void open(int i)
    {
        session_config cfg;
        cfg.servers = proxy_[i] ? proxy_[i]->connect_string() : connect_;
        cfg.session_timeout = timeout_;
        cfg.reconnect_on_expiry = false;  // expiry_step() reopens it, on both sides
        s_[i] = std::make_unique<session>(io_, cfg);
        bool done = false;
        error_code ec;
        s_[i]->async_connect([&](error_code e) {
            ec = e;
            done = true;
        });
        wait(done);
        REQUIRE_MESSAGE(!ec, "connect: " << ec.message());
        real_owner_[s_[i]->session_id()] = i;
        REQUIRE_MESSAGE(s_[i]->negotiated_timeout() == timeout_, "the server negotiated another session timeout");
        msid_[i] = model_.open_session(0, timeout_, now_);
        model_owner_[msid_[i]] = i;
    }
    // Session i opened again after it ended: the events its end caused must agree.
    void reopen(int i, const std::string& what)
    {
        open(i);
        settle();
        drain_model();
        check_events(what);
    }
    void close(int i)
    {
        bool done = false;
        s_[i]->async_close([&](error_code) { done = true; });
        wait(done);
        request r;
        r.type = request::kind::close;
        model_.submit(msid_[i], ++tag_, r, now_);
        while (model_.can_step_session(msid_[i])) model_.step_session(msid_[i], now_);
        model_.outbox(msid_[i]).clear();
    }

    // The server expires session i: its traffic is held until the server has (its timeout and a
    // tick after the last it heard), then the client hears it expired. The model's leader expires
    // it on its clock, the other sessions touched meanwhile.
    void expire(int i, const std::string& what)
    {
        proxy_[i]->blackhole();
        const auto until = std::chrono::steady_clock::now() + timeout_ + 3 * x_.tick;
        while (std::chrono::steady_clock::now() < until) io_.run_one_for(50ms);
        proxy_[i]->pass();
        wait_until(
            [&] {
                REQUIRE_MESSAGE(s_[i]->state() != session_state::closed, what << ": the session closed");
                return s_[i]->state() == session_state::expired;
            },
            what + ": the client was not told of the expiry in 20 s");
        bool done = false;
        s_[i]->async_close([&](error_code) { done = true; });
        wait(done);

        model_.disconnect(msid_[i]);
        now_ += timeout_ + 1ms;
        for (int k = 0; k < 3; ++k)
            if (k != i) model_.touch(msid_[k], now_);
        const auto expired = model_.expire_due(now_);
        REQUIRE_MESSAGE(expired == std::vector<session_id>{msid_[i]}, what << ": the model expired " << expired.size() << " sessions");
        model_.outbox(msid_[i]).clear();
    }

    void wait(bool& done)
    {
        wait_until([&] { return done; }, "no answer from the real server in 20 s");
    }
    template <class Done> void wait_until(Done done, const std::string& timed_out)
    {
        const auto until = std::chrono::steady_clock::now() + 20s;
        while (!done()) {
            io_.run_one_for(100ms);
            REQUIRE_MESSAGE(std::chrono::steady_clock::now() < until, timed_out);
        }
    }
    template <class Start> void run_real(int, Start start)
    {
        bool done = false;
        start([&done] { done = true; });
        wait(done);
    }
    template <class Done> auto done_create(Done done)
    {
        return [done](error_code, std::string, zklock::stat) { done(); };
    }

    // Every session makes one round trip: the events the last step triggered have arrived.
    void settle()
    {
        for (int i = 0; i < 3; ++i) {
            bool done = false;
            s_[i]->async_exists("/", [&done](error_code, std::optional<zklock::stat>) { done = true; });
            wait(done);
        }
        io_.poll();
    }

    // ---- the real side ----
    outcome real_request(int i, const request& r)
    {
        outcome out;
        bool done = false;
        auto& s = *s_[i];
        auto keep = [this, i](zklock::watch w) {
            if (!w.valid()) return;
            w.async_wait([this, i](error_code ec, watch_event e) {
                if (!ec) real_events_[i].insert({static_cast<int>(to_event(e.type)), e.path});
            });
            watches_.push_back(std::move(w));
        };
        switch (r.type) {
        case request::kind::create:
            s.async_create(r.path, r.data, r.mode, [&](error_code ec, std::string p, zklock::stat st) {
                out.ec = ec;
                out.path = p;
                if (!ec) out.st = st;
                done = true;
            });
            break;
        case request::kind::remove:
            s.async_remove(r.path, r.version, [&](error_code ec) {
                out.ec = ec;
                done = true;
            });
            break;
        case request::kind::set_data:
            s.async_set_data(r.path, r.data, r.version, [&](error_code ec, zklock::stat st) {
                out.ec = ec;
                if (!ec) out.st = st;
                done = true;
            });
            break;
        case request::kind::exists:
            if (r.watch)
                s.async_watch_exists(r.path, [&](error_code ec, std::optional<zklock::stat> st, zklock::watch w) {
                    out.ec = ec;
                    out.st = st;
                    keep(std::move(w));
                    done = true;
                });
            else
                s.async_exists(r.path, [&](error_code ec, std::optional<zklock::stat> st) {
                    out.ec = ec;
                    out.st = st;
                    done = true;
                });
            break;
        case request::kind::get_data:
            if (r.watch)
                s.async_watch_data(r.path, [&](error_code ec, std::string d, zklock::stat st, zklock::watch w) {
                    out.ec = ec;
                    out.data = d;
                    if (!ec) out.st = st;
                    keep(std::move(w));
                    done = true;
                });
            else
                s.async_get_data(r.path, [&](error_code ec, std::string d, zklock::stat st) {
                    out.ec = ec;
                    out.data = d;
                    if (!ec) out.st = st;
                    done = true;
                });
            break;
        case request::kind::get_children:
            if (r.watch)
                s.async_watch_children(r.path, [&](error_code ec, std::vector<std::string> c, zklock::watch w) {
                    out.ec = ec;
                    out.children.insert(c.begin(), c.end());
                    keep(std::move(w));
                    done = true;
                });
            else
                s.async_get_children(r.path, [&](error_code ec, std::vector<std::string> c) {
                    out.ec = ec;
                    out.children.insert(c.begin(), c.end());
                    done = true;
                });
            break;
        case request::kind::multi:
            s.async_multi(r.ops, [&](error_code ec, std::vector<multi_result> res) {
                out.ec = ec;
                out.results = std::move(res);
                done = true;
            });
            break;
        default: FAIL("not a request of the differential test");
        }
        wait(done);
        return out;
    }

    // ---- the model's side ----
    request to_request(const multi_op& op)
    {
        request r;
        r.type = request::kind::create;
        r.path = op.path;
        r.data = op.data;
        r.mode = op.mode;
        return r;
    }
    outcome model_request(int i, const request& r)
    {
        const auto sid = msid_[i];
        const auto tag = ++tag_;
        model_.submit(sid, tag, r, now_);
        while (model_.can_step_session(sid)) model_.step_session(sid, now_);
        outcome out;
        bool answered = false;
        drain_model([&](int k, const reply& rep) {
            if (k != i || rep.tag != tag) return;
            answered = true;
            out.ec = rep.ec;
            out.path = rep.path;
            out.data = rep.data;
            out.st = rep.stat;
            out.children.insert(rep.children.begin(), rep.children.end());
            out.results = rep.results;
        });
        REQUIRE_MESSAGE(answered, "the model did not answer");
        // As the bridge reports them: an exists of a missing node is an answer, not an error.
        if (r.type == request::kind::exists && out.ec == zk_errc::no_node) out.ec = {};
        if (out.ec && r.type != request::kind::multi) out = outcome{out.ec};
        return out;
    }

    // Takes every message the model queued: events into model_events_, replies to `on_reply`.
    void drain_model(const std::function<void(int, const reply&)>& on_reply = {})
    {
        for (int k = 0; k < 3; ++k) {
            auto& box = model_.outbox(msid_[k]);
            while (!box.empty()) {
                auto m = std::move(box.front());
                box.pop_front();
                if (m.is_event) {
                    model_events_[k].insert({static_cast<int>(m.e.type), m.e.path});
                    continue;
                }
                if (on_reply) on_reply(k, m.r);
            }
        }
    }

    static event_type to_event(watch_event_type t)
    {
        switch (t) {
        case watch_event_type::created: return event_type::created;
        case watch_event_type::deleted: return event_type::deleted;
        case watch_event_type::changed: return event_type::changed;
        case watch_event_type::child: return event_type::child;
        }
        return event_type::changed;
    }

    // ---- comparing ----
    void zxid_pair(const std::string& what, const char* field, std::int64_t real, std::int64_t mod)
    {
        if (real == 0 && mod == 0) return;
        auto it = zxids_.find(real);
        if (it != zxids_.end()) {
            CHECK_MESSAGE(it->second == mod, what << ": " << field << " " << real << " was paired with the model's " << it->second
                                                  << ", now " << mod);
            return;
        }
        auto next = zxids_.lower_bound(real);
        if (next != zxids_.end())
            CHECK_MESSAGE(mod < next->second, what << ": " << field << " out of order against the model (" << mod << " vs "
                                                   << next->second << ")");
        if (next != zxids_.begin())
            CHECK_MESSAGE(std::prev(next)->second < mod, what << ": " << field << " out of order against the model");
        zxids_.emplace(real, mod);
    }
    void compare_stat(const std::string& what, const std::optional<zklock::stat>& a, const std::optional<zklock::stat>& b)
    {
        REQUIRE_MESSAGE(a.has_value() == b.has_value(), what << ": stat on one side only");
        if (!a) return;
        CHECK_MESSAGE(a->version == b->version, what << ": version " << a->version << " vs the model's " << b->version);
        CHECK_MESSAGE(a->cversion == b->cversion, what << ": cversion " << a->cversion << " vs the model's " << b->cversion);
        CHECK_MESSAGE(a->aversion == b->aversion, what << ": aversion");
        CHECK_MESSAGE(a->data_length == b->data_length, what << ": dataLength " << a->data_length << " vs " << b->data_length);
        CHECK_MESSAGE(a->num_children == b->num_children, what << ": numChildren " << a->num_children << " vs " << b->num_children);
        const auto owner = [](const auto& table, std::int64_t id) -> std::int64_t {
            if (id == 0) return -1;
            auto it = table.find(id);
            return it == table.end() ? (id < 0 ? -2 : -3) : it->second;
        };
        CHECK_MESSAGE(owner(real_owner_, a->ephemeral_owner) == owner(model_owner_, b->ephemeral_owner),
                      what << ": ephemeralOwner " << a->ephemeral_owner << " vs the model's " << b->ephemeral_owner);
        zxid_pair(what, "czxid", a->czxid, b->czxid);
        zxid_pair(what, "mzxid", a->mzxid, b->mzxid);
        zxid_pair(what, "pzxid", a->pzxid, b->pzxid);
    }
    void compare(const std::string& what, int, const outcome& real, const outcome& mod)
    {
        CHECK_MESSAGE(real.ec == mod.ec, what << ": '" << real.ec.message() << "' vs the model's '" << mod.ec.message() << "'");
        CHECK_MESSAGE(real.path == mod.path, what << ": path " << real.path << " vs the model's " << mod.path);
        CHECK_MESSAGE(real.data == mod.data, what << ": data");
        compare_stat(what, real.st, mod.st);
        CHECK_MESSAGE(real.children == mod.children, what << ": children differ");
        REQUIRE_MESSAGE(real.results.size() == mod.results.size(), what << ": " << real.results.size() << " results vs "
                                                                         << mod.results.size());
        for (std::size_t k = 0; k < real.results.size(); ++k) {
            const auto& a = real.results[k];
            const auto& b = mod.results[k];
            CHECK_MESSAGE(a.ec == b.ec, what << ": op " << k << ": '" << a.ec.message() << "' vs the model's '" << b.ec.message() << "'");
            CHECK_MESSAGE(a.path == b.path, what << ": op " << k << ": path " << a.path << " vs " << b.path);
            if (!a.ec && !b.ec && a.stat.version != 0) compare_stat(what + " (op " + std::to_string(k) + ")", a.stat, b.stat);
        }
    }
    void check_events(const std::string& what)
    {
        for (int k = 0; k < 3; ++k) {
            CHECK_MESSAGE(real_events_[k] == model_events_[k], what << ": session " << k << " saw " << show(real_events_[k])
                                                                   << ", the model's " << show(model_events_[k]));
            real_events_[k].clear();
            model_events_[k].clear();
        }
    }
    static std::string show(const event_set& s)
    {
        std::string out = "{";
        for (const auto& [t, p] : s) out += " " + std::to_string(t) + ":" + p;
        return out + " }";
    }
    static std::string describe(const request& r)
    {
        static const char* const names[] = {"create", "remove", "exists", "get_data", "set_data", "get_children", "multi", "sync", "close"};
        std::string s = std::string(names[static_cast<int>(r.type)]) + " " + r.path;
        if (r.type == request::kind::create) s += " mode " + std::to_string(static_cast<int>(r.mode));
        if (r.version != -1) s += " version " + std::to_string(r.version);
        if (r.watch) s += " (watch)";
        for (const auto& op : r.ops) s += " [" + std::to_string(static_cast<int>(op.type)) + " " + op.path + " v" + std::to_string(op.version) + "]";
        return s;
    }

    // ---- random choices ----
    std::string random_parent() { return base_ + parents_[rng_.below(parents_.size())]; }
    std::string random_known()
    {
        if (known_.empty() || rng_.below(5) == 0) return random_parent();
        auto it = known_.begin();
        std::advance(it, static_cast<std::ptrdiff_t>(rng_.below(known_.size())));
        return *it;
    }
    std::int32_t random_version()
    {
        const auto v = rng_.below(4);
        return v == 0 ? -1 : static_cast<std::int32_t>(v - 1);
    }

    splitmix rng_;
    std::string connect_;
    extras x_;
    std::chrono::milliseconds timeout_{10000};
    std::unique_ptr<zklock::test::fault_proxy> proxy_[3];
    bool trace_ = std::getenv("ZKLOCK_SIM_DIFF_TRACE") != nullptr;
    std::string base_;
    asio::io_context io_;
    std::unique_ptr<session> s_[3];
    zk_model model_{1};
    sim_clock::time_point now_{};
    session_id msid_[3]{};
    std::uint64_t tag_ = 0;
    std::map<std::int64_t, int> real_owner_, model_owner_;
    std::map<std::int64_t, std::int64_t> zxids_;
    event_set real_events_[3], model_events_[3];
    std::vector<zklock::watch> watches_;
    std::set<std::string> known_;
    std::vector<std::string> parents_{"", "/p", "/p/q", "/c"};
};

}  // namespace

TEST_CASE("sim model: random requests from three sessions agree with a real server")
{
    zklock::test::zk_server server;
    const std::uint64_t runs = env_u64("ZKLOCK_SIM_DIFF_RUNS", 8);
    const std::uint64_t steps = env_u64("ZKLOCK_SIM_DIFF_STEPS", 200);
    const std::uint64_t base = env_u64("ZKLOCK_SIM_DIFF_SEED", std::random_device{}());
    std::cout << "sim model: " << runs << " runs of " << steps << " steps from seed " << base
              << " (ZKLOCK_SIM_DIFF_SEED=" << base << ")" << std::endl;
    for (std::uint64_t run = 0; run < runs; ++run) {
        CAPTURE(base + run);
        differential d(base + run, server.connect_string());
        for (std::uint64_t k = 0; k < steps; ++k) d.step(static_cast<int>(k));
        d.finish();
    }
}

TEST_CASE("sim model: ACL refusals agree with a real server")
{
    // Two runs, the parents' ACLs set by ZooKeeper's own client (a JVM start each).
    zklock::test::zk_server server;
    const std::uint64_t base = env_u64("ZKLOCK_SIM_DIFF_SEED", std::random_device{}());
    std::cout << "sim model with ACLs: 2 runs of 200 steps from seed " << base << " (ZKLOCK_SIM_DIFF_SEED=" << base << ")"
              << std::endl;
    for (std::uint64_t run = 0; run < 2; ++run) {
        CAPTURE(base + run);
        differential d(base + run, server.connect_string(), {.acl_cli_port = server.port()});
        for (int k = 0; k < 200; ++k) d.step(k);
        d.finish();
    }
}

TEST_CASE("sim model: sessions the server expires agree with a real server")
{
    // A tick of 200 ms: sessions of 2 s, each expiry about 2.6 s of real time. One run of 200
    // random steps, a session expired after every 40th.
    constexpr auto tick = 200ms;
    zklock::test::zk_server server({.tick_time = tick});
    const std::uint64_t base = env_u64("ZKLOCK_SIM_DIFF_SEED", std::random_device{}());
    std::cout << "sim model with expiry: 1 run of 200 steps and 5 expiries from seed " << base
              << " (ZKLOCK_SIM_DIFF_SEED=" << base << ")" << std::endl;
    differential d(base, server.connect_string(), {.expiry_port = server.port(), .tick = tick});
    for (int k = 0; k < 200; ++k) {
        d.step(k);
        if (k % 40 == 39) d.expiry_step(k);
    }
    d.finish();
}
