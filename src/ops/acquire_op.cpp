// The driver of acquire_fsm, and nothing more: it performs the machine's actions on the port (the
// requests, the watches, the deadline's timer, the lease it hands out) and feeds the outcomes
// back; what to send next, when to grant and when to give up are acquire_fsm's and lease_fsm's.
#include "ops/cohort.hpp"
#include "core/deadline.hpp"
#include "core/handler_util.hpp"
#include "ops/lease_state.hpp"
#include "ops/lookahead_window.hpp"
#include "ops/queue_hints.hpp"
#include "ops/requests.hpp"

#include <zklock/detail/acquire_fsm.hpp>
#include <zklock/detail/acquire_fwd.hpp>
#include <zklock/basic_lock.hpp>

#include <boost/asio/cancellation_type.hpp>

#include <atomic>
#include <mutex>

#include <pthread.h>
#include <unistd.h>

namespace zklock::detail {

namespace {

// "<host>:<pid>", the default data of a queue node (zklock list shows it): one string shared by
// every acquire of this process that sets no owner_info of its own (not one a waiter). Made again
// in a child forked without exec, whose pid is another.
// (A fork is noticed by an atfork handler, not by a getpid() per acquire: that was a syscall each.)
std::atomic<std::uint64_t> forks{0};

std::shared_ptr<const std::string> default_owner_info()
{
    static std::mutex m;
    static std::shared_ptr<const std::string> info;
    static std::uint64_t made_at = 0;
    static const int registered = ::pthread_atfork(nullptr, nullptr, [] { forks.fetch_add(1, std::memory_order_relaxed); });
    (void)registered;
    std::lock_guard lock(m);
    const auto now = forks.load(std::memory_order_relaxed);
    if (!info || made_at != now) {
        char buf[256] = {};
        if (::gethostname(buf, sizeof buf - 1) != 0) buf[0] = '?';
        made_at = now;
        info = std::make_shared<const std::string>(std::string(buf) + ":" + std::to_string(::getpid()));
    }
    return info;
}

queue_policy policy_of(const acquire_request& req)
{
    queue_policy p = req.policy;
    p.count_known = p.count_known || (req.count_known && *req.count_known);
    return p;
}

class acquire_op;
using acquire_window = lookahead_window<acquire_op>;

class acquire_op final : public std::enable_shared_from_this<acquire_op> {
public:
    acquire_op(session_ptr s, acquire_request req, handler<error_code, lease> h)
        : s_(std::move(s)),
          fsm_(std::move(req.dir), policy_of(req), new_attempt_id(), req.try_only), h_(std::move(h), s_->executor()),
          count_known_(std::move(req.count_known)),
          options_(std::move(req.options)),
          internal_(req.internal)
    {
    }

    acquire_op(const acquire_op&) = delete;
    acquire_op& operator=(const acquire_op&) = delete;
    ~acquire_op() { undefer(); }

    // Our node's data: lock_options::owner_info, or the process's default (shared: see
    // default_owner_info).
    std::shared_ptr<const std::string> owner_info() const
    {
        if (options_ && !options_->owner_info.empty()) return std::shared_ptr<const std::string>(options_, &options_->owner_info);
        return default_owner_info();
    }

    void start(std::optional<std::chrono::steady_clock::duration> timeout)
    {
        in_initiation_ = true;
        started_ = std::chrono::steady_clock::now();
        if (!internal_) s_->metrics().acquire_started(fsm_.policy().kind(), fsm_.dir());
        // Requests that cannot succeed are refused before anything is sent.
        error_code bad = validate_lock_path(fsm_.dir());
        if (!bad && fsm_.policy().kind() == node_kind::permit && fsm_.policy().permits == 0) bad = errc::invalid_argument;
        if (!bad) bad = s_->check_request_size(fsm_.dir().size() + 32, owner_info()->size());
        if (bad) {
            run(fsm_.on_cancel(bad));
            in_initiation_ = false;
            return;
        }
        on_cancellation(h_, s_->executor(), [weak = weak_from_this()](asio::cancellation_type t) {
            if (auto self = weak.lock()) self->cancel(asio::error::operation_aborted, total_only(t));
        });
        if (timeout) {
            timer_ = s_->make_timer();
            timer_->start(*timeout, [weak = weak_from_this()] {
                if (auto self = weak.lock()) self->cancel(errc::timeout);
            });
        }
        switch (s_->state()) {
        case session_state::connected:
            generation_ = s_->generation();
            run(fsm_.start());
            break;
        case session_state::suspended:
        case session_state::connecting:
        case session_state::expired:
            // A connection is on its way (after a loss, the first connect, or a fresh ZooKeeper
            // session after an expiry): nothing is sent before it is there, so a cancel meanwhile
            // completes at once, with nothing to undo.
            waiting_session_ = true;
            s_->wait_connected(0, [self = shared_from_this()](error_code ec) {
                self->waiting_session_ = false;
                if (self->fsm_.finished()) return;
                if (ec) return self->run(self->fsm_.on_cancel(ec));
                self->generation_ = self->s_->generation();
                self->run(self->fsm_.start());
            });
            break;
        default: run(fsm_.on_cancel(s_->state() == session_state::closed ? errc::session_closed : errc::not_connected));
        }
        in_initiation_ = false;
    }

private:
    using ak = acquire_fsm::action_kind;

