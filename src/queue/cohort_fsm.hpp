// Cohort mode as a state machine that holds no Asio or ZooKeeper object.
//
// One cohort per (session, role, lock path): the local acquires that want the same lock in the
// same role queue behind one ZooKeeper node. It runs *turns*. A turn is one ordinary acquire (the
// acquire operation, with all its guarantees) of one node on behalf of every local waiter; once
// granted, local grants in FIFO order with no ZooKeeper request; then the release of that node.
//
//   idle --first waiter--> acquiring --granted--> held --last holder left, and no waiter
//    ^                        |                    |     or the budget is spent--> release --> idle
//    |                        | the last waiter    |                                  (or acquiring
//    +-------- aborted -------+ left: cancelled    +-- lost: every holder and waiter   again if
//                               (the node deleted)     is told --> idle                 waiters remain)
//
// Bounded unfairness: while a turn is held, one get_children with a child watch (sent only once a
// local handoff is in sight) tells whether any contender is queued behind our node; a child
// change sends it again. At most `budget` local grants happen in a turn unless that listing said
// nobody waits behind us (and no child change came since); once someone waits and the budget is
// spent, no new local grant is made: the node is released when its holders have left, and queued
// again at the back if local waiters remain. A revocation request on the node stops local grants
// the same way (a node revoked before its first grant still serves one holder, who sees the
// request, as a plain acquire's would).
//
// The driver (src/ops/cohort.cpp) names waiters by ids of its own, feeds each event in, and
// performs the returned actions in order. Every event that comes back from an asynchronous step
// carries the turn it belongs to: a reply of an earlier turn is ignored. The state is complete
// before an event returns, so an action that runs user code inline (a holder told of a loss) may
// feed a new event in before the rest of the list is performed.
#pragma once

#include <zklock/detail/queue_policy.hpp>
#include <zklock/error.hpp>

#include <boost/container/small_vector.hpp>

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::detail {

class cohort_fsm {
public:
    using id_type = std::uint64_t;

    /// What the turn's node does, as its lease reports it.
    enum class node_status { held, suspended, lost };

    struct action {
        enum class kind_t {
            start_turn,    ///< acquire a node for turn `turn`, cancellable (reply: on_turn_acquired)
            cancel_turn,   ///< cancel the turn's acquire (it deletes its node)
            follow_node,   ///< the turn holds: report the node's status and revocation requests
            grant,         ///< complete waiter `id` with a local lease, grant `n` of turn `turn`
            fail,          ///< complete waiter `id` with `ec`
            lose,          ///< tell holder `id` that its lease is lost for `ec`
            list_others,   ///< get_children of the lock path with a child watch (reply: on_others_listed)
            wait_others,   ///< wait for that watch (fired: on_others_changed)
            drop_others,   ///< forget that listing and its watch
            release_node,  ///< turn `turn` is over: release its node (a local release that ended the
                           ///< turn completes with it)
        };
        kind_t kind;
        id_type id = 0;
        std::uint64_t turn = 0;
        std::uint64_t n = 0;
        error_code ec{};
    };
    using actions = boost::container::small_vector<action, 4>;

    /// How a try-acquire goes: granted locally at once (`out` holds the grant), an ordinary
    /// try-acquire of its own node (no turn runs and nobody holds), or busy (errc::would_block).
    enum class try_verdict { granted, plain, busy };

    /// `kind`: the role's node kind (shared: the holders of a turn hold together); `budget`: local
    /// grants per turn while someone waits behind our node (at least 1).
    cohort_fsm(node_kind kind, std::uint32_t budget) noexcept;

    /// A waiter joins the local queue.
    actions arrive(id_type id);
    /// A try-acquire (not queued).
    try_verdict try_arrive(id_type id, actions& out);
    /// A waiter leaves (cancelled, timed out), if still waiting: it fails with `reason`.
    actions leave(id_type id, error_code reason);

    /// The turn's acquire completed: `ec`, or the node `node_name` (its name, not its path), the
    /// status of its lease and whether a revocation request was seen while it waited.
    actions on_turn_acquired(std::uint64_t turn, error_code ec, std::string_view node_name = {},
                             node_status status = node_status::held, error_code lost_reason = {},
                             bool revocation_requested = false);
    /// The node's status changed (lost: `reason`).
    actions on_node_status(std::uint64_t turn, node_status st, error_code reason = {});
    /// A revocation request was written into the node.
    actions on_revocation(std::uint64_t turn);
    /// The reply to list_others.
    actions on_others_listed(std::uint64_t turn, error_code ec, const std::vector<std::string>& children);
    /// The child watch of list_others fired (`ec`: it failed).
    actions on_others_changed(std::uint64_t turn, error_code ec);
    /// Holder `id`, granted in turn `turn`, released.
    actions on_local_release(std::uint64_t turn, id_type id);
    /// The session is presumed expired: waiters of a turn still queued in ZooKeeper fail at once.
    actions on_presumed_expired();

    /// Nothing runs: no turn, no waiter, no holder. The driver may go.
    bool idle() const noexcept { return turn_ == turn_state::idle && waiters_.empty() && holders_.empty(); }
    bool holding() const noexcept { return turn_ == turn_state::held; }
    std::uint64_t turn() const noexcept { return turn_id_; }
    std::size_t waiting() const noexcept { return waiters_.size(); }
    std::size_t holders() const noexcept { return holders_.size(); }

    /// Whether `children` holds a contender that our node `own` blocks: a later queue node whose
    /// grant rule counts our kind.
    static bool anyone_behind(const std::vector<std::string>& children, std::string_view own);

private:
    enum class turn_state { idle, acquiring, held };
    enum class others_state { unknown, none, waiting };

    bool may_grant() const noexcept;
    void pump(actions& out);
    void grant_front(actions& out);
    void grant(id_type id, actions& out);
    void start_turn(actions& out);
    void end_turn(actions& out);
    void turn_lost(error_code reason, actions& out);
    void fail_waiters(error_code ec, actions& out);
    void drop_others(actions& out);
    void check_others(actions& out);

    bool shared_;
    std::uint32_t budget_;

    std::deque<id_type> waiters_;
    std::vector<id_type> holders_;  // local holders of the turn's node
    turn_state turn_ = turn_state::idle;
    std::uint64_t turn_id_ = 0;
    bool cancel_sent_ = false;
    node_status status_ = node_status::held;
    std::string own_;                // the turn's node name, while held
    std::uint64_t grants_ = 0;       // local grants in this turn
    others_state others_ = others_state::unknown;
    bool listing_ = false;           // list_others in flight
    bool watching_ = false;          // a listing or its watch may still answer
    bool draining_ = false;
};

}  // namespace zklock::detail
