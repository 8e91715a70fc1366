// zklock/election.hpp — leader election on a ZooKeeper path.
//
// Each campaign queues an ephemeral sequential candidate node holding the candidate's value; the
// oldest candidate leads. A candidate waits on the one just before it, like a mutex's waiter (no
// herd), so leadership passes in queue order when the leader resigns, dies or loses its session.
// A leadership is a lease (zklock/lease.hpp): fencing token, loss notice, guarded writes, plus
// async_resign() and async_proclaim(value). Observers follow the leader and its value without
// campaigning.
//
// Other libraries' candidates on the same path are candidates here too, in queue order: Apache
// Curator's LeaderSelector (an InterProcessMutex, "...lock-<seq>"), its LeaderLatch
// ("...latch-<seq>") and Kazoo's Election (a Kazoo Lock, "<uuid>__lock__<seq>"). For them to see
// ours, name ours as they name theirs (election_options::names; by default as LeaderSelector
// does). Each of those libraries sees only its own names (Curator sorts any other name by the
// whole name, Kazoo ignores it), so one election path serves zklock and one of them.
#pragma once

#include <zklock/basic_lock.hpp>
#include <zklock/detail/mapped_handler.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace zklock {

/// How an election names its candidates: as the library it shares the path with does.
enum class election_names : std::uint8_t {
    curator_selector,  ///< "x-<id>-lock-<seq>" (the default): Curator's LeaderSelector (an
                       ///< InterProcessMutex) sees them, and so do a zklock::mutex, Curator's
                       ///< InterProcessMutex and Kazoo's Lock with extra_lock_patterns=["lock-"]
    curator_latch,     ///< "x-<id>-latch-<seq>": Apache Curator's LeaderLatch sees them. A
                       ///< LeaderLatch candidate waiting on ours stops watching at a data change,
                       ///< so leadership::async_proclaim is refused with these names
    kazoo,             ///< "x-<id>-__lock__<seq>": Kazoo's Election (a Kazoo Lock) sees them
};

/// An election's options (election's constructor).
struct election_options {
    /// How our candidate nodes are named (election_names).
    election_names names = election_names::curator_selector;
    /// Optional: told, on the session's executor, each time a waiting campaign has looked at the
    /// queue and must wait: its candidate node's path and how many candidates are ahead of it
    /// (as lock_options::on_queued). Must not throw.
    std::function<void(std::string_view node, std::size_t ahead)> on_queued;
};

/// Who leads an election, as one look at it found.
struct leader_info {
    std::string node;   ///< the leader's candidate node (its name under the election path); empty: no leader
    std::string value;  ///< its value (its node's data: what async_campaign or async_proclaim stored)
    std::int64_t sequence = 0;  ///< the node's sequence number (queue order)
    lock_library library = lock_library::zklock;  ///< which library made it
    zklock::stat stat;  ///< the node's stat (czxid: the leadership's fencing token; ephemeral_owner: its session)

    /// True when there is a leader (node is not empty).
    explicit operator bool() const noexcept { return !node.empty(); }
};

class leadership;

namespace detail {
extern const recipe election_recipe;  // src/recipes/election.cpp
class observer_state;
void initiate_leader(session_ptr s, std::string path, handler<error_code, leader_info> h);
void initiate_proclaim(std::shared_ptr<lease_state> s, election_names names, std::string value, handler<error_code> h);
std::shared_ptr<observer_state> start_observer(session_ptr s, std::string path);
void initiate_observe_next(std::shared_ptr<observer_state> o, handler<error_code, leader_info> h);
void stop_observer(observer_state& o) noexcept;
}  // namespace detail

/// Leading an election: a lease on our candidate node (see lease for the loss notice, the
/// fencing token and the guarded writes), with the election's words for releasing it and for
/// updating the value observers see.
///
/// Misuse: as a lease's. An empty (moved-from) or resigned leadership's async_resign and
/// async_proclaim complete with errc::already_released; a closed session's reads lost, so
/// async_proclaim completes with errc::lock_lost and async_resign succeeds.
class leadership : public lease {
public:
    /// An empty leadership, as an empty lease.
    leadership() noexcept = default;
    /// Takes `l` over as a leadership with the default names (election_names::curator_selector).
    explicit leadership(lease l) noexcept : lease(std::move(l)) {}