    void list(const std::string& dir)
    {
        list_queue(s_, dir, [self = shared_from_this()](error_code ec, std::shared_ptr<const listing> l) {
            if (!ec) self->s_->extension<queue_hints>().note(self->fsm_.dir(), l->children());
            self->run_listed(self->fsm_.on_listed(ec, *l));
        });
    }

    /// `undo_first`: a total cancellation, which completes only once the node is known gone (no
    /// grace: the operation leaves nothing behind, even if the server takes long to answer).
    void cancel(error_code reason, bool undo_first = false)
    {
        if (fsm_.finished() || detached_) return;
        if (waiting_session_) {  // nothing sent yet
            waiting_session_ = false;
            return run(fsm_.on_cancel(reason));
        }
        run(fsm_.on_cancel(reason));
        if (fsm_.finished() || grace_armed_ || undo_first) return;  // a later reason does not move the grace on
        grace_armed_ = true;
        // Our node (or a create whose outcome is unknown) is being taken away. A healthy server
        // answers within the grace and the acquire completes once the node is gone; one that does
        // not (frozen, cut off, an outage) does not stretch the deadline: the acquire completes
        // then, and the deletion goes on in the background (detach).
        if (!timer_) timer_ = s_->make_timer();
        timer_->start(cleanup_grace, [weak = weak_from_this(), reason] {
            if (auto self = weak.lock()) self->detach(reason);
        });
    }

    // The deadline has passed and the cleanup is not done: complete now with the reason. The op
    // lives on (its requests in flight and its wait for a connection hold it) until the fsm has
    // taken the node away, across reconnects, or the session ended (the node went with it).
    void detach(error_code reason)
    {
        if (fsm_.finished() || detached_) return;
        detached_ = true;
        s_->metrics().background_cleanup_started();
        if (s_->log().wants(log_level::info))
            s_->log().event(log_level::info,
                            std::string("acquire ended (") + reason.message() + "); its node is deleted in the background",
                            fsm_.dir(), fsm_.own_node());
        report_finished(reason);
        h_.complete(reason, lease());
    }

    void report_finished(error_code ec)
    {
        if (!internal_)
            s_->metrics().acquire_finished(fsm_.policy().kind(), fsm_.dir(), ec,
                                           std::chrono::steady_clock::now() - started_, waited_, !fsm_.fast_handoff());
    }

