// A fake of the port (src/port/zk_port.hpp) for unit tests of the operations: every request is
// recorded, in order, until the test answers it; watch events and the connection's events are
// injected by the test, and its clock moves only when the test advances it. Answers and expired
// timers run posted on the executor, as the port promises (never inside the request), so a test
// answers (or advances the clock), then runs the io_context.
//
// The session is the library's own session_core, fed what the test says of the connection
// (set_state) and of the leader (confirm_leader): its state, generation, doubt and presumed expiry
// are decided as under the real port.
//
// Not a model of ZooKeeper: it answers what the test says. What ZooKeeper does is tested against
// real servers (test/integration, test/fault).
#pragma once

#include "port/session_core.hpp"
#include "port/zk_port.hpp"

#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zklock::test {

/// What a test answers a request with: the fields its kind of request reads.
struct fake_reply {
    error_code ec;
    std::string path;                     ///< create: the node created
    std::string data;                     ///< get_data
    zklock::stat stat;                    ///< create, get_data, set_data
    std::optional<zklock::stat> exists;   ///< exists: the node's stat, or none
    std::vector<std::string> children;    ///< get_children, list_children
    std::vector<multi_result> results;    ///< multi
};

/// One request the operation made.
struct fake_request {
    std::string op;  ///< "create", "remove", "exists", "get_data", "set_data", "get_children", "list_children", "multi", "sync"
    std::string path;
    std::string data;
    std::int32_t version = -1;
    create_mode mode = create_mode::persistent;
    std::shared_ptr<detail::watch_state> watch;  ///< the watch it asked for (null: none)
    std::vector<multi_op> ops;
    detail::unique_function<void(const fake_reply&)> answer;
};

class fake_port final : public detail::zk_port, private detail::session_io, public std::enable_shared_from_this<fake_port> {
public:
    /// The session timeout the fake's server grants.
    static constexpr std::chrono::milliseconds session_timeout_{9000};

    explicit fake_port(boost::asio::io_context& io) : io_(io), ex_(io.get_executor()), core_(*this, *this, session_timeout_, false)
    {
        core_.apply(core_.fsm_events().on_handle_started());
        set_state(session_state::connected);
    }

    /// The session id the fake's server gives (new_session() changes it).
    std::int64_t session_id_ = 0x1234;
    std::size_t max_request_bytes_ = 1024 * 1024;

    const boost::asio::any_io_executor& executor() const noexcept override { return ex_; }
    session_state state() const noexcept override { return core_.fsm().state(); }
    std::uint64_t generation() const noexcept override { return core_.fsm().generation(); }
    std::uint64_t connections() const noexcept override { return connections_; }
    std::int64_t session_id() const noexcept override { return core_.fsm().session_id(); }
    clock::duration answer_deadline() const noexcept override { return core_.fsm().answer_deadline(); }
    std::size_t max_request_bytes() const noexcept override { return max_request_bytes_; }
    const detail::log_sink& log() const noexcept override { return log_; }
    detail::session_reading read_now() override { return core_.read_now(); }
    void wait_connected(std::uint64_t generation, detail::void_cb cb) override
    {
        core_.wait_connected(generation, std::move(cb));
    }
    void subscribe(std::weak_ptr<detail::session_observer> o) override { core_.subscribe(std::move(o)); }

    /// The leader's evidence (docs/liveness.md): until a test calls confirm_leader, the leader
    /// answers at every step of the clock while connected, so that nothing is doubted. From the
    /// first call on, only the calls are evidence: the leader answered a request sent at the
    /// clock's time now.
    void confirm_leader()
    {
        leader_answers_ = false;
        core_.on_leader_answer(now_);
    }
    /// Probes the core sent (a sync to the leader): counted, not queued with the requests.
    std::size_t probes() const noexcept { return probes_; }

    /// A timer on the manual clock (advance).
    std::unique_ptr<detail::port_timer> make_timer() override;

