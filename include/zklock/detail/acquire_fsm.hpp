// The acquire algorithm as a state machine that holds no Asio or ZooKeeper object.
//
// The driver (src/ops/acquire_op.cpp) performs the action returned by each call and feeds the outcome
// back as the next event. Every recipe (mutex, shared_mutex, semaphore) uses this machine; they
// differ only in the queue policy, which decides from the queue whether we hold the lock and, if
// not, which single node to watch.
//
//   start ──> create(+list) ──> [queue evaluated] ──acquired──> done(ok)
//                │  no_node           │ blocked
//                v                    v
//          create_parents        watch(node) ──> wait_event ──fired──> list ──> ...
//   connection loss anywhere: wait_connected, then redo the step (a lost create reply is
//   resolved by listing and looking for our attempt id, never by creating a second node; a node
//   with our id counts as ours only when ZooKeeper says our session owns it: ephemeralOwner).
//   cancel / timeout / try-failed: as soon as no request is in flight, remove our node, then done.
//
// A semaphore (permit policy) first makes sure the lock path stores its permit count ("zklock-
// semaphore permits=N"): read_count, and claim_count if the path has no data yet (compare-and-set
// on the data version). Nothing is created in those states, so a cancellation or the deadline
// completes at once there. A driver that has seen the count verified may say so (count_known) and
// skip the read on later acquires; a create that finds the path gone verifies it again.
//
// A semaphore of N permits is held by the N oldest permit nodes, in no order of release. Its
// first waiter (N nodes before it) watches all N (action::also besides the nearest): any one's
// deletion makes it hold, and it lists. A waiter further back watches the nearest node before
// it, which waits too, and lists when that node is deleted or written into (an event, or a data
// version newer than at its last listing when it sets the watch): a waiter granted by a listing that showed a node after it writes
// into its own node (action::touch), so the waiter behind it learns that it is now the first
// waiter. One release wakes the first waiter; its grant wakes the one behind it.
//
// Handoff without a re-list, two ways (docs/handoff.md has the whole argument):
//  * the watched node was the oldest queue node in our own listing: nothing older can ever appear
//    (sequence numbers only grow), so its deletion means we hold the lock;
//  * the watched node is an exclusive node and it left with a handoff mark: an exclusive holder
//    (always the oldest node) releases with multi(set_data(lock path, "zklock-released <its
//    name>"), delete(its node)). On the deletion we read the lock path once (read_mark, with an
//    exists() of our own node in the same round trip): the mark must name the node we watched,
//    and the path's mzxid must equal its pzxid (the data was written in the same transaction as
//    its last child change, which a set_data alone cannot do). Then everything up to the watched
//    node is gone, as in the first case. A short queue is listed instead (see min_queue_for_mark).
//  * look-ahead (exclusive waiters, in a queue of any length): the waiter also
//    watches the node before its predecessor (the driver may set that watch later, once the
//    queue has drained near: see src/ops/lookahead_window.hpp; until then it waits without). When that one goes, it sets a watch on its own node
//    and lists right behind it (or, in a long queue, reads the handoff mark, which must name that
//    node): if the predecessor is now the head, the wait is armed, and the predecessor's deletion
//    alone grants the lock, as in the first case. The listing is made while the predecessor holds,
//    not after it let go: a handoff costs the holder's delete and one watch event.
// All rest also on our own node still existing: in the first case it is watched since before the
// predecessor (its deletion is heard first), in the second the exists() says so. Data written into
// a queue node never grants anything. Every other deletion, and every change we cannot interpret,
// falls back to listing.
//
// One recipe per path: a semaphore's permits and exclusive/shared nodes never share a lock path.
// The younger of two such nodes always sees the older in its first listing (which follows its
// create on the same session), and refuses with errc::recipe_mismatch, so two "exclusive" holders
// of different recipes can never hold at once.
#pragma once

#include <zklock/detail/listing.hpp>
#include <zklock/detail/path.hpp>
#include <zklock/detail/queue_policy.hpp>
#include <zklock/detail/shared_path.hpp>
#include <zklock/error.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zklock::detail {

/// Whether a request's error means the session is over (expired, or closing): our ephemeral
/// nodes are gone with it.
inline bool ends_session(const error_code& ec) noexcept
{
    return ec == zk_errc::session_expired || ec == zk_errc::closing;
}

