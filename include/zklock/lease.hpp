// zklock/lease.hpp — proof of holding a lock.
#pragma once

#include <zklock/detail/initiation.hpp>
#include <zklock/detail/session_fwd.hpp>
#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <chrono>
#include <compare>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace zklock {

namespace asio = boost::asio;

/// Where a lease stands.
enum class lease_status {
    held,       ///< we hold the lock and the session is connected
    /// Connection lost, or the leader has not answered the session for a third of its timeout
    /// (docs/liveness.md): we still hold it unless the session expires (do not act on it).
    suspended,
    lost,       ///< the lock is gone: session expired (or presumed so) or our node was deleted
    released,   ///< released by us (or empty)
};

const char* to_string(lease_status s) noexcept;

/// The full fencing token of a lease: the creation zxid of its ZooKeeper node, then its place
/// among the local holders of that node (cohort mode, lock_options::cohort; 0 otherwise).
/// Compared as a pair (zxid first), it strictly increases across every holder of one lock path,
/// local handoffs included: a resource keeps the largest pair it has seen and rejects any pair
/// that is not greater. Without cohort mode `local` is always 0 and the pair orders like
/// lease::fencing_token() alone.
struct fence_token {
    std::int64_t zxid = 0;    ///< the creation zxid of the lease's node (lease::fencing_token())
    std::uint64_t local = 0;  ///< the place among the node's local holders (0 without cohort mode)
    /// Orders by zxid, then local.
    friend auto operator<=>(const fence_token&, const fence_token&) = default;
};

namespace detail {
class lease_state;
struct lease_access;
void initiate_release(std::shared_ptr<lease_state> s, handler<error_code> h);
void initiate_wait_lost(std::shared_ptr<lease_state> s, handler<error_code> h);
void initiate_wait_status(std::shared_ptr<lease_state> s, handler<error_code, lease_status> h);
void initiate_downgrade(std::shared_ptr<lease_state> s, handler<error_code> h);
void initiate_wait_revocation(std::shared_ptr<lease_state> s, handler<error_code> h);
void initiate_guarded_multi(std::shared_ptr<lease_state> s, std::vector<multi_op> ops,
                            handler<error_code, std::vector<multi_result>> h);
}  // namespace detail

/// The data a client writes into a holder's queue node to ask it to give the lock up
/// (session::async_set_data; the holder hears it through lease::async_wait_revocation).
///
/// These are Apache Curator's bytes (`LockInternals.REVOKE_MESSAGE`): what Curator's
/// `Revoker.attemptRevoke(client, node)` writes, and what an `InterProcessMutex` made revocable
/// (`makeRevocable(listener)`) compares its node's data with before calling its listener. So a
/// zklock holder hears Curator's Revoker, and a revocable Curator holder hears a zklock client
/// that writes this into its node. Kazoo's locks have no revocation.
inline constexpr std::string_view revocation_request = "__REVOKE__";

