// The extension point of the queue recipes: what a recipe is, and the registry of them.
//
// A recipe is one constant, defined in its own file under src/recipes/. Everything else (the queue
// protocol, the acquire's state machine, the listing-free handoff, cancellation, timeouts,
// metrics, `zklock list` and the interop tables) is generic and reads the recipe. See
// docs/writing-a-recipe.md.
#pragma once

#include <zklock/detail/path.hpp>

#include <span>
#include <string_view>

namespace zklock::detail {

/// A name another library gives the nodes of this recipe: `marker` right before the sequence.
struct foreign_name {
    std::string_view marker;
    lock_library library;
};

/// One queue recipe.
///
/// - `kind` is the grant rule its nodes follow (rule_of: when a node holds, what a waiter
///   watches, which listing-free handoffs apply) and the first letter of zklock's node names.
/// - zklock names a node "<letter>-<16 hex digit attempt id>-<marker><sequence>". `markers[0]` is
///   the default; a recipe that interoperates with several other libraries lists one marker each,
///   and the lock object picks one (queue_policy::marker). A marker should be the one another
///   library uses for the same recipe, so that it sees our nodes as its contenders.
/// - `foreign` lists the names of other libraries' nodes of this recipe, which zklock counts as
///   contenders of kind `kind`, in sequence order.
/// - `cohort`: cohort mode (lock_options::cohort) applies.
struct recipe {
    std::string_view name;  ///< as `zklock list` shows it: "mutex", "shared_mutex", ...
    node_kind kind;
    std::span<const std::string_view> markers;
    std::span<const foreign_name> foreign;
    bool cohort = false;
};

/// The recipes the generic code names (each kind's base recipe, and the writer, which can
/// downgrade), one file each in src/recipes/. Any other recipe is declared by its own public
/// header and listed in src/recipes/registry.cpp.
extern const recipe mutex_recipe;      ///< mutex (and Curator's InterProcessMutex, LeaderSelector; Kazoo's Lock)
extern const recipe writer_recipe;     ///< shared_mutex, its write side
extern const recipe reader_recipe;     ///< shared_mutex, its read side
extern const recipe semaphore_recipe;  ///< semaphore permits

/// Every recipe, in the order names are matched: a zklock name is the first recipe's whose kind
/// and one of whose markers it has; a foreign name is the first recipe's listing its marker.
std::span<const recipe* const> recipes() noexcept;
/// The recipe named `name` (recipe::name; the first, for the shared_mutex's two), or null.
const recipe* find_recipe(std::string_view name) noexcept;

/// The recipe of zklock's names of `kind` that carry no marker (zklock's earliest names), and the
/// recipe a policy built from a bare kind stands for: mutex, shared_mutex's reader, semaphore.
constexpr const recipe& base_recipe(node_kind k) noexcept
{
    switch (k) {
    case node_kind::exclusive: return mutex_recipe;
    case node_kind::shared: return reader_recipe;
    case node_kind::permit: return semaphore_recipe;
    }
    return mutex_recipe;
}

/// The name prefix of an attempt's node: "<letter>-<16 hex digit id>-<marker>", e.g.
/// "x-00ab12cd34ef5678-lock-" (`marker` indexes r.markers; one past them: the first).
std::string node_prefix(const recipe& r, std::uint64_t id, std::size_t marker = 0);
/// The same for the base recipe of `kind`.
inline std::string node_prefix(node_kind kind, std::uint64_t id) { return node_prefix(base_recipe(kind), id); }

}  // namespace zklock::detail