/// A semaphore holder's write into its own node once granted (acquire_fsm::action::touch): the
/// first is set_data(node, its data, version 0). What follows its reply: nothing (written, or the
/// node or the session is gone), the same write once connected again (the connection was lost
/// and the write may not have been applied), or a read of the node and a write of what it read
/// back at the version read (someone wrote first, a revocation request: it stays, and the waiter
/// behind still hears a write). A write back that finds another version again is done: that other
/// write was heard too.
enum class touch_next { done, retry, write_back };
touch_next after_touch(const error_code& ec, bool wrote_back) noexcept;

/// The data a semaphore's lock path stores: its permit count.
std::string permit_count_data(std::uint32_t permits);

/// The handoff mark an exclusive holder writes into its lock path as it releases: it names the
/// holder's node (its name, not its path).
std::string handoff_mark(std::string_view node_name);
/// Whether a lock path's data is a handoff mark (a semaphore treats it as "no count stored").
bool is_handoff_mark(std::string_view data) noexcept;

/// The data a shared_mutex writer's node holds once its holder downgraded it to a read lock
/// (lease::async_downgrade): the mark, then the node's data before (its owner).
std::string downgrade_mark(std::string_view owner);
/// Whether a node's data is a downgrade mark.
bool is_downgrade_mark(std::string_view data) noexcept;

/// The outcome of looking at the queue: held, or blocked by `watch` (an index into the queue)
/// and, for a spread rule's first waiter, by every node in `also` too.
struct verdict {
    bool acquired = false;
    std::size_t watch = 0;
    std::vector<std::size_t> also;
    bool behind = false;  ///< spread rule: behind the first waiter (`watch` waits too)
};

/// rule_of(policy) on a sorted queue (the reference the unit tests hold scan_queue to).
verdict evaluate(const std::vector<queue_node>& queue, std::size_t own, const queue_policy& policy);

/// What one listing says about our node, from scan_queue().
struct scan_result {
    bool found = false;          ///< our own node is listed
    bool acquired = false;       ///< it holds what it asked for
    std::string_view watch;      ///< when blocked: the child to wait on
    node_kind watch_kind = node_kind::exclusive;
    bool watch_is_head = false;  ///< when blocked: no queue node is older than `watch`
    /// A rule with look-ahead, when blocked and `watch` is not the head: the node just before
    /// `watch` (the one whose departure may make `watch` the head: see acquire_fsm's look-ahead).
    std::string_view ahead;
    node_kind ahead_kind = node_kind::exclusive;
    /// A spread rule's first waiter: the other nodes that hold, each watched as `watch` is.
    std::vector<std::string_view> also;
    /// A spread rule's waiter behind the first waiter: `watch` is the nearest counted node, which
    /// waits too; its owner writes into it once granted.
    bool behind = false;
    std::size_t position = 0;    ///< queue nodes before ours
    std::size_t size = 0;        ///< children in the listing (what listing again would cost)
    bool has_successor = false;  ///< a queue node after ours
    std::vector<std::string_view> duplicates;  ///< other children with our attempt id
    bool recipe_mismatch = false;  ///< a node of another recipe (permit vs exclusive/shared) is before ours
};

