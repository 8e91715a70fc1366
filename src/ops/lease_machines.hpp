// The machines of a lease's writes: the removal of its node on release, and the downgrade of a
// writer. Each is sans-io (ops/machine.hpp); lease.cpp runs them.
#pragma once

#include "ops/machine.hpp"

#include <cstdint>
#include <string>
#include <tuple>

namespace zklock::detail {

/// Deletes a lease's node until it is gone, across connection loss. Gone is gone: deleted now,
/// already (a lost reply, someone else), or with its session (which ended, or expired meanwhile).
///
/// With a mark directory (an exclusive holder, see acquire_fsm::mark_on_release), the delete
/// carries the handoff: multi(set_data(lock path, handoff_mark(our name)), delete(our node)), one
/// transaction, so the mark exists only if our node left with it, as the head. A multi that fails
/// (our node is gone: it fails as a whole; the lock path refuses our write) becomes the plain
/// delete, and the successor lists as it would for any unmarked deletion.
///
/// Completes with no error once the node is gone, or with the error that stops it (no_auth on a
/// node someone re-ACLed). Not cancelled: it goes on until then.
class remove_node_machine {
public:
    using signature = void(error_code);
    static constexpr bool cancellable = false;

    /// `generation`: the node's ZooKeeper session; `mark_dir`: the lock path to mark, or empty.
    remove_node_machine(std::string node, std::uint64_t generation, std::string mark_dir)
        : node_(std::move(node)), generation_(generation), mark_dir_(std::move(mark_dir))
    {
    }

    void start(zk_steps& out);
    void resume(zk_steps& out, zk_outcome r);
    void cancel(zk_steps&, error_code) {}
    bool done() const noexcept { return done_; }
    std::tuple<error_code> take_result() { return {ec_}; }

    enum tag : std::uint32_t { marked_delete, plain_delete, reconnect };

private:
    void on_removed(zk_steps& out, error_code ec);
    void finish(error_code ec);

    std::string node_;
    std::uint64_t generation_;
    std::string mark_dir_;
    error_code ec_;
    bool done_ = false;
};

/// A writer's downgrade: reads its node's data, then writes the mark in front of it, on the
/// version read (a change in between is not overwritten: it reads again, a few times at most). A
/// revocation request read is never overwritten: the downgrade completes as if the request had
/// replaced its mark. Completes with the read's or the write's error (no_node: the node is gone).
/// Not cancelled: its write cannot be taken back.
class downgrade_machine {
public:
    using signature = void(error_code);
    static constexpr bool cancellable = false;
    static constexpr int max_tries = 8;

    explicit downgrade_machine(std::string node) : node_(std::move(node)) {}

    void start(zk_steps& out) { out.get_data(read, node_); }
    void resume(zk_steps& out, zk_outcome r);
    void cancel(zk_steps&, error_code) {}
    bool done() const noexcept { return done_; }
    std::tuple<error_code> take_result() { return {ec_}; }

    enum tag : std::uint32_t { read, write };

private:
    void finish(error_code ec)
    {
        done_ = true;
        ec_ = ec;
    }

    std::string node_;
    int tries_ = 0;
    error_code ec_;
    bool done_ = false;
};

}  // namespace zklock::detail
