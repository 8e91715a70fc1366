// zklock/session.hpp — one ZooKeeper session, driven by the Asio reactor.
//
// A session owns one handle of ZooKeeper's single-threaded C client. There is no ZooKeeper thread:
// the client's socket is waited on by the session's executor and its timers are Asio timers. All
// of a session's work runs on its executor; when the io_context runs on several threads, give the
// session a strand and call its functions (and its locks') from that strand.
//
// Thread safety: distinct objects safe; a shared object only from its executor.
#pragma once

#include <zklock/config.hpp>
#include <zklock/detail/initiation.hpp>
#include <zklock/detail/session_fwd.hpp>
#include <zklock/error.hpp>
#include <zklock/metrics.hpp>
#include <zklock/types.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zklock {

namespace asio = boost::asio;

/// A one-shot watch set by one of the session's async_watch_* reads.
///
/// It fires once: when the watched node changes as the read's kind of watch says (data: changed or
/// deleted; exists: created, changed or deleted; children: child list changed or node deleted).
/// Watches survive connection loss (the client sets them again on reconnect). If the session
/// expires or closes first, async_wait completes with errc::session_expired / errc::session_closed.
/// A moved-from watch is empty, as a default-constructed one: its async_wait completes with
/// errc::invalid_argument.
class watch {
public:
    watch() = default;
    /// For the session: a watch on the given state.
    explicit watch(std::shared_ptr<detail::watch_state> s) noexcept : state_(std::move(s)) {}

    /// False for an empty (default-constructed) watch.
    bool valid() const noexcept { return state_ != nullptr; }

    /// Waits for the watch to fire.
    ///
    /// Completion signature: void(error_code, watch_event). Completes at once (posted) if the
    /// watch fired already.
    ///
    /// Executor: the handler's associated executor (default: the session's). An empty watch has
    /// no executor of its own: as for an empty lease, a handler with no associated executor runs on
    /// asio::system_executor.
    ///
    /// Cancellation: terminal, partial and total; cancelling has no effect on the ZooKeeper watch,
    /// which can be waited on again.
    ///
    /// Errors: errc::session_expired / errc::session_closed (the session ended before the watch
    /// fired); errc::operation_in_progress (one wait at a time: copies of a watch share it, and a
    /// second wait while one is pending completes at once with it; the first keeps waiting);
    /// errc::invalid_argument on an empty watch.
    ///
    /// Lifetimes: a pending wait keeps the watch alive, so every copy of the watch object may be
    /// destroyed meanwhile (a watch nobody holds or waits on is forgotten).
    ///
    /// Thread safety: from the session's executor.
    template <asio::completion_token_for<void(error_code, watch_event)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_wait(Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code, watch_event)>(
            detail::initiation<&detail::initiate_watch_wait, std::shared_ptr<detail::watch_state>>{state_}, token);
    }

private:
    std::shared_ptr<detail::watch_state> state_;
};

