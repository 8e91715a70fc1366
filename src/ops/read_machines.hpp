// The machines of the operations that only read: async_list_queue, the election's async_leader
// and its observer. Each is sans-io (ops/machine.hpp); queue.cpp and election.cpp run them.
#pragma once

#include "ops/machine.hpp"

#include <zklock/detail/path.hpp>
#include <zklock/election.hpp>
#include <zklock/queue.hpp>

#include <string>
#include <utility>
#include <vector>

namespace zklock::detail {

/// async_list_queue: the path's data (a semaphore's permit count), the listing, then every queue
/// node's data, all in flight at once (one session's replies come in order). No such path: asks
/// whether the chroot is missing. A node gone meanwhile is listed as gone.
class list_queue_machine {
public:
    using signature = void(error_code, queue_listing);

    explicit list_queue_machine(std::string path) : path_(std::move(path)) {}

    void start(zk_steps& out);
    void resume(zk_steps& out, zk_outcome r);
    void cancel(zk_steps& out, error_code why);
    bool done() const noexcept { return done_; }
    std::tuple<error_code, queue_listing> take_result() { return {ec_, std::move(out_)}; }

    /// The tags of its steps: a node's read is node_data + its place in the queue.
    enum tag : std::uint32_t { path_data, listing, chroot, node_data };

private:
    void on_children(zk_steps& out, const std::vector<std::string>& children);
    void finish(error_code ec);

    std::string path_;
    std::vector<queue_node> queue_;
    queue_listing out_;
    std::size_t pending_ = 0;
    error_code ec_;
    bool done_ = false;
};

/// election::async_leader: one listing, then the data of the first candidate that still exists,
/// one at a time. No candidate, or no such path: errc::no_leader (errc::chroot_missing if the
/// chroot is missing).
class leader_machine {
public:
    using signature = void(error_code, leader_info);

    explicit leader_machine(std::string path) : path_(std::move(path)) {}

    void start(zk_steps& out);
    void resume(zk_steps& out, zk_outcome r);
    void cancel(zk_steps& out, error_code why);
    bool done() const noexcept { return done_; }
    std::tuple<error_code, leader_info> take_result() { return {ec_, std::move(info_)}; }

    enum tag : std::uint32_t { listing, chroot, candidate };

private:
    void look(zk_steps& out);
    void finish(error_code ec, leader_info info = {});

    std::string path_;
    std::vector<queue_node> queue_;
    std::size_t next_ = 0;
    leader_info info_;
    error_code ec_;
    bool done_ = false;
};

/// election_observer: lists the candidates, then watches the first that exists (its data watch
/// fires on its deletion and on a new value). The next candidate listed leads once it is gone: a
/// candidate that joined after the listing has a larger sequence number than every listed one.
/// It lists again (with a child watch, for when there is none) only once every listed candidate
/// is gone. No election path: no leader until it is created (an exists watch says when), unless
/// the chroot is missing (the observation ends). A lost connection or an expired session: it
/// looks again once connected.
///
/// A wait completes with news: a leader that differs from what the previous wait got (a leader
/// that came and went between two waits is not news), or the error that ended the observation.
class observer_machine {
public:
    explicit observer_machine(std::string path) : path_(std::move(path)) {}

    void start(zk_steps& out);
    /// An outcome of a step it asked for; one of an earlier step (stale) is ignored.
    void resume(zk_steps& out, zk_outcome r);

    bool has_news() const noexcept;
    /// What a wait completes with now (has_news()).
    std::pair<error_code, leader_info> take_news();

    /// The leader as last seen (empty: none), and whether one has been seen at all.
    const leader_info& current() const noexcept { return current_; }
    bool seen() const noexcept { return seen_; }
    error_code failed() const noexcept { return failed_; }
    /// The tag its next outcome must carry; any other is stale.
    std::uint32_t expected_tag() const noexcept { return tag_; }

private:
    enum class phase : std::uint8_t {
        listing,          // get_children with a watch
        listing_watch,    // no candidate: waits for the child watch
        chroot,           // no path: is it the chroot?
        path_exists,      // exists on the path, with a watch
        path_watch,       // waits for the path to be created
        candidate,        // get_data of candidates_[next_], with a watch
        candidate_watch,  // waits for the leader to go or change
        reconnecting,     // waits for a connection after a lost one or an expiry
        ended,
    };

    void list(zk_steps& out);
    void look(zk_steps& out);
    void watch_path(zk_steps& out);
    void on_error(zk_steps& out, error_code ec);
    void publish(leader_info info);
    void fail(error_code ec);
    std::uint32_t next_tag() noexcept { return ++tag_; }

    std::string path_;
    phase phase_ = phase::listing;
    std::uint32_t tag_ = 0;
    std::vector<queue_node> candidates_;  // the latest listing, in queue order
    std::size_t next_ = 0;                // the candidate looked at (the leader, if it exists)
    leader_info current_;
    bool seen_ = false;                   // current_ is known
    leader_info delivered_;               // what the last wait got
    bool delivered_any_ = false;
    error_code failed_;
};

}  // namespace zklock::detail
