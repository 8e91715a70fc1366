#include "session_impl.hpp"
#include "deadline.hpp"
#include "lease_state.hpp"

#include <zklock/detail/path.hpp>
#include <zklock/session.hpp>

#include <boost/asio/cancellation_type.hpp>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <system_error>
#include <thread>

namespace zklock {

const char* to_string(session_state s) noexcept
{
    switch (s) {
    case session_state::disconnected: return "disconnected";
    case session_state::connecting: return "connecting";
    case session_state::connected: return "connected";
    case session_state::suspended: return "suspended";
    case session_state::expired: return "expired";
    case session_state::closed: return "closed";
    }
    return "unknown";
}

}  // namespace zklock

namespace zklock::detail {

namespace {

// Where C callbacks put their results. Normally the session's queue; while zookeeper_close runs on
// a helper thread, a vector of that thread's, handed back to the session's executor afterwards.
thread_local std::vector<std::unique_ptr<c_event>>* tl_sink = nullptr;

zklock::stat to_stat(const struct Stat& s)
{
    return {s.czxid, s.mzxid, s.ctime, s.mtime, s.version, s.cversion, s.aversion,
            s.ephemeralOwner, s.dataLength, s.numChildren, s.pzxid};
}

int create_flags(create_mode m)
{
    switch (m) {
    case create_mode::persistent: return 0;
    case create_mode::ephemeral: return ZOO_EPHEMERAL;
    case create_mode::persistent_sequential: return ZOO_SEQUENCE;
    case create_mode::ephemeral_sequential: return ZOO_EPHEMERAL | ZOO_SEQUENCE;
    case create_mode::container: return ZOO_CONTAINER;
    }
    return 0;
}

// Process-wide, like the C client's own log level: the last session started sets it. Atomic, since
// sessions on different threads start (and log) concurrently.
std::atomic<int> g_client_log_level{0};

void log_sink(const char* message)
{
    if (g_client_log_level > 0) std::fprintf(stderr, "zookeeper: %s\n", message);
}

void noop_void_completion(int, const void*) {}

// The error of a request's completion. The 3.8 C client reports ZRUNTIMEINCONSISTENCY for every
// request outstanding when it drops a connection because a reply came out of order. That happens
// after its nonblocking_send() found the socket broken and closed it without failing the requests
// in flight: they stay queued across the reconnect, the reply of one of them was lost with the old
// connection, so the next reply does not match. Their outcome is unknown, as after any connection
// loss: report one, so that callers retry (a create is found by its attempt id, a delete repeated).
error_code reply_error(int rc) noexcept { return make_zk_error(rc == ZRUNTIMEINCONSISTENCY ? ZCONNECTIONLOSS : rc); }

template <class Req> Req* from(const void* data) { return static_cast<Req*>(const_cast<void*>(data)); }

// Every C callback's result goes through here. While async_close's helper thread runs
// zookeeper_close, into that thread's sink, without touching the session (which may be gone by
// then if its io_context was destroyed before the close completed).
void hand_over(session_impl* s, std::unique_ptr<c_event> e)
{
    if (tl_sink) return tl_sink->push_back(std::move(e));
    s->enqueue(std::move(e));
}

template <class Req> void deliver(Req* r)
{
    std::unique_ptr<c_event> owned(r);
    hand_over(r->s, std::move(owned));
}

struct watcher_event final : c_event {
    session_impl* s;
    int type, zstate;
    std::string path;
    watcher_event(session_impl* si, int t, int st, std::string p) : s(si), type(t), zstate(st), path(std::move(p)) {}
    void complete() override { s->on_watcher(type, zstate, std::move(path)); }
};

void global_watcher(zhandle_t*, int type, int state, const char* path, void* ctx)
{
    auto* s = static_cast<session_impl*>(ctx);
    hand_over(s, std::make_unique<watcher_event>(s, type, state, path ? path : ""));
}

struct create_req final : c_event {
    session_impl* s;
    session_impl::create_cb cb;
    error_code ec;
    std::string path;
    zklock::stat st;
    void complete() override { cb(ec, std::move(path), st); }
};

void on_create(int rc, const char* value, const struct Stat* st, const void* data)
{
    auto* r = from<create_req>(data);
    r->ec = reply_error(rc);
    if (rc == ZOK) {
        if (value) r->path = value;
        if (st) r->st = to_stat(*st);
    }
    deliver(r);
}

struct void_req final : c_event {
    session_impl* s;
    session_impl::void_cb cb;
    error_code ec;
    void complete() override { cb(ec); }
};

void on_void(int rc, const void* data)
{
    auto* r = from<void_req>(data);
    r->ec = reply_error(rc);
    deliver(r);
}

struct exists_req final : c_event {
    session_impl* s;
    session_impl::stat_cb cb;
    std::shared_ptr<watch_state> w;
    std::string path;
    error_code ec;
    std::optional<zklock::stat> st;
    void complete() override;
};

void on_exists(int rc, const struct Stat* st, const void* data)
{
    auto* r = from<exists_req>(data);
    if (rc == ZOK && st) r->st = to_stat(*st);
    if (rc != ZNONODE) r->ec = reply_error(rc);  // a missing node is an answer, not an error
    deliver(r);
}

struct data_req final : c_event {
    session_impl* s;
    session_impl::data_cb cb;
    std::shared_ptr<watch_state> w;
    std::string path;
    error_code ec;
    std::string data;
    zklock::stat st;
    void complete() override;
};

void on_data(int rc, const char* value, int len, const struct Stat* st, const void* data)
{
    auto* r = from<data_req>(data);
    r->ec = reply_error(rc);
    if (rc == ZOK) {
        if (value && len > 0) r->data.assign(value, static_cast<std::size_t>(len));
        if (st) r->st = to_stat(*st);
    }
    deliver(r);
}

struct set_req final : c_event {
    session_impl* s;
    unique_function<void(error_code, zklock::stat)> cb;
    error_code ec;
    zklock::stat st;
    void complete() override { cb(ec, st); }
};

void on_set(int rc, const struct Stat* st, const void* data)
{
    auto* r = from<set_req>(data);
    r->ec = reply_error(rc);
    if (rc == ZOK && st) r->st = to_stat(*st);
    deliver(r);
}

struct children_req final : c_event {
    session_impl* s;
    session_impl::children_cb cb;
    std::shared_ptr<watch_state> w;
    std::string path;
    error_code ec;
    std::vector<std::string> children;
    void complete() override;
};

void on_children(int rc, const struct String_vector* sv, const void* data)
{
    auto* r = from<children_req>(data);
    r->ec = reply_error(rc);
    if (rc == ZOK && sv) {
        r->children.reserve(static_cast<std::size_t>(sv->count));
        for (int i = 0; i < sv->count; ++i) {
            r->children.emplace_back(sv->data[i]);
            r->bytes += sizeof(std::string) + r->children.back().capacity();
        }
    }
    deliver(r);
}

struct multi_req final : c_event {
    session_impl* s;
    session_impl::multi_cb cb;
    std::vector<zoo_op_t> ops;
    std::vector<zoo_op_result_t> results;
    std::vector<std::string> paths, datas;
    std::vector<std::vector<char>> path_buffers;
    std::vector<struct Stat> stats;
    error_code ec;
    void complete() override
    {
        std::vector<multi_result> out(results.size());
        for (std::size_t i = 0; i < results.size(); ++i) {
            out[i].ec = make_zk_error(results[i].err);
            if (ops[i].type == ZOO_CREATE_OP && results[i].err == ZOK && results[i].value) out[i].path = results[i].value;
            if (ops[i].type == ZOO_SETDATA_OP && results[i].err == ZOK && results[i].stat) out[i].stat = to_stat(*results[i].stat);
        }
        cb(ec, std::move(out));
    }
};

void on_multi(int rc, const void* data)
{
    auto* r = from<multi_req>(data);
    r->ec = reply_error(rc);
    deliver(r);
}

}  // namespace

// Watch registration happens when the read's reply is handled: the reply always precedes any event
// of the watch in ZooKeeper's stream, and our queue keeps that order.
void exists_req::complete()
{
    if (w && !ec) s->register_watch(watch_kind::exist, path, w);
    cb(ec, st);
}

void data_req::complete()
{
    if (w && !ec) s->register_watch(watch_kind::data, path, w);
    cb(ec, std::move(data), st);
}

void children_req::complete()
{
    if (w && !ec) s->register_watch(watch_kind::child, path, w);
    cb(ec, std::move(children));
}

// ---- watch_state --------------------------------------------------------------------------------

void watch_state::fire(error_code ec, watch_event ev)
{
    if (result_) return;
    result_.emplace(ec, std::move(ev));
    if (waiter_) {
        auto w = std::move(waiter_);
        w(result_->first, result_->second);
    }
}

void watch_state::wait(unique_function<void(error_code, watch_event)> cb)
{
    if (result_) {
        asio::post(ex_, [cb = std::move(cb), r = *result_]() mutable { cb(r.first, r.second); });
        return;
    }
    waiter_ = std::move(cb);
}

void watch_state::cancel_wait() { waiter_ = {}; }

// ---- session_impl -------------------------------------------------------------------------------

session_impl::session_impl(asio::any_io_executor ex, session_config cfg)
    : ex_(std::move(ex)), cfg_(std::move(cfg)), desc_(ex_), timer_(ex_), connect_timer_(ex_), suspend_timer_(ex_)
{
}

session_impl::~session_impl()
{
    if (zh_) {
        release_io();
        zookeeper_close(std::exchange(zh_, nullptr));
    }
}

std::int64_t session_impl::session_id() const noexcept
{
    return state_ == session_state::connected || state_ == session_state::suspended ? last_session_id_ : 0;
}

void session_impl::enqueue(std::unique_ptr<c_event> e)
{
    completed_bytes_ += e->bytes;
    completed_.push_back(std::move(e));
}

error_code session_impl::no_handle_error() const
{
    switch (state_) {
    case session_state::closed: return errc::session_closed;
    case session_state::expired: return errc::session_expired;
    default: return errc::not_connected;
    }
}

void session_impl::start_handle()
{
    g_client_log_level = cfg_.client_log_level;
    static constexpr ZooLogLevel levels[] = {ZOO_LOG_LEVEL_ERROR, ZOO_LOG_LEVEL_ERROR, ZOO_LOG_LEVEL_WARN,
                                             ZOO_LOG_LEVEL_INFO, ZOO_LOG_LEVEL_DEBUG};
    zoo_set_debug_level(levels[std::clamp(cfg_.client_log_level, 0, 4)]);
    zh_ = zookeeper_init2(cfg_.servers.c_str(), &global_watcher, to_session_timeout_ms(cfg_.session_timeout),
                          nullptr, this, 0, &log_sink);
    if (!zh_) return;
    // The 3.8 client re-resolves host names on every zookeeper_interest call unless told not to.
    zoo_set_servers_resolution_delay(zh_, -1);
    if (!cfg_.digest_auth.empty())
        zoo_add_auth(zh_, "digest", cfg_.digest_auth.data(), static_cast<int>(cfg_.digest_auth.size()),
                     &noop_void_completion, nullptr);
    set_state(session_state::connecting);
    drive();
}

// ---- the reactor loop ---------------------------------------------------------------------------

void session_impl::drive()
{
    if (!zh_ || in_process_) return;
    int fd = -1, interest = 0;
    struct timeval tv {};
    int rc = zookeeper_interest(zh_, &fd, &interest, &tv);
    update_fd(rc == ZOK ? fd : -1);
    if (fd_ != -1) {
        auto self = shared_from_this();
        const auto gen = io_gen_;
        if ((interest & ZOOKEEPER_READ) && !reading_) {
            reading_ = true;
            desc_.async_wait(asio::posix::descriptor_base::wait_read, [self, gen](error_code ec) {
                if (gen != self->io_gen_) return;
                self->reading_ = false;
                if (!ec) self->process(ZOOKEEPER_READ);
            });
        }
        if ((interest & ZOOKEEPER_WRITE) && !writing_) {
            writing_ = true;
            desc_.async_wait(asio::posix::descriptor_base::wait_write, [self, gen](error_code ec) {
                if (gen != self->io_gen_) return;
                self->writing_ = false;
                if (!ec) self->process(ZOOKEEPER_WRITE);
            });
        }
    }
    auto delay = std::chrono::milliseconds(tv.tv_sec * 1000 + tv.tv_usec / 1000);
    // No spinning: an error (connection refused, ZOPERATIONTIMEOUT...) or no socket yet means the
    // client retries on a later call; give it a little time.
    if (rc != ZOK) delay = std::max(delay, std::chrono::milliseconds(50));
    else if (fd_ == -1) delay = std::max(delay, std::chrono::milliseconds(1));
    arm_timer(clock::now() + delay);
    if (!completed_.empty()) schedule_completions();
}

void session_impl::update_fd(int fd)
{
    // The C client closes and reopens its socket on reconnect, and the new socket may get the same
    // number: compare the socket's inode too, or a reused number would never be re-registered.
    ino_t ino = 0;
    if (fd != -1) {
        struct ::stat st {};
        if (::fstat(fd, &st) == 0) ino = st.st_ino;
    }
    if (fd == fd_ && ino == fd_inode_) return;
    ++io_gen_;
    if (desc_.is_open()) desc_.release();
    reading_ = writing_ = false;
    fd_ = fd;
    fd_inode_ = ino;
    if (fd != -1) {
        // The C client opens its sockets without SOCK_CLOEXEC: a child started by exec (zklock(1)
        // runs one) must not inherit the connection.
        if (int flags = ::fcntl(fd, F_GETFD); flags != -1 && !(flags & FD_CLOEXEC)) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
        error_code ec;
        desc_.assign(fd, ec);
        if (ec) fd_ = -1;
    }
}

void session_impl::arm_timer(clock::time_point when)
{
    if (timer_waiting_ && timer_deadline_ <= when) return;
    timer_deadline_ = when;
    timer_.expires_at(when);
    timer_waiting_ = true;
    timer_.async_wait([self = shared_from_this()](error_code ec) {
        if (ec == asio::error::operation_aborted) return;
        self->timer_waiting_ = false;
        self->process(0);
    });
}

constexpr std::size_t max_drain_bytes = std::size_t{4} << 20;

void session_impl::process(int events)
{
    if (!zh_) return;
    auto self = shared_from_this();
    in_process_ = true;
    if (events & ZOOKEEPER_READ) last_heard_ = clock::now();
    int rc = zookeeper_process(zh_, events);
    // zookeeper_process handles one reply per call: drain what the socket already holds, up to
    // 256 replies or until the replies waiting for their completions hold 4 MB (a burst of long
    // listings, as when thousands of waiters queue at once, would otherwise pile up in memory).
    // What is left stays in the socket, which is readable at once when drive() asks again.
    if (events & ZOOKEEPER_READ) {
        for (int i = 0; i < 256 && rc == ZOK && zh_ && completed_bytes_ < max_drain_bytes; ++i) {
            int avail = 0;
            if (::ioctl(fd_, FIONREAD, &avail) != 0 || avail <= 0) break;
            rc = zookeeper_process(zh_, ZOOKEEPER_READ);
        }
    }
    in_process_ = false;
    // Ask for interest before any completion runs: if the client closed its socket, the
    // descriptor must be released before user code could open a new one with the same number
    // (releasing later would remove that one's registration from the reactor).
    drive();
    run_completions();
    after_process();
    drive();
}

void session_impl::schedule_completions()
{
    if (completions_posted_) return;
    completions_posted_ = true;
    asio::post(ex_, [self = shared_from_this()] {
        self->completions_posted_ = false;
        self->run_completions();
        self->after_process();
        self->drive();
    });
}

void session_impl::run_completions()
{
    if (running_completions_) return;  // the outer loop picks the new ones up
    running_completions_ = true;
    struct reset {
        bool& flag;
        ~reset() { flag = false; }
    } guard{running_completions_};
    while (!completed_.empty()) {
        auto e = std::move(completed_.front());
        completed_.pop_front();
        completed_bytes_ -= e->bytes;
        e->complete();
    }
}

void session_impl::after_process()
{
    if (!restart_pending_) return;
    restart_pending_ = false;
    close_handle_inline();
    if (cfg_.reconnect_on_expiry && state_ == session_state::expired) start_handle();
}

void session_impl::release_io()
{
    ++io_gen_;
    if (desc_.is_open()) desc_.release();
    fd_ = -1;
    fd_inode_ = 0;
    reading_ = writing_ = false;
    timer_.cancel();
    timer_waiting_ = false;
}

zhandle_t* session_impl::detach_handle()
{
    release_io();
    return std::exchange(zh_, nullptr);
}

void session_impl::close_handle_inline()
{
    if (zhandle_t* zh = detach_handle()) {
        zookeeper_close(zh);  // its callbacks (ZCLOSING) land in completed_
        schedule_completions();
    }
}

// ---- session events -----------------------------------------------------------------------------

void session_impl::set_state(session_state s)
{
    if (s == state_) return;
    state_ = s;
    auto waiters = std::move(state_waiters_);
    state_waiters_.clear();
    for (auto& w : waiters) w({}, s);
}

void session_impl::on_watcher(int type, int zstate, std::string path)
{
    if (type == ZOO_SESSION_EVENT) {
        if (zstate == ZOO_CONNECTED_STATE || zstate == ZOO_READONLY_STATE) on_connected();
        else if (zstate == ZOO_EXPIRED_SESSION_STATE) on_expired();
        else if (zstate == ZOO_AUTH_FAILED_STATE) {
            restart_pending_ = false;
            // Not from inside the C client: this runs from our queue, after zookeeper_process.
            close_handle_inline();
            set_state(session_state::disconnected);
            fail_connect_waiters(zk_errc::auth_failed);
            fail_connected_waiters(zk_errc::auth_failed);
        } else if (state_ == session_state::connected) on_suspended();
        return;
    }
    if (type == ZOO_CREATED_EVENT) {
        deliver_watch(exist_watches_, path, {watch_event_type::created, path});
    } else if (type == ZOO_DELETED_EVENT) {
        deliver_watch(data_watches_, path, {watch_event_type::deleted, path});
        deliver_watch(exist_watches_, path, {watch_event_type::deleted, path});
        deliver_watch(child_watches_, path, {watch_event_type::deleted, path});
    } else if (type == ZOO_CHANGED_EVENT) {
        deliver_watch(data_watches_, path, {watch_event_type::changed, path});
        deliver_watch(exist_watches_, path, {watch_event_type::changed, path});
    } else if (type == ZOO_CHILD_EVENT) {
        deliver_watch(child_watches_, path, {watch_event_type::child, path});
    }
}

void session_impl::on_connected()
{
    if (!zh_) return;
    connect_timer_.cancel();
    suspend_timer_.cancel();
    const clientid_t* id = zoo_client_id(zh_);
    if (id && id->client_id != last_session_id_) {
        ++generation_;
        last_session_id_ = id->client_id;
    }
    negotiated_ = std::chrono::milliseconds(zoo_recv_timeout(zh_));
    last_heard_ = clock::now();
    set_state(session_state::connected);
    auto cw = std::move(connect_waiters_);
    connect_waiters_.clear();
    for (auto& w : cw) w({});
    auto waiters = std::move(connected_waiters_);
    connected_waiters_.clear();
    for (auto& [gen, w] : waiters) w(gen == 0 || gen == generation_ ? error_code{} : error_code(errc::session_expired));
    notify_leases();
}

void session_impl::on_suspended()
{
    set_state(session_state::suspended);
    // The server expires the session after its timeout without hearing from us; we cannot learn
    // that while disconnected, so we presume it (as Curator does) and tell the leases: a holder
    // must not go on believing it holds the lock. Our clock starts at the last bytes we received;
    // the server's started when it received what they answer, a round trip (and any server delay)
    // earlier, so a timer of one full timeout fires late on a slow link (fault test 4b saw the next
    // holder granted 30 ms before this one was told, over a 100 ms round trip). Fire a tenth of the
    // timeout early: the holder is told before the server acts unless that delay exceeds it.
    auto timeout = negotiated_.count() > 0 ? negotiated_ : cfg_.session_timeout;
    suspend_timer_.expires_at(last_heard_ + timeout - timeout / 10);
    suspend_timer_.async_wait([self = shared_from_this()](error_code ec) {
        if (ec || self->state_ != session_state::suspended) return;
        for (auto& w : self->leases_)
            if (auto l = w.lock()) l->on_presumed_expired();
    });
    notify_leases();
}

void session_impl::on_expired()
{
    suspend_timer_.cancel();
    set_state(session_state::expired);
    auto waiters = std::move(connected_waiters_);
    connected_waiters_.clear();
    for (auto& [gen, w] : waiters) {
        if (gen == 0) connected_waiters_.emplace_back(gen, std::move(w));  // any session will do
        else w(errc::session_expired);
    }
    fail_all_watches(errc::session_expired);
    notify_leases();
    restart_pending_ = true;  // close the dead handle (and start afresh) once out of the C client
}

void session_impl::notify_leases()
{
    std::erase_if(leases_, [](const std::weak_ptr<lease_state>& w) { return w.expired(); });
    auto copy = leases_;
    for (auto& w : copy)
        if (auto l = w.lock()) l->on_session_state(state_, generation_);
}

void session_impl::add_lease(const std::shared_ptr<lease_state>& l)
{
    std::erase_if(leases_, [](const std::weak_ptr<lease_state>& w) { return w.expired(); });
    leases_.push_back(l);
}

void session_impl::fail_connected_waiters(error_code ec)
{
    auto waiters = std::move(connected_waiters_);
    connected_waiters_.clear();
    for (auto& [gen, w] : waiters) w(ec);
}

void session_impl::fail_connect_waiters(error_code ec)
{
    connect_timer_.cancel();
    auto cw = std::move(connect_waiters_);
    connect_waiters_.clear();
    for (auto& w : cw) w(ec);
}

void session_impl::register_watch(watch_kind kind, const std::string& path, const std::shared_ptr<watch_state>& w)
{
    watch_table& t = kind == watch_kind::data ? data_watches_ : kind == watch_kind::exist ? exist_watches_ : child_watches_;
    auto& v = t[path];
    std::erase_if(v, [](const std::weak_ptr<watch_state>& x) { return x.expired(); });
    v.push_back(w);
}

void session_impl::deliver_watch(watch_table& table, const std::string& path, watch_event ev)
{
    auto it = table.find(path);
    if (it == table.end()) return;
    auto list = std::move(it->second);
    table.erase(it);
    for (auto& w : list)
        if (auto s = w.lock()) s->fire({}, ev);
}

void session_impl::fail_all_watches(error_code ec)
{
    for (watch_table* t : {&data_watches_, &exist_watches_, &child_watches_}) {
        auto table = std::move(*t);
        t->clear();
        for (auto& [path, list] : table)
            for (auto& w : list)
                if (auto s = w.lock()) s->fire(ec, {watch_event_type::deleted, path});
    }
}

// ---- connect / close ----------------------------------------------------------------------------

void session_impl::connect(void_cb cb)
{
    auto post_result = [this](void_cb c, error_code ec) {
        asio::post(ex_, [c = std::move(c), ec]() mutable { c(ec); });
    };
    if (state_ == session_state::closed) return post_result(std::move(cb), errc::session_closed);
    if (auto ec = validate_servers(cfg_.servers)) return post_result(std::move(cb), ec);
    if (cfg_.session_timeout <= std::chrono::milliseconds::zero() || cfg_.connect_timeout <= std::chrono::milliseconds::zero())
        return post_result(std::move(cb), errc::invalid_argument);
    if (state_ == session_state::connected) return post_result(std::move(cb), {});
    if (!zh_) {
        start_handle();
        if (!zh_) return post_result(std::move(cb), errc::invalid_servers);
    }
    connect_waiters_.push_back(std::move(cb));
    if (connect_waiters_.size() == 1) {
        connect_timer_.expires_after(to_steady(cfg_.connect_timeout));
        connect_timer_.async_wait([self = shared_from_this()](error_code ec) {
            if (ec || self->state_ == session_state::connected) return;
            if (self->state_ == session_state::connecting) {
                // Never established: abandon the attempt, so a later connect starts afresh.
                self->close_handle_inline();
                self->set_state(session_state::disconnected);
                self->fail_connected_waiters(errc::not_connected);
            }
            // State first, then the upcalls: a handler may run inline and look at state().
            self->fail_connect_waiters(errc::connect_timeout);
        });
    }
}

void session_impl::wait_state_change(unique_function<void(error_code, session_state)> cb)
{
    state_waiters_.push_back(std::move(cb));
}

void session_impl::wait_connected(std::uint64_t generation, void_cb cb)
{
    auto post_result = [this](void_cb c, error_code ec) {
        asio::post(ex_, [c = std::move(c), ec]() mutable { c(ec); });
    };
    if (state_ == session_state::closed) return post_result(std::move(cb), errc::session_closed);
    if (generation != 0 && generation != generation_) return post_result(std::move(cb), errc::session_expired);
    if (state_ == session_state::expired && generation != 0) return post_result(std::move(cb), errc::session_expired);
    if (state_ == session_state::connected) return post_result(std::move(cb), {});
    if (state_ == session_state::disconnected) return post_result(std::move(cb), errc::not_connected);
    connected_waiters_.emplace_back(generation, std::move(cb));
}

// What async_close's helper thread hands back.
struct close_handover {
    std::vector<c_event*> results;  // owned by whoever takes them; never freed by the thread
    std::atomic<bool> ready{false};  // results complete (set before the pipe is closed)
};

void session_impl::close(void_cb cb)
{
    if (state_ == session_state::closed && !zh_) {
        asio::post(ex_, [cb = std::move(cb)]() mutable { cb({}); });
        return;
    }
    connect_timer_.cancel();
    suspend_timer_.cancel();
    set_state(session_state::closed);
    fail_connect_waiters(errc::session_closed);
    fail_connected_waiters(errc::session_closed);
    fail_all_watches(errc::session_closed);
    notify_leases();

    // The C client's close sends the close request and waits (poll) for the server's reply. Keep
    // that off the executor: a short-lived thread owns the handle from here on.
    // The thread touches nothing of Asio's: an io_context may be stopped and destroyed as soon as
    // this close has completed (a program that calls stop() when its main coroutine ends), and an
    // executor (even a copy, even one tracking work) refers into it. So the thread hands its
    // results over in a plain struct and then closes its end of a pipe; the session's executor
    // waits on the other end, and that pending wait keeps run() going meanwhile.
    zhandle_t* zh = detach_handle();
    std::shared_ptr<asio::posix::stream_descriptor> done;
    int signal = -1;
    if (zh && zoo_state(zh) == ZOO_CONNECTED_STATE) done = close_signal(signal);
    if (!done) {  // nothing to send (does not block), or no pipe (blocks, as the destructor does)
        if (zh) zookeeper_close(zh);
        schedule_completions();
        asio::post(ex_, [cb = std::move(cb)]() mutable { cb({}); });
        return;
    }
    auto h = std::make_shared<close_handover>();
    // The wait goes first: a reactor wait sees only readiness that comes after it (edge-triggered).
    auto& d = *done;
    d.async_wait(asio::posix::descriptor_base::wait_read, [self = shared_from_this(), done = std::move(done), h,
                                                           cb = std::move(cb)](error_code ec) mutable {
        if (ec == asio::error::operation_aborted) return;  // torn down first: the results leak, never freed off-executor
        // Only the thread's close makes the pipe readable, after it set `ready`; were it ever not
        // set, the results are left alone (leaked) rather than raced for.
        if (ec || !h->ready.load(std::memory_order_acquire)) return cb(ec);
        for (c_event* e : h->results) self->enqueue(std::unique_ptr<c_event>(e));
        h->results.clear();
        self->run_completions();
        cb({});
    });
    auto close_and_signal = [h, zh, signal] {
        std::vector<std::unique_ptr<c_event>> sink;
        tl_sink = &sink;
        zookeeper_close(zh);
        tl_sink = nullptr;
        for (auto& e : sink) h->results.push_back(e.release());
        h->ready.store(true, std::memory_order_release);
        ::close(signal);  // from here on the thread only drops its reference to `h`
    };
    try {
        std::thread(close_and_signal).detach();
    } catch (const std::system_error&) {  // no thread to be had: close here, blocking
        close_and_signal();
    }
}

std::shared_ptr<asio::posix::stream_descriptor> session_impl::close_signal(int& write_end)
{
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return nullptr;
    auto d = std::make_shared<asio::posix::stream_descriptor>(ex_);
    error_code ec;
    d->assign(fds[0], ec);
    if (ec) {
        ::close(fds[0]);
        ::close(fds[1]);
        return nullptr;
    }
    write_end = fds[1];
    return d;
}

void session_impl::close_now()
{
    if (state_ == session_state::closed && !zh_) return;
    connect_timer_.cancel();
    suspend_timer_.cancel();
    set_state(session_state::closed);
    fail_connect_waiters(errc::session_closed);
    fail_connected_waiters(errc::session_closed);
    fail_all_watches(errc::session_closed);
    notify_leases();
    close_handle_inline();
}

// ---- requests -----------------------------------------------------------------------------------

template <class Req> bool session_impl::submit(std::unique_ptr<Req>& r, int rc)
{
    if (rc == ZOK) {
        r.release();  // the C client owns it until its callback
        drive();
        return true;
    }
    // A synchronous failure: the callback never runs; complete from the queue, not from here.
    r->ec = (rc == ZINVALIDSTATE && state_ != session_state::connected) ? no_handle_error() : make_zk_error(rc);
    completed_.push_back(std::move(r));
    schedule_completions();
    return false;
}

error_code session_impl::check_request_size(std::size_t path_bytes, std::size_t data_bytes, std::size_t ops) const noexcept
{
    // Request header (xid, type: 8), length prefixes, the ACL (world:anyone or auth: < 48), flags,
    // and per multi op its header: generous, so a request we pass is never one the server drops.
    constexpr std::size_t framing = 128, per_op = 64;
    const std::size_t limit = cfg_.max_request_bytes;
    if (path_bytes > limit || data_bytes > limit || ops > limit / per_op) return errc::request_too_large;
    if (path_bytes + data_bytes + framing + ops * per_op > limit) return errc::request_too_large;
    return {};
}

void session_impl::create(const std::string& path, std::string_view data, create_mode mode, create_cb cb)
{
    auto r = std::make_unique<create_req>();
    r->s = this;
    r->cb = std::move(cb);
    if (!zh_) { r->ec = no_handle_error(); completed_.push_back(std::move(r)); return schedule_completions(); }
    if (auto ec = check_request_size(path.size(), data.size())) { r->ec = ec; completed_.push_back(std::move(r)); return schedule_completions(); }
    const struct ACL_vector* acl = has_auth() ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
    int rc = zoo_acreate2(zh_, path.c_str(), data.data(), static_cast<int>(data.size()), acl, create_flags(mode),
                          &on_create, r.get());
    submit(r, rc);
}

void session_impl::remove(const std::string& path, std::int32_t version, void_cb cb)
{
    auto r = std::make_unique<void_req>();
    r->s = this;
    r->cb = std::move(cb);
    if (!zh_) { r->ec = no_handle_error(); completed_.push_back(std::move(r)); return schedule_completions(); }
    submit(r, zoo_adelete(zh_, path.c_str(), version, &on_void, r.get()));
}

void session_impl::exists(const std::string& path, std::shared_ptr<watch_state> w, stat_cb cb)
{
    auto r = std::make_unique<exists_req>();
    r->s = this;
    r->cb = std::move(cb);
    r->w = std::move(w);
    r->path = path;
    if (!zh_) { r->ec = no_handle_error(); completed_.push_back(std::move(r)); return schedule_completions(); }
    submit(r, zoo_aexists(zh_, path.c_str(), r->w ? 1 : 0, &on_exists, r.get()));
}

void session_impl::get_data(const std::string& path, std::shared_ptr<watch_state> w, data_cb cb)
{
    auto r = std::make_unique<data_req>();
    r->s = this;
    r->cb = std::move(cb);
    r->w = std::move(w);
    r->path = path;
    if (!zh_) { r->ec = no_handle_error(); completed_.push_back(std::move(r)); return schedule_completions(); }
    submit(r, zoo_aget(zh_, path.c_str(), r->w ? 1 : 0, &on_data, r.get()));
}

void session_impl::set_data(const std::string& path, std::string_view data, std::int32_t version,
                            unique_function<void(error_code, zklock::stat)> cb)
{
    auto r = std::make_unique<set_req>();
    r->s = this;
    r->cb = std::move(cb);
    if (!zh_) { r->ec = no_handle_error(); completed_.push_back(std::move(r)); return schedule_completions(); }
    if (auto ec = check_request_size(path.size(), data.size())) { r->ec = ec; completed_.push_back(std::move(r)); return schedule_completions(); }
    submit(r, zoo_aset(zh_, path.c_str(), data.data(), static_cast<int>(data.size()), version, &on_set, r.get()));
}

void session_impl::get_children(const std::string& path, std::shared_ptr<watch_state> w, children_cb cb)
{
    auto r = std::make_unique<children_req>();
    r->s = this;
    r->cb = std::move(cb);
    r->w = std::move(w);
    r->path = path;
    if (!zh_) { r->ec = no_handle_error(); completed_.push_back(std::move(r)); return schedule_completions(); }
    submit(r, zoo_aget_children(zh_, path.c_str(), r->w ? 1 : 0, &on_children, r.get()));
}

void session_impl::multi(const std::vector<multi_op>& ops, multi_cb cb)
{
    auto r = std::make_unique<multi_req>();
    r->s = this;
    r->cb = std::move(cb);
    if (!zh_) { r->ec = no_handle_error(); completed_.push_back(std::move(r)); return schedule_completions(); }
    {
        std::size_t path_bytes = 0, data_bytes = 0;
        for (const auto& op : ops) {
            path_bytes += op.path.size();
            data_bytes += op.data.size();
        }
        if (auto ec = check_request_size(path_bytes, data_bytes, ops.size() + 1)) {
            r->ec = ec;
            completed_.push_back(std::move(r));
            return schedule_completions();
        }
    }
    const std::size_t n = ops.size();
    r->ops.resize(n);
    r->results.resize(n);
    r->paths.reserve(n);
    r->datas.reserve(n);
    r->path_buffers.resize(n);
    r->stats.resize(n);
    const struct ACL_vector* acl = has_auth() ? &ZOO_CREATOR_ALL_ACL : &ZOO_OPEN_ACL_UNSAFE;
    for (std::size_t i = 0; i < n; ++i) {
        const multi_op& op = ops[i];
        const std::string& p = r->paths.emplace_back(op.path);
        const std::string& d = r->datas.emplace_back(op.data);
        switch (op.type) {
        case multi_op::kind::create:
            r->path_buffers[i].resize(p.size() + 32);
            zoo_create_op_init(&r->ops[i], p.c_str(), d.data(), static_cast<int>(d.size()), acl,
                               create_flags(op.mode), r->path_buffers[i].data(),
                               static_cast<int>(r->path_buffers[i].size()));
            break;
        case multi_op::kind::remove: zoo_delete_op_init(&r->ops[i], p.c_str(), op.version); break;
        case multi_op::kind::set_data:
            zoo_set_op_init(&r->ops[i], p.c_str(), d.data(), static_cast<int>(d.size()), op.version, &r->stats[i]);
            break;
        case multi_op::kind::check: zoo_check_op_init(&r->ops[i], p.c_str(), op.version); break;
        }
    }
    submit(r, zoo_amulti(zh_, static_cast<int>(n), r->ops.data(), r->results.data(), &on_multi, r.get()));
}

namespace {

void create_containers_from(const session_ptr& s, std::string dir, std::size_t from, session_impl::void_cb cb)
{
    const std::size_t slash = dir.find('/', from);
    std::string prefix = dir.substr(0, slash);
    s->create(prefix, {}, create_mode::container,
              [s, dir = std::move(dir), slash, cb = std::move(cb)](error_code ec, std::string, zklock::stat) mutable {
                  if (ec && ec != zk_errc::node_exists) return cb(ec);
                  if (slash == std::string::npos) return cb({});
                  create_containers_from(s, std::move(dir), slash + 1, std::move(cb));
              });
}

}  // namespace

void session_impl::create_containers(const std::string& dir, void_cb cb)
{
    create_containers_from(shared_from_this(), dir, 1, std::move(cb));
}

// ---- type-erased entry points -------------------------------------------------------------------

namespace {

template <class... Args> std::shared_ptr<stored_handler<Args...>> store(handler<Args...> h, const session_ptr& s)
{
    return std::make_shared<stored_handler<Args...>>(std::move(h), s->executor());
}

}  // namespace

void initiate_connect(session_ptr s, handler<error_code> h)
{
    auto sh = store(std::move(h), s);
    s->connect([sh](error_code ec) { sh->complete(ec); });
}

void initiate_close(session_ptr s, handler<error_code> h)
{
    auto sh = store(std::move(h), s);
    s->close([sh](error_code ec) { sh->complete(ec); });
}

void initiate_wait_state(session_ptr s, handler<error_code, session_state> h)
{
    auto sh = store(std::move(h), s);
    allow_terminal_cancel(sh, s->executor());
    s->wait_state_change([sh](error_code ec, session_state st) {
        if (*sh) sh->complete(ec, st);
    });
}

void initiate_create(session_ptr s, std::string path, std::string data, create_mode mode,
                     handler<error_code, std::string, zklock::stat> h)
{
    auto sh = store(std::move(h), s);
    s->create(path, data, mode, [sh](error_code ec, std::string p, zklock::stat st) { sh->complete(ec, std::move(p), st); });
}

void initiate_remove(session_ptr s, std::string path, std::int32_t version, handler<error_code> h)
{
    auto sh = store(std::move(h), s);
    s->remove(path, version, [sh](error_code ec) { sh->complete(ec); });
}

void initiate_exists(session_ptr s, std::string path, handler<error_code, std::optional<zklock::stat>> h)
{
    auto sh = store(std::move(h), s);
    allow_terminal_cancel(sh, s->executor());
    s->exists(path, nullptr, [sh](error_code ec, std::optional<zklock::stat> st) {
        if (*sh) sh->complete(ec, st);
    });
}

void initiate_watch_exists(session_ptr s, std::string path,
                           handler<error_code, std::optional<zklock::stat>, zklock::watch> h)
{
    auto sh = store(std::move(h), s);
    allow_terminal_cancel(sh, s->executor());
    auto w = s->make_watch();
    s->exists(path, w, [sh, w](error_code ec, std::optional<zklock::stat> st) {
        if (*sh) sh->complete(ec, st, ec ? zklock::watch{} : zklock::watch{w});
    });
}

void initiate_get_data(session_ptr s, std::string path, handler<error_code, std::string, zklock::stat> h)
{
    auto sh = store(std::move(h), s);
    allow_terminal_cancel(sh, s->executor());
    s->get_data(path, nullptr, [sh](error_code ec, std::string d, zklock::stat st) {
        if (*sh) sh->complete(ec, std::move(d), st);
    });
}

void initiate_watch_data(session_ptr s, std::string path,
                         handler<error_code, std::string, zklock::stat, zklock::watch> h)
{
    auto sh = store(std::move(h), s);
    allow_terminal_cancel(sh, s->executor());
    auto w = s->make_watch();
    s->get_data(path, w, [sh, w](error_code ec, std::string d, zklock::stat st) {
        if (*sh) sh->complete(ec, std::move(d), st, ec ? zklock::watch{} : zklock::watch{w});
    });
}

void initiate_set_data(session_ptr s, std::string path, std::string data, std::int32_t version,
                       handler<error_code, zklock::stat> h)
{
    auto sh = store(std::move(h), s);
    s->set_data(path, data, version, [sh](error_code ec, zklock::stat st) { sh->complete(ec, st); });
}

void initiate_get_children(session_ptr s, std::string path, handler<error_code, std::vector<std::string>> h)
{
    auto sh = store(std::move(h), s);
    allow_terminal_cancel(sh, s->executor());
    s->get_children(path, nullptr, [sh](error_code ec, std::vector<std::string> c) {
        if (*sh) sh->complete(ec, std::move(c));
    });
}

void initiate_watch_children(session_ptr s, std::string path,
                             handler<error_code, std::vector<std::string>, zklock::watch> h)
{
    auto sh = store(std::move(h), s);
    allow_terminal_cancel(sh, s->executor());
    auto w = s->make_watch();
    s->get_children(path, w, [sh, w](error_code ec, std::vector<std::string> c) {
        if (*sh) sh->complete(ec, std::move(c), ec ? zklock::watch{} : zklock::watch{w});
    });
}

void initiate_multi(session_ptr s, std::vector<multi_op> ops, handler<error_code, std::vector<multi_result>> h)
{
    auto sh = store(std::move(h), s);
    s->multi(ops, [sh](error_code ec, std::vector<multi_result> r) { sh->complete(ec, std::move(r)); });
}

void initiate_watch_wait(std::shared_ptr<watch_state> w, handler<error_code, watch_event> h)
{
    if (!w) {  // an empty watch has no session: see lease.cpp's post_now
        stored_handler<error_code, watch_event> sh(std::move(h), asio::system_executor());
        return sh.post(errc::invalid_argument, {});
    }
    if (w->has_waiter()) {  // copies of a watch share its state: one wait at a time
        stored_handler<error_code, watch_event> sh(std::move(h), w->executor());
        return sh.post(errc::operation_in_progress, {});
    }
    auto sh = std::make_shared<stored_handler<error_code, watch_event>>(std::move(h), w->executor());
    auto slot = sh->slot();
    if (slot.is_connected()) {
        std::weak_ptr<watch_state> weak = w;
        slot.assign([weak, sh_weak = std::weak_ptr(sh)](asio::cancellation_type) {
            auto ws = weak.lock();
            if (!ws) return;
            asio::post(ws->executor(), [weak, sh_weak] {
                auto ws2 = weak.lock();
                auto h2 = sh_weak.lock();
                if (!ws2 || !h2 || !*h2) return;
                ws2->cancel_wait();
                h2->complete(asio::error::operation_aborted, {});
            });
        });
    }
    w->wait([sh](error_code ec, watch_event ev) {
        if (*sh) sh->complete(ec, std::move(ev));
    });
}

}  // namespace zklock::detail

// ---- zklock::session ----------------------------------------------------------------------------

namespace zklock {

session::session(executor_type ex, const session_config& config)
    : impl_(std::make_shared<detail::session_impl>(std::move(ex), config))
{
}

session& session::operator=(session&& other) noexcept
{
    if (this != &other) {
        if (impl_) impl_->close_now();
        impl_ = std::move(other.impl_);
    }
    return *this;
}

session::~session()
{
    if (impl_) impl_->close_now();
}

session::executor_type session::get_executor() const noexcept { return impl_->executor(); }
const session_config& session::config() const noexcept { return impl_->config(); }
session_state session::state() const noexcept { return impl_->state(); }
std::int64_t session::session_id() const noexcept { return impl_->session_id(); }
std::chrono::milliseconds session::negotiated_timeout() const noexcept { return impl_->negotiated_timeout(); }
std::uint64_t session::generation() const noexcept { return impl_->generation(); }

}  // namespace zklock
