// What a lock object asks of the queue: the kind of its node and the grant rule that kind
// follows. Small on purpose: the public lock headers include it (the acquire's state machine,
// acquire_fsm.hpp, is the library's own).
#pragma once

#include <zklock/detail/path.hpp>

#include <cstdint>

namespace zklock::detail {

/// Decides, from the queue, whether a node holds what it asked for.
struct queue_policy {
    node_kind kind = node_kind::exclusive;  ///< the kind of our own node
    std::uint32_t permits = 1;              ///< semaphore permits (kind == permit)
    bool rw_names = false;                  ///< a shared_mutex's writer: named "__WRIT__" (see node_prefix)
    bool count_known = false;               ///< permit: the path's stored count was verified before
};

/// The one grant rule every recipe is an instance of. A node holds when fewer than `window`
/// nodes of the kinds `counts` are before it in the queue; a waiter watches the `window`-th
/// nearest of them (its deletion is the first change that can make the count fall below the
/// window). A node of a kind outside `compatible` before ours is another recipe on the same path:
/// errc::recipe_mismatch. The flags say which listing-free handoffs the rule allows (see
/// acquire_fsm): the deletion of a watched head grants (`head_handoff`, only with a window of
/// one: with more, one deletion does not say how many are left), an exclusive node watched may
/// leave a handoff mark (`marks`), and an exclusive waiter may watch the node ahead of the one it
/// waits on (`lookahead`).
struct grant_rule {
    kind_set counts = 0;
    std::uint32_t window = 1;
    kind_set compatible = 0;
    bool head_handoff = false;
    bool marks = false;
    bool lookahead = false;
};

/// The rule of a policy: mutex and writer, every node counts, window one (the node just
/// before); reader, only exclusive nodes count (the nearest writer); permit, only permit nodes
/// count, window the permit count (the permit node `permits` places before ours).
grant_rule rule_of(const queue_policy& policy) noexcept;

}  // namespace zklock::detail
