// A fake of the port (src/port/zk_port.hpp) for unit tests of the operations: every request is
// recorded, in order, until the test answers it; watch events and session events are injected by
// the test, and its clock moves only when the test advances it. Answers and expired timers run
// posted on the executor, as the port promises (never inside the request), so a test answers (or
// advances the clock), then runs the io_context.
//
// Not a model of ZooKeeper: it answers what the test says. What ZooKeeper does is tested against
// real servers (test/integration, test/fault).
#pragma once

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

class fake_port final : public detail::zk_port, public std::enable_shared_from_this<fake_port> {
public:
    explicit fake_port(boost::asio::io_context& io) : io_(io), ex_(io.get_executor()) {}

    // The session as the operation sees it; a test changes it with set_state.
    session_state state_ = session_state::connected;
    std::uint64_t generation_ = 1;
    std::uint64_t connections_ = 1;
    std::int64_t session_id_ = 0x1234;
    clock::duration answer_deadline_ = std::chrono::seconds(3);
    std::size_t max_request_bytes_ = 1024 * 1024;

    const boost::asio::any_io_executor& executor() const noexcept override { return ex_; }
    session_state state() const noexcept override { return state_; }
    std::uint64_t generation() const noexcept override { return generation_; }
    std::uint64_t connections() const noexcept override { return connections_; }
    std::int64_t session_id() const noexcept override { return session_id_; }
    clock::duration answer_deadline() const noexcept override { return answer_deadline_; }
    std::size_t max_request_bytes() const noexcept override { return max_request_bytes_; }
    const detail::log_sink& log() const noexcept override { return log_; }

    // The leader's evidence (docs/liveness.md): off until a test confirms it (confirm_leader);
    // then a read doubts from confirmed + T/3 and presumes the session expired from
    // confirmed + T/2, as session_impl does, and a due presumption is told from a posted handler
    // (by a read, or by the presumption's timer, which advance() runs when its time comes).
    clock::duration session_timeout_ = std::chrono::seconds(9);
    std::optional<clock::time_point> confirmed_;
    /// The leader answered a request sent at the clock's time now.
    void confirm_leader()
    {
        confirmed_ = now_;
        presumed_ = false;
    }
    detail::session_reading read_now() override
    {
        detail::session_reading r{state_, generation_, untold_ > 0, clock::time_point::max()};
        if (!confirmed_) return r;
        if (!presumed_ && now_ >= *confirmed_ + session_timeout_ / 2) presume();
        if (r.state == session_state::connected && now_ >= *confirmed_ + session_timeout_ / 3) r.state = session_state::suspended;
        r.presumed = untold_ > 0 || presumed_;
        r.valid_until = presumed_ ? clock::time_point::min() : *confirmed_ + session_timeout_ / 2;
        return r;
    }

    void wait_connected(std::uint64_t generation, detail::void_cb cb) override
    {
        connected_waiters_.emplace_back(generation, std::move(cb));
        settle_waiters();
    }
    void subscribe(std::weak_ptr<detail::session_observer> o) override { observers_.push_back(std::move(o)); }

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

    /// The session's state changes: observers hear of it, waiters for a connection complete.
    void set_state(session_state st)
    {
        state_ = st;
        if (st == session_state::connected) ++connections_;
        for (auto& w : observers_)
            if (auto o = w.lock()) o->on_session_state(st, generation_);
        settle_waiters();
    }

    /// The execution context shuts down: observers bury what they hold (session_impl::shut_down).
    void shut_down_observers(detail::graveyard& g)
    {
        for (auto& w : observers_)
            if (auto o = w.lock()) o->on_shutdown(g);
    }

    /// Lets go of every request not answered, every wait for a connection and every running timer:
    /// what they hold (an operation, and through it this port) is destroyed. Destroying one may
    /// make another request (a lease let go releases its node): round again, a few times at most.
    void drop_all()
    {
        for (int round = 0; round < 8 && (!pending_.empty() || !connected_waiters_.empty() || timers_running() > 0); ++round) {
            auto requests = std::move(pending_);
            pending_.clear();
            auto waiters = std::move(connected_waiters_);
            connected_waiters_.clear();
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

    void settle_waiters()
    {
        for (auto it = connected_waiters_.begin(); it != connected_waiters_.end();) {
            error_code ec;
            if (it->first != 0 && it->first != generation_) ec = errc::session_expired;
            else if (state_ == session_state::closed) ec = errc::session_closed;
            else if (state_ != session_state::connected) {
                ++it;
                continue;
            }
            boost::asio::post(ex_, [cb = std::make_shared<detail::void_cb>(std::move(it->second)), ec] { (*cb)(ec); });
            it = connected_waiters_.erase(it);
        }
    }

    // The presumption: decided now, its observers told from a posted handler.
    void presume()
    {
        presumed_ = true;
        ++untold_;
        boost::asio::post(ex_, [self = shared_from_this()] {
            auto copy = self->observers_;
            for (auto& w : copy)
                if (auto o = w.lock()) o->on_presumed_expired();
            --self->untold_;
        });
    }

    boost::asio::io_context& io_;
    boost::asio::any_io_executor ex_;
    bool presumed_ = false;
    int untold_ = 0;
    detail::log_sink log_{{}, log_level::error};
    std::deque<fake_request> pending_;
    std::vector<std::string> made_;
    std::vector<std::pair<std::uint64_t, detail::void_cb>> connected_waiters_;
    std::vector<std::weak_ptr<detail::session_observer>> observers_;
    clock::time_point now_{};
    std::vector<std::weak_ptr<timer_entry>> timers_;
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
    if (confirmed_ && !presumed_ && now_ >= *confirmed_ + session_timeout_ / 2) presume();
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
