// Queue-node names (the path rules are zk_path.hpp). Pure functions, no I/O: unit-tested and
// fuzzed.
#pragma once

#include <zklock/detail/zk_path.hpp>
#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::detail {

/// What a queue node asks for (zklock::lock_kind, under the name the queue code has used).
using node_kind = lock_kind;

/// The first character of zklock's node names for a kind: 'x', 'r' or 's'.
constexpr char kind_letter(node_kind k) noexcept
{
    switch (k) {
    case node_kind::exclusive: return 'x';
    case node_kind::shared: return 'r';
    case node_kind::permit: return 's';
    }
    return '?';
}

/// The kind a zklock node name's first character stands for (nullopt: none).
constexpr std::optional<node_kind> kind_of_letter(char c) noexcept
{
    switch (c) {
    case 'x': return node_kind::exclusive;
    case 'r': return node_kind::shared;
    case 's': return node_kind::permit;
    default: return std::nullopt;
    }
}

/// A set of node kinds (a bit each).
using kind_set = std::uint8_t;
constexpr kind_set kind_bit(node_kind k) noexcept
{
    return static_cast<kind_set>(1u << static_cast<unsigned>(k));
}

struct recipe;

/// A parsed queue node. zklock's own: "<kind>-<16 hex digit id>-<marker><sequence>", e.g.
/// "x-00ab12cd34ef5678-lock-0000000042", where the marker is its recipe's (see recipe.hpp), the
/// one another library uses for the same recipe so that it sees our nodes as contenders of the
/// right kind. Names without a marker (zklock's earliest names) are recognised too.
struct queue_node {
    std::string name;  ///< the child name as listed
    node_kind kind;
    std::uint64_t id;  ///< the acquiring attempt's unique id (0 for another library's node)
    std::int64_t seq;  ///< ZooKeeper's sequence suffix
    lock_library library = lock_library::zklock;
    const recipe* what = nullptr;  ///< the recipe its name says it belongs to
};

/// A queue node parsed in place: `name` views the listed child name (no allocation).
struct queue_view {
    std::string_view name;
    node_kind kind;
    std::uint64_t id;
    std::int64_t seq;
    lock_library library = lock_library::zklock;
    const recipe* what = nullptr;  ///< the recipe its name says it belongs to
};

/// Parses one child name without copying it; nullopt for anything that is not a queue node of
/// zklock or one of the foreign names a recipe lists (Curator's "...lock-<seq>",
/// "...__READ__<seq>", "...__WRIT__<seq>", "...latch-<seq>"; Kazoo's "...__lock__<seq>",
/// "...__rlock__<seq>").
std::optional<queue_view> parse_queue_view(std::string_view child) noexcept;

/// Parses one child name; nullopt for anything that is not a queue node.
std::optional<queue_node> parse_queue_node(std::string_view child) noexcept;

/// The queue: the children that are queue nodes, in sequence order. Others are ignored.
std::vector<queue_node> make_queue(const std::vector<std::string>& children);

/// Joins a directory and a child name.
std::string join_path(std::string_view dir, std::string_view child);

/// The last component of a path.
std::string_view base_name(std::string_view path) noexcept;

/// A fresh random 64-bit attempt id (never 0).
std::uint64_t new_attempt_id();

}  // namespace zklock::detail