    /// Whether we lead, as far as this process knows (lease::owns_lock: not released, not lost).
    bool is_leader() const noexcept { return owns_lock(); }

    /// Gives leadership up: deletes our candidate node, so the next candidate in queue order leads.
    ///
    /// Completion signature: void(error_code); it is lease::async_release, as documented there.
    ///
    /// Executor: as lease::async_release.
    ///
    /// Cancellation: as lease::async_release.
    ///
    /// Errors: as lease::async_release.
    ///
    /// Lifetimes: as lease::async_release.
    ///
    /// Thread safety: as lease::async_release.
    template <asio::completion_token_for<void(error_code)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_resign(Token&& token = {})
    {
        return async_release(std::forward<Token>(token));
    }

    /// Stores `value` as the leader's value (our node's data), while we still lead.
    ///
    /// Completion signature: void(error_code). One guarded transaction (see
    /// lease::async_guarded_multi), so a leader that has lost its node writes nothing. Observers
    /// see the new value.
    ///
    /// Executor: the handler's associated executor (default: the session's).
    ///
    /// Cancellation: not cancellable: the write's outcome is the server's.
    ///
    /// Errors: errc::lock_lost (our node is gone: nothing was written), errc::session_expired,
    /// errc::already_released (empty or resigned: nothing sent), errc::not_supported (an election
    /// named for Curator's LeaderLatch: a LeaderLatch candidate waiting on our node would stop
    /// watching it at the write, and the election would stall; nothing sent),
    /// errc::request_too_large; a connection loss (zk_errc::connection_loss) leaves the outcome
    /// unknown, as for any write.
    ///
    /// Lifetimes: as lease's class says (the operation keeps the lease's state alive).
    ///
    /// Thread safety: from the session's executor.
    template <asio::completion_token_for<void(error_code)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_proclaim(std::string value, Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code)>(
            detail::initiation<&detail::initiate_proclaim, std::shared_ptr<detail::lease_state>>{state()}, token, names_,
            std::move(value));
    }

private:
    friend class election;
    leadership(lease l, election_names names) noexcept : lease(std::move(l)), names_(names) {}

    election_names names_ = election_names::curator_selector;
};

/// Follows an election's leader: each change of leader, or of the leader's value, once. Made by
/// election::observe(); the observation runs from then until the observer is destroyed.
///
/// It lists the candidates once, then watches only the leader's node (a data watch: a deletion
/// or a new value fires it). When the leader goes, the next candidate it listed leads (sequence
/// numbers only grow, so a candidate that joined later is never ahead of one it knows); it lists
/// again only when every candidate it knew of is gone. Across a lost connection its watches stay;
/// after a session expiry it lists again on the new session.
///
/// Misuse: an empty observer (default-constructed, moved from, or observe() of an election with
/// no session) completes async_next with errc::invalid_argument, posted through
/// asio::system_executor on to the handler's associated executor; one of a closed session, with
/// errc::session_closed.
class election_observer {
public:
    /// An empty observer: async_next fails with errc::invalid_argument.
    election_observer() noexcept = default;
    /// Takes the observation over; the source is left empty.
    election_observer(election_observer&&) noexcept = default;
    /// Stops this observer's observation, then takes `other`'s.
    election_observer& operator=(election_observer&& other) noexcept
    {
        if (this != &other) {
            stop();
            o_ = std::move(other.o_);
        }
        return *this;
    }
    /// Stops the observation: a pending async_next completes with operation_aborted.
    ~election_observer() { stop(); }

