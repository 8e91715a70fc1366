// zklock/queue.hpp — looking at a lock from outside: path rules, and who holds and who waits.
//
// For tools, dashboards and tests: `zklock list` is built on this. Nothing here takes part in the
// lock; the listing is a snapshot (by the time it completes, the queue may have moved on).
#pragma once

#include <zklock/error.hpp>
#include <zklock/session.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock {

/// Empty when `path` is usable as a lock path: valid UTF-8, absolute and canonical ("/a/b": not
/// "/", no trailing '/', no empty, "." or ".." component), no character the server refuses (C0
/// and C1 controls, U+D800..U+F8FF, U+FFF0..U+FFFF, anything outside the BMP), not under the
/// reserved "/zookeeper", at most 1024 bytes. errc::invalid_path otherwise. Every acquire checks
/// this before sending anything; explain_lock_path says which rule a refused path breaks.
error_code validate_lock_path(std::string_view path) noexcept;

/// Which rule `path` breaks, as a phrase for a message ("a component is '..'", "the path ends
/// with '/'"); empty exactly when validate_lock_path accepts it. The text points to static
/// storage. (errc::invalid_path stays the one error code for every rule.)
std::string_view explain_lock_path(std::string_view path) noexcept;

/// Empty when `servers` is a ZooKeeper connect string, "host:port[,host:port...][/chroot]" (a host
/// is a name, an IPv4 address or an IPv6 address in brackets, "[::1]:2181"; ports 1..65535);
/// errc::invalid_servers otherwise. Nothing is resolved here (see session::async_connect).
error_code validate_servers(std::string_view servers) noexcept;

/// One node of a lock's queue.
struct queue_entry {
    /// Where the node stands in the queue.
    enum class state {
        holder,   ///< holds the lock, or a permit (by the rule every participant applies)
        waiting,  ///< queued behind a holder
        unknown,  ///< a permit node, and the path stores no permit count
    };
    std::string name;  ///< the child name under the lock path
    lock_kind kind = lock_kind::exclusive;        ///< what the node asks for
    lock_library library = lock_library::zklock;  ///< which library made it (by its name)
    /// The recipe its name says it belongs to: "mutex", "shared_mutex", "semaphore" or
    /// "election" (static storage). Another library's node is named by the recipe its name
    /// matches: Curator's LeaderSelector and Kazoo's Election queue mutex nodes.
    std::string_view recipe;
    std::int64_t sequence = 0;  ///< ZooKeeper's sequence number: the queue order
    state status = state::waiting;  ///< holder, waiting, or unknown
    /// The node's data (zklock: lock_options::owner_info, "<host>:<pid>" by default) and stat
    /// (ctime: when it queued; ephemeral_owner: its session), read after the listing.
    std::string data;
    zklock::stat stat;  ///< the node's stat (see data)
    bool gone = false;  ///< deleted between the listing and the read of its data
};

/// A lock's queue, in queue order.
struct queue_listing {
    std::vector<queue_entry> entries;  ///< the queue nodes, in queue order
    std::uint32_t permits = 0;        ///< the permit count a semaphore stored at the path (0: none)
    std::size_t other_children = 0;   ///< children that are not queue nodes (ignored by every lock)
};

/// The sequence number of a queue node, from its name or path; nullopt if it is not one.
std::optional<std::int64_t> queue_sequence(std::string_view node) noexcept;

namespace detail {
void initiate_list_queue(session_ptr s, std::string path, handler<error_code, queue_listing> h);
}

/// Lists the queue at lock path `path`.
///
/// Completion signature: void(error_code, queue_listing). One listing, then the data of the
/// path and of every queue node, pipelined (a queue of N costs N + 2 requests and about one
/// round trip).
///
/// Executor: the handler's associated executor (default: the session's); never completes inside
/// this call.
///
/// Cancellation: terminal, partial and total alike complete at once with operation_aborted (the
/// listing has no side effect; replies that come later are dropped).
///
/// Errors: errc::invalid_path (nothing sent), zk_errc::no_node (no such path),
/// errc::chroot_missing (the server list's chroot does not exist), errc::not_connected,
/// errc::session_expired, errc::session_closed (also for a moved-from session: then posted
/// through asio::system_executor on to the handler's associated executor), zk_errc::no_auth,
/// connection errors.
///
/// Lifetimes: the session's state is kept alive by the operation.
///
/// Thread safety: call from the session's executor.
template <asio::completion_token_for<void(error_code, queue_listing)> Token = detail::default_token_t<asio::any_io_executor>>
auto async_list_queue(session& s, std::string path, Token&& token = {})
{
    return asio::async_initiate<Token, void(error_code, queue_listing)>(
        detail::initiation<&detail::initiate_list_queue, detail::session_ptr>{s.impl()}, token, std::move(path));
}

}  // namespace zklock
