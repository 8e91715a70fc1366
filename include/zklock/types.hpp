// zklock/types.hpp — small value types shared by the session and the recipes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <zklock/error.hpp>

namespace zklock {

/// A ZooKeeper node's metadata (the C client's `struct Stat`).
struct stat {
    std::int64_t czxid = 0;           ///< zxid of the transaction that created the node
    std::int64_t mzxid = 0;           ///< zxid of the last data change
    std::int64_t ctime = 0;           ///< creation time, ms since the epoch (server clock)
    std::int64_t mtime = 0;           ///< last data change, ms since the epoch (server clock)
    std::int32_t version = 0;         ///< data version
    std::int32_t cversion = 0;        ///< children version
    std::int32_t aversion = 0;        ///< ACL version
    std::int64_t ephemeral_owner = 0; ///< session id of the owner, 0 if not ephemeral
    std::int32_t data_length = 0;     ///< length of the data, in bytes
    std::int32_t num_children = 0;    ///< number of children
    std::int64_t pzxid = 0;           ///< zxid of the last change to the children
};

/// What a lock's queue node asks for. The one kind of every recipe, listing and metric.
enum class lock_kind : std::uint8_t {
    exclusive,  ///< mutex, or the write side of a shared_mutex
    shared,     ///< the read side of a shared_mutex
    permit,     ///< a semaphore permit
};

/// Every lock_kind, in the order of their values.
inline constexpr lock_kind lock_kinds[] = {lock_kind::exclusive, lock_kind::shared, lock_kind::permit};

/// Which library made a queue node: zklock recognises the lock nodes of Apache Curator 5.x and
/// Kazoo 2.x as contenders, in queue order, with their kinds.
enum class lock_library : std::uint8_t { zklock, curator, kazoo };

/// "exclusive", "shared", "permit".
const char* to_string(lock_kind k) noexcept;
/// "zklock", "curator", "kazoo".
const char* to_string(lock_library l) noexcept;

/// How async_create makes a node.
enum class create_mode {
    persistent,             ///< stays until deleted
    ephemeral,              ///< deleted with the session that created it
    persistent_sequential,  ///< persistent, the name suffixed with a sequence number
    ephemeral_sequential,   ///< ephemeral, the name suffixed with a sequence number
    container,  ///< removed by the server some time after its last child goes
};

/// The state of a session (see session::state()).
enum class session_state {
    disconnected,  ///< not connected yet, or a connect attempt timed out
    connecting,    ///< establishing a new ZooKeeper session
    connected,     ///< connected; requests are served
    suspended,     ///< connection lost; the ZooKeeper session may still be alive
    expired,       ///< the server expired the session (a fresh one follows if configured)
    closed,        ///< closed by the user or destroyed; terminal
};

const char* to_string(session_state s) noexcept;

/// What a watch reports.
enum class watch_event_type {
    created,  ///< the node was created (exists watch)
    deleted,  ///< the node was deleted (any watch)
    changed,  ///< the node's data changed (data or exists watch)
    child,    ///< the node's child list changed (children watch)
};

/// One firing of a watch (watch::async_wait).
struct watch_event {
    watch_event_type type;  ///< what happened
    std::string path;       ///< the watched node's path, as the read named it
};

/// One operation of a multi (transaction).
struct multi_op {
    /// Which operation: as session::async_create, async_remove, async_set_data, or a version
    /// check (the transaction fails unless the node has `version`).
    enum class kind { create, remove, set_data, check };
    kind type = kind::check;                     ///< the operation
    std::string path;                            ///< the node it applies to
    std::string data;                            ///< create, set_data: the data to write
    create_mode mode = create_mode::persistent;  ///< create: how the node is made
    std::int32_t version = -1;                   ///< remove, set_data, check: version (-1: any)

    /// Creates `path` with `data` as `mode` says.
    static multi_op create(std::string path, std::string data = {}, create_mode mode = create_mode::persistent)
    {
        return {kind::create, std::move(path), std::move(data), mode, -1};
    }
    /// Deletes `path` if its version is `version` (-1: any).
    static multi_op remove(std::string path, std::int32_t version = -1)
    {
        return {kind::remove, std::move(path), {}, create_mode::persistent, version};
    }
    /// Sets the data of `path` if its version is `version` (-1: any).
    static multi_op set_data(std::string path, std::string data, std::int32_t version = -1)
    {
        return {kind::set_data, std::move(path), std::move(data), create_mode::persistent, version};
    }
    /// Fails the transaction unless `path` exists with version `version` (-1: any).
    static multi_op check(std::string path, std::int32_t version)
    {
        return {kind::check, std::move(path), {}, create_mode::persistent, version};
    }
};

/// One result of a multi: its own error and, for create, the created path; for set_data, the stat.
struct multi_result {
    error_code ec;      ///< this operation's outcome
    std::string path;   ///< create: the path created (with its sequence suffix, if any)
    zklock::stat stat;  ///< set_data: the node's new stat
};

}  // namespace zklock
