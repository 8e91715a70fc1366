// The election's own operations: the leader, an observer, proclaim (its recipe constant is in
// src/recipes/election.cpp).
#include "core/handler_util.hpp"
#include "ops/requests.hpp"
#include "ops/lease_state.hpp"

#include <zklock/election.hpp>

namespace zklock::detail {

namespace {

// Errors after which a look is tried again once connected: the session is still there (or a new
// one follows an expiry).
bool try_again(const error_code& ec) noexcept
{
    return ec == zk_errc::connection_loss || ec == zk_errc::operation_timeout || ec == errc::not_connected ||
           ec == zk_errc::session_expired || ec == errc::session_expired;
}

leader_info make_info(const queue_node& n, std::string data, const zklock::stat& st)
{
    return leader_info{n.name, std::move(data), n.seq, n.library, st};
}

// async_leader: one listing, then the data of the first candidate that still exists.
class leader_op : public std::enable_shared_from_this<leader_op> {
public:
    leader_op(session_ptr s, std::string path, handler<error_code, leader_info> h)
        : s_(std::move(s)), path_(std::move(path)), h_(std::move(h), s_->executor())
    {
    }

    void start()
    {
        if (auto ec = validate_lock_path(path_)) return h_.post(s_->executor(), ec, leader_info{});
        on_cancellation(h_, s_->executor(), [weak = weak_from_this()] {
            if (auto self = weak.lock()) self->finish(asio::error::operation_aborted, {});
        });
        s_->get_children(path_, nullptr, [self = shared_from_this()](error_code ec, std::vector<std::string> children) {
            if (ec == zk_errc::no_node) return self->check_chroot();
            if (ec) return self->finish(ec, {});
            self->queue_ = make_queue(children);
            self->look();
        });
    }

private:
    void look()
    {
        if (!h_) return;
        if (next_ == queue_.size()) return finish(errc::no_leader, {});
        s_->get_data(join_path(path_, queue_[next_].name), nullptr,
                     [self = shared_from_this()](error_code ec, std::string data, zklock::stat st) {
                         if (ec == zk_errc::no_node) {
                             ++self->next_;
                             return self->look();
                         }
                         if (ec) return self->finish(ec, {});
                         self->finish({}, make_info(self->queue_[self->next_], std::move(data), st));
                     });
    }

    // No such path: no leader, unless it is the chroot that is missing.
    void check_chroot()
    {
        detail::check_chroot(*s_, [self = shared_from_this()](error_code ec) {
            self->finish(ec == errc::chroot_missing ? ec : error_code(errc::no_leader), {});
        });
    }

    void finish(error_code ec, leader_info info)
    {
        if (h_) h_.complete(ec, std::move(info));
    }

    session_ptr s_;
    std::string path_;
    stored_handler<error_code, leader_info> h_;
    std::vector<queue_node> queue_;
    std::size_t next_ = 0;
};

}  // namespace

void initiate_leader(session_ptr s, std::string path, handler<error_code, leader_info> h)
{
    std::make_shared<leader_op>(std::move(s), std::move(path), std::move(h))->start();
}

void initiate_proclaim(std::shared_ptr<lease_state> s, election_names names, std::string value, handler<error_code> h)
{
    // A candidate named for Curator's LeaderLatch: a LeaderLatch candidate waiting on it acts on
    // its deletion only, and does not watch again after another event (LeaderLatch's watcher).
    if (s && names == election_names::curator_latch) {
        stored_handler<error_code> sh(std::move(h), s->session()->executor());
        return sh.post(s->session()->executor(), errc::not_supported);
    }
    std::vector<multi_op> ops;
    if (s) ops.push_back(multi_op::set_data(s->node(), std::move(value)));
    else ops.push_back(multi_op::check("/", -1));  // refused before it is sent: the lease is empty
    initiate_guarded_multi(std::move(s), std::move(ops),
                           mapped_handler{std::move(h), [](auto&& inner, error_code ec, std::vector<multi_result>) {
                               std::move(inner)(ec);
                           }});
}

// An observer: lists the candidates, then watches the first that exists (its data watch fires on
// its deletion and on a new value). The next candidate listed leads once it is gone: a candidate
// that joined after the listing has a larger sequence number than every listed one. It lists
// again (with a child watch, for when there is none) only once every listed candidate is gone.
class observer_state : public std::enable_shared_from_this<observer_state> {
public:
    observer_state(session_ptr s, std::string path) : s_(std::move(s)), path_(std::move(path)) {}

    void start()
    {
        if (auto ec = validate_lock_path(path_)) return fail(ec);
        list();
    }

    const asio::any_io_executor& executor() const noexcept { return s_->executor(); }

    void next(handler<error_code, leader_info> h)
    {
        if (waiter_ && *waiter_) {
            stored_handler<error_code, leader_info> busy(std::move(h), s_->executor());
            return busy.post(s_->executor(), errc::operation_in_progress, leader_info{});
        }
        waiter_ = std::make_shared<stored_handler<error_code, leader_info>>(std::move(h), s_->executor());
        allow_cancel(waiter_, s_->executor());
        // Never inside the call: a change already seen is delivered from a posted handler.
        asio::post(s_->executor(), [weak = weak_from_this()] {
            if (auto self = weak.lock()) self->deliver();
        });
    }

