// zklock/metrics.hpp — what a session counts, as a plain snapshot, and its Prometheus rendering.
#pragma once

#include <zklock/types.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zklock {

/// A histogram with fixed upper bounds, as Prometheus wants it: `cumulative[i]` counts the
/// observations <= `upper_bounds[i]`; `count` is every observation (the `+Inf` bucket), `sum` their
/// total. Durations are in seconds.
struct histogram_snapshot {
    std::vector<double> upper_bounds;       ///< the buckets' upper bounds, ascending
    std::vector<std::uint64_t> cumulative;  ///< observations <= the bound of the same index
    double sum = 0;                         ///< the total of every observation
    std::uint64_t count = 0;                ///< every observation (the `+Inf` bucket)
};

/// Counters of one kind of acquire (monotonic since the session object was made).
struct acquire_counters {
    std::uint64_t started = 0;    ///< acquires initiated
    std::uint64_t granted = 0;    ///< acquires that completed with a lease
    std::uint64_t timed_out = 0;  ///< errc::timeout
    std::uint64_t cancelled = 0;  ///< asio::error::operation_aborted
    std::uint64_t failed = 0;     ///< any other error (would_block included: see failed_by_error)
};

/// One lock path with acquires waiting or leases held by this session right now.
struct path_gauges {
    std::string path;           ///< the lock path
    std::uint64_t waiters = 0;  ///< acquires started and not finished
    std::uint64_t holders = 0;  ///< leases granted and neither released nor lost
};

/// Everything a session counts. Counters only grow over the life of the session object (across
/// reconnects and new ZooKeeper sessions); gauges are the state now.
struct metrics_snapshot {
    acquire_counters exclusive;  ///< mutex, shared_mutex writers (multi_lock's parts included)
    acquire_counters shared;     ///< shared_mutex readers
    acquire_counters permit;     ///< semaphore permits

    /// The counters of kind `k`.
    acquire_counters& of(lock_kind k) noexcept
    {
        switch (k) {
        case lock_kind::exclusive: return exclusive;
        case lock_kind::shared: return shared;
        case lock_kind::permit: return permit;
        }
        return exclusive;
    }
    /// The counters of kind `k`, read-only.
    const acquire_counters& of(lock_kind k) const noexcept { return const_cast<metrics_snapshot&>(*this).of(k); }
    /// Failed acquires (the `failed` above) by error: "would_block", "lock_lost", ...
    /// (zklock::errc names), or "zookeeper_<code>" for ZooKeeper's codes, "<category>_<value>" else.
    std::vector<std::pair<std::string, std::uint64_t>> failed_by_error;

    histogram_snapshot wait_seconds;  ///< from the start of an acquire to its grant (granted only)
    histogram_snapshot hold_seconds;  ///< from a grant to its release or loss

    /// Grants to a waiter that found itself behind another node (a handoff): with a listing of the
    /// lock path, or without (the watched node was the head of its listing, or left with a handoff
    /// mark; docs/handoff.md).
    std::uint64_t handoffs_with_listing = 0;     ///< handoffs that listed the lock path
    std::uint64_t handoffs_without_listing = 0;  ///< handoffs granted with no listing

    /// Cohort mode (lock_options::cohort): grants of the local queue, as the first holder of a
    /// node the cohort just got from ZooKeeper (a turn), or handed on locally to the next local
    /// waiter on the same node, with no ZooKeeper request. Both are also counted as granted above.
    std::uint64_t cohort_turn_grants = 0;     ///< first local holder of a node got from ZooKeeper
    std::uint64_t cohort_local_handoffs = 0;  ///< handed on locally, no ZooKeeper request

    /// Leases lost, by reason: another client deleted the node (errc::lock_lost), the session
    /// expired or was presumed expired (errc::session_expired), the session was closed while held.
    std::uint64_t leases_lost_node_deleted = 0;     ///< errc::lock_lost
    std::uint64_t leases_lost_session_expired = 0;  ///< errc::session_expired (presumed included)
    std::uint64_t leases_lost_session_closed = 0;   ///< errc::session_closed

    std::uint64_t reconnects = 0;          ///< connected again after a connection loss (same or new ZooKeeper session)
    std::uint64_t session_expiries = 0;    ///< the server said the ZooKeeper session expired
    /// Presumed expired client-side: the leader did not confirm the session for half its timeout
    /// while a lease was held or an acquire waited, or the connection was gone for 9/10 of it.
    std::uint64_t presumed_expiries = 0;

    /// Acquires that completed (timed out, cancelled) before the node they had queued could be
    /// deleted (the server did not answer within the cleanup grace), and multi_lock releases not
    /// confirmed within it: the deletion went on in the background. `background_cleanups_pending`: those whose deletion has not finished yet (it
    /// is retried across reconnects; an expiry of the session ends it, the node going with it).
    std::uint64_t background_cleanups = 0;          ///< deletions that went on in the background
    std::uint64_t background_cleanups_pending = 0;  ///< those not finished yet (a gauge)

    /// Requests handed to the C client, by type: "create", "delete", "exists", "get_data",
    /// "set_data", "get_children" (listings included), "multi", "sync" (the leader probes sent
    /// while engaged, see session.hpp). Refused requests (not connected, too large) are not counted.
    std::vector<std::pair<std::string, std::uint64_t>> requests;
    /// `requests`' count for one type (0 if none was sent).
    std::uint64_t requests_of(std::string_view type) const noexcept
    {
        for (const auto& [t, n] : requests)
            if (t == type) return n;
        return 0;
    }

    histogram_snapshot listing_size;  ///< children per lock-path listing received

    std::vector<path_gauges> paths;  ///< sorted by path; only paths with waiters or holders
};

/// One label of every rendered sample, e.g. {"session", "orders-1"}.
using metric_label = std::pair<std::string, std::string>;

/// Renders `m` in the Prometheus text exposition format (version 0.0.4, served with
/// `Content-Type: text/plain; version=0.0.4`): `# HELP` and `# TYPE` per family, names
/// `zklock_...` (counters end in `_total`), histograms with cumulative `_bucket{le=...}`, `+Inf`,
/// `_sum`, `_count`. `labels` are added to every sample. Label values are escaped (backslash,
/// double quote, newline). No dependency: the format is plain text.
std::string to_prometheus(const metrics_snapshot& m, const std::vector<metric_label>& labels = {});

/// Several sessions on one page: each family once (the format allows a family's HELP/TYPE only
/// once, so concatenating single renderings would be invalid), with one sample set per snapshot,
/// each with its own labels (give each a distinct one, e.g. {"session", name}).
std::string to_prometheus(const std::vector<std::pair<metrics_snapshot, std::vector<metric_label>>>& sessions);

}  // namespace zklock
