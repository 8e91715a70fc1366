// session_impl: the C handle's life, the session's events applied from session_fsm, connect and
// close, and the requests.
#include "bridge/session_impl.hpp"

#include "bridge/close_service.hpp"
#include "core/deadline.hpp"
#include "bridge/tls_context.hpp"

#include <zklock/detail/zk_path.hpp>
#include <zklock/detail/server_list.hpp>

#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>

#include <atomic>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

namespace zklock::detail {

session_impl::session_impl(asio::any_io_executor ex, session_config cfg)
    : ex_(std::move(ex)), cfg_(std::move(cfg)), log_(std::make_shared<log_sink>(cfg_.logger, cfg_.logger_level)), core_(*this, *this, cfg_.session_timeout, cfg_.reconnect_on_expiry),
      desc_(ex_), timer_(ex_), connect_timer_(ex_), resolver_(ex_),
      // After the I/O objects above, which register the reactor: an execution context shuts its
      // services down newest first, so the close thread is joined before the reactor destroys the
      // waits still pending (a close's wait holds the results of the C callbacks).
      closer_(asio::use_service<close_service>(asio::query(ex_, asio::execution::context)))
{
    closer_.enroll(this);
}

session_impl::~session_impl()
{
    closer_.withdraw(this);
    // Only when the session was never closed (zklock::session closes it): a handle that is not
    // connected sends nothing, so this does not block.
    if (zh_) {
        release_io();
        const log_scope scope(log_.get());
        zookeeper_close(std::exchange(zh_, nullptr));
    }
    // What the operations keep per session goes while everything of the session is still there.
    drop_extensions();
}

void session_impl::enqueue(std::unique_ptr<c_event> e)
{
    completed_bytes_ += e->bytes;
    completed_.push_back(std::move(e));
}

const ACL_vector* session_impl::node_acl() const noexcept
{
    // "auth" stands for every identity the session authenticated as: the digest user, the
    // client certificate's x509 subject.
    static ACL creator_all_world_read[] = {{ZOO_PERM_ALL, {const_cast<char*>("auth"), const_cast<char*>("")}},
                                           {ZOO_PERM_READ, {const_cast<char*>("world"), const_cast<char*>("anyone")}}};
    static ACL_vector creator_all_world_read_acl = {2, creator_all_world_read};
    if (!cfg_.digest_auth.empty()) return &ZOO_CREATOR_ALL_ACL;
    if (cfg_.tls.enabled && !cfg_.tls.cert_file.empty()) return &creator_all_world_read_acl;
    return &ZOO_OPEN_ACL_UNSAFE;
}

void session_impl::note_tls_outcome()
{
    const auto o = chan_->take_tls_outcome();
    if (!o) return;
    if (!o->ec) {  // a handshake passed: refusals seen before count no more
        tls_refusals_.clear();
        tls_last_refusal_ = {};
        return;
    }
    const char* server = zh_ ? zoo_get_current_server(zh_) : nullptr;
    client_log(("tls: " + std::string(server ? server : "the server") + ": " + o->ec.message()).c_str());
    tls_last_refusal_ = o->ec;
    // Only TLS's own verdicts count here: a connection that ends may be a server going down.
    if (!o->certain) return;
    auto it = std::find_if(tls_refusals_.begin(), tls_refusals_.end(),
                           [&](const auto& r) { return same_address(r.first, o->peer); });
    if (it != tls_refusals_.end()) it->second = o->ec;
    else tls_refusals_.emplace_back(o->peer, o->ec);
    const bool all = std::all_of(tls_hosts_.begin(), tls_hosts_.end(), [&](const auto& h) {
        return std::any_of(tls_refusals_.begin(), tls_refusals_.end(),
                           [&](const auto& r) { return same_address(r.first, h.first); });
    });
    if (all) on_tls_refused(o->ec);
}

void session_impl::on_tls_refused(error_code ec)
{
    // Every server refused the handshake, for a reason that retrying does not change by itself:
    // an async_connect waiting for a first connection is told now, not at its timeout.
    if (state() != session_state::connecting || connect_waiters_.empty()) return;
    core_.apply(core_.fsm_events().on_connect_timeout(ec));
}

error_code session_impl::start_handle()
{
    set_client_log_level(cfg_.client_log_level);
    static constexpr int levels[] = {ZOO_LOG_LEVEL_ERROR, ZOO_LOG_LEVEL_ERROR, ZOO_LOG_LEVEL_WARN, ZOO_LOG_LEVEL_INFO,
                                     ZOO_LOG_LEVEL_DEBUG};
    raise_client_log_level(
        std::max(levels[std::clamp(cfg_.client_log_level, 0, 4)], log_->has_logger() ? zoo_log_level(cfg_.logger_level) : 0));
    const log_scope scope(log_.get());
    // The list is resolved first: the C client is handed numeric addresses, so zookeeper_init
    // fails only for want of memory (or, should a numeric address not parse, as for a name that
    // does not resolve), and never looks a name up itself.
    error_code ec;
    if (cfg_.tls.enabled && !tls_) {
        tls_ = tls_context::create(cfg_.tls, ec);
        if (ec) return ec;
    }
    tls_refusals_.clear();
    tls_last_refusal_ = {};
    const split_servers parts = split_chroot(cfg_.servers);
    if (auto l = numeric_servers(parts.hosts)) {
        if ((ec = l->finish())) return ec;
        return open_handle(std::move(*l));
    }
    // A host name: looked up off the executor (getaddrinfo may wait on DNS for many seconds).
    // Meanwhile the state is connecting, so that the connect's timeout, its cancellation and
    // close end the attempt as they end a handle's.
    const std::uint64_t lookup = handle_lookup_ = ++lookups_;
    core_.apply(core_.fsm_events().on_handle_started());
    resolve_servers(parts.hosts, [this, lookup, hosts = std::string(parts.hosts)](error_code ec, pending_list l) {
        if (lookup != handle_lookup_) return;  // the attempt was abandoned, or the session closed
        handle_lookup_ = 0;
        // set_servers changed the list meanwhile: look the new one up (or take its addresses).
        if (!same_entries(split_chroot(cfg_.servers).hosts, hosts)) ec = start_handle();
        else if (!ec) ec = open_handle(std::move(l));
        if (ec) core_.apply(core_.fsm_events().on_connect_timeout(ec));  // ends the attempt
    });
    return {};
}

error_code session_impl::open_handle(pending_list l)
{
    const log_scope scope(log_.get());
    const split_servers parts = split_chroot(cfg_.servers);
    errno = 0;
    chan_ = std::make_shared<client_channel>();  // the last handle's may still be closing its socket
    if (tls_) set_tls_setup(l);
    zh_ = zookeeper_init2((l.numeric + std::string(parts.chroot)).c_str(), &global_watcher,
                          to_session_timeout_ms(cfg_.session_timeout), nullptr, this, 0, &client_log);
    if (!zh_) {
        if (errno == ENOMEM) return {ENOMEM, boost::system::system_category()};
        return errc::unresolvable_host;
    }
    ++handles_;
    tls_only_.clear();
    reconnect_attempts_ = 0;
    reconnect_at_ = {};
    refused_ = {};
    pending_servers_.reset();  // the handle has cfg_.servers
    installed_servers_ = std::move(l.numeric);
    // The 3.8 client re-resolves host names on every zookeeper_interest call unless told not to.
    zoo_set_servers_resolution_delay(zh_, -1);
    if (!cfg_.digest_auth.empty())
        zoo_add_auth(zh_, "digest", cfg_.digest_auth.data(), static_cast<int>(cfg_.digest_auth.size()),
                     &noop_void_completion, nullptr);
    core_.apply(core_.fsm_events().on_handle_started());
    drive();
    return {};
}

// ---- session events -----------------------------------------------------------------------------

void session_impl::apply_io(const session_effects& e)
{
    if (e.cancel_connect_timer) connect_timer_.cancel();
    if (e.close_handle) {
        restart_pending_ = false;
        close_handle_inline();  // never connected, expired or refused: sends nothing, does not block
    }
    if (e.state_changed) {
        log_state();
        auto waiters = std::move(state_waiters_);
        state_waiters_.clear();
        for (auto& w : waiters) w({}, state());
    }
    if (e.connects) {
        connect_timer_.cancel();
        auto cw = std::move(connect_waiters_);
        connect_waiters_.clear();
        for (auto& [id, w] : cw) w(*e.connects);
    }
}

void session_impl::fail_watches(error_code ec) { watches_.fail_all(ec); }

void session_impl::log_state()
{
    const auto st = state();
    const auto level = st == session_state::suspended || st == session_state::expired ? log_level::warning
                       : st == session_state::connected || st == session_state::closed ? log_level::info
                                                                                       : log_level::debug;
    if (!log_->wants(level)) return;
    std::string m;
    switch (st) {
    case session_state::connected: {
        char id[24];
        std::snprintf(id, sizeof id, "0x%llx", static_cast<unsigned long long>(session_id()));
        const char* server = zh_ ? zoo_get_current_server(zh_) : nullptr;
        m = std::string(connections_ > 1 ? "reconnected to " : "connected to ") + (server ? server : "?") + ", session " +
            id + ", session timeout " + std::to_string(negotiated_timeout().count()) + " ms";
        break;
    }
    case session_state::suspended: m = "connection lost: suspended, reconnecting (the session lives on for its timeout)"; break;
    case session_state::expired: m = "session expired: its ephemeral nodes, leases and watches are gone"; break;
    case session_state::closed: m = "session closed"; break;
    default: m = std::string("session ") + to_string(st); break;
    }
    log_->event(level, m);
}

void session_impl::on_watcher(int type, int zstate, std::string path)
{
    if (type != ZOO_SESSION_EVENT) return watches_.deliver(type, path);
    if (zstate == ZOO_CONNECTED_STATE || zstate == ZOO_READONLY_STATE) {
        if (!zh_) return;
        const clientid_t* id = zoo_client_id(zh_);
        if (id) log_->set_session_id(id->client_id);
        if (state() != session_state::connected) {
            if (was_connected_) metrics_.reconnect();
            was_connected_ = true;
            ++connections_;
        }
        reconnect_attempts_ = 0;
        reconnect_at_ = {};
        refused_ = {};
        tls_only_.clear();
        core_.apply(core_.fsm_events().on_connected(id ? id->client_id : 0, std::chrono::milliseconds(zoo_recv_timeout(zh_)), clock::now()));
        follow_ensemble();
    } else if (zstate == ZOO_EXPIRED_SESSION_STATE) {
        metrics_.expiry();
        auto e = core_.fsm_events().on_expired();
        // This runs from the queue of completions: the handle is closed (and a fresh one started)
        // once the queue is done (after_process).
        restart_pending_ = e.close_handle;
        restart_starts_ = e.start_handle;
        e.close_handle = e.start_handle = false;
        core_.apply(e);
    } else if (zstate == ZOO_AUTH_FAILED_STATE) {
        core_.apply(core_.fsm_events().on_auth_failed());
    } else {
        core_.apply(core_.fsm_events().on_connection_lost());
    }
}

// ---- the leader probe ---------------------------------------------------------------------------

void session_impl::leader_request(request_base& r) { r.leader_sent = core_.leader_request(); }

void request_base::confirm_leader() const
{
    if (!ec && leader_sent != std::chrono::steady_clock::time_point{}) s->on_leader_answer(leader_sent);
}

void session_impl::send_probe()
{
    // Only a connected handle sends: a request queued while cut off is failed by the C client
    // on the reconnect anyway.
    if (!zh_ || state() != session_state::connected) return;
    auto r = std::make_unique<void_req>();
    r->s = this;
    r->cb = [](error_code) {};
    leader_request(*r);
    begin_request();
    const log_scope scope(log_.get());
    const int rc = zoo_async(zh_, "/", &on_sync, r.get());
    submit(std::move(r), rc, request_type::sync);
}

void session_impl::register_watch(watch_kind kind, std::string_view path, const std::shared_ptr<watch_state>& w)
{
    watches_.add(kind, path, w);
}

// ---- connect / close ----------------------------------------------------------------------------

std::uint64_t session_impl::connect(void_cb cb)
{
    auto post_result = [this](void_cb c, error_code ec) {
        asio::post(ex_, [c = std::move(c), ec]() mutable { c(ec); });
        return std::uint64_t{0};
    };
    if (state() == session_state::closed) return post_result(std::move(cb), errc::session_closed);
    if (auto ec = validate_servers(cfg_.servers)) return post_result(std::move(cb), ec);
    if (cfg_.session_timeout <= std::chrono::milliseconds::zero() || cfg_.connect_timeout <= std::chrono::milliseconds::zero())
        return post_result(std::move(cb), errc::invalid_argument);
    if (state() == session_state::connected) return post_result(std::move(cb), {});
    if (!zh_ && !handle_lookup_)  // (a lookup under way: its handle comes)
        if (auto ec = start_handle()) return post_result(std::move(cb), ec);
    const std::uint64_t id = ++next_connect_id_;
    connect_waiters_.emplace_back(id, std::move(cb));
    if (connect_waiters_.size() == 1) {
        connect_timer_.expires_after(to_steady(cfg_.connect_timeout));
        connect_timer_.async_wait([self = shared_from_this()](error_code ec) {
            if (ec || self->state() == session_state::connected) return;
            error_code why = self->refused_;
            if (!why) why = self->tls_last_refusal_;
            self->core_.apply(self->core_.fsm_events().on_connect_timeout(why));
        });
    }
    return id;
}

void session_impl::cancel_connect(std::uint64_t id)
{
    auto it = std::find_if(connect_waiters_.begin(), connect_waiters_.end(), [id](auto& w) { return w.first == id; });
    if (it == connect_waiters_.end()) return;
    auto cb = std::move(it->second);
    connect_waiters_.erase(it);
    if (connect_waiters_.empty()) {
        connect_timer_.cancel();
        core_.apply(core_.fsm_events().on_connect_abandoned());
    }
    cb(asio::error::operation_aborted);
}

void session_impl::wait_state_change(unique_function<void(error_code, session_state)> cb)
{
    state_waiters_.push_back(std::move(cb));
}

namespace {

// The longest async_close waits for the C client's close (see close()).
constexpr auto close_bound = std::chrono::milliseconds(2000);

// What the close thread hands back.
struct close_handover {
    std::vector<c_event*> results;   // owned by whoever takes them; never freed by the thread
    std::atomic<bool> ready{false};  // results complete (set before the pipe is closed)
    ~close_handover()
    {
        // Only if the session's wait never ran (its context was destroyed first): then the close
        // thread is joined by now, and this runs where the context is destroyed.
        if (ready.load(std::memory_order_acquire))
            for (c_event* e : results) delete e;
    }
};

}  // namespace

void session_impl::close(void_cb cb)
{
    if (state() == session_state::closed && !zh_) {
        asio::post(ex_, [cb = std::move(cb)]() mutable { cb({}); });
        return;
    }
    core_.apply(core_.fsm_events().on_close());
    handle_lookup_ = servers_lookup_ = 0;
    resolver_.cancel();  // a lookup under way completes its handler now; getaddrinfo itself runs on

    // The C client's close sends the close request and waits (poll) for the server's reply. Keep
    // that off the executor: the close_service's thread owns the handle from here on.
    // That thread touches nothing of Asio's: an io_context may be stopped and destroyed as soon as
    // this close has completed (a program that calls stop() when its main coroutine ends), and an
    // executor (even a copy, even one tracking work) refers into it. So the thread hands its
    // results over in a plain struct and then closes its end of a pipe; the session's executor
    // waits on the other end, and that pending wait keeps run() going meanwhile.
    zhandle_t* zh = detach_handle();
    std::shared_ptr<asio::posix::stream_descriptor> done;
    int signal = -1;
    if (zh && zoo_state(zh) == ZOO_CONNECTED_STATE) done = close_signal(signal);
    if (!done) {  // nothing to send (does not block), or no pipe (blocks: the last resort)
        const log_scope scope(log_.get());
        if (zh) zookeeper_close(zh);
        schedule_completions();
        asio::post(ex_, [cb = std::move(cb)]() mutable { cb({}); });
        return;
    }
    auto h = std::make_shared<close_handover>();
    // `cb` completes when the thread's close is done, or at close_bound, whichever comes first:
    // the C client can take longer than its own 1.5 s wait (flushing a full send buffer first, up
    // to 3 s more). The close then goes on; the requests it fails complete when it is done.
    auto once = std::make_shared<void_cb>(std::move(cb));
    auto bound = std::make_shared<asio::steady_timer>(ex_, close_bound);
    bound->async_wait([once](error_code ec) {
        if (!ec && *once) std::exchange(*once, {})({});
    });
    // The wait goes first: a reactor wait sees only readiness that comes after it (edge-triggered).
    auto& d = *done;
    d.async_wait(asio::posix::descriptor_base::wait_read, [self = shared_from_this(), done = std::move(done), h, once,
                                                           bound](error_code ec) mutable {
        if (ec == asio::error::operation_aborted) return;  // torn down first: ~close_handover frees the results
        bound->cancel();
        auto finish = [&](error_code e) {
            if (*once) std::exchange(*once, {})(e);
        };
        // Only the thread's close makes the pipe readable, after it set `ready`; were it ever not
        // set, the results are left alone (leaked) rather than raced for.
        if (ec || !h->ready.load(std::memory_order_acquire)) return finish(ec);
        for (c_event* e : h->results) self->enqueue(std::unique_ptr<c_event>(e));
        h->results.clear();
        self->run_completions();
        finish({});
    });
    unique_function<void()> close_and_signal = [h, zh, signal, log = log_] {
        std::vector<std::unique_ptr<c_event>> sink;
        {
            redirect_results redirect(sink);
            const log_scope scope(log.get());
            zookeeper_close(zh);
        }
        for (auto& e : sink) h->results.push_back(e.release());
        h->ready.store(true, std::memory_order_release);
        ::close(signal);  // from here on the thread only drops its reference to `h`
    };
    if (!closer_.run(close_and_signal)) close_and_signal();  // no thread to be had: close here, blocking
}

zhandle_t* session_impl::shut_down(graveyard& g)
{
    shut_down_ = true;
    zhandle_t* zh = detach_handle();
    for (auto& [id, w] : connect_waiters_) g.bury(std::move(w));
    connect_waiters_.clear();
    for (auto& w : state_waiters_) g.bury(std::move(w));
    state_waiters_.clear();
    for (auto& e : completed_) {
        e->abandon(g);
        g.bury(std::move(e));
    }
    completed_.clear();
    completed_bytes_ = 0;
    watches_.abandon(g);
    // Closed, those waiting for a connection buried, the observers told.
    core_.shut_down(g);
    return zh;
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

// ---- requests -----------------------------------------------------------------------------------

template <class Req> void session_impl::refuse(std::unique_ptr<Req> r, error_code ec)
{
    // Shut down with its execution context: what the request holds goes now, never called. (Asio
    // destroys a coroutine frame after the context's services have shut down, from a posted
    // handler: a lease in the frame then releases, and a queued request would hold the lease,
    // which holds the session.)
    if (shut_down_) {
        graveyard g;
        r->abandon(g);
        r.reset();
        return;
    }
    // Completed from the queue, never from the initiating call.
    r->ec = ec;
    completed_.push_back(std::move(r));
    schedule_completions();
}

void session_impl::begin_request()
{
    if (!batch_open_) {
        batch_open_ = true;
        batch_requests_ = 0;
        asio::post(ex_, [self = shared_from_this()] { self->end_batch(); });
    }
    // The requests of a turn are held until it ends (end_batch), and a long batch goes out in
    // parts, so that the server starts on it while we add more.
    ++batch_requests_;
    if (batch_requests_ == 1) {
        hold_output();
    } else if ((batch_requests_ - 1) % max_batch_requests == 0) {
        chan_->hold(false);
        hold_output();
    }
}

void session_impl::end_batch()
{
    batch_open_ = false;
    if (chan_->holding()) chan_->hold(false);
    drive();
}

void session_impl::hold_output()
{
    // Only the connected handle's own socket, checked while connected (fd_settled_).
    if (chan_->holding() || fd_ == -1 || !fd_settled_ || state() != session_state::connected) return;
    chan_->hold(true);
}

template <class Req> void session_impl::submit(std::unique_ptr<Req> r, int rc, request_type type)
{
    if (rc == ZOK) {
        metrics_.request(type);
        r.release();  // the C client owns it until its callback
        if (!batch_open_) drive();  // else end_batch drives, once for the batch
        return;
    }
    // A synchronous failure: the callback never runs.
    refuse(std::move(r), (rc == ZINVALIDSTATE && state() != session_state::connected) ? core_.no_handle_error() : make_zk_error(rc));
}

namespace {

template <class Req> std::unique_ptr<Req> make_req(session_impl* s, auto cb)
{
    auto r = std::make_unique<Req>();
    r->s = s;
    r->cb = std::move(cb);
    return r;
}

}  // namespace

void session_impl::create(const std::string& path, std::string_view data, create_mode mode, create_cb cb)
{
    auto r = make_req<create_req>(this, std::move(cb));
    if (!zh_) return refuse(std::move(r), core_.no_handle_error());
    if (auto ec = check_request_size(path.size(), data.size())) return refuse(std::move(r), ec);
    const struct ACL_vector* acl = node_acl();
    leader_request(*r);
    begin_request();
    const log_scope scope(log_.get());
    const int rc = zoo_acreate2(zh_, path.c_str(), data.data(), static_cast<int>(data.size()), acl, create_flags(mode),
                                &on_create, r.get());
    submit(std::move(r), rc, request_type::create);
}

void session_impl::sync(const std::string& path, void_cb cb)
{
    auto r = make_req<void_req>(this, std::move(cb));
    if (!zh_) return refuse(std::move(r), core_.no_handle_error());
    leader_request(*r);
    begin_request();
    const log_scope scope(log_.get());
    const int rc = zoo_async(zh_, path.c_str(), &on_sync, r.get());
    submit(std::move(r), rc, request_type::sync);
}

void session_impl::remove(const std::string& path, std::int32_t version, void_cb cb)
{
    auto r = make_req<void_req>(this, std::move(cb));
    if (!zh_) return refuse(std::move(r), core_.no_handle_error());
    leader_request(*r);
    begin_request();
    const log_scope scope(log_.get());
    const int rc = zoo_adelete(zh_, path.c_str(), version, &on_void, r.get());
    submit(std::move(r), rc, request_type::remove);
}

void session_impl::exists(const std::string& path, std::shared_ptr<watch_state> w, stat_cb cb)
{
    auto r = make_req<exists_req>(this, std::move(cb));
    r->w = std::move(w);
    r->path = path;
    if (!zh_) return refuse(std::move(r), core_.no_handle_error());
    begin_request();
    const log_scope scope(log_.get());
    const int rc = zoo_aexists(zh_, path.c_str(), r->w ? 1 : 0, &on_exists, r.get());
    submit(std::move(r), rc, request_type::exists);
}

void session_impl::get_data(const std::string& path, std::shared_ptr<watch_state> w, data_cb cb)
{
    auto r = make_req<data_req>(this, std::move(cb));
    r->w = std::move(w);
    // Only a watch needs the path back, to register it; one that carries it needs no copy.
    if (r->w && r->w->path() != path) r->path = path;
    if (!zh_) return refuse(std::move(r), core_.no_handle_error());
    begin_request();
    const log_scope scope(log_.get());
    const int rc = zoo_aget(zh_, path.c_str(), r->w ? 1 : 0, &on_data, r.get());
    submit(std::move(r), rc, request_type::get_data);
}

void session_impl::get_config(std::shared_ptr<watch_state> w, data_cb cb)
{
    auto r = make_req<data_req>(this, std::move(cb));
    r->w = std::move(w);
    r->path = ZOO_CONFIG_NODE;  // the path its watch's events carry, with or without a chroot
    if (!zh_) return refuse(std::move(r), core_.no_handle_error());
    begin_request();
    const log_scope scope(log_.get());
    const int rc = zoo_agetconfig(zh_, r->w ? 1 : 0, &on_data, r.get());
    submit(std::move(r), rc, request_type::get_data);
}

void session_impl::set_data(const std::string& path, std::string_view data, std::int32_t version, set_cb cb)
{
    auto r = make_req<set_req>(this, std::move(cb));
    if (!zh_) return refuse(std::move(r), core_.no_handle_error());
    if (auto ec = check_request_size(path.size(), data.size())) return refuse(std::move(r), ec);
    leader_request(*r);
    begin_request();
    const log_scope scope(log_.get());
    const int rc = zoo_aset(zh_, path.c_str(), data.data(), static_cast<int>(data.size()), version, &on_set, r.get());
    submit(std::move(r), rc, request_type::set_data);
}

void session_impl::get_children(const std::string& path, std::shared_ptr<watch_state> w, children_cb cb)
{
    auto r = make_req<children_req>(this, std::move(cb));
    r->w = std::move(w);
    r->path = path;
    if (!zh_) return refuse(std::move(r), core_.no_handle_error());
    begin_request();
    const log_scope scope(log_.get());
    const int rc = zoo_aget_children(zh_, path.c_str(), r->w ? 1 : 0, &on_children, r.get());
    submit(std::move(r), rc, request_type::get_children);
}

void session_impl::multi(const std::vector<multi_op>& ops, multi_cb cb)
{
    auto r = make_req<multi_req>(this, std::move(cb));
    const std::size_t n = ops.size();
    r->n_ops = n;
    if (!zh_) return refuse(std::move(r), core_.no_handle_error());
    std::size_t path_bytes = 0, data_bytes = 0;
    for (const auto& op : ops) {
        path_bytes += op.path.size();
        data_bytes += op.data.size();
    }
    if (auto ec = check_request_size(path_bytes, data_bytes, n + 1)) return refuse(std::move(r), ec);
    // The 3.8 C client reads a container's create result in a multi as a plain create's and
    // aborts the process on what follows (deserialize_multi): refused here, nothing sent.
    for (const auto& op : ops)
        if (op.type == multi_op::kind::create && op.mode == create_mode::container) return refuse(std::move(r), errc::invalid_argument);
    r->ops.resize(n);
    r->results.resize(n);
    mark_unanswered(*r);
    r->paths.reserve(n);
    r->datas.reserve(n);
    r->path_buffers.resize(n);
    r->stats.resize(n);
    const struct ACL_vector* acl = node_acl();
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
    leader_request(*r);
    begin_request();
    const log_scope scope(log_.get());
    const int rc = zoo_amulti(zh_, static_cast<int>(n), r->ops.data(), r->results.data(), &on_multi, r.get());
    submit(std::move(r), rc, request_type::multi);
}

void session_impl::list_children(const std::string& path, names_cb cb)
{
    auto r = make_req<names_req>(this, std::move(cb));
    if (!zh_) return refuse(std::move(r), core_.no_handle_error());
    begin_request();
    const log_scope scope(log_.get());
    const int rc = zoo_aget_children(zh_, path.c_str(), 0, &on_names, r.get());
    submit(std::move(r), rc, request_type::get_children);
}

}  // namespace zklock::detail
