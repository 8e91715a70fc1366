// The semaphore: permit nodes, a node holding while fewer than the permit count are before it.
// Its names carry no marker: no other library's semaphore queues this way (Curator's
// InterProcessSemaphoreV2 keeps leases under a mutex), so none is recognised either. Cohort mode
// does not apply (a local holder would hold one permit for many).
#include <zklock/detail/recipe.hpp>

namespace zklock::detail {

namespace {
constexpr std::string_view markers[] = {""};
}  // namespace

constinit const recipe semaphore_recipe{"semaphore", node_kind::permit, markers, {}, false};

}  // namespace zklock::detail