    void create(const std::string& path, std::string_view data, create_mode mode, detail::create_cb cb) override
    {
        auto& r = add("create", path);
        r.data = data;
        r.mode = mode;
        r.answer = [cb = std::move(cb)](const fake_reply& a) mutable { cb(a.ec, a.path, a.stat); };
    }
    void remove(const std::string& path, std::int32_t version, detail::void_cb cb) override
    {
        auto& r = add("remove", path);
        r.version = version;
        r.answer = [cb = std::move(cb)](const fake_reply& a) mutable { cb(a.ec); };
    }
    void exists(const std::string& path, std::shared_ptr<detail::watch_state> w, detail::stat_cb cb) override
    {
        auto& r = add("exists", path);
        r.watch = std::move(w);
        r.answer = [cb = std::move(cb)](const fake_reply& a) mutable { cb(a.ec, a.exists); };
    }
    void get_data(const std::string& path, std::shared_ptr<detail::watch_state> w, detail::data_cb cb) override
    {
        auto& r = add("get_data", path);
        r.watch = std::move(w);
        r.answer = [cb = std::move(cb)](const fake_reply& a) mutable { cb(a.ec, a.data, a.stat); };
    }
    void set_data(const std::string& path, std::string_view data, std::int32_t version, detail::set_cb cb) override
    {
        auto& r = add("set_data", path);
        r.data = data;
        r.version = version;
        r.answer = [cb = std::move(cb)](const fake_reply& a) mutable { cb(a.ec, a.stat); };
    }
    void get_children(const std::string& path, std::shared_ptr<detail::watch_state> w, detail::children_cb cb) override
    {
        auto& r = add("get_children", path);
        r.watch = std::move(w);
        r.answer = [cb = std::move(cb)](const fake_reply& a) mutable { cb(a.ec, a.children); };
    }
    void list_children(const std::string& path, detail::names_cb cb) override
    {
        auto& r = add("list_children", path);
        r.answer = [cb = std::move(cb)](const fake_reply& a) mutable {
            detail::child_names names;
            if (!a.ec)
                for (const auto& c : a.children) {
                    names.buffer += c;
                    names.ends.push_back(static_cast<std::uint32_t>(names.buffer.size()));
                }
            cb(a.ec, std::move(names));
        };
    }
    void sync(const std::string& path, detail::void_cb cb) override
    {
        auto& r = add("sync", path);
        r.answer = [cb = std::move(cb)](const fake_reply& a) mutable { cb(a.ec); };
    }
    void multi(const std::vector<multi_op>& ops, detail::multi_cb cb) override
    {
        auto& r = add("multi", ops.empty() ? std::string() : ops.front().path);
        r.ops = ops;
        r.answer = [cb = std::move(cb)](const fake_reply& a) mutable { cb(a.ec, a.results); };
    }

    // ---- the test's side ----

    /// The requests made and not answered yet, oldest first.
    const std::deque<fake_request>& pending() const noexcept { return pending_; }
    /// Every request made so far ("op path"), answered or not, in order.
    const std::vector<std::string>& log_of_requests() const noexcept { return made_; }

    /// Answers the oldest request, which must be `op` on `path` (copied: they may name a pending
    /// request's own fields); the answer runs posted. Returns
    /// the watch the request asked for if the answer sets it (no error), for the test to fire.
    std::shared_ptr<detail::watch_state> answer(std::string op, std::string path, fake_reply reply = {})
    {
        REQUIRE_MESSAGE(!pending_.empty(), "no request to answer with " << op << " " << path);
        auto r = std::move(pending_.front());
        pending_.pop_front();
        CHECK_MESSAGE((r.op == op && r.path == path), "expected " << op << " " << path << ", the next request is " << r.op
                                                                  << " " << r.path);
        auto watch = reply.ec ? nullptr : r.watch;
        boost::asio::post(ex_, [r = std::make_shared<fake_request>(std::move(r)), reply = std::move(reply)] { r->answer(reply); });
        return watch;
    }
    /// Answers the oldest request, whatever it is, with `reply`; returns it (its answer gone).
    fake_request answer_next(fake_reply reply = {})
    {
        REQUIRE(!pending_.empty());
        auto r = std::move(pending_.front());
        pending_.pop_front();
        auto answer = std::move(r.answer);
        boost::asio::post(ex_, [answer = std::make_shared<decltype(answer)>(std::move(answer)), reply = std::move(reply)] {
            (*answer)(reply);
        });
        return r;
    }

    /// The connection's state changes as `st` says (connected, suspended: the connection is lost,
    /// expired, closed); the session core decides what follows.
    void set_state(session_state st)
    {
        auto& f = core_.fsm_events();
        switch (st) {
        case session_state::connected:
            ++connections_;
            core_.apply(f.on_connected(session_id_, session_timeout_, now_));
            break;
        case session_state::suspended: core_.apply(f.on_connection_lost()); break;
        case session_state::expired: core_.apply(f.on_expired()); break;
        case session_state::closed: core_.apply(f.on_close()); break;
        default: break;
        }
    }
    /// The session expired while cut off, and a new one starts connecting (it connects on the
    /// next set_state(connected)): nobody hears of the expiry before the new connection.
    void new_session()
    {
        ++session_id_;
        (void)core_.fsm_events().on_expired();
        (void)core_.fsm_events().on_handle_started();
    }

    /// The execution context shuts down: observers bury what they hold (session_impl::shut_down).
    void shut_down_observers(detail::graveyard& g) { core_.shut_down(g); }