/// A held lock (the result of an acquire). Move-only, like a pooled connection.
///
/// Destroying a lease that still holds its lock releases it in the background (the delete is
/// retried across connection loss until it succeeds or the session ends).
///
/// The fencing token is the creation zxid of our queue node: it strictly increases across the
/// successive holders of one lock path, even when the lock's directory is removed and created
/// again. Pass it to the resource you protect and have the resource reject tokens older than the
/// newest it has seen: that is what keeps a paused or partitioned former holder from doing harm.
///
/// What the lease watches: session events (suspension, expiry, presumed expiry, close) always
/// reach status() and the waiters. Our node's own fate (deleted by another client, a revocation
/// request written into it) is watched while an async_wait_lost, async_wait_status_change or
/// async_wait_revocation is pending (the first one sets a data watch, one read), and for free
/// after a contended acquire (the acquire's watch on our node is handed over). A holder that never
/// awaits any of them costs no request between acquire and release; its status() then learns of a
/// foreign deletion only through such a watch.
///
/// What holds for every async_* function below (each one's block says the rest): it completes on
/// the handler's associated executor (default: the session's), never inside the initiating
/// function, also for a released or lost lease. An empty lease (default-constructed or moved
/// from) has no session, hence no executor of its own: a handler with no associated executor
/// then runs on asio::system_executor (a thread of its own), the one exception; bind an
/// executor to the handler to choose. The operation keeps the lease's state alive (the lease
/// object may be destroyed or moved meanwhile); cancellation, where accepted, takes terminal,
/// partial and total alike for the waits (they have no side effect), and as async_release says
/// for the release; the handler's allocator is used as session's operations say.
///
/// Misuse: every async_* function of an empty (moved-from, default-constructed) or released lease
/// completes with errc::already_released (posted as above; nothing is sent), and its queries read
/// released. A lease of a closed session reads lost (errc::session_closed): its waits complete at
/// once with that reason, its writes (async_guarded_multi, async_downgrade) with errc::lock_lost,
/// and async_release succeeds (the node went with the session).
///
/// Thread safety: use a lease from its session's executor (the strand, if the io_context runs on
/// several threads). That includes the queries (status(), valid_until(), owns_lock(),
/// lost_reason()): they read the session's state, which only that executor changes, and a read
/// that finds a presumption due makes it there and then. A debug build of the library asserts
/// it where the executor can tell (an io_context's executor, or a strand of one). From another
/// thread, post to the session's executor and read there.
class lease {
public:
    /// An empty lease: holds nothing, status() released.
    lease() noexcept = default;
    /// For the recipes: a lease on the given state.
    explicit lease(std::shared_ptr<detail::lease_state> s) noexcept;
    /// Takes the lock over; the source is left empty.
    lease(lease&&) noexcept = default;
    /// Releases the lock held (in the background, as the destructor), then takes `other`'s.
    lease& operator=(lease&& other) noexcept;
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    /// Releases a lock still held, in the background (see the class).
    ~lease();

    /// True while status() is held or suspended.
    bool owns_lock() const noexcept;
    /// owns_lock().
    explicit operator bool() const noexcept { return owns_lock(); }

    /// Where the lease stands at the instant of the call (released for an empty lease).
    ///
    /// Computed on the clock from the session's evidence (docs/liveness.md), not only from what
    /// handlers have recorded: with t the send time of the latest request the leader answered,
    /// suspended from t + T/3 and lost (session_expired, presumed) from t + T/2, even when the
    /// executor was blocked and no handler has run since. A holder whose thread stalled past its
    /// session's life reads lost at resume, before anything else runs. Lost stays lost: the
    /// waiters (async_wait_lost, async_wait_status_change) are told the same soon after, from a
    /// posted handler. Like every query of a lease, it reads the session's state: call it on the
    /// session's executor (a debug build asserts it; see the class).
    lease_status status() const noexcept;
    /// Until when no other holder can be granted this lock, by the session's evidence: the
    /// steady-clock instant at which the lease is presumed lost (t + T/2 while the evidence
    /// lasts, docs/liveness.md), moved forward by every answer of the leader;
    /// time_point::min() unless owns_lock(). `if (std::chrono::steady_clock::now() <
    /// lease.valid_until()) act();` leaves exactly the window between the check and the act, which
    /// no client-side check closes: pass fence() to the resource for that (docs/guarantees.md).
    /// The bound assumes the leader's clock runs at the rate of ours and ZooKeeper's default
    /// minSessionTimeout (2 × tickTime) or more; a node deleted by another client (not by the
    /// session's expiry) ends the lease earlier, as a watch tells.
    std::chrono::steady_clock::time_point valid_until() const noexcept;
    /// Creation zxid of our node: strictly increasing across holders of this lock path. 0 if empty.
    /// In cohort mode (lock_options::cohort) the local holders of one node share it: compare
    /// fence() instead, which is strictly increasing in both modes.
    std::int64_t fencing_token() const noexcept;
    /// {fencing_token(), local place}: strictly increasing across every holder (see fence_token).
    fence_token fence() const noexcept;
    /// Full path of our queue node ("" if empty).
    const std::string& node() const noexcept;
    /// Why the lease was lost (empty unless status() == lost).
    error_code lost_reason() const noexcept;

