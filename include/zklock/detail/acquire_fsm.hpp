// The acquire algorithm as a state machine that holds no Asio or ZooKeeper object.
//
// The driver (src/acquire_op.cpp) performs the action returned by each call and feeds the outcome
// back as the next event. Every recipe (mutex, shared_mutex, semaphore) uses this machine; they
// differ only in the queue policy, which decides from the queue whether we hold the lock and, if
// not, which single node to watch.
//
//   start ──> create(+list) ──> [queue evaluated] ──acquired──> done(ok)
//                │  no_node           │ blocked
//                v                    v
//          create_parents        watch(node) ──> wait_event ──fired──> list ──> ...
//   connection loss anywhere: wait_connected, then redo the step (a lost create reply is
//   resolved by listing and looking for our attempt id, never by creating a second node).
//   cancel / timeout / try-failed: as soon as no request is in flight, remove our node, then done.
//
// Handoff without a re-list: when the watched node is known to have had nothing before it that
// could block us, its deletion means we hold the lock, and no get_children round trip is needed.
// We know that when it was first in our own listing (sequence numbers only grow: nothing older can
// appear later), or when it is an exclusive node its holder marked (an exclusive holder has nothing
// before it). Holders mark their node only when a successor may be waiting (see should_mark()),
// and only after holding for holder_mark_delay.
// Any other deletion, and every change we cannot interpret, falls back to listing.
#pragma once

#include <zklock/detail/path.hpp>
#include <zklock/error.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zklock::detail {

/// Appended to a holder's node data to tell its successor that it holds the lock.
inline constexpr std::string_view holder_mark = "\nzklock:held";

/// How long a holder holds before it writes the mark. The mark pays off only when the successor has
/// read it (a write, an event, a read: a few round trips) before the holder's delete arrives;
/// for shorter holds it only adds a write to the server's pipeline ahead of the delete. Holds
/// shorter than this never mark (and handoffs after them re-list, as without the mark).
inline constexpr std::chrono::microseconds holder_mark_delay{1000};

/// Decides, from the queue, whether a node holds what it asked for.
struct queue_policy {
    node_kind kind = node_kind::exclusive;  ///< the kind of our own node
    std::uint32_t permits = 1;              ///< semaphore permits (kind == permit)
};

/// The outcome of looking at the queue: held, or blocked by `watch` (an index into the queue).
struct verdict {
    bool acquired = false;
    std::size_t watch = 0;
};

/// Exclusive: held at the head; else watch the node just before us.
/// Shared:    held when no exclusive node is before us; else watch the nearest exclusive before us.
/// Permit:    held when fewer than `permits` permit nodes are before us; else watch the permit node
///            `permits` places before us (so each release wakes exactly one waiter).
verdict evaluate(const std::vector<queue_node>& queue, std::size_t own, const queue_policy& policy);

/// What one listing says about our node, from scan_queue().
struct scan_result {
    bool found = false;          ///< our own node is listed
    bool acquired = false;       ///< it holds what it asked for
    std::string_view watch;      ///< when blocked: the child to wait on
    node_kind watch_kind = node_kind::exclusive;
    bool watch_is_head = false;  ///< when blocked: no queue node is older than `watch`
    std::size_t position = 0;    ///< queue nodes before ours
    bool has_successor = false;  ///< a queue node after ours
    std::vector<std::string_view> duplicates;  ///< other children with our attempt id
};

/// evaluate() over an unsorted listing, in one pass that neither copies nor sorts it: every
/// get_children reply goes through this, and in a queue of N a waiter's first listing holds up to
/// N names. Views point into `children`. The unit tests check it against evaluate() on random queues.
scan_result scan_queue(const std::vector<std::string>& children, std::string_view own_name, std::uint64_t own_id,
                       const queue_policy& policy);

class acquire_fsm {
public:
    enum class action_kind {
        none,            ///< a request is in flight: wait for its reply
        create,          ///< create `path` (ephemeral sequential), and list the directory right behind it
        create_parents,  ///< create `path` (the lock directory) and its parents as container nodes
        list,            ///< get_children(`path`)
        stat_node,       ///< exists(`path`): learn the creation zxid of a node found after a lost reply
        watch,           ///< get_data(`path`) with a watch: the one node we wait on
        wait_event,      ///< nothing to send: wait for the watch to fire
        wait_connected,  ///< wait until the session is connected again, then call on_connected()
        remove,          ///< delete our node `path`
        done,            ///< complete with `ec` (empty: acquired)
    };