    void run(acquire_fsm::action a)
    {
        auto self = shared_from_this();
        for (auto& d : a.duplicates) remove_if_ours(std::move(d));
        switch (a.kind) {
        case ak::none: break;
        case ak::create: {
            if (a.retry && s_->log().wants(log_level::info))
                s_->log().event(log_level::info, "a create's reply was lost and it was never applied: creating again",
                                fsm_.dir());
            // The listing goes out right behind the create without waiting for its reply:
            // ZooKeeper runs one session's requests in order, so it already contains our node
            // (one round trip when uncontended). Acquires of this session on the same path that
            // create in the same burst share that one listing (list_queue, ops/requests.hpp).
            auto created = std::make_shared<std::tuple<error_code, std::string, std::int64_t>>();
            s_->create(a.path, *owner_info(), create_mode::ephemeral_sequential,
                       [created](error_code ec, std::string p, zklock::stat st) {
                           *created = {ec, std::move(p), st.czxid};
                       });
            list_queue(s_, fsm_.dir(), [self, created](error_code ec, std::shared_ptr<const listing> l) {
                auto& [cec, path, czxid] = *created;
                if (!ec) self->s_->extension<queue_hints>().note(self->fsm_.dir(), l->children());
                self->run_listed(self->fsm_.on_created(cec, std::move(path), czxid, ec, *l));
            });
            break;
        }
        case ak::create_parents:
            create_containers(s_, a.path, [self](error_code ec) { self->run(self->fsm_.on_parents_created(ec)); });
            break;
        case ak::list:
            if (a.sync) {
                s_->sync(a.path, [self, dir = a.path](error_code ec) {
                    if (ec) return self->run_listed(self->fsm_.on_listed(ec, listing()));
                    self->list(dir);
                });
                break;
            }
            list(a.path);
            break;
        case ak::stat_node:
            s_->exists(a.path, nullptr, [self](error_code ec, std::optional<zklock::stat> st) {
                if (!ec && !st) ec = zk_errc::no_node;
                const bool ours = st && self->s_->owns(*st);
                self->run(self->fsm_.on_stat(ec, st ? st->czxid : 0, ours));
            });
            break;
        case ak::watch:
            if (a.watch_own) watch_own();
            if (watch_) watch_->cancel_wait();
            waiting_on_ = nullptr;
            watch_ = s_->make_watch(fsm_.watched_node());  // shares the fsm's copy of the path
            s_->get_data(a.path, watch_, [self](error_code ec, std::string data, zklock::stat st) {
                self->run(self->fsm_.on_watch_set(ec, data, st.version));
            });
            watch_also(a.also);  // after the read above: their replies come after its reply
            break;
        case ak::wait_event:
            waited_ = true;
            if (a.ahead.empty()) {
                drop_ahead();
                undefer();
            } else if (near_head()) {
                undefer();
                watch_ahead(fsm_.ahead_node());
            } else if (!deferred_) {
                defer();
            }
            if (waiting_on_ == watch_.get()) break;  // still waiting on it (a look-ahead came back)
            waiting_on_ = watch_.get();
            watch_->wait([self, w = watch_.get()](error_code ec, watch_event ev) {
                if (self->watch_.get() != w) return;  // replaced (cancel_wait drops it too)
                self->waiting_on_ = nullptr;
                self->check_own_watch_order();
                self->run(ec ? self->fsm_.on_session_lost(ec)
                             : self->fsm_.on_watch_fired(ev.type == watch_event_type::deleted,
                                                         self->s_->extension<queue_hints>().hint(self->fsm_.dir())));
            });
            break;
        case ak::arm: {
            // Sent from a posted handler, not here. The node ahead has just left, and in a
            // draining queue the node we wait on was granted by that same deletion: its holder
            // often runs on this thread, in this batch of replies, and (at hold 0) releases at
            // once. Posting lets that release reach the server before our read, off the handoff's
            // path (with the own watch set early, one request). The fsm stays arming until the
            // reply, so nothing is lost by waiting; a newer arm, or an fsm that left arming
            // (finished, session lost), makes this one moot.
            const auto seq = ++arm_seq_;
            asio::post(s_->executor(), [self, a = std::move(a), seq] {
                if (self->arm_seq_ == seq && self->fsm_.arming()) self->send_arm(a);
            });
            break;
        }
        case ak::wait_connected:
            s_->wait_connected(generation_, [self](error_code ec) {
                self->run(ec ? self->fsm_.on_session_lost(ec) : self->fsm_.on_connected());
            });
            break;
        case ak::remove:
            if (watch_) watch_->cancel_wait();
            drop_ahead();
            undefer();
            drop_also();
            s_->remove(a.path, -1, [self](error_code ec) { self->run(self->fsm_.on_removed(ec)); });
            break;
        case ak::read_count:
            s_->get_data(a.path, nullptr, [self](error_code ec, std::string data, zklock::stat st) {
                self->run(self->fsm_.on_count_read(ec, data, st.version));
            });
            break;
        case ak::read_mark: {
            // The lock path's mark and our own node, in one round trip (one session's replies
            // arrive in order: the exists() reply comes second).
            auto mark = std::make_shared<std::tuple<error_code, std::string, zklock::stat>>();
            s_->get_data(a.path, nullptr, [mark](error_code ec, std::string data, zklock::stat st) {
                *mark = {ec, std::move(data), st};
            });
            s_->exists(fsm_.own_node(), nullptr, [self, mark](error_code ec, std::optional<zklock::stat> st) {
                auto& [mec, data, mst] = *mark;
                self->run(self->fsm_.on_mark_read(mec ? mec : ec, data, mst.mzxid, mst.pzxid, st.has_value()));
            });
            break;
        }
        case ak::claim_count:
            s_->set_data(a.path, a.data, a.version, [self](error_code ec, zklock::stat) {
                self->run(self->fsm_.on_count_claimed(ec));
            });
            break;
        case ak::done: finish(a.ec, a.touch); break;
        }
    }