/// evaluate() over an unsorted listing, in one pass over its parsed entries that neither copies
/// nor sorts it: every listing goes through this, once per acquire it serves, and in a queue of N
/// a waiter's first listing holds up to N names. Views point into `children`. The unit tests check
/// it against evaluate() on random queues.
scan_result scan_queue(const listing& children, std::string_view own_name, std::uint64_t own_id,
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
        read_count,      ///< get_data(`path`): the semaphore's stored permit count
        claim_count,     ///< set_data(`path`, `data`, `version`): store our permit count
        read_mark,       ///< get_data(`path`), the lock path (its handoff mark, mzxid and pzxid), and
                         ///< exists(own_node()) in the same round trip
        arm,             ///< look-ahead: a data watch on our own node (if not set yet), then right
                         ///< behind it get_children(`path`) (reply: on_listed) or, with `mark`,
                         ///< get_data(`path`) (reply: on_mark_read, own_exists true: the own watch's
                         ///< reply came first and reported a missing node through on_own_deleted)
        done,            ///< complete with `ec` (empty: acquired)
    };

    struct action {
        action_kind kind = action_kind::none;
        std::string path;
        error_code ec;
        /// Other nodes named with our attempt id (a lost create reply's duplicate). The driver deletes
        /// each one that ZooKeeper says our session owns (exists(): ephemeralOwner), fire and
        /// forget, and leaves any other alone: an id alone never makes a node ours.
        std::vector<std::string> duplicates;
        /// With `watch`: first set a data watch on our own node too, and keep it until done. The
        /// machine asks for it only when the watched node's deletion may grant us the lock without
        /// a listing (see on_own_deleted); every other wait ends in a listing, which sees our node
        /// gone by itself.
        bool watch_own = false;
        /// With `watch` (a semaphore's first waiter): also keep a data watch on each of these
        /// nodes, until the next watch action names others or none. The deletion of any, or a reply
        /// that it does not exist, is on_also_fired(); its data changing means nothing: the driver
        /// watches it again.
        std::vector<std::string> also;
        /// With `done` (granted): write into our own node, so that the waiter behind us, which
        /// watches it, hears that we hold (see after_touch). The driver does it once connected, in
        /// the background, and the grant does not wait for it.
        bool touch = false;
        std::string data;         ///< claim_count: the data to write
        std::int32_t version = -1;  ///< claim_count: the data version it must still have
        /// With `wait_event`: also keep a data watch on this node (the look-ahead watch, replacing
        /// any earlier one); its deletion, or a reply that it does not exist, is on_ahead_fired().
        /// Its data changing means nothing: the driver just watches it again.
        std::string ahead;
        bool mark = false;  ///< with `arm`: read the lock path's handoff mark instead of listing
        /// With `create`: again, because an earlier create's reply was lost and the listing shows
        /// it was never applied.
        bool retry = false;
        /// With `list`: a sync of `path` first, the listing right behind its reply (a sync's
        /// error is the listing's). The listing looks for the node a lost create may have made:
        /// after a reconnect our server may be a follower that has not applied that create yet,
        /// and a listing it serves would say there is none (and we would create a second node
        /// behind our first); one sent after the sync sees every create the leader applied.
        bool sync = false;
    };

    acquire_fsm(std::shared_ptr<const std::string> dir, queue_policy policy, std::uint64_t attempt_id, bool try_only);
    acquire_fsm(std::string dir, queue_policy policy, std::uint64_t attempt_id, bool try_only);

    action start();
    /// The reply to create and the listing sent behind it (the driver's; the overload with names
    /// below is for tests).
    action on_created(error_code ec, std::string created_path, std::int64_t czxid, error_code list_ec,
                      const listing& children);
    action on_create(error_code ec, std::string created_path, std::int64_t czxid, error_code list_ec,
                     const std::vector<std::string>& children);
    action on_parents_created(error_code ec);
    /// The reply to read_count: the path's data and data version.
    action on_count_read(error_code ec, const std::string& data, std::int32_t version);
    /// The reply to claim_count.
    action on_count_claimed(error_code ec);
    /// The replies to read_mark: the lock path's data, its Stat's mzxid and pzxid, and whether our
    /// own node exists (`ec`: the first error of the two).
    action on_mark_read(error_code ec, const std::string& data, std::int64_t mzxid, std::int64_t pzxid,
                        bool own_exists);
    /// A listing (the driver's; the overload with names below is for tests).
    action on_listed(error_code ec, const listing& children);
    action on_children(error_code ec, const std::vector<std::string>& children);
    /// The reply to stat_node: `ours` when the node's ephemeralOwner is our session.
    action on_stat(error_code ec, std::int64_t czxid, bool ours);
    /// The watch on the node we wait on is set (or failed), with that node's data and data
    /// version. A reader whose nearest writer's data is a downgrade mark is granted: that writer
    /// held the lock when it downgraded, so no other writer is before it, and none between it and
    /// us (it is the nearest); new nodes only ever queue behind ours. A semaphore waiter behind the
    /// first waiter lists again when the version is newer than the one it last listed after: its
    /// owner may have been granted (and written) since our listing.
    action on_watch_set(error_code ec, std::string_view data = {}, std::int32_t version = 0);
    /// A semaphore's first waiter: a node of action::also was deleted, or was gone when its watch
    /// was set.
    action on_also_fired();
    /// The watched node was deleted (`deleted`) or its data changed.
    /// `queue_hint`: how long the queue was in the latest listing of this session (the driver's
    /// session remembers it): a deletion of an exclusive node is worth a mark read only in a long
    /// queue (min_queue_for_mark).
    action on_watch_fired(bool deleted = true, std::size_t queue_hint = 0);
    /// Look-ahead: the node before the one we wait on (action::ahead) was deleted, or was already
    /// gone when the driver set its watch. `queue_hint` as for on_watch_fired.
    action on_ahead_fired(std::size_t queue_hint = 0);
    /// The driver's data watch on our own node (action::watch_own, action::arm): `set` when the
    /// server confirmed it (the reply to its get_data); false when it is not in place: its read
    /// failed with anything but no_node (that is on_own_deleted), or it fired for a data change and
    /// the driver is setting it again. A wait that would end without a listing (the watched node
    /// was the head, or an armed look-ahead) grants on the watched node's deletion only while the
    /// own watch is confirmed; otherwise it lists. Never an action of its own (returns none).
    action on_own_watch(bool set);
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
    /// Between action::arm and the reply of its listing or mark read.
    bool arming() const noexcept { return state_ == state::arming_list || state_ == state::arming_mark; }
    /// Waiting for an event (action::wait_event was the last action).
    bool waiting() const noexcept { return state_ == state::waiting; }
    /// Permit policy: the stored count is known to be ours (the driver may remember it).
    bool count_verified() const noexcept { return count_verified_; }
    const std::string& own_node() const noexcept { return own_; }
    /// The node we wait on (while watching or waiting), shared: the driver's watch keeps this copy.
    const shared_path& watched_node() const noexcept { return watched_; }
    /// Look-ahead: the node before the one we wait on, while it is watched (else empty).
    const shared_path& ahead_node() const noexcept { return ahead(); }
    std::int64_t fencing_token() const noexcept { return czxid_; }
    /// Whether the last grant skipped the re-list (diagnostics, tests).
    bool fast_handoff() const noexcept { return fast_; }
    /// Whether that grant came from a handoff mark (diagnostics, tests).
    bool marked_handoff() const noexcept { return marked_; }
    /// Whether the wait is armed: the node we wait on is known to be the head, so its deletion
    /// alone grants us the lock (diagnostics, tests).
    bool armed() const noexcept { return watched_clear_ && state_ == state::waiting; }
    /// Whether the holder should release with a handoff mark: an exclusive node (a mutex, a
    /// shared_mutex's writer) that may have a successor that cannot tell it was the head. Only a
    /// holder granted by a listing that showed nobody after it deletes plainly: anyone who queued
    /// later saw it as the head of their own listing.
    bool mark_on_release() const noexcept
    {
        return policy_.kind() == node_kind::exclusive && (!by_listing_ || listed_successor_);
    }
    /// The queue position we last saw (0 = head), for diagnostics.
    std::size_t last_position() const noexcept { return position_; }
    const std::string& dir() const noexcept { return *dir_; }
    const queue_policy& policy() const noexcept { return policy_; }

    /// A waiter reads the handoff mark instead of listing again only when the lock path had at
    /// least this many children in the latest listing it knows of (its own, or a later one of its session): a mark
    /// costs two small requests (the read and the exists), a listing one request whose size grows
    /// with the queue, and a mark read that fails (a child change came between) a listing more.
    /// Measured on loopback (bench C64): with 64 nodes listing again is the cheaper for the server.
    static constexpr std::size_t min_queue_for_mark = 256;
    /// Whether a holder's release writes the handoff mark (mark_on_release) when its session's
    /// latest listing of the path had `queue_hint` children (0: unknown). Only waiters that know of
    /// a queue of min_queue_for_mark read a mark; in a short queue the plain delete is the cheaper
    /// write. Half the threshold: a waiter's listing may be newer than the holder's. A waiter that
    /// finds no mark lists, so this is about cost, never about safety.
    static bool release_writes_mark(std::size_t queue_hint) noexcept;
    /// A look-ahead waiter sets the watch on its own node with its first watch, so that arming (in
    /// the middle of a handoff) is one request, only in queues no longer than this; in a longer
    /// one it sets it when it arms. Set early, the watch is held for the whole wait: bench W10000,
    /// where ~4000 waiters used the look-ahead, peaked 1.5 MB higher with it for all of them.
    static constexpr std::size_t max_queue_for_early_own_watch = 1024;
    static constexpr int max_parent_retries = 16;
    /// Reads and claims of the permit count before the acquire gives up (others keep changing it,
    /// or the connection keeps failing).
    static constexpr int max_count_tries = 16;
    /// Creates whose reply was lost and that the server had not applied (our listing after the
    /// reconnect shows no node of ours) before the acquire fails with errc::request_dropped: the
    /// server closes the connection on a request it refuses outright (larger than its
    /// jute.maxbuffer), and re-sending it would loop forever.
    static constexpr int max_lost_creates = 5;