    /// Completes with the leader once it differs from what the previous call delivered.
    ///
    /// Completion signature: void(error_code, leader_info). The first call completes once the
    /// observer has looked. Changes in between are not queued: the latest state is delivered, so a
    /// slow reader never misses the last change and never reads a stale one (a leader that came
    /// and went between two calls, leaving what the previous call delivered, is not delivered). An empty leader_info
    /// means the election has no leader now.
    ///
    /// Executor: the handler's associated executor (default: the session's); never completes
    /// inside this call. An empty observer (default-constructed or moved from: errc::invalid_argument)
    /// has no executor of its own: as for an empty lease, a handler with no associated executor
    /// runs on asio::system_executor.
    ///
    /// Cancellation: terminal, partial and total alike complete at once with operation_aborted;
    /// the observation goes on (the change is delivered by the next call).
    ///
    /// Errors: errc::session_closed (the session was closed: the observation ends),
    /// errc::not_connected (the session was never connected), errc::chroot_missing (the server
    /// list's chroot does not exist),
    /// errc::operation_in_progress (another async_next is pending), errc::invalid_path (the
    /// election's path), zk_errc::no_auth, errc::invalid_argument (an empty observer),
    /// asio::error::operation_aborted (cancelled, or the observer was destroyed).
    ///
    /// Lifetimes: the observer may be destroyed while the operation runs: it then completes with
    /// operation_aborted.
    ///
    /// Thread safety: from the session's executor.
    template <asio::completion_token_for<void(error_code, leader_info)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_next(Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code, leader_info)>(
            detail::initiation<&detail::initiate_observe_next, std::shared_ptr<detail::observer_state>>{o_}, token);
    }

private:
    friend class election;
    explicit election_observer(std::shared_ptr<detail::observer_state> o) noexcept : o_(std::move(o)) {}
    void stop() noexcept
    {
        if (o_) detail::stop_observer(*o_);
        o_.reset();
    }
    std::shared_ptr<detail::observer_state> o_;
};

/// An election bound to a session and a path. Cheap, like a lock object: every campaign is
/// independent (one object may run several, each its own candidate).
///
/// Misuse: as basic_lock's. A moved-from election (or one made from a moved-from session)
/// completes each campaign and async_leader with errc::session_closed, posted through
/// asio::system_executor on to the handler's associated executor, and observe() returns an empty
/// observer; path() is empty. One of a closed session completes them with errc::session_closed
/// on the session's executor (its observers too).
//[election_class
class election : private basic_lock {
public:
    using basic_lock::duration;       ///< the type of a timeout
    using basic_lock::executor_type;  ///< the executor type of the session
    using basic_lock::get_executor;   ///< the session's executor
    using basic_lock::path;           ///< the election path

    /// An election on `path` with default options.
    election(session& s, std::string path) : election(s, std::move(path), election_options{}) {}
    /// An election on `path`; `options` applies to every campaign through this object.
    election(session& s, std::string path, election_options options)
        : basic_lock(s, std::move(path), lock_options{},
                     detail::queue_policy{detail::election_recipe, 1, static_cast<std::uint8_t>(options.names)}),
          on_queued_(std::move(options.on_queued))
    {
    }
    //]
    /// Campaigns with `value` and completes once it leads, waiting at most `timeout`.
    ///
    /// Completion signature: void(error_code, leadership). Queues our candidate node holding
    /// `value` (empty: "<hostname>:<pid>"); a timeout <= 0 leads only if nobody leads now.
    /// Everything basic_lock::async_acquire documents holds, the same way; cohort mode does not
    /// apply.
    ///
    /// Executor: as basic_lock::async_acquire.
    ///
    /// Cancellation: as basic_lock::async_acquire: the per-state cancellation table (a cancelled or
    /// timed-out campaign leaves no candidate node behind), and the deadline that holds whatever
    /// the network does.
    ///
    /// Errors: as basic_lock::async_acquire (errc::timeout, errc::would_block,
    /// errc::request_too_large for a value that does not fit, ...).
    ///
    /// Lifetimes: as basic_lock::async_acquire.
    ///
    /// Thread safety: as basic_lock::async_acquire.
    template <asio::completion_token_for<void(error_code, leadership)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_campaign(std::string value, duration timeout, Token&& token = {})
    {
        return campaign(std::move(value), timeout <= duration::zero(), timeout <= duration::zero() ? std::nullopt : std::optional(timeout),
                        std::forward<Token>(token));
    }
    /// Campaigns with `value`, waiting until we lead or the operation is cancelled.
    ///
    /// Completion signature: void(error_code, leadership), as
    /// async_campaign(std::string, duration, Token&&).
    ///
    /// Executor: as basic_lock::async_acquire.
    ///
    /// Cancellation: as basic_lock::async_acquire, without a deadline.
    ///
    /// Errors: as basic_lock::async_acquire, without errc::timeout.
    ///
    /// Lifetimes: as basic_lock::async_acquire.
    ///
    /// Thread safety: as basic_lock::async_acquire.
    template <asio::completion_token_for<void(error_code, leadership)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_campaign(std::string value, Token&& token = {})
    {
        return campaign(std::move(value), false, std::nullopt, std::forward<Token>(token));
    }
    /// Leads only if nobody leads now.
    ///
    /// Completion signature: void(error_code, leadership), as
    /// async_campaign(std::string, duration, Token&&).
    ///
    /// Executor: as basic_lock::async_try_acquire.
    ///
    /// Cancellation: as basic_lock::async_try_acquire (its deadline included).
    ///
    /// Errors: errc::would_block if someone leads (our candidate node is deleted again before
    /// completing); otherwise as basic_lock::async_try_acquire.
    ///
    /// Lifetimes: as basic_lock::async_try_acquire.
    ///
    /// Thread safety: as basic_lock::async_try_acquire.
    template <asio::completion_token_for<void(error_code, leadership)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_try_campaign(std::string value, Token&& token = {})
    {
        return campaign(std::move(value), true, std::nullopt, std::forward<Token>(token));
    }