    // After a listing: if it leaves us waiting (a watch on the node ahead), lock_options::on_queued
    // hears of our place.
    void run_listed(acquire_fsm::action a)
    {
        if (options_ && options_->on_queued && a.kind == ak::watch && !fsm_.own_node().empty())
            options_->on_queued(fsm_.own_node(), fsm_.last_position());
        run(std::move(a));
    }

    // A node named with our attempt id that is not our own (a duplicate after a lost create reply)
    // is deleted only if ZooKeeper says our session owns it: an id alone proves nothing.
    void remove_if_ours(std::string path)
    {
        auto s = s_;
        s_->exists(path, nullptr, [s, path](error_code ec, std::optional<zklock::stat> st) {
            if (ec || !st || !s->owns(*st)) return;
            // Any version: ownership is proven, and a sequential name is never reused (anyone may
            // have written into the node, which would fail a versioned delete).
            s->remove(path, -1, [](error_code) {});
        });
    }

    // When the fsm may grant without listing again (action::watch_own), a data watch on our own
    // node as well, set before the predecessor watch: if someone else deletes our node, the fsm
    // hears of it before any later deletion (one session's replies and events arrive in order), so
    // a handoff can never grant a node that is gone. It costs one read, for the waiter next to the
    // head and for every look-ahead waiter (set with its first watch: acquire_fsm::evaluate_queue),
    // and the lease takes the watch over on a grant, so it costs the holder nothing more.
    void watch_own()
    {
        if (own_watch_ || fsm_.own_node().empty()) return;
        own_watch_ = s_->make_watch();
        own_connection_ = 0;  // not confirmed yet
        auto self = shared_from_this();
        s_->get_data(fsm_.own_node(), own_watch_, [self, w = own_watch_](error_code ec, std::string data, zklock::stat) {
            if (!ec && data == revocation_request) self->own_revoke_seen_ = true;  // handed to the lease
            if (self->own_watch_ != w || self->fsm_.finished()) return;
            // The fsm grants without a listing only while the server has confirmed this watch,
            // on this connection (see check_own_watch_order).
            if (!ec) {
                self->own_connection_ = self->s_->connections();
                return self->run(self->fsm_.on_own_watch(true));
            }
            // No watch was set: drop it (the next predecessor watch sets one again after a
            // connection loss), and if our node is already gone, say so.
            w->cancel_wait();
            self->own_watch_.reset();
            if (ec == zk_errc::no_node) return self->run(self->fsm_.on_own_deleted());
            self->run(self->fsm_.on_own_watch(false));
        });
        // Stored in the watch itself, so it holds the watch by address only (no cycle); the cycle
        // through `self` is broken by finish()'s cancel_wait().
        own_watch_->wait([self, w = own_watch_.get()](error_code ec, watch_event ev) {
            if (ec || self->fsm_.finished() || self->own_watch_.get() != w) return;  // session losses come another way
            self->own_watch_.reset();
            if (ev.type == watch_event_type::deleted) return self->run(self->fsm_.on_own_deleted());
            // Its data changed (a revocation request, any write): until the watch is set again, a
            // deletion of our node could go unheard, so the fsm must not count on it meanwhile.
            self->run(self->fsm_.on_own_watch(false));
            self->watch_own();
        });
    }

