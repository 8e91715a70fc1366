// The shared_mutex: writers are exclusive nodes, readers shared ones that wait on the nearest
// writer before them. Both sides are named as Apache Curator's InterProcessReadWriteLock names
// them ("...__WRIT__<seq>", "...__READ__<seq>"); Kazoo's ReadLock is "<uuid>__rlock__<seq>" (its
// WriteLock's nodes are its Lock's, a mutex's).
#include <zklock/detail/recipe.hpp>

namespace zklock::detail {

namespace {
constexpr std::string_view writer_markers[] = {"__WRIT__"};
constexpr foreign_name writer_foreign[] = {{"__WRIT__", lock_library::curator}};
constexpr std::string_view reader_markers[] = {"__READ__"};
constexpr foreign_name reader_foreign[] = {{"__READ__", lock_library::curator}, {"__rlock__", lock_library::kazoo}};
}  // namespace

constinit const recipe writer_recipe{"shared_mutex", node_kind::exclusive, writer_markers, writer_foreign, true};
constinit const recipe reader_recipe{"shared_mutex", node_kind::shared, reader_markers, reader_foreign, true};

}  // namespace zklock::detail