    /// Who leads now.
    ///
    /// Completion signature: void(error_code, leader_info), after one listing of the candidates,
    /// then a read of the leader's node (and of the next one's, if it went in between).
    ///
    /// Executor: the handler's associated executor (default: the session's); never completes
    /// inside this call.
    ///
    /// Cancellation: terminal, partial and total alike complete at once with operation_aborted
    /// (nothing to undo: replies that come later are dropped).
    ///
    /// Errors: errc::no_leader (no candidate, or no such path: an election path exists only while
    /// it has candidates, as a lock path), errc::invalid_path (nothing sent),
    /// errc::not_connected, errc::session_expired, errc::session_closed, errc::chroot_missing,
    /// zk_errc::no_auth, connection errors.
    ///
    /// Lifetimes: the session's state is kept alive by the operation.
    ///
    /// Thread safety: from the session's executor.
    template <asio::completion_token_for<void(error_code, leader_info)> Token = detail::default_token_t<asio::any_io_executor>>
    auto async_leader(Token&& token = {})
    {
        return asio::async_initiate<Token, void(error_code, leader_info)>(
            detail::initiation<&detail::initiate_leader, detail::session_ptr>{session_handle()}, token, path());
    }

    /// Starts following the leader (see election_observer). Sends its first request at once.
    /// Thread safety: from the session's executor.
    election_observer observe() const { return election_observer(detail::start_observer(session_handle(), path())); }

private:
    template <class Token>
    auto campaign(std::string value, bool try_only, std::optional<duration> timeout, Token&& token)
    {
        auto options = std::make_shared<lock_options>();
        options->owner_info = std::move(value);
        options->on_queued = on_queued_;
        detail::acquire_request req{path_ptr(), policy(), try_only, false, false, timeout, std::move(options), nullptr};
        return asio::async_initiate<Token, void(error_code, leadership)>(campaign_initiation{session_handle()}, token,
                                                                         std::move(req));
    }

    // A campaign is an acquire whose lease is handed on as a leadership.
    struct campaign_initiation {
        detail::session_ptr s;

        using executor_type = asio::any_io_executor;
        executor_type get_executor() const noexcept { return detail::executor_of(s); }

        template <class Handler> void operator()(Handler&& h, detail::acquire_request r) const
        {
            const auto names = static_cast<election_names>(r.policy.marker);
            detail::initiate_acquire(s, std::move(r),
                                     detail::mapped_handler{std::forward<Handler>(h), [names](auto&& inner, error_code ec, lease l) {
                                         std::move(inner)(ec, leadership(std::move(l), names));
                                     }});
        }
    };

    std::function<void(std::string_view, std::size_t)> on_queued_;
};

}  // namespace zklock