    // The look-ahead's arming requests (action::arm, posted: see run). Our own node's watch goes
    // first if it is not set (it usually is: the fsm asks for it with the first watch); one
    // session's replies come in order, so a node already gone is reported (on_own_deleted)
    // before the read's reply.
    void send_arm(const acquire_fsm::action& a)
    {
        auto self = shared_from_this();
        watch_own();
        if (a.mark) {
            s_->get_data(a.path, nullptr, [self](error_code ec, std::string data, zklock::stat st) {
                self->check_own_watch_order();
                self->run(self->fsm_.on_mark_read(ec, data, st.mzxid, st.pzxid, true));
            });
        } else {
            list_queue(s_, a.path, [self](error_code ec, std::shared_ptr<const listing> l) {
                if (!ec) self->s_->extension<queue_hints>().note(self->fsm_.dir(), l->children());
                self->run(self->fsm_.on_listed(ec, *l));
            });
        }
    }

    // Look-ahead: a data watch on the node before the one we wait on (acquire_fsm::action::ahead).
    // Its deletion, or finding it gone, is on_ahead_fired; a change of its data means nothing, and
    // any other error just leaves the wait without a look-ahead (the fsm falls back by itself).
    void watch_ahead(const shared_path& path)
    {
        drop_ahead();
        auto w = ahead_ = s_->make_watch(path);  // shares the fsm's copy of the path
        auto self = shared_from_this();
        s_->get_data(path.str(), w, [self, w](error_code ec, std::string, zklock::stat) {
            if (!ec || self->ahead_ != w) return;
            self->drop_ahead();  // no watch was set
            if (ec == zk_errc::no_node && !self->fsm_.finished())
                self->run(self->fsm_.on_ahead_fired(self->s_->extension<queue_hints>().hint(self->fsm_.dir())));
        });
        // As for watch_own: the callback holds the watch by address only; drop_ahead() breaks the
        // cycle through `self`.
        w->wait([self, raw = w.get()](error_code ec, watch_event ev) {
            if (ec || self->fsm_.finished() || self->ahead_.get() != raw) return;
            self->ahead_.reset();
            if (ev.type == watch_event_type::deleted)
                return self->run(self->fsm_.on_ahead_fired(self->s_->extension<queue_hints>().hint(self->fsm_.dir())));
            // Its data changed: keep watching (the fsm still names it: its state changes only on
            // on_ahead_fired or a new wait_event, which replaces this watch).
            if (!self->fsm_.ahead_node().empty()) self->watch_ahead(self->fsm_.ahead_node());
        });
    }

    // Before the fsm hears of the watched node's deletion (or of a read it would grant on): the own
    // watch's events come before any later deletion only within one connection. After a reconnect
    // the server replays the events of the watches it missed in the order of the client's watch
    // list: our node's deletion may come after the watched node's. So a reconnect since the own
    // watch was confirmed un-confirms it (the fsm lists instead) and drops it: the next wait that
    // asks for it sets it again, and it is confirmed on the new connection. A watch whose reply is
    // still to come is left alone: the fsm does not count on it yet, and its reply confirms it on
    // the connection it arrives on. (Dropping it when an event came first, as when the node we
    // wait on left before the server read ours, cost a listing after each such handoff.)
    void check_own_watch_order()
    {
        if (!own_watch_ || own_connection_ == 0 || s_->connections() == own_connection_) return;
        own_watch_->cancel_wait();
        own_watch_.reset();
        run(fsm_.on_own_watch(false));
    }

    void drop_ahead()
    {
        if (!ahead_) return;
        ahead_->cancel_wait();
        ahead_.reset();
    }

    // The look-ahead's watch goes out now only within lookahead_window::span places of the head
    // (this wait's listing, or the latest grant on this session, says how far it is); further
    // back the wait is deferred in the session's window, and promote() sets it once a grant of
    // this session's brings it near.
    std::int64_t own_seq() const
    {
        const auto v = parse_queue_view(base_name(fsm_.own_node()));
        return v ? v->seq : 0;
    }

    bool near_head() const
    {
        return s_->extension<acquire_window>().near(fsm_.dir(), own_seq(), fsm_.last_position());
    }

    void defer()
    {
        drop_ahead();
        s_->extension<acquire_window>().defer(fsm_.dir(), own_seq(), this);
        deferred_ = true;
    }

