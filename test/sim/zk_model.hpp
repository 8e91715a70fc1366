// A model of a ZooKeeper ensemble for the simulation (test/sim): the data tree and its rules
// (versions, cversion and sequence numbers, ephemeral and container nodes, multi's atomicity and
// per-op results, one-shot watches), sessions (expiry by the leader's clock, ephemerals deleted in
// one transaction, close), and the path of a request through its server (a follower forwards
// writes and syncs to the leader and answers them once it has applied them; it serves reads from
// its own copy of the tree, which may be behind the leader's). Each session's messages (replies
// and watch events) leave its server in one FIFO, in the order the server produced them.
//
// Nothing here moves by itself: the simulation's scheduler picks every step (a session's next
// request processed, a follower applying the leader's next transaction, a connection dropped, time
// passing for the expiry check). The model is checked against a real server by
// test_differential.cpp. What it does not model: ACL beyond the refusals set by deny_create and
// deny_write, quotas, reconfig, observers, leader election (the leader is server 0, always).
#pragma once

#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace zklock::sim {

using sim_clock = std::chrono::steady_clock;
using session_id = std::int64_t;

/// ZooKeeper's watcher event types, as the protocol numbers them (ZOO_CREATED_EVENT...).
enum class event_type : int { created = 1, deleted = 2, changed = 3, child = 4 };

/// A request as a client sends it.
struct request {
    enum class kind { create, remove, exists, get_data, set_data, get_children, multi, sync, close };
    kind type = kind::exists;
    std::string path;
    std::string data;                       ///< create, set_data
    create_mode mode = create_mode::persistent;
    std::int32_t version = -1;              ///< remove, set_data
    bool watch = false;                     ///< exists, get_data, get_children
    std::vector<multi_op> ops;              ///< multi

    bool is_write() const noexcept { return type != kind::exists && type != kind::get_data && type != kind::get_children; }
};

/// A server's answer to one request.
struct reply {
    std::uint64_t tag = 0;                  ///< the client's tag of the request (submit)
    error_code ec;                          ///< zk_errc, or none
    std::string path;                       ///< create: the node created; sync: the path
    std::string data;                       ///< get_data
    std::optional<zklock::stat> stat;       ///< create, exists (none: no node), get_data, set_data
    std::vector<std::string> children;      ///< get_children, sorted as the server lists them (see below)
    std::vector<multi_result> results;      ///< multi
    std::int64_t zxid = 0;                  ///< the server's last applied zxid when it answered
};

/// A watch firing, as the server sends it to one session.
struct event {
    event_type type = event_type::changed;
    std::string path;
};

/// One message from a server to a session, in the order it was sent.
struct message {
    bool is_event = false;
    reply r;   ///< when !is_event
    event e;   ///< when is_event
};

class zk_model {
public:
    /// An ensemble of `servers` (>= 1); server 0 is the leader. The tree starts with "/" only.
    /// Times are the simulation's clock: `epoch_ms` is ctime/mtime's origin.
    explicit zk_model(int servers = 1, std::int64_t epoch_ms = 1'700'000'000'000);

    int servers() const noexcept;

    // ---- sessions ----

    /// A new session at the leader, its connection to `server` (which must reach the leader).
    /// Its id is fresh (never reused); `timeout` is the negotiated session timeout.
    session_id open_session(int server, sim_clock::duration timeout, sim_clock::time_point now);
    /// Whether the leader still counts the session alive (not expired, not closed).
    bool alive(session_id s) const;
    /// The server the session is connected to, or -1 while disconnected.
    int server_of(session_id s) const;
    /// The connection is dropped (either side): everything queued for the session at its server,
    /// requests and messages, is discarded, except that a write or sync already forwarded to the
    /// leader stays in the leader's log (it is applied; its reply is lost). Watches registered at
    /// the server for this session are dropped (the client sets them again on reconnect).
    void disconnect(session_id s);
    /// Reconnects the session to `server`, which must reach the leader and must have applied at
    /// least `last_zxid_seen` (else the server refuses: returns errc-less false and nothing
    /// changes, as ZooKeeper refuses a client that has seen a later zxid). If the leader no longer
    /// counts the session alive, the server answers expired: returns true and `expired` is set.
    /// On success, the client's watches are set again (ZooKeeper's SetWatches): for each path, an
    /// event is queued at once if the node changed after `last_zxid_seen` (data and exist watches:
    /// deleted / changed, or created for an exist watch on a node that now exists; child watches:
    /// deleted / child if its pzxid is later), else the watch is registered.
    struct reconnect_result { bool accepted = false; bool expired = false; };
    reconnect_result reconnect(session_id s, int server, std::int64_t last_zxid_seen,
                               const std::vector<std::string>& data_watches,
                               const std::vector<std::string>& exist_watches,
                               const std::vector<std::string>& child_watches, sim_clock::time_point now);
    /// The client's heartbeat (a ping) reached its server at `now`; if that server reaches the
    /// leader, the leader counts the session touched at `now`. Requests touch too (submit).
    void touch(session_id s, sim_clock::time_point now);
    /// The leader expires every session not touched within its timeout by `now`: one transaction
    /// each (closeSession) that deletes its ephemeral nodes (watches fire as for deletes). Returns
    /// the sessions expired.
    std::vector<session_id> expire_due(sim_clock::time_point now);
    /// The earliest time at which expire_due would expire a session, if any is alive.
    std::optional<sim_clock::time_point> next_expiry() const;

