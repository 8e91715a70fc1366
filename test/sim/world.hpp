// One simulated run (a schedule): clients running the library's real operations on simulated
// sessions (sim_port) over one model of a ZooKeeper ensemble (zk_model), with one virtual clock
// and one seeded scheduler that picks every next event: a message delivered, a request or a
// follower moving a step, time passing, a connection (re)made, or a fault. Checkers read every
// lease through its public queries after every step. Everything runs on the calling thread, and
// the same seed gives the same run.
#pragma once

#include "zk_model.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace zklock::sim {

/// What a run does.
struct run_config {
    std::uint64_t seed = 1;
    int servers = 3;
    int clients = 3;
    int actors_per_client = 2;
    int rounds = 3;                                          ///< acquisitions per actor
    std::chrono::milliseconds session_timeout{3000};
    bool faults = true;
    /// Every event of the run is kept in the trace (else only what a violation report needs is
    /// made: a failing seed is run again with this on).
    bool trace = false;
    std::uint64_t max_steps = 200'000;
    /// The semaphore's liveness checker (a free permit idles while a waiter that could take it
    /// waits, checkers.cpp).
    bool check_idle_permits = true;
};

/// What a run found.
struct run_result {
    bool ok = true;
    std::string violation;               ///< the first invariant broken, in words
    std::vector<std::string> trace;      ///< the events, when run_config::trace
    std::uint64_t steps = 0;             ///< scheduler steps taken
    std::uint64_t grants = 0;            ///< leases granted
    std::uint64_t faults = 0;            ///< faults injected
    std::uint64_t marked_releases = 0;   ///< releases sent with a handoff mark
    std::uint64_t marks_refused = 0;     ///< of those, refused (no_auth: nobody may write the lock path)
    /// The misuse and slow paths reached (docs/guarantees.md, "The simulation"):
    std::uint64_t permit_mismatches = 0;  ///< permit acquires refused for asking another count than the path's
    std::uint64_t queued_stalls = 0;      ///< stalls begun with a reply queued (read at resume before the timers)
    std::uint64_t held_replies = 0;       ///< windows in which a client's replies were held past T/3
    std::uint64_t misuse_probes = 0;      ///< moved-from or released objects whose every operation was called
    std::chrono::milliseconds virtual_time{0};
};

/// Runs one schedule to its end (every actor done and every session closed) or to the first
/// violation.
run_result run_schedule(const run_config& cfg);

/// The trace of a failed run as a report: its seed, the violation, the last `lines` events.
std::string report(const run_config& cfg, const run_result& r, std::size_t lines = 120);

}  // namespace zklock::sim
