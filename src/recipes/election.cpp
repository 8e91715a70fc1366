// The election: candidates are exclusive nodes; the leader is the one that holds (the oldest),
// and each candidate waits on the one just before it. Cohort mode does not apply: leadership is
// one candidate's, not a turn to hand round.
//
// Names: Curator's LeaderSelector is an InterProcessMutex ("...lock-<seq>", the default here),
// Curator's LeaderLatch names its candidates "...latch-<seq>", Kazoo's Election is a Kazoo Lock
// ("<uuid>__lock__<seq>"): an election that shares its path with one of those names its
// candidates as they do (election_options::names).
#include <zklock/detail/recipe.hpp>

namespace zklock::detail {

extern const recipe election_recipe;  // (declared by zklock/election.hpp too, for its users)

//[recipe_constant
namespace {
// In the order of election_names.
constexpr std::string_view markers[] = {"lock-", "latch-", "__lock__"};
constexpr foreign_name foreign[] = {{"latch-", lock_library::curator}};
}  // namespace

constinit const recipe election_recipe{"election", node_kind::exclusive, markers, foreign, false};
//]

}  // namespace zklock::detail
