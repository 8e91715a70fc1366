// The election: candidates are exclusive nodes; the leader is the one that holds (the oldest),
// and each candidate waits on the one just before it. Cohort mode does not apply: leadership is
// one candidate's, not a turn to hand round.
//
// Names: Apache Curator's LeaderLatch names its candidates "...latch-<seq>" (the default here);
// Kazoo's Election is a Kazoo Lock ("<uuid>__lock__<seq>"), and Curator's LeaderSelector an
// InterProcessMutex ("...lock-<seq>"), so an election that shares its path with one of those names
// its candidates as they do (election_options::names).
#include <zklock/detail/recipe.hpp>

namespace zklock::detail {

namespace {
constexpr std::string_view markers[] = {"latch-", "__lock__", "lock-"};
constexpr foreign_name foreign[] = {{"latch-", lock_library::curator}};
}  // namespace

constinit const recipe election_recipe{"election", node_kind::exclusive, markers, foreign, false};

}  // namespace zklock::detail