    struct action {
        action_kind kind = action_kind::none;
        std::string path;
        error_code ec;
        std::vector<std::string> orphans;  ///< extra nodes of ours to delete (fire and forget)
        /// With `watch`: first set a data watch on our own node too, and keep it until done. The
        /// machine asks for it only when the watched node's deletion may grant us the lock without
        /// a listing (see on_own_deleted); every other wait ends in a listing, which sees our node
        /// gone by itself.
        bool watch_own = false;
    };

    acquire_fsm(std::string dir, queue_policy policy, std::uint64_t attempt_id, bool try_only);

    action start();
    action on_create(error_code ec, std::string created_path, std::int64_t czxid, error_code list_ec,
                     const std::vector<std::string>& children);
    action on_parents_created(error_code ec);
    action on_children(error_code ec, const std::vector<std::string>& children);
    action on_stat(error_code ec, std::int64_t czxid);
    /// The watch is set; `marked`: the watched node's data carries the holder mark.
    action on_watch_set(error_code ec, bool marked = false);
    /// The watched node was deleted (`deleted`) or its data changed.
    action on_watch_fired(bool deleted = true);
    action on_removed(error_code ec);
    /// Our own node was deleted by someone else: the driver keeps a data watch on it once a watch
    /// action asked for one (watch_own). Completes with errc::lock_lost (or the pending cancel's
    /// reason); ignored before our node is known and while we delete it ourselves. ZooKeeper
    /// delivers one session's replies and events in order and the own watch is set before the
    /// watch on the node we wait on, so this comes before the event of any later deletion: a
    /// handoff without a re-list can never grant the lock on a node that is gone. A waiter that
    /// will list again anyway sets no own watch (one read fewer per contended acquire) and learns
    /// of the deletion from that listing.
    action on_own_deleted();
    action on_connected();
    /// Cancellation (asio::error::operation_aborted) or the deadline (errc::timeout).
    action on_cancel(error_code reason);
    /// The session expired or closed: our ephemeral node is gone with it.
    action on_session_lost(error_code ec);

    bool finished() const noexcept { return state_ == state::done; }
    const std::string& own_node() const noexcept { return own_; }
    std::int64_t fencing_token() const noexcept { return czxid_; }
    /// After a grant: whether to mark our node as held (an exclusive holder with a possible successor).
    bool should_mark() const noexcept { return mark_; }
    /// Whether the last grant skipped the re-list (diagnostics, tests).
    bool fast_handoff() const noexcept { return fast_; }
    /// The queue position we last saw (0 = head), for diagnostics.
    std::size_t last_position() const noexcept { return position_; }
    const std::string& dir() const noexcept { return dir_; }
    const queue_policy& policy() const noexcept { return policy_; }

    static constexpr int max_parent_retries = 16;

private:
    enum class state {
        idle, creating, creating_parents, listing, statting, watching, waiting, waiting_connected,
        removing, done
    };

    action create();
    action list();
    action watch();  // get_data(watched_) with a watch, own-node watch as own_watched_ says
    action remove();
    action finish(error_code ec);
    action wait_connected(state resume);
    action evaluate_queue(const std::vector<std::string>& children);
    action find_own(const std::vector<std::string>& children);
    action fail(error_code ec);

    std::string dir_;
    queue_policy policy_;
    std::uint64_t id_;
    std::string prefix_;
    bool try_only_;
    state state_ = state::idle;
    state resume_ = state::idle;
    bool own_unknown_ = false;  // a create's reply was lost: our node may exist under our id
    std::string own_;
    std::int64_t czxid_ = 0;
    std::size_t position_ = 0;
    int parent_retries_ = 0;
    error_code abort_;
    std::string watched_;          // the node we wait on
    bool watched_clear_ = false;   // nothing that could block us is before the watched node
    bool own_watched_ = false;     // the current watch came with watch_own: a fast handoff is safe
    node_kind watched_kind_ = node_kind::exclusive;
    bool mark_ = false;
    bool fast_ = false;
};

}  // namespace zklock::detail