/// One ZooKeeper session.
///
/// What holds for every async_* function below (each one's block says the rest):
///  * Executor: completes on the handler's associated executor (default: the session's), never
///    inside the initiating function.
///  * Errors: ZooKeeper's as zk_errc values, zklock's as errc values. Every request can also fail
///    with errc::not_connected (never connected, or the attempt was abandoned),
///    errc::session_expired, errc::session_closed, and zk_errc::connection_loss (the connection
///    went with the request in flight: for a write, its outcome is unknown; read it back).
///  * Allocator: the handler's associated allocator provides the memory that holds the handler
///    while the operation runs, given back before the handler runs (as Asio requires). The
///    operation's own state comes from the default allocator: it may outlive the completion (a
///    cancelled read's reply still arrives; a cancelled acquire deletes its node afterwards).
///  * Initiation: each operation gives asio::async_initiate an initiation object whose
///    get_executor() is the session's, for completion tokens that ask for it.
///  * Lifetimes: the operation keeps the session's state alive (the session object may be
///    destroyed meanwhile: the operation then completes with errc::session_closed); the
///    arguments are copied.
///  * Thread safety: call from the session's executor (a strand, if the io_context runs on
///    several threads).
///  * Cancellation (per-operation, through the handler's cancellation slot): where accepted,
///    terminal, partial and total are all accepted and act alike. Reads and waits complete at once
///    with operation_aborted (a late reply is dropped; they change nothing on the server). Writes
///    (create, remove, set_data, multi) and async_close ignore cancellation: once sent, their
///    outcome is the server's (the lock recipes are where cancellation undoes what was done).
/// While an acquire of the session waits or a lease of it is held ("engaged"), the session makes
/// sure a request only the ZooKeeper leader answers goes out at least every sixth of the session
/// timeout (a `sync`, counted as "sync" in metrics(), when no write went out meanwhile): the send
/// time of the last one answered is what the leases' loss notice counts from (docs/liveness.md).
///
/// Misuse: a moved-from session has no ZooKeeper session and no executor. Every async_* function
/// of it (and of the locks, elections and multi_locks made from it afterwards) completes with
/// errc::session_closed, posted through asio::system_executor on to the handler's associated
/// executor (as an empty lease's, see lease), except async_close, which succeeds; set_servers()
/// returns errc::session_closed; the queries read as a closed session that never connected
/// (state() closed, ids and timeouts 0, config() the defaults, get_executor() a system_executor).
/// A closed session's operations complete with errc::session_closed on its executor (async_close:
/// success; async_wait_state_change: at once, with session_state::closed).
class session {
public:
    using executor_type = asio::any_io_executor;  ///< the type of the session's executor

    /// Does not connect; call async_connect. Without a config: session_config{}.
    ///
    /// GCC 12 note: GCC 12 miscompiles an aggregate temporary with non-trivial members
    /// (session_config, lock_options) built in a full-expression that contains co_await: the
    /// object passed on is not the one it constructed, and it destroys both (free(): invalid
    /// pointer, double free; cf. GCC PR 101367). So a config-less constructor here or in a lock
    /// recipe is an overload, not a defaulted argument, and `session zk{co_await
    /// this_coro::executor}` or `co_await mutex{zk, path}.async_acquire(...)` are safe. A config
    /// or lock_options you brace-initialize in such a full-expression yourself
    /// (`session zk{co_await this_coro::executor, {.servers = ...}}`) still is not, under GCC 12:
    /// build it in a named variable first (or take the executor into a local first).
    explicit session(executor_type ex) : session(std::move(ex), session_config{}) {}
    /// A session on `ex` with `config`. Does not connect.
    session(executor_type ex, const session_config& config);
    /// Not for applications (they use the constructors above): a session whose requests, leases
    /// and locks go to `port`, and whose async_connect, async_close, async_wait_state_change,
    /// config(), negotiated_timeout() and set_servers() go to `control`, both answered by code of
    /// zklock's own (the simulation's port, in test/sim/). The two may be one object.
    session(detail::session_ptr port, detail::control_ptr control) noexcept;
    /// A session on `ctx`'s executor with session_config{}. Does not connect.
    template <class ExecutionContext>
        requires std::is_convertible_v<ExecutionContext&, asio::execution_context&>
    explicit session(ExecutionContext& ctx) : session(ctx.get_executor(), session_config{})
    {
    }
    /// A session on `ctx`'s executor with `config`. Does not connect.
    template <class ExecutionContext>
        requires std::is_convertible_v<ExecutionContext&, asio::execution_context&>
    session(ExecutionContext& ctx, const session_config& config) : session(ctx.get_executor(), config)
    {
    }

    /// Takes the ZooKeeper session over; the source is left without one.
    session(session&&) noexcept = default;
    /// Closes the session it replaces (as the destructor), then takes the source's.
    session& operator=(session&&) noexcept;
    session(const session&) = delete;
    session& operator=(const session&) = delete;

    /// Closes the ZooKeeper session if async_close was not awaited: ephemeral nodes (held locks)
    /// go as soon as the server has the close request. Outstanding operations complete with
    /// errc::session_closed. Never blocks: the C client's close (send the close request, wait up
    /// to ~1.5 s for the server's answer) runs on a thread of the execution context, joined when
    /// the context is destroyed (so ~io_context may wait for it; no thread outlives it). The move
    /// assignment closes the session it replaces the same way.
    ~session();