    void undefer()
    {
        if (!deferred_) return;
        deferred_ = false;
        s_->extension<acquire_window>().remove(fsm_.dir(), own_seq(), this);
    }

public:
    // From the session's window (see defer), which has let go of our entry.
    void promote()
    {
        deferred_ = false;
        asio::post(s_->executor(), [self = shared_from_this()] {
            // Still waiting with a look-ahead, and not deferred again meanwhile.
            if (self->deferred_ || self->ahead_ || !self->fsm_.waiting() || self->fsm_.ahead_node().empty()) return;
            self->watch_ahead(self->fsm_.ahead_node());
        });
    }

private:

    // A semaphore's first waiter (acquire_fsm::action::also): a data watch on every other node
    // that holds. A deletion, or a read that set no watch (the node gone, the connection lost), is
    // on_also_fired, and the machine lists; a change of a node's data means nothing, and that
    // node is watched again. A set asked for again, unchanged, is kept: each of its nodes still
    // has its watch (a deletion would have been heard, and listed away).
    void watch_also(const std::vector<std::string>& paths)
    {
        if (also_ && also_->paths == paths) return;
        drop_also();
        if (paths.empty()) return;
        also_ = std::make_unique<also_watches>();
        also_->paths = paths;
        also_->watches.resize(paths.size());
        for (std::size_t i = 0; i < paths.size(); ++i) watch_also_one(i);
    }

    void watch_also_one(std::size_t i)
    {
        auto w = also_->watches[i] = s_->make_watch();
        auto self = shared_from_this();
        auto also = also_.get();
        s_->get_data(also->paths[i], w, [self, w, also](error_code ec, std::string, zklock::stat) {
            if (!ec || self->also_.get() != also) return;
            w->cancel_wait();  // no watch was set
            if (ec != zk_errc::no_node && !is_retryable(ec)) return;  // the node we wait on decides
            self->drop_also();  // asked for again, all are watched again
            if (!self->fsm_.finished()) self->run(self->fsm_.on_also_fired());
        });
        // As for watch_ahead: the callback holds the watch by address only; drop_also() breaks the
        // cycle through `self`.
        w->wait([self, i, also](error_code ec, watch_event ev) {
            if (ec || self->fsm_.finished() || self->also_.get() != also) return;
            if (ev.type != watch_event_type::deleted) return self->watch_also_one(i);
            self->drop_also();
            self->run(self->fsm_.on_also_fired());
        });
    }

    void drop_also()
    {
        if (!also_) return;
        for (auto& w : also_->watches)
            if (w) w->cancel_wait();
        also_.reset();
    }

    // A semaphore holder's write into its own node (acquire_fsm::action::touch), in the
    // background: the waiter behind it watches the node. The first writes our data at version 0;
    // a write back (after_touch) reads the node and writes what it read at that version.
    void touch_own(std::string node, bool write_back)
    {
        auto self = shared_from_this();
        auto then = [self, node, write_back](error_code ec, zklock::stat) {
            switch (after_touch(ec, write_back)) {
            case touch_next::done: return;
            case touch_next::retry:
                return self->s_->wait_connected(self->generation_, [self, node, write_back](error_code ec2) {
                    if (!ec2) self->touch_own(node, write_back);
                });
            case touch_next::write_back: return self->touch_own(node, true);
            }
        };
        if (!write_back) return s_->set_data(node, *owner_info(), 0, std::move(then));
        s_->get_data(node, nullptr, [self, node, then = std::move(then)](error_code ec, std::string data, zklock::stat st) mutable {
            if (!ec) return self->s_->set_data(node, data, st.version, std::move(then));
            if (is_retryable(ec)) then(ec, {});
        });
    }