    // ---- requests and their path ----

    /// The session (connected) sends a request; it queues at its server, behind the session's
    /// earlier ones. A request of a disconnected session is an error of the caller (asserts).
    void submit(session_id s, std::uint64_t tag, request r, sim_clock::time_point now);
    /// Whether the session's oldest request can move a step now (see step_session).
    bool can_step_session(session_id s) const;
    /// One step of the session's oldest request at its server: a read is answered from the
    /// server's tree (its reply queued, its watch registered on success); a write, sync or close
    /// is forwarded to the leader, which applies it at once (a new zxid, or an error the server
    /// will answer with), provided the server reaches the leader; its reply is queued when the
    /// session's server applies it (step_server). A session's requests are handled in order: a
    /// read waits while an earlier write of the same session is not yet answered.
    void step_session(session_id s, sim_clock::time_point now);
    /// Whether the follower has a transaction of the leader's log left to apply (and reaches the
    /// leader). The leader applies as it decides, never lags.
    bool can_step_server(int server) const;
    /// The follower applies the leader's next transaction: the watches it triggers queue their
    /// events to their sessions, and if the transaction was a request of one of its sessions, that
    /// request's reply is queued after them.
    void step_server(int server);

    /// The messages queued for the session, oldest first: the simulation delivers (pops) them.
    std::deque<message>& outbox(session_id s);

    // ---- faults ----

    /// Cuts the server off from the leader, or heals it. While cut off it applies nothing, its
    /// forwarded requests wait (they reach the leader when healed, if their connection is still
    /// up), its sessions' touches do not reach the leader, and it serves reads from its stale tree.
    /// The leader cannot be cut off from itself.
    void set_reaches_leader(int server, bool up);
    bool reaches_leader(int server) const;
    /// The server restarts: every connection to it is dropped (disconnect), and it catches up
    /// with the leader's log at once when it comes back (a restarted follower syncs before
    /// serving). The leader does not restart.
    void restart(int server);

    /// ACL refusals: a create under `dir` (a direct child) is refused with no_auth, and so is a
    /// write of `path`'s data (set_data, alone or in a multi), as for nodes whose ACL grants
    /// everyone all but CREATE, or all but WRITE.
    void deny_create(const std::string& dir);
    void deny_write(const std::string& path);
    /// An administrator's persistent node with `data`, created by a session of its own (no
    /// owner), through the leader's log; nothing if it exists or has no parent.
    void seed_persistent(const std::string& path, const std::string& data = {});
    /// The container manager's pass: deletes every container with no child whose cversion is
    /// not 0 (a transaction each, through the leader).
    void reap_containers();

    // ---- reading the leader's state (the checkers) ----

    /// The leader's tree: every node's path, sorted.
    std::vector<std::string> nodes() const;
    std::optional<zklock::stat> stat_of(const std::string& path) const;
    /// Whether the node is a container (its stat says 0 for its ephemeralOwner, as ZooKeeper's).
    bool is_container(const std::string& path) const;
    /// A node's data at the leader ("" if there is no such node).
    std::string data_of(const std::string& path) const;
    std::int64_t last_zxid() const noexcept;
    /// When the leader expires the session if nothing touches it meanwhile (nullopt: not alive).
    std::optional<sim_clock::time_point> expiry_of(session_id s) const;
    /// A node's children at the leader, sorted by name (none if there is no such node).
    std::vector<std::string> children_of(const std::string& path) const;
    /// `f(path, data, created)` runs as the leader applies each create (created) or data write
    /// (not): the checkers see every committed write at its instant, in the order applied.
    void on_commit(std::function<void(const std::string& path, const std::string& data, bool created)> f);

private:
    struct impl;
    std::shared_ptr<impl> impl_;
};

}  // namespace zklock::sim
