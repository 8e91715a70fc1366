// What a lock object asks of the queue: its recipe (the kind of its node, and so the grant rule
// it follows) and the recipe's parameters. Small on purpose: the public lock headers include it
// (the acquire's state machine, acquire_fsm.hpp, is the library's own).
#pragma once

#include <zklock/detail/path.hpp>
#include <zklock/detail/recipe.hpp>

#include <cstdint>

namespace zklock::detail {

/// Decides, from the queue, whether a node holds what it asked for.
struct queue_policy {
    const recipe* what = &mutex_recipe;  ///< never null
    std::uint32_t permits = 1;           ///< semaphore permits (kind() == permit)
    std::uint8_t marker = 0;             ///< which of the recipe's markers our node's name carries
    bool count_known = false;            ///< permit: the path's stored count was verified before

    constexpr queue_policy() noexcept = default;
    constexpr queue_policy(const recipe& r, std::uint32_t permits_ = 1, std::uint8_t marker_ = 0) noexcept
        : what(&r), permits(permits_), marker(marker_)
    {
    }
    /// The base recipe of `k` (mutex, shared_mutex's reader, semaphore).
    constexpr queue_policy(node_kind k, std::uint32_t permits_ = 1) noexcept : what(&base_recipe(k)), permits(permits_) {}

    /// The kind of our own node.
    constexpr node_kind kind() const noexcept { return what->kind; }
};

/// The one grant rule every recipe is an instance of. A node holds when fewer than `window`
/// nodes of the kinds `counts` are before it in the queue. With a window of one a waiter watches
/// the nearest of them. With a wider one (`spread`: a semaphore) the first waiter, the one with
/// exactly `window` of them before it, watches them all (once any one is gone, it holds), and
/// every waiter behind it watches the nearest, itself waiting, whose owner writes into its node
/// once granted: then the one behind it is the first waiter. A node of a kind outside `compatible`
/// before ours is another recipe on the same path: errc::recipe_mismatch. The flags say which
/// listing-free handoffs the rule allows (see acquire_fsm): the deletion of a watched head grants
/// (`head_handoff`, only with a window of one: with more, one deletion does not say how many are
/// left), an exclusive node watched may leave a handoff mark (`marks`), and an exclusive waiter
/// may watch the node ahead of the one it waits on (`lookahead`).
struct grant_rule {
    kind_set counts = 0;
    std::uint32_t window = 1;
    kind_set compatible = 0;
    bool head_handoff = false;
    bool marks = false;
    bool lookahead = false;
    bool spread = false;  ///< set only with a window wider than one
};

/// The rule of a policy: mutex and writer, every node counts, window one (the node just
/// before); reader, only exclusive nodes count (the nearest writer); permit, only permit nodes
/// count, window the permit count, spread if more than one.
grant_rule rule_of(const queue_policy& policy) noexcept;
/// The rule of a node of `kind` (a permit node: with `permits` permits).
grant_rule rule_of(node_kind kind, std::uint32_t permits = 1) noexcept;

}  // namespace zklock::detail
