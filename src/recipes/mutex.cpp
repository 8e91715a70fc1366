// The mutex: exclusive nodes, each waiting on the node just before it.
#include <zklock/detail/recipe.hpp>

namespace zklock::detail {

namespace {
// Apache Curator's InterProcessMutex names its nodes "...lock-<seq>" (so does LeaderSelector,
// a mutex underneath); Kazoo's Lock, "<uuid>__lock__<seq>".
constexpr std::string_view markers[] = {"lock-"};
constexpr foreign_name foreign[] = {{"lock-", lock_library::curator}, {"__lock__", lock_library::kazoo}};
}  // namespace

constinit const recipe mutex_recipe{"mutex", node_kind::exclusive, markers, foreign, true};

}  // namespace zklock::detail