private:
    enum class state : std::uint8_t {
        idle, reading_count, claiming_count, creating, creating_parents, listing, statting, watching, waiting,
        reading_mark, arming_list, arming_mark, waiting_connected, removing, done
    };

    action create();
    /// `why`: the error if this read would exceed max_count_tries.
    action read_count(error_code why = {});
    action list();
    action watch();  // get_data(watched_) with a watch, own-node watch as own_watched_ says
    action remove();
    action finish(error_code ec);
    action wait_connected(state resume);
    /// A request failed with `ec`: wait for the connection and resume at `resume` (a connection
    /// error), or end as the session did (expired, closing); nullopt for any other error, which
    /// the caller's state decides.
    std::optional<action> retry_or_lost(const error_code& ec, state resume);
    /// What told a waiter that its node holds.
    enum class grant_basis : std::uint8_t {
        listing,         ///< a listing, by the policy's rule (evaluate): nothing before it blocks it
        head_deleted,    ///< the node it waited on was the head (or the last blocker), and is gone
        downgrade_mark,  ///< the writer it waited on now holds a read lock (shared waiters)
        handoff_mark,    ///< the node it waited on left as the head, with a handoff mark
    };
    /// The one place a grant is made: every path that finds our node holding ends here.
    /// `listed_successor`: with grant_basis::listing, whether that listing showed a node after ours.
    action grant(grant_basis basis, bool listed_successor = false);
    action evaluate_queue(const listing& children, bool arming = false);
    action wait_event();  // waiting, with the look-ahead watch if there is one
    action find_own(const listing& children);
    action stat_candidate();
    action fail(error_code ec);

    // Ordered by size (no padding holes): one of these lives in every waiting acquire.
    std::shared_ptr<const std::string> dir_;  // the lock object's path, shared by its acquires
    std::string own_;
    shared_path watched_;          // the node we wait on (shared with the driver's watch)
    shared_path ahead_;            // look-ahead: the node before watched_ (empty: none)
    // What only some acquires need, made when first needed: most hold a pointer instead.
    struct extras {
        std::vector<std::string> also;        // a semaphore's first waiter: the other holders it watches
        std::vector<std::string> candidates;  // after a lost create reply: nodes with our id, oldest first
    };
    std::unique_ptr<extras> extras_;
    extras& more();
    const shared_path& ahead() const noexcept;
    void clear_ahead() noexcept { ahead_.clear(); }
    error_code abort_;
    std::uint64_t id_;  // our node's name prefix is node_prefix(*policy_.what, id_, policy_.marker): built per create, not kept
    std::int64_t czxid_ = 0;
    std::size_t position_ = 0;
    std::size_t listed_size_ = 0;    // children in our latest listing
    queue_policy policy_;
    int lost_creates_ = 0;
    int parent_retries_ = 0;
    int count_tries_ = 0;
    std::int32_t listed_version_ = 0;  // behind_: the watched node's data version we last listed after
    state state_ = state::idle;
    state resume_ = state::idle;
    node_kind ahead_kind_ = node_kind::exclusive;
    bool try_only_;
    bool own_unknown_ = false;  // a create's reply was lost: our node may exist under our id
    bool count_verified_;
    bool watched_clear_ = false;   // nothing that could block us is before the watched node
    bool watched_markable_ = false;  // the watched node may leave with a handoff mark: read it on deletion
    bool own_watched_ = false;     // the driver was asked for a watch on our own node
    bool own_confirmed_ = false;   // ... and the server confirmed it, and it has not fired since
    bool watch_spent_ = false;     // arming: the watch on watched_ fired meanwhile
    bool watch_gone_ = false;      // ... with its deletion
    bool fast_ = false;
    bool marked_ = false;
    bool by_listing_ = false;        // granted by a listing (not by a handoff)
    bool listed_successor_ = false;  // that listing showed a node after ours
    bool behind_ = false;            // a semaphore waiter behind the first waiter (watched_ waits too)
    bool also_gone_ = false;         // a node of extras_->also went while the watch on watched_ was being set
};

}  // namespace zklock::detail