    /// The session's executor (asio::system_executor for a moved-from session).
    executor_type get_executor() const noexcept;
    /// The configuration (servers: as set_servers last set them).
    const session_config& config() const noexcept;

    /// The current state (see session_state).
    session_state state() const noexcept;
    /// ZooKeeper's session id (0 until connected).
    std::int64_t session_id() const noexcept;
    /// The session timeout the server granted (0 until connected).
    std::chrono::milliseconds negotiated_timeout() const noexcept;
    /// How many ZooKeeper sessions this object has established (0 before the first connect).
    std::uint64_t generation() const noexcept;

    /// What this session object has counted since it was made (acquires, wait and hold times,
    /// handoffs, lost leases, reconnects, expiries, requests, listings, waiters and holders per
    /// lock path): see zklock/metrics.hpp, and to_prometheus() to serve it. A copy, taken in
    /// O(number of lock paths in use); counting costs a few increments per operation.
    /// Thread safety: like every other member, call it on the session's executor.
    metrics_snapshot metrics() const;

    /// Connects: completes when a ZooKeeper session is established (at once if it is).
    ///
    /// Completion signature: void(error_code).
    ///
    /// Executor: as the class says. Host names are resolved once per ZooKeeper session, off the
    /// executor (an asio::ip::tcp::resolver: getaddrinfo on Asio's resolver thread); a list of
    /// addresses is parsed within the call. state() is connecting while a lookup runs, and the
    /// connect timeout covers it.
    ///
    /// Cancellation (any type): completes at once with operation_aborted. If no other
    /// async_connect is waiting, the attempt is abandoned as after a timeout (state() goes back to
    /// disconnected; acquires waiting for the connection fail with errc::not_connected).
    ///
    /// Errors: errc::invalid_servers, errc::invalid_argument (a timeout <= 0 in the config),
    /// errc::unresolvable_host (no host name of config().servers resolves; those that do not are
    /// skipped while one does), errc::connect_timeout (after config().connect_timeout; the
    /// attempt is abandoned and a new async_connect starts afresh), errc::not_zookeeper,
    /// zk_errc::auth_failed, errc::session_closed.
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_connect(Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code)>(
            op<&detail::initiate_connect>{impl_}, token, control_);
    }

    /// Closes the ZooKeeper session: its ephemeral nodes go at once.
    ///
    /// Completion signature: void(error_code); completes once the server has answered the close
    /// request, or the C client gave up waiting for it (1.5 s), and at the latest 2 s after the
    /// call whatever the server or the network does (a close the C client has not finished by
    /// then goes on; the requests it fails complete when it is done). state() is closed from the
    /// call on, and outstanding operations complete with errc::session_closed.
    ///
    /// Executor: as the class says. The C client's close blocks while it waits for that answer: it
    /// runs on a thread of the execution context (one per context, joined when the context is
    /// destroyed), so the executor never blocks. That thread never touches the executor: once the
    /// close has completed, the io_context may be stopped and destroyed at once. Until then a wait
    /// on the executor keeps run() going.
    ///
    /// Cancellation: not cancellable.
    ///
    /// Errors: none (closing a closed session completes at once).
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_close(Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code)>(
            op<&detail::initiate_close>{impl_}, token, control_);
    }

    /// Completes at the next change of state(), with the new state.
    ///
    /// Completion signature: void(error_code, session_state).
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation (any type): completes at once with operation_aborted.
    ///
    /// Errors: errc::session_closed, with session_state::closed, when the session is closed (or
    /// moved from) at the call: it changes no more. (A wait pending at the close completes
    /// without error, with session_state::closed.)
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code, session_state)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_wait_state_change(Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code, session_state)>(
            op<&detail::initiate_wait_state>{impl_}, token, control_);
    }

    /// Replaces the servers the session connects to, keeping its ZooKeeper session (its id, its
    /// ephemeral nodes, leases and watches): for an ensemble whose servers are replaced, moved or
    /// added. `servers` is a list as session_config::servers takes it. A chroot in it must be the
    /// session's own ("/" for none); without one the session's is kept.
    ///
    /// Synchronous, returns the error (a setting of this client: the servers are not asked, so
    /// there is nothing to wait for; what the change sets in motion shows in state(), and
    /// async_wait_state_change() follows it):
    ///  * connected to a server of the new list (or TCP-connected and shaking hands with one):
    ///    that connection stays; the next connect, whenever one is needed, uses the new list;
    ///  * connected or connecting to a server not in it: the connection is dropped, from a handler
    ///    posted by this call, and the session connects at once to a server of the new list:
    ///    state() goes suspended, then connected, with the same session_id(). Requests in flight
    ///    fail with zk_errc::connection_loss, acquires and leases carry on, and watches are set
    ///    again, as after any reconnect;
    ///  * not connected (between attempts): the next attempt goes at once, to the new list.
    /// Sessions are not spread over added servers: a session stays on its server while that server
    /// is listed (the C client's own rebalancing is not used: it compares addresses without their
    /// ports, and drops a connection without failing the requests in flight).
    ///
    /// A list of addresses is taken within the call. A list that names a host is looked up off the
    /// executor (asio::ip::tcp::resolver) and taken, as above, when the lookup ends; a later
    /// set_servers supersedes a lookup still under way, and if no host of it resolves, the
    /// session keeps its addresses and the client log says so. A host that does not resolve is
    /// left out, as the C client does. The addresses found serve until the next set_servers; a
    /// fresh ZooKeeper session (after an expiry with reconnect_on_expiry, or a later async_connect)
    /// starts from config().servers and resolves again. config().servers is the new list with the
    /// session's chroot from the return on (a list of addresses) or once its lookup has found an
    /// address. The same hosts in another order change nothing.
    ///
    /// Errors (and then nothing has changed): errc::invalid_servers (malformed, as
    /// validate_servers says), errc::chroot_mismatch, errc::session_closed.
    /// Lifetimes: `servers` is copied. Thread safety: call from the session's executor.
    /// With session_config::follow_ensemble the next change of the ensemble's configuration
    /// replaces what was set here.
    [[nodiscard]] error_code set_servers(std::string servers);

    /// Creates a node.
    ///
    /// Completion signature: void(error_code, std::string created_path, stat). With digest_auth
    /// the node gets the creator-only ACL.
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation: ignored (a write).
    ///
    /// Errors: zk_errc::node_exists, zk_errc::no_node (no parent), zk_errc::no_auth,
    /// errc::request_too_large (path and data exceed config().max_request_bytes: not sent); and
    /// those the class lists.
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code, std::string, zklock::stat)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_create(std::string path, std::string data, create_mode mode, Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code, std::string, zklock::stat)>(
            op<&detail::initiate_create>{impl_}, token, std::move(path), std::move(data), mode);
    }

    /// Deletes a node, whatever its version.
    ///
    /// Completion signature: void(error_code).
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation: ignored (a write).
    ///
    /// Errors: zk_errc::no_node, zk_errc::bad_version, zk_errc::not_empty, zk_errc::no_auth; and
    /// those the class lists.
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_remove(std::string path, Token&& token = {})
    {
        return async_remove(std::move(path), -1, std::forward<Token>(token));
    }
    /// Deletes a node, only if its version is `version` (-1: any).
    ///
    /// Completion signature: void(error_code).
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation: ignored (a write).
    ///
    /// Errors: as async_remove(std::string, Token&&).
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_remove(std::string path, std::int32_t version, Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code)>(
            op<&detail::initiate_remove>{impl_}, token, std::move(path), version);
    }

    /// Reads a node's stat, if the node exists.
    ///
    /// Completion signature: void(error_code, std::optional<stat>): nullopt when the node does
    /// not exist (not an error).
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation (any type): completes at once with operation_aborted.
    ///
    /// Errors: those the class lists.
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code, std::optional<zklock::stat>)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_exists(std::string path, Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code, std::optional<zklock::stat>)>(
            op<&detail::initiate_exists>{impl_}, token, std::move(path));
    }

    /// As async_exists, and sets a watch (fires on created, changed or deleted).
    ///
    /// Completion signature: void(error_code, std::optional<stat>, watch). The watch is set also
    /// when the node does not exist.
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation (any type): completes at once with operation_aborted and no watch (one the
    /// server may have set fires into nothing).
    ///
    /// Errors: as async_exists.
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code, std::optional<zklock::stat>, watch)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_watch_exists(std::string path, Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code, std::optional<zklock::stat>, watch)>(
            op<&detail::initiate_watch_exists>{impl_}, token, std::move(path));
    }

    /// Reads a node's data and stat.
    ///
    /// Completion signature: void(error_code, std::string data, stat).
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation (any type): completes at once with operation_aborted.
    ///
    /// Errors: zk_errc::no_node, zk_errc::no_auth; and those the class lists.
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code, std::string, zklock::stat)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_get_data(std::string path, Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code, std::string, zklock::stat)>(
            op<&detail::initiate_get_data>{impl_}, token, std::move(path));
    }

    /// As async_get_data, and sets a data watch (fires on changed or deleted).
    ///
    /// Completion signature: void(error_code, std::string data, stat, watch). No watch is left
    /// behind when the node does not exist (zk_errc::no_node).
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation (any type): as async_watch_exists.
    ///
    /// Errors: as async_get_data.
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code, std::string, zklock::stat, watch)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_watch_data(std::string path, Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code, std::string, zklock::stat, watch)>(
            op<&detail::initiate_watch_data>{impl_}, token, std::move(path));
    }

    /// Sets a node's data, whatever its version.
    ///
    /// Completion signature: void(error_code, stat).
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation: ignored (a write).
    ///
    /// Errors: zk_errc::no_node, zk_errc::bad_version, zk_errc::no_auth, errc::request_too_large;
    /// and those the class lists.
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code, zklock::stat)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_set_data(std::string path, std::string data, Token&& token = {})
    {
        return async_set_data(std::move(path), std::move(data), -1, std::forward<Token>(token));
    }
    /// Sets a node's data, only if its version is `version` (-1: any).
    ///
    /// Completion signature: void(error_code, stat).
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation: ignored (a write).
    ///
    /// Errors: as async_set_data(std::string, std::string, Token&&).
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code, zklock::stat)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_set_data(std::string path, std::string data, std::int32_t version, Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code, zklock::stat)>(
            op<&detail::initiate_set_data>{impl_}, token, std::move(path), std::move(data), version);
    }

    /// Lists a node's children.
    ///
    /// Completion signature: void(error_code, std::vector<std::string> children): names, not
    /// paths, unordered.
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation (any type): completes at once with operation_aborted.
    ///
    /// Errors: zk_errc::no_node, zk_errc::no_auth; and those the class lists.
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code, std::vector<std::string>)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_get_children(std::string path, Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code, std::vector<std::string>)>(
            op<&detail::initiate_get_children>{impl_}, token, std::move(path));
    }

    /// As async_get_children, and sets a child watch.
    ///
    /// Completion signature: void(error_code, std::vector<std::string>, watch). The watch fires
    /// when a child is added or removed, or the node is deleted.
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation (any type): as async_watch_exists.
    ///
    /// Errors: as async_get_children.
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code, std::vector<std::string>, watch)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_watch_children(std::string path, Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code, std::vector<std::string>, watch)>(
            op<&detail::initiate_watch_children>{impl_}, token, std::move(path));
    }

    /// Runs the operations as one transaction: all or none.
    ///
    /// Completion signature: void(error_code, std::vector<multi_result>), one result per
    /// operation.
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation: ignored (a write).
    ///
    /// Errors: errc::invalid_argument for a create_mode::container create among the ops (the C
    /// client cannot read its result: nothing is sent). When the server answered and refused, the
    /// error is the first failing operation's,
    /// every result carries the code the server gave it, and none was applied (whatever the others'
    /// codes say). When it did not answer (connection loss, errc::request_too_large, not
    /// connected...), every result carries that same error: none reads "ok".
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code, std::vector<multi_result>)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_multi(std::vector<multi_op> ops, Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code, std::vector<multi_result>)>(
            op<&detail::initiate_multi>{impl_}, token, std::move(ops));
    }

    /// For the recipes (mutex, shared_mutex, semaphore): the shared state.
    const detail::session_ptr& impl() const noexcept { return impl_; }

private:
    template <auto Start> using op = detail::initiation<Start, detail::session_ptr>;

    detail::session_ptr impl_;
    detail::control_ptr control_;
};

}  // namespace zklock