    /// Lets go of every request not answered, every wait for a connection and every running timer:
    /// what they hold (an operation, and through it this port) is destroyed. Destroying one may
    /// make another request (a lease let go releases its node): round again, a few times at most.
    void drop_all()
    {
        for (int round = 0; round < 8 && (!pending_.empty() || timers_running() > 0); ++round) {
            auto requests = std::move(pending_);
            pending_.clear();
            std::vector<detail::unique_function<void()>> callbacks;
            for (auto& w : timers_)
                if (auto e = w.lock(); e && e->cb) callbacks.push_back(std::exchange(e->cb, {}));
        }
    }

    /// Moves the manual clock on by `d`: every timer due by then expires (posted), earliest first.
    void advance(clock::duration d);
    /// The manual clock's time (it starts at the epoch of steady_clock).
    clock::time_point now() const noexcept override { return now_; }
    /// How many timers are running.
    std::size_t timers_running() const noexcept;

    /// Runs whatever is ready on the executor (answers, posted steps), until nothing is.
    void run()
    {
        io_.restart();
        io_.poll();
    }

private:
    struct timer_entry {
        clock::time_point due;
        detail::unique_function<void()> cb;  // empty: not running
    };
    class manual_timer;

    fake_request& add(std::string op, const std::string& path)
    {
        made_.push_back(op + " " + path);
        pending_.push_back(fake_request{std::move(op), path});
        return pending_.back();
    }

    // session_io: the fake's connection does nothing of its own; the probe is counted.
    void apply_io(const detail::session_effects&) override {}
    void fail_watches(error_code) override {}
    void send_probe() override
    {
        if (state() != session_state::connected) return;
        ++probes_;
        const auto sent = core_.leader_request();
        if (leader_answers_) core_.on_leader_answer(sent);
    }
    std::weak_ptr<void> owner() override { return weak_from_this(); }

    boost::asio::io_context& io_;
    boost::asio::any_io_executor ex_;
    detail::log_sink log_{{}, log_level::error};
    clock::time_point now_{};
    std::uint64_t connections_ = 0;
    bool leader_answers_ = true;  // see confirm_leader()
    std::size_t probes_ = 0;
    std::deque<fake_request> pending_;
    std::vector<std::string> made_;
    std::vector<std::weak_ptr<timer_entry>> timers_;
    detail::session_core core_;  // last: its timers go first
};

class fake_port::manual_timer final : public detail::port_timer {
public:
    manual_timer(fake_port& port, std::shared_ptr<timer_entry> e) : port_(port), e_(std::move(e)) {}
    void start(clock::duration d, detail::unique_function<void()> cb) override
    {
        e_->due = port_.now_ + d;
        e_->cb = std::move(cb);
    }
    void cancel() noexcept override { e_->cb = {}; }

private:
    fake_port& port_;
    std::shared_ptr<timer_entry> e_;
};

inline std::unique_ptr<detail::port_timer> fake_port::make_timer()
{
    auto e = std::make_shared<timer_entry>();
    timers_.push_back(e);
    return std::make_unique<manual_timer>(*this, std::move(e));
}

inline void fake_port::advance(clock::duration d)
{
    now_ += d;
    if (leader_answers_ && state() == session_state::connected) core_.on_leader_answer(now_);
    std::vector<std::shared_ptr<timer_entry>> due;
    for (auto it = timers_.begin(); it != timers_.end();) {
        auto e = it->lock();
        if (!e) {
            it = timers_.erase(it);
            continue;
        }
        if (e->cb && e->due <= now_) due.push_back(std::move(e));
        ++it;
    }
    std::stable_sort(due.begin(), due.end(), [](const auto& a, const auto& b) { return a->due < b->due; });
    for (auto& e : due)
        boost::asio::post(ex_, [cb = std::make_shared<detail::unique_function<void()>>(std::exchange(e->cb, {}))] { (*cb)(); });
}

inline std::size_t fake_port::timers_running() const noexcept
{
    std::size_t n = 0;
    for (const auto& w : timers_)
        if (auto e = w.lock(); e && e->cb) ++n;
    return n;
}

/// An io_context and a fake port on it, for one test. At the end the observers bury what they hold
/// and the port lets go of what it still holds (requests never answered, waits, timers), which
/// would otherwise keep the operations, and through them the port, alive; then the context
/// destroys the handlers still queued.
struct fake_fixture {
    boost::asio::io_context io;
    std::shared_ptr<fake_port> port = std::make_shared<fake_port>(io);

    fake_fixture() = default;
    fake_fixture(const fake_fixture&) = delete;
    fake_fixture& operator=(const fake_fixture&) = delete;
    ~fake_fixture()
    {
        // As a session whose execution context shuts down: its observers (leases, cohorts) bury
        // what they hold, which is destroyed, never invoked; then what the port holds goes.
        detail::graveyard g;
        port->shut_down_observers(g);
        for (int round = 0; round < 8 && !g.empty(); ++round) g.clear();
        port->drop_all();
    }
};

}  // namespace zklock::test