    /// What read() returns: the lease's queries as they all stand at one instant.
    struct reading {
        lease_status status = lease_status::released;  ///< as status()
        error_code lost_reason;                         ///< as lost_reason()
        /// As valid_until(): time_point::min() unless `status` is held or suspended.
        std::chrono::steady_clock::time_point valid_until = std::chrono::steady_clock::time_point::min();
    };
    /// status(), lost_reason() and valid_until() from one reading of the session's evidence, at
    /// one instant. Three separate calls each read the clock: across a deadline (the evidence's
    /// T/2, docs/liveness.md) between them, status() may say held and valid_until() min(), or
    /// valid_until() a time already passed. Here the three agree: `valid_until` is later than the
    /// instant of the call when `status` is held or suspended (the reading is lost at that
    /// deadline), and min() otherwise. Call it on the session's executor, as every query.
    reading read() const noexcept;

    /// Releases the lock: deletes our node.
    ///
    /// Completion signature: void(error_code). status() is released from the call on, and pending
    /// waits complete with operation_aborted. Retries across connection loss; succeeds when the
    /// node is gone (also when the session ended, which removed it): during an outage, that is
    /// when the server is back or the session has ended. A lease that reads lost at the call
    /// (valid_until() passed, its waiters not told yet) is released as a lost one: the waiters
    /// hear session_expired, and the node is deleted without a handoff mark.
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation: terminal and partial stop the wait, not the release: it completes at once
    /// with operation_aborted, and the deletion goes on in the background (so a release raced
    /// against a timer with `||` returns when the timer fires). Total alone is ignored: a release
    /// cannot be undone, so the operation completes as uncancelled.
    ///
    /// Errors: errc::already_released (empty or already released lease: nothing sent),
    /// zk_errc::no_auth (someone re-ACLed our node).
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_release(Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code)>(
            op<&detail::initiate_release>{state_}, token);
    }

    /// Completes when the lock is lost, with the reason.
    ///
    /// Completion signature: void(error_code): at once with the reason if the lock is lost
    /// already. The first such wait sets a data watch on our node (one read).
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation (any type): completes at once with operation_aborted.
    ///
    /// Errors: the reason: errc::lock_lost (our node was deleted), errc::session_expired (expired,
    /// or presumed expired: half the session timeout after the send time of the last request the
    /// leader answered, or 9/10 of it after the server was last heard from, so that the holder is
    /// told before the leader can act; docs/liveness.md), errc::session_closed;
    /// asio::error::operation_aborted when the lease is released while the wait is pending;
    /// errc::already_released when it is empty or released at the call.
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_wait_lost(Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code)>(
            op<&detail::initiate_wait_lost>{state_}, token);
    }

    /// Cooperative revocation: completes when another client asks the holder to give the lock up.
    ///
    /// Completion signature: void(error_code), with an empty error when another client has written
    /// zklock::revocation_request into our node, e.g.
    /// `co_await other.async_set_data(node, std::string(zklock::revocation_request))`, or Apache
    /// Curator's `Revoker.attemptRevoke(client, node)`, which writes the same bytes. Nothing is
    /// enforced: the holder decides when to release. The request replaces the node's data (its
    /// owner text, or a downgrade mark: readers not granted by the mark yet then wait for the
    /// release).
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation (any type): completes at once with operation_aborted.
    ///
    /// Errors: asio::error::operation_aborted if the lease is released while the wait is pending;
    /// errc::already_released if it is empty or released at the call (a request seen before the
    /// release included); the loss reason (as async_wait_lost) if the lock is lost first.
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_wait_revocation(Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code)>(
            op<&detail::initiate_wait_revocation>{state_}, token);
    }

    /// Guarded write: runs `ops` as one transaction that commits only while our node exists.
    ///
    /// Completion signature: void(error_code, std::vector<multi_result>) with one result per op of
    /// `ops` (the check is not included), as session::async_multi. The server checks our node (a
    /// `check` op on it, any version, first in the same multi), so a holder that has lost the lock
    /// cannot write even before its process has heard of the loss (a paused process, a session
    /// expired while cut off): for state kept in ZooKeeper itself this is stronger than the
    /// fencing token, which needs a resource that compares it.
    ///
    /// Executor: as the class says. (the handler's associated executor, default: the session's).
    ///
    /// Cancellation: not cancellable: the transaction's outcome is the server's.
    ///
    /// Errors: errc::lock_lost (our node is gone: nothing was applied, and status() becomes lost;
    /// or status() read lost when the call was made, e.g. valid_until() had passed after a stall:
    /// nothing was sent), errc::session_expired, errc::already_released (empty or released lease: nothing sent),
    /// errc::invalid_argument (no ops), errc::request_too_large, and the first failing op's
    /// zk_errc otherwise (then nothing was applied either). A connection loss
    /// (zk_errc::connection_loss) leaves the outcome unknown, as for any write.
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: from the session's executor.
    template <asio::completion_token_for<void(error_code, std::vector<multi_result>)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_guarded_multi(std::vector<multi_op> ops, Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code, std::vector<multi_result>)>(
            op<&detail::initiate_guarded_multi>{state_}, token, std::move(ops));
    }

    /// A shared_mutex writer's lease becomes a reader's, with no writer let in between.
    ///
    /// Completion signature: void(error_code). On success the lease keeps its node, its place and
    /// its fencing token, and now shares the lock with readers. zklock readers queued behind it (up
    /// to the next writer) are granted at once, and later readers too; a writer queued behind it
    /// still waits for its release. (Curator's InterProcessReadWriteLock downgrades by taking a new
    /// read lock and releasing the write lock, which lets a writer queued meanwhile hold the lock
    /// with the downgraded reader.)
    ///
    /// How: one write of our node's data (a downgrade mark, then the owner text it held), which
    /// a reader waiting on our node reads with its watch. Readers of other libraries do not know
    /// the mark: they wait for the release, as before. A revocation request written into the node
    /// afterwards replaces the mark: readers not granted yet then wait for the release too. One
    /// already there is left as it is (the holder's revocation wait still reads it), and the
    /// downgrade completes as if the request had come just after it.
    /// Downgrading a downgraded lease succeeds at once.
    ///
    /// Executor: as the class says. (the handler's associated executor, default: the session's).
    ///
    /// Cancellation: not cancellable: the write's outcome is the server's.
    ///
    /// Errors: errc::invalid_argument (not a shared_mutex writer's lease: a mutex's, a reader's,
    /// a permit's, or a cohort lease), errc::already_released, errc::lock_lost (our node is gone:
    /// nothing was written), errc::session_expired, connection errors (a connection loss leaves
    /// the outcome unknown: downgrade again).
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: from the session's executor.
    template <asio::completion_token_for<void(error_code)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_downgrade(Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code)>(
            op<&detail::initiate_downgrade>{state_}, token);
    }

    /// True once revocation has been seen requested (by a watch: see async_wait_revocation).
    bool revocation_requested() const noexcept;

    /// Completes at the next change of status(), with the new status.
    ///
    /// Completion signature: void(error_code, lease_status).
    ///
    /// Executor: as the class says.
    ///
    /// Cancellation (any type): completes at once with operation_aborted.
    ///
    /// Errors: errc::already_released, with lease_status::released, for an empty or released
    /// lease (its status changes no more). A lease that reads lost at the call completes at once
    /// with its loss reason (lost_reason()) and lease_status::lost: only its release would change
    /// it.
    ///
    /// Lifetimes: as the class says.
    ///
    /// Thread safety: as the class says.
    template <asio::completion_token_for<void(error_code, lease_status)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_wait_status_change(Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code, lease_status)>(
            op<&detail::initiate_wait_status>{state_}, token);
    }

protected:
    /// For the recipes whose grant is a lease with more to it (zklock::leadership).
    const std::shared_ptr<detail::lease_state>& state() const noexcept { return state_; }

private:
    friend struct detail::lease_access;
    template <auto Start> using op = detail::initiation<Start, std::shared_ptr<detail::lease_state>>;

    std::shared_ptr<detail::lease_state> state_;
};

}  // namespace zklock
