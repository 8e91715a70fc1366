// What a lease knows: its node, its token, and whether the session still backs it.
#pragma once

#include "core/mutant.hpp"
#include "ops/lease_fsm.hpp"
#include "port/zk_port.hpp"

#include <zklock/lease.hpp>

#include <chrono>
#include <memory>

namespace zklock::detail {

class lease_state final : public session_observer, public std::enable_shared_from_this<lease_state> {
public:
    /// `mark_dir`: release with a handoff mark into this lock path (acquire_fsm::mark_on_release),
    /// or empty: delete plainly.
    /// `granted`: when the acquire was granted (metrics: hold time).
    lease_state(session_ptr s, std::string node, std::int64_t token, std::uint64_t generation,
                std::string mark_dir = {}, std::chrono::steady_clock::time_point granted = {});

    /// `adopted`: the data watch the acquire kept on our node while it waited, if any (it becomes
    /// ours at no cost); `revoke_seen`: that watch read a revocation request.
    void start(std::shared_ptr<watch_state> adopted, bool revoke_seen);
    // session_observer: the session tells us of suspension, reconnection and loss.
    void on_session_state(session_state st, std::uint64_t generation) override;
    /// Granted while the session reads `r` (one reading, zk_port::read_now): the lease starts as
    /// lease_fsm::granted says. Returns whether it holds; if not, it was lost at its grant (the
    /// session presumed expired), is not counted, and its node is being deleted.
    bool on_granted(const session_reading& r);
    void on_presumed_expired() override;
    void on_shutdown(graveyard& g) override;
    /// Deletes the node (retried across connection loss). `cb` may be empty (background release).
    void release(unique_function<void(error_code)> cb);

    void wait_lost(unique_function<void(error_code)> cb);
    void wait_status(unique_function<void(error_code, lease_status)> cb);
    void wait_revocation(unique_function<void(error_code)> cb);
    bool revocation_requested() const noexcept;

    /// A guarded multi found our node gone: the lock is lost (lock_lost), if nothing said so yet.
    void node_gone() { set_lost(errc::lock_lost); }
    /// The lock is lost for `reason` (a cohort whose ZooKeeper node was lost tells its holders).
    void lose(error_code reason) { set_lost(reason); }

    /// Cohort mode: this lease is one local holder of a node the cohort holds (lock_options::cohort).
    /// `local_seq`: its place among the node's local holders (fence()); releasing it calls
    /// `on_release` with the release's callback instead of deleting the node, and a presumed
    /// expiry only marks it lost (the cohort's own lease of the node removes it).
    using release_hook = unique_function<void(unique_function<void(error_code)>)>;
    /// A revocation request reaches it through `node` (the cohort's own lease of the node, whose
    /// first revocation waiter is the cohort): so the cohort always knows of a request before a
    /// local holder does, and no holder's release can be handed on locally after it.
    void make_local(std::uint64_t local_seq, release_hook on_release, const std::shared_ptr<lease_state>& node)
    {
        local_seq_ = local_seq;
        fsm_.make_local();
        local_release_ = std::move(on_release);
        revoke_source_ = node;
    }
    /// An internal lease (a cohort's own node): not counted in the metrics (its local leases are).
    void set_unmetered() noexcept { reported_end_ = true; }

    /// What a query reads (lease::read): the status and loss reason as recorded, or as the
    /// session's evidence says at this instant (lease_fsm::read), whatever handlers have not run
    /// yet; and until when no other holder can be granted the lock (lease::valid_until). One
    /// session reading for the three.
    lease::reading snapshot() const noexcept
    {
        using time_point = std::chrono::steady_clock::time_point;
        // A loss reason only while lost: a lost lease released since reads released, with none.
        if (!fsm_.holds())
            return {fsm_.status(), fsm_.status() == lease_status::lost ? fsm_.lost_reason() : error_code(), time_point::min()};
        const auto r = s_->read_now();
        const auto rd = ZKLOCK_MUTANT(mutant::status_as_recorded, fsm_.read(r.state, r.generation, r.presumed),
                                      (lease_fsm::reading{fsm_.status(), fsm_.lost_reason()}));
        const bool owns = rd.status == lease_status::held || rd.status == lease_status::suspended;
        if (!owns) return {rd.status, rd.lost_reason, time_point::min()};
        return {rd.status, rd.lost_reason, ZKLOCK_MUTANT(mutant::valid_until_at_grant, r.valid_until, granted_valid_until_)};
    }
    lease_status status() const noexcept { return snapshot().status; }
    std::chrono::steady_clock::time_point valid_until() const noexcept { return snapshot().valid_until; }
    error_code lost_reason() const noexcept { return snapshot().lost_reason; }
    const std::string& node() const noexcept { return node_; }
    std::int64_t token() const noexcept { return token_; }
    std::uint64_t local_seq() const noexcept { return local_seq_; }
    std::uint64_t generation() const noexcept { return generation_; }
    const session_ptr& session() const noexcept { return s_; }

private:
    /// Tells the waiters what `c` changed; logs and counts it.
    void apply(const lease_fsm::change& c);
    /// apply(), and the node deleted plainly if `c` says so.
    void take(const lease_fsm::change& c);
    /// Tells the session's metrics once that the lease stopped holding (released or lost).
    void report_end(error_code lost_reason);
    void set_lost(error_code reason);
    void remove_node(unique_function<void(error_code)> cb);
    // Our node is watched only while someone awaits lost, status or revocation (or the watch came
    // for free from the acquire): a holder nobody asks about costs no read per grant.
    void ensure_watch();
    void watch_node();
    void arm_node_watch();
    bool has_waiters() const noexcept
    {
        return !lost_waiters_.empty() || !status_waiters_.empty() || !revoke_waiters_.empty();
    }

    session_ptr s_;
    std::string node_;
    std::int64_t token_;
    std::uint64_t generation_;
    std::string mark_dir_;
    lease_fsm fsm_;
    std::shared_ptr<watch_state> node_watch_;
    std::vector<unique_function<void(error_code)>> lost_waiters_;
    std::vector<unique_function<void(error_code, lease_status)>> status_waiters_;
    std::vector<unique_function<void(error_code)>> revoke_waiters_;
    std::chrono::steady_clock::time_point granted_;
    std::chrono::steady_clock::time_point granted_valid_until_{};  // the session's valid_until at the grant
    bool reported_end_ = false;
    std::uint64_t local_seq_ = 0;
    release_hook local_release_;  // cohort mode: see make_local
    std::weak_ptr<lease_state> revoke_source_;  // cohort mode: see make_local
    bool following_revocation_ = false;         // a waiter of revoke_source_'s is ours
    void follow_revocation();
};

/// The cohort takes a lease's state over (lease keeps its state private).
struct lease_access {
    static std::shared_ptr<lease_state> take(lease& l) noexcept { return std::move(l.state_); }
};

}  // namespace zklock::detail
