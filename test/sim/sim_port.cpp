#include "sim_port.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>
#include <cassert>

namespace zklock::sim {

namespace asio = boost::asio;
using detail::session_effects;

namespace {

constexpr int data_kind = 0, exist_kind = 1, child_kind = 2;

bool is_leader_request(request::kind k)
{
    return k == request::kind::create || k == request::kind::remove || k == request::kind::set_data ||
           k == request::kind::multi || k == request::kind::sync;
}

}  // namespace

// A timer on the virtual clock, posting to the port's executor.
class sim_port::timer final : public detail::port_timer {
public:
    timer(virtual_clock& c, asio::any_io_executor ex) : clock_(c), e_(std::make_shared<virtual_clock::entry>())
    {
        e_->ex = std::move(ex);
    }
    ~timer() override { clock_.cancel(*e_); }
    void start(std::chrono::steady_clock::duration d, detail::unique_function<void()> cb) override
    {
        clock_.start(e_, clock_.now() + d, std::move(cb));
    }
    void cancel() noexcept override { clock_.cancel(*e_); }

private:
    virtual_clock& clock_;
    std::shared_ptr<virtual_clock::entry> e_;
};

sim_port::sim_port(port_env env, int client, asio::io_context& io, sim_clock::duration session_timeout)
    : env_(std::move(env)), client_(client), io_(io), ex_(io.get_executor()), timeout_(session_timeout),
      cfg_{.servers = "sim", .session_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(session_timeout)},
      core_(*this, *this, std::chrono::duration_cast<std::chrono::milliseconds>(session_timeout), true)
{
    ping_timer_ = make_timer();
}

sim_port::~sim_port() { drop_extensions(); }

std::unique_ptr<detail::port_timer> sim_port::make_timer() { return std::make_unique<timer>(*env_.clock, ex_); }

// ---- the session ---------------------------------------------------------------------------------

void sim_port::apply_io(const session_effects& e)
{
    if (e.presumed_expired && env_.trace) env_.trace("c" + std::to_string(client_) + " presumes its session expired");
    if (e.state_changed && !state_waiters_.empty()) {
        auto waiters = std::move(state_waiters_);
        state_waiters_.clear();
        for (auto& w : waiters) asio::post(ex_, [w = std::move(w), st = core_.fsm().state()]() mutable { w({}, st); });
    }
}

// ---- the session's control -------------------------------------------------------------------------

std::uint64_t sim_port::connect(detail::void_cb cb)
{
    if (core_.fsm().state() == session_state::closed)
        asio::post(ex_, [cb = std::move(cb)]() mutable { cb(errc::session_closed); });
    else
        core_.wait_connected(0, std::move(cb));
    return 0;
}

void sim_port::close(detail::void_cb cb)
{
    close();
    if (!core_.is_shut_down()) asio::post(ex_, [cb = std::move(cb)]() mutable { cb({}); });
}

void sim_port::wait_state_change(detail::unique_function<void(error_code, session_state)> cb)
{
    if (!core_.is_shut_down()) state_waiters_.push_back(std::move(cb));
}

void sim_port::send_probe()
{
    if (core_.fsm().state() != session_state::connected || !link_up_) return;
    request r;
    r.type = request::kind::sync;
    r.path = "/";
    send(std::move(r), nullptr, [](const reply&) {});
}

void sim_port::arm_ping()
{
    // The C client pings after a third of the session timeout without a request; a ping every
    // third keeps the session as alive at the leader as that.
    ping_timer_->start(timeout_ / 3, [w = weak_from_this()] {
        auto self = w.lock();
        if (!self) return;
        if (self->link_up_ && self->sid_ != 0) {
            // The server answers a ping itself (a follower too, cut off or not).
            self->env_.model->touch(self->sid_, self->now());
            self->core_.fsm_events().on_heard(self->now());
        }
        if (self->core_.fsm().state() != session_state::closed) self->arm_ping();
    });
}

// ---- the connection --------------------------------------------------------------------------------

void sim_port::start()
{
    core_.apply(core_.fsm_events().on_handle_started());
    arm_ping();
}

bool sim_port::wants_connection() const noexcept
{
    const auto st = core_.fsm().state();
    return !link_up_ && (st == session_state::connecting || st == session_state::suspended);
}

bool sim_port::try_connect(int server)
{
    if (!wants_connection()) return link_up_;
    auto& m = *env_.model;
    const std::string who = "c" + std::to_string(client_);
    if (core_.fsm().state() == session_state::suspended && sid_ != 0) {
        std::vector<std::string> paths[3];
        for (int k = 0; k < 3; ++k)
            for (auto& [p, list] : watches_[k])
                if (std::any_of(list.begin(), list.end(), [](const auto& x) { return !x.expired(); })) paths[k].push_back(p);
        auto r = m.reconnect(sid_, server, last_zxid_, paths[data_kind], paths[exist_kind], paths[child_kind], now());
        if (!r.accepted) {
            if (env_.trace) env_.trace(who + " connect to s" + std::to_string(server) + " refused");
            fail_all(zk_errc::connection_loss);  // what was queued for this attempt
            return false;
        }
        if (r.expired) {
            if (env_.trace) env_.trace(who + " reconnects to s" + std::to_string(server) + ": session expired");
            sid_ = 0;
            auto e = core_.fsm_events().on_expired();
            const bool fresh = e.start_handle;
            e.close_handle = e.start_handle = false;
            fail_all(zk_errc::session_expired);
            core_.apply(e);
            if (fresh) core_.apply(core_.fsm_events().on_handle_started());
            return false;
        }
        link_up_ = true;
        ++connections_;
        if (env_.trace) env_.trace(who + " reconnected to s" + std::to_string(server));
    } else {
        if (!m.reaches_leader(server)) {
            fail_all(zk_errc::connection_loss);
            return false;
        }
        sid_ = m.open_session(server, timeout_, now());
        last_zxid_ = 0;
        link_up_ = true;
        ++connections_;
        if (env_.trace) env_.trace(who + " connected to s" + std::to_string(server) + " as session " + std::to_string(sid_));
    }
    // What was made while the connection was down goes out first, in order (the C client's queue),
    // then the session hears of the connection.
    auto waiting = std::move(unsent_);
    unsent_.clear();
    for (auto& [o, r] : waiting) submit(std::move(o), std::move(r));
    core_.apply(core_.fsm_events().on_connected(sid_, std::chrono::duration_cast<std::chrono::milliseconds>(timeout_), now()));
    return link_up_;
}

void sim_port::connection_lost()
{
    if (!link_up_) return;
    link_up_ = false;
    if (sid_ != 0) env_.model->disconnect(sid_);
    if (env_.trace) env_.trace("c" + std::to_string(client_) + " lost its connection");
    fail_all(zk_errc::connection_loss);
    if (core_.fsm().state() == session_state::connected) core_.apply(core_.fsm_events().on_connection_lost());
}

void sim_port::close()
{
    if (core_.fsm().state() == session_state::closed) return;
    if (link_up_ && sid_ != 0) {
        request r;
        r.type = request::kind::close;
        env_.model->submit(sid_, 0, std::move(r), now());
    }
    fail_all(errc::session_closed);
    link_up_ = false;
    core_.apply(core_.fsm_events().on_close());
    ping_timer_->cancel();
}

void sim_port::shut_down()
{
    // From now on every request, wait and post is let go of at once, never called: what is
    // destroyed later (a handler holding a lease, whose destructor releases) finds nothing to
    // hold on to, and nothing is posted to an io_context that may be gone.
    detail::graveyard g;
    core_.shut_down(g);  // closed; observers bury what they hold, waits for a connection go
    for (auto& w : state_waiters_) g.bury(std::move(w));
    state_waiters_.clear();
    for (int round = 0; round < 8 && !g.empty(); ++round) g.clear();
    for (int round = 0; round < 8; ++round) {
        auto a = std::move(in_flight_);
        auto b = std::move(unsent_);
        in_flight_.clear();
        unsent_.clear();
        // A read in flight holds the watch it would set, whose waiter (an operation) may hold
        // the read's callback in turn: as the bridge's requests do, the watch buries its waiter.
        for (auto& o : a)
            if (o.watch) o.watch->abandon(g);
        for (auto& [o, r] : b)
            if (o.watch) o.watch->abandon(g);
        for (auto& k : watches_)
            for (auto& [p, list] : k)
                for (auto& w : list)
                    if (auto s = w.lock()) s->abandon(g);
        for (auto& k : watches_) k.clear();
        core_.shut_down(g);
        g.clear();
        ping_timer_->cancel();
        if (a.empty() && b.empty() && g.empty()) break;
    }
    link_up_ = false;
}

void sim_port::fail_all(error_code ec)
{
    // The C client completes every request it holds, in order, with the error.
    reply r;
    r.ec = ec;
    for (int round = 0; round < 8 && (!in_flight_.empty() || !unsent_.empty()); ++round) {
        std::deque<outstanding> all = std::move(in_flight_);
        in_flight_.clear();
        for (auto& [o, req] : unsent_) all.push_back(std::move(o));
        unsent_.clear();
        for (auto& o : all) {
            r.tag = o.tag;
            complete(o, r);
        }
    }
}

// ---- requests ---------------------------------------------------------------------------------------

void sim_port::send(request r, std::shared_ptr<detail::watch_state> w, std::function<void(const reply&)> done)
{
    outstanding o;
    o.tag = next_tag_++;
    o.kind = r.type;
    o.path = r.path;
    o.watch = std::move(w);
    o.done = std::move(done);
    r.watch = o.watch != nullptr;
    if (core_.is_shut_down()) {
        detail::graveyard g;
        if (o.watch) o.watch->abandon(g);
        return;
    }
    if (env_.trace) {
        static const char* const names[] = {"create", "remove", "exists", "get_data", "set_data", "get_children", "multi", "sync", "close"};
        env_.trace("c" + std::to_string(client_) + " -> #" + std::to_string(o.tag) + " " + names[static_cast<int>(r.type)] + " " +
                   r.path + (r.watch ? " (watch)" : "") + (link_up_ ? "" : " (waits for a connection)"));
    }
    const auto st = core_.fsm().state();
    if (st == session_state::expired || st == session_state::closed || st == session_state::disconnected) {
        // No handle: refused at once, the callback posted (never inside the call).
        reply rep;
        rep.tag = o.tag;
        rep.ec = core_.no_handle_error();
        asio::post(ex_, [o = std::make_shared<outstanding>(std::move(o)), rep] { o->done(rep); });
        return;
    }
    if (is_leader_request(o.kind)) o.leader_sent = core_.leader_request();
    if (!link_up_) {
        unsent_.emplace_back(std::move(o), std::move(r));
        return;
    }
    submit(std::move(o), std::move(r));
}

void sim_port::submit(outstanding o, request r)
{
    env_.model->submit(sid_, o.tag, std::move(r), now());
    in_flight_.push_back(std::move(o));
}

void sim_port::deliver(message m)
{
    core_.fsm_events().on_heard(now());
    if (m.is_event) {
        fire_watches(m.e.type, m.e.path);
        return;
    }
    if (m.r.zxid > last_zxid_) last_zxid_ = m.r.zxid;
    assert(!in_flight_.empty() && in_flight_.front().tag == m.r.tag);
    if (in_flight_.empty() || in_flight_.front().tag != m.r.tag) return;
    auto o = std::move(in_flight_.front());
    in_flight_.pop_front();
    complete(o, m.r);
}

void sim_port::complete(outstanding& o, const reply& r)
{
    // As the bridge: a leader request answered without error is evidence for the session; the
    // C client maps an operation timeout to a connection loss; the watch of a successful read is
    // registered as its reply is handled, and so is an exists' on a missing node (the C client's
    // exists_result_checker: ZOK to the data watches, ZNONODE to the exist watches; the server
    // set it either way).
    if (!r.ec && o.leader_sent != sim_clock::time_point{}) core_.on_leader_answer(o.leader_sent);
    if (o.watch && (!r.ec || (o.kind == request::kind::exists && r.ec == zk_errc::no_node))) {
        const int kind = o.kind == request::kind::get_children ? child_kind
                         : o.kind == request::kind::exists     ? exist_kind
                                                               : data_kind;
        add_watch(kind, o.path, o.watch);
    }
    o.done(r);
}

void sim_port::add_watch(int kind, const std::string& path, const std::shared_ptr<detail::watch_state>& w)
{
    auto& v = watches_[kind][path];
    std::erase_if(v, [](const std::weak_ptr<detail::watch_state>& x) { return x.expired(); });
    v.push_back(w);
}

void sim_port::fire_watches(event_type type, const std::string& path)
{
    auto fire = [&](int kind, watch_event_type t) {
        auto it = watches_[kind].find(path);
        if (it == watches_[kind].end()) return;
        auto list = std::move(it->second);
        watches_[kind].erase(it);
        for (auto& w : list)
            if (auto s = w.lock()) s->fire({}, {t, path});
    };
    switch (type) {
    case event_type::created: fire(exist_kind, watch_event_type::created); break;
    case event_type::deleted:
        fire(data_kind, watch_event_type::deleted);
        fire(exist_kind, watch_event_type::deleted);
        fire(child_kind, watch_event_type::deleted);
        break;
    case event_type::changed:
        fire(data_kind, watch_event_type::changed);
        fire(exist_kind, watch_event_type::changed);
        break;
    case event_type::child: fire(child_kind, watch_event_type::child); break;
    }
}

void sim_port::fail_watches(error_code ec)
{
    for (auto& k : watches_) {
        auto copy = std::move(k);
        k.clear();
        for (auto& [path, list] : copy)
            for (auto& w : list)
                if (auto s = w.lock()) s->fire(ec, {watch_event_type::deleted, path});
    }
}

void sim_port::create(const std::string& path, std::string_view data, create_mode mode, detail::create_cb cb)
{
    if (auto ec = check_request_size(path.size(), data.size())) {
        return asio::post(ex_, [cb = std::move(cb), ec]() mutable { cb(ec, {}, {}); });
    }
    request r;
    r.type = request::kind::create;
    r.path = path;
    r.data = data;
    r.mode = mode;
    send(std::move(r), nullptr, [cb = std::make_shared<detail::create_cb>(std::move(cb))](const reply& a) {
        (*cb)(a.ec, a.ec ? std::string() : a.path, a.stat.value_or(zklock::stat{}));
    });
}

void sim_port::remove(const std::string& path, std::int32_t version, detail::void_cb cb)
{
    request r;
    r.type = request::kind::remove;
    r.path = path;
    r.version = version;
    send(std::move(r), nullptr, [cb = std::make_shared<detail::void_cb>(std::move(cb))](const reply& a) { (*cb)(a.ec); });
}

void sim_port::exists(const std::string& path, std::shared_ptr<detail::watch_state> w, detail::stat_cb cb)
{
    request r;
    r.type = request::kind::exists;
    r.path = path;
    send(std::move(r), std::move(w), [cb = std::make_shared<detail::stat_cb>(std::move(cb))](const reply& a) {
        // A missing node is an answer, not an error.
        if (a.ec == zk_errc::no_node) return (*cb)({}, std::nullopt);
        (*cb)(a.ec, a.ec ? std::nullopt : a.stat);
    });
}

void sim_port::get_data(const std::string& path, std::shared_ptr<detail::watch_state> w, detail::data_cb cb)
{
    request r;
    r.type = request::kind::get_data;
    r.path = path;
    send(std::move(r), std::move(w), [cb = std::make_shared<detail::data_cb>(std::move(cb))](const reply& a) {
        (*cb)(a.ec, a.ec ? std::string() : a.data, a.ec ? zklock::stat{} : a.stat.value_or(zklock::stat{}));
    });
}

void sim_port::set_data(const std::string& path, std::string_view data, std::int32_t version, detail::set_cb cb)
{
    request r;
    r.type = request::kind::set_data;
    r.path = path;
    r.data = data;
    r.version = version;
    send(std::move(r), nullptr, [cb = std::make_shared<detail::set_cb>(std::move(cb))](const reply& a) {
        (*cb)(a.ec, a.ec ? zklock::stat{} : a.stat.value_or(zklock::stat{}));
    });
}

void sim_port::get_children(const std::string& path, std::shared_ptr<detail::watch_state> w, detail::children_cb cb)
{
    request r;
    r.type = request::kind::get_children;
    r.path = path;
    send(std::move(r), std::move(w),
         [this, cb = std::make_shared<detail::children_cb>(std::move(cb))](const reply& a) {
             auto children = a.ec ? std::vector<std::string>() : a.children;
             if (env_.shuffle) env_.shuffle(children);
             (*cb)(a.ec, std::move(children));
         });
}

void sim_port::list_children(const std::string& path, detail::names_cb cb)
{
    request r;
    r.type = request::kind::get_children;
    r.path = path;
    send(std::move(r), nullptr, [this, cb = std::make_shared<detail::names_cb>(std::move(cb))](const reply& a) {
        detail::child_names names;
        if (!a.ec) {
            auto children = a.children;
            if (env_.shuffle) env_.shuffle(children);
            for (const auto& c : children) {
                names.buffer += c;
                names.ends.push_back(static_cast<std::uint32_t>(names.buffer.size()));
            }
        }
        (*cb)(a.ec, std::move(names));
    });
}

void sim_port::sync(const std::string& path, detail::void_cb cb)
{
    request r;
    r.type = request::kind::sync;
    r.path = path;
    send(std::move(r), nullptr, [cb = std::make_shared<detail::void_cb>(std::move(cb))](const reply& a) { (*cb)(a.ec); });
}

void sim_port::multi(const std::vector<multi_op>& ops, detail::multi_cb cb)
{
    const std::size_t n = ops.size();
    request r;
    r.type = request::kind::multi;
    r.ops = ops;
    r.path = ops.empty() ? std::string() : ops.front().path;
    const bool marked = n == 2 && ops[0].type == multi_op::kind::set_data && ops[1].type == multi_op::kind::remove;
    if (marked && env_.marked_releases) ++*env_.marked_releases;
    std::uint64_t* const refused = marked ? env_.marks_refused : nullptr;
    send(std::move(r), nullptr, [n, refused, cb = std::make_shared<detail::multi_cb>(std::move(cb))](const reply& a) {
        if (refused && a.ec == zk_errc::no_auth) ++*refused;
        // One result per op, always: a request not answered carries its error in every op.
        std::vector<multi_result> out = a.results;
        if (out.size() != n) {
            out.assign(n, multi_result{});
            for (auto& x : out) x.ec = a.ec ? a.ec : error_code(zk_errc::connection_loss);
        }
        (*cb)(a.ec, std::move(out));
    });
}

}  // namespace zklock::sim