    void stop() noexcept
    {
        if (stopped_) return;
        stopped_ = true;
        if (watch_) watch_->cancel_wait();
        watch_.reset();
        if (waiter_ && *waiter_) waiter_->complete(asio::error::operation_aborted, leader_info{});
    }

private:
    void list()
    {
        if (stopped_) return;
        auto w = s_->make_watch();
        watch_ = w;
        s_->get_children(path_, w, [self = shared_from_this(), w](error_code ec, std::vector<std::string> children) {
            if (self->stopped_ || w != self->watch_) return;
            if (ec == zk_errc::no_node) return self->await_path();
            if (ec) return self->on_error(ec);
            self->candidates_ = make_queue(children);
            self->next_ = 0;
            if (self->candidates_.empty()) {
                self->publish({});
                return self->wait(w, [](observer_state& o, const watch_event&) { o.list(); });
            }
            self->look();
        });
    }

    // No election path yet: no leader until it is created (an exists watch says when), unless
    // the chroot itself is missing: then the observation ends.
    void await_path()
    {
        auto probe = s_->make_watch();
        watch_ = probe;
        detail::check_chroot(*s_, [self = shared_from_this(), probe](error_code ec) {
            if (self->stopped_ || probe != self->watch_) return;
            if (ec == errc::chroot_missing) return self->fail(ec);
            if (ec) return self->on_error(ec);
            self->watch_path();
        });
    }

    void watch_path()
    {
        publish({});
        auto w = s_->make_watch();
        watch_ = w;
        s_->exists(path_, w, [self = shared_from_this(), w](error_code ec, std::optional<zklock::stat> st) {
            if (self->stopped_ || w != self->watch_) return;
            if (ec) return self->on_error(ec);
            if (st) return self->list();
            self->wait(w, [](observer_state& o, const watch_event&) { o.list(); });
        });
    }

    void look()
    {
        if (stopped_) return;
        if (next_ == candidates_.size()) return list();
        auto w = s_->make_watch();
        watch_ = w;
        s_->get_data(join_path(path_, candidates_[next_].name), w,
                     [self = shared_from_this(), w](error_code ec, std::string data, zklock::stat st) {
                         if (self->stopped_ || w != self->watch_) return;
                         if (ec == zk_errc::no_node) {
                             ++self->next_;
                             return self->look();
                         }
                         if (ec) return self->on_error(ec);
                         self->publish(make_info(self->candidates_[self->next_], std::move(data), st));
                         self->wait(w, [](observer_state& o, const watch_event& ev) {
                             if (ev.type == watch_event_type::deleted) ++o.next_;
                             o.look();  // deleted: the next one; changed: the new value
                         });
                     });
    }

    // Waits for `w` to fire, then `then(*this, event)`; the watch's waiter holds us weakly (we hold
    // the watch).
    template <class F> void wait(const std::shared_ptr<watch_state>& w, F then)
    {
        w->wait([weak = weak_from_this(), w, then](error_code ec, watch_event ev) {
            auto self = weak.lock();
            if (!self || self->stopped_ || w != self->watch_) return;
            if (ec) return self->on_error(ec);
            then(*self, ev);
        });
    }

    void on_error(error_code ec)
    {
        if (!try_again(ec)) return fail(ec);
        // Look again once connected: after a lost connection, the same session; after an expiry,
        // the new one (if the session makes one: else wait_connected says why not).
        watch_.reset();
        s_->wait_connected(0, [weak = weak_from_this()](error_code e) {
            auto self = weak.lock();
            if (!self || self->stopped_) return;
            if (e) return self->fail(e);
            self->list();
        });
    }

    void publish(leader_info info)
    {
        if (seen_ && same_leader(info, current_)) return;
        seen_ = true;
        current_ = std::move(info);
        deliver();
    }

    void deliver()
    {
        if (!waiter_ || !*waiter_) return;
        if (failed_) return waiter_->complete(failed_, leader_info{});
        // Only what differs from the last delivered: a leader that came and went between two
        // waits is not news.
        if (!seen_ || (delivered_any_ && same_leader(current_, delivered_))) return;
        delivered_any_ = true;
        delivered_ = current_;
        waiter_->complete({}, current_);
    }

    static bool same_leader(const leader_info& a, const leader_info& b) noexcept
    {
        return a.node == b.node && a.value == b.value;
    }

    void fail(error_code ec)
    {
        failed_ = ec;
        watch_.reset();
        deliver();
    }

    session_ptr s_;
    std::string path_;
    std::vector<queue_node> candidates_;  // the latest listing, in queue order
    std::size_t next_ = 0;                // the candidate looked at (the leader, if it exists)
    std::shared_ptr<watch_state> watch_;  // the one watch that counts; replies for another are stale
    leader_info current_;
    bool seen_ = false;                   // current_ is known
    leader_info delivered_;               // what the last completed wait got
    bool delivered_any_ = false;
    error_code failed_;
    bool stopped_ = false;
    std::shared_ptr<stored_handler<error_code, leader_info>> waiter_;
};

std::shared_ptr<observer_state> start_observer(session_ptr s, std::string path)
{
    auto o = std::make_shared<observer_state>(std::move(s), std::move(path));
    o->start();
    return o;
}

asio::any_io_executor executor_of(const std::shared_ptr<observer_state>& o) noexcept
{
    return o ? o->executor() : asio::any_io_executor(asio::system_executor());
}

void initiate_observe_next(std::shared_ptr<observer_state> o, handler<error_code, leader_info> h)
{
    if (!o) {
        stored_handler<error_code, leader_info> sh(std::move(h), asio::system_executor());
        return sh.post(asio::system_executor(), errc::invalid_argument, leader_info{});
    }
    o->next(std::move(h));
}

void stop_observer(observer_state& o) noexcept { o.stop(); }

}  // namespace zklock::detail