    void finish(error_code ec, bool touch = false)
    {
        if (timer_) timer_->cancel();
        if (watch_) watch_->cancel_wait();
        watch_.reset();
        drop_ahead();
        undefer();
        drop_also();
        auto own_watch = std::move(own_watch_);
        if (own_watch) own_watch->cancel_wait();
        if (count_known_ && fsm_.count_verified()) *count_known_ = true;
        if (detached_) {
            // Completed at detach; with abort_ set the fsm ends only once the node is gone.
            s_->metrics().background_cleanup_done();
            return;
        }
        const auto now = std::chrono::steady_clock::now();
        std::shared_ptr<lease_state> ls;
        if (!ec) {
            ls = std::make_shared<lease_state>(s_, fsm_.own_node(), fsm_.fencing_token(), generation_,
                                               fsm_.mark_on_release() ? fsm_.dir() : std::string(), now);
            if (internal_) ls->set_unmetered();
            s_->subscribe(ls);
            ls->start(std::move(own_watch), own_revoke_seen_);
            // Lost at its grant (the reply that granted it waited on a stalled executor past the
            // presumed expiry): the acquire says why.
            if (ZKLOCK_MUTANT(mutant::granted_when_lost, !ls->on_granted(s_->read_now()), (ls->on_granted(s_->read_now()), false))) {
                ec = ls->lost_reason();
                ls.reset();
            }
        }
        report_finished(ec);
        // Our node is the head: waiters of this session deferred behind it may now be near.
        if (ls && fsm_.policy().kind() == node_kind::exclusive) s_->extension<acquire_window>().note_grant(fsm_.dir(), own_seq());
        lease result;
        if (ls) {
            if (!internal_) s_->log().event(log_level::info, "lock granted", fsm_.dir(), fsm_.own_node());
            if (touch) touch_own(fsm_.own_node(), false);
            result = lease(std::move(ls));
        }
        if (in_initiation_) h_.post(s_->executor(), ec, std::move(result));
        else h_.complete(ec, std::move(result));
    }

    // The members are what one waiter costs while it waits (bench W10000: ten thousand of them):
    // what only some acquires use is allocated only for those.
    session_ptr s_;
    acquire_fsm fsm_;
    std::unique_ptr<port_timer> timer_;  // only with a timeout (a waiter without one holds none)
    bool grace_armed_ = false;           // the first cancellation's grace runs on timer_
    stored_handler<error_code, lease> h_;
    std::shared_ptr<watch_state> watch_;
    std::shared_ptr<watch_state> own_watch_;  // our own node, while we wait (see watch_own)
    std::shared_ptr<watch_state> ahead_;      // the look-ahead's node (see watch_ahead)
    struct also_watches {
        std::vector<std::string> paths;
        std::vector<std::shared_ptr<watch_state>> watches;
    };
    std::unique_ptr<also_watches> also_;  // a semaphore's first waiter (see watch_also)
    const watch_state* waiting_on_ = nullptr;  // watch_ has our wait callback
    std::uint64_t own_connection_ = 0;          // zk_port::connections() when own_watch_ was confirmed (0: not yet)
    std::uint64_t generation_ = 0;
    std::chrono::steady_clock::time_point started_;
    std::shared_ptr<bool> count_known_;  // the semaphore object's: its count was verified
    // The lock object's options (owner_info, on_queued), shared by its acquires; null: the defaults.
    std::shared_ptr<const lock_options> options_;
    // Flags of one bit each, and last, in the padding of what is before them: W10000 holds
    // 10 000 of these.
    bool own_revoke_seen_ : 1 = false;
    bool in_initiation_ : 1 = false;
    bool waiting_session_ : 1 = false;
    bool waited_ : 1 = false;    // waited for a watched node to go: a grant is a handoff (metrics)
    bool internal_ : 1;          // a cohort's own acquire (acquire_request::internal)
    bool detached_ : 1 = false;  // completed before the cleanup was done (see detach)
    bool deferred_ : 1 = false;  // in the session's acquire_window (see defer)
    // Counts action::arm; a posted arm sends only if it is the latest (it wraps: a posted arm
    // runs within the same turn of the executor, long before 65536 more).
    std::uint16_t arm_seq_ = 0;
};

}  // namespace

void initiate_acquire(session_ptr s, acquire_request req, handler<error_code, lease> h)
{
    // A lock object without a session (moved from, or made from a moved-from session).
    if (!s) return post_without_session(std::move(h), error_code(errc::session_closed), lease());
    if (req.cohort && req.policy.what->cohort) return initiate_cohort_acquire(std::move(s), std::move(req), std::move(h));
    auto timeout = req.timeout;
    if (req.try_only && !timeout) timeout = s->answer_deadline();
    std::make_shared<acquire_op>(std::move(s), std::move(req), std::move(h))->start(timeout);
}

}  // namespace zklock::detail

namespace zklock {

// A moved-from lock has no session: asio::system_executor (see detail::executor_of).
basic_lock::executor_type basic_lock::get_executor() const noexcept { return detail::executor_of(s_); }

}  // namespace zklock
