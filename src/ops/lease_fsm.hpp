// What a lease knows, as a sans-io machine: its status, why it ended, and whether a revocation
// was requested. Each event returns what changed; lease_state (ops/lease_state.hpp) tells its
// waiters, logs, counts, and does the I/O.
#pragma once

#include <zklock/error.hpp>
#include <zklock/lease.hpp>
#include <zklock/types.hpp>

#include <cstdint>
#include <string_view>

namespace zklock::detail {

class lease_fsm {
public:
    /// What an event changed.
    struct change {
        bool status = false;          ///< status() is another: tell the status waiters
        bool lost = false;            ///< it became lost (lost_reason()): tell the lost and revocation waiters
        bool released = false;        ///< it became released: end every wait, let the node go
        bool revoked = false;         ///< a revocation request: tell the revocation waiters
        bool remove_plainly = false;  ///< delete the node now, without a handoff mark (a presumed expiry)
        bool never_held = false;      ///< lost at its grant: it was never the holder's (not counted)
    };

    /// `generation`: the ZooKeeper session the node belongs to.
    explicit lease_fsm(std::uint64_t generation) noexcept : generation_(generation) {}
    /// The acquire read a revocation request in the node already.
    void revoke_seen() noexcept { revoke_requested_ = true; }
    /// A cohort's local holder: the node is the cohort's. It reads no revocation request from the
    /// node, and does not delete it on a presumed expiry.
    void make_local() noexcept { local_ = true; }

    lease_status status() const noexcept { return status_; }
    error_code lost_reason() const noexcept { return lost_reason_; }
    bool revoke_requested() const noexcept { return revoke_requested_; }
    /// Held or suspended: the lock is still ours, as far as this process knows.
    bool holds() const noexcept { return status_ == lease_status::held || status_ == lease_status::suspended; }

    /// What a query reads now: the status and the loss's reason as recorded, unless the session
    /// as read at this instant (zk_port::read_now: `st`, `generation`, `presumed`) says the
    /// lease no longer holds, or is in doubt, before its observers have been told.
    struct reading {
        lease_status status;
        error_code lost_reason;
    };
    reading read(session_state st, std::uint64_t generation, bool presumed) const noexcept
    {
        if (!holds()) return {status_, lost_reason_};
        if (st == session_state::closed) return {lease_status::lost, errc::session_closed};
        if (presumed || generation != generation_ || st == session_state::expired)
            return {lease_status::lost, errc::session_expired};
        if (st != session_state::connected) return {lease_status::suspended, {}};
        return {status_, {}};
    }

    /// The session's state changed: suspended and back (held) within the node's session; a new
    /// session, an expiry or the end of the session lose it.
    change session_changed(session_state st, std::uint64_t generation) noexcept
    {
        if (!holds()) return {};
        switch (st) {
        case session_state::connected:
            if (generation != generation_) return lose(errc::session_expired);
            return set_status(lease_status::held);
        case session_state::suspended: return set_status(lease_status::suspended);
        case session_state::expired: return lose(errc::session_expired);
        case session_state::closed: return lose(errc::session_closed);
        default: return {};
        }
    }

    /// Granted while the session read `st`, `generation`, `presumed` (one reading,
    /// zk_port::read_now): the lease starts as that reading says. In a doubt it is suspended, so
    /// that the notice of the doubt's end is a change it hears. Presumed expired, it is lost
    /// before it was ever the holder's: the grant came on what the server said before the
    /// presumption (a late event, a stalled executor's backlog), the leader may have expired the
    /// session and granted another, and its node is deleted plainly as for a holder presumed
    /// expired.
    change granted(session_state st, std::uint64_t generation, bool presumed) noexcept
    {
        if (!presumed) return session_changed(st, generation);
        auto c = presumed_expired();
        c.never_held = true;
        return c;
    }

    /// Cut off for (nearly) the session timeout: the server has presumably expired the session. The
    /// holder is told it lost the lock; its node must not go on blocking the queue (the session
    /// may yet come back), so it is deleted, plainly (the successor lists).
    change presumed_expired() noexcept
    {
        if (!holds()) return {};
        auto c = lose(errc::session_expired);
        c.remove_plainly = !local_;
        return c;
    }

    /// Lost for `reason`: the node is gone (lock_lost), or a cohort's node was lost.
    change lose(error_code reason) noexcept
    {
        if (!holds()) return {};
        lost_reason_ = reason;
        auto c = set_status(lease_status::lost);
        c.lost = true;
        return c;
    }

    /// The node's data as read: a revocation request, if it is one (not for a cohort's local
    /// holder: it hears of one from the cohort, revoked()). A read answered after the lease ended
    /// still records it (revocation_requested()), with no one left to tell.
    change node_data(std::string_view data) noexcept
    {
        if (revoke_requested_ || local_ || data != revocation_request) return {};
        return note_revocation();
    }

    /// The cohort heard a revocation request for the node while this local holder holds.
    change revoked() noexcept
    {
        if (revoke_requested_ || !holds()) return {};
        return note_revocation();
    }

    /// The holder lets go; nothing if released already.
    change release() noexcept
    {
        if (status_ == lease_status::released) return {};
        status_ = lease_status::released;
        change c;
        c.status = true;
        c.released = true;
        return c;
    }

private:
    change note_revocation() noexcept
    {
        revoke_requested_ = true;
        change c;
        c.revoked = true;
        return c;
    }

    change set_status(lease_status st) noexcept
    {
        change c;
        c.status = st != status_;
        status_ = st;
        return c;
    }

    std::uint64_t generation_;
    lease_status status_ = lease_status::held;
    error_code lost_reason_;
    bool revoke_requested_ = false;
    bool local_ = false;
};

}  // namespace zklock::detail
