// Sans-io operations and the one runner that drives them on the port.
//
// A machine is an operation's logic with no I/O in it: it is started, told each outcome (a reply,
// a watch's event, a connection) and a cancel, and says what to do next by pushing steps. The
// runner performs the steps on a zk_port and feeds their outcomes back, each under the tag the
// machine gave its step. The unit tests drive a machine by hand (test/unit/test_machines.cpp), or
// through the runner on the fake port (test/unit/test_ops_*.cpp).
//
// The acquire (acquire_fsm, driven by acquire_op) and the cohort (cohort_fsm) predate this
// vocabulary and keep their own action types.
#pragma once

#include "core/handler_util.hpp"
#include "port/zk_port.hpp"

#include <zklock/types.hpp>

#include <concepts>
#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <string>
#include <utility>
#include <vector>

namespace zklock::detail {

/// One thing a machine asks the runner to do. Its outcome comes back under `tag`.
struct zk_step {
    enum class op : std::uint8_t {
        get_data,        ///< reads `path`: outcome's data and stat
        get_children,    ///< lists `path`: outcome's children
        exists,          ///< `path`'s stat, if it exists: outcome's exists
        check_chroot,    ///< outcome's ec: errc::chroot_missing, none, or the request's error (check_chroot)
        wait_connected,  ///< completes once connected within `generation` (0: any), or why not
        wait_watch,      ///< completes once the watch kept under `tag` fires: outcome's event
        set_data,        ///< writes `data` to `path` if its version is `version` (-1: any)
        remove,          ///< deletes `path` if its version is `version` (-1: any)
        multi,           ///< `ops` in one transaction: outcome's results
    };
    op what = op::get_data;
    std::uint32_t tag = 0;
    std::string path;
    /// get_data, get_children, exists: set a watch, kept under `tag` once the read succeeds.
    /// The runner keeps one watch: a watched read lets go of the one kept before.
    bool watch = false;
    std::uint64_t generation = 0;
    std::string data;
    std::int32_t version = -1;
    std::vector<multi_op> ops;
};

/// What a step came to.
struct zk_outcome {
    std::uint32_t tag = 0;
    error_code ec;
    std::string data;                    ///< get_data
    zklock::stat stat;                   ///< get_data
    std::optional<zklock::stat> exists;  ///< exists
    std::vector<std::string> children;   ///< get_children
    watch_event event;                   ///< wait_watch
    std::vector<multi_result> results;   ///< multi
};

/// The steps a machine asks for at one turn, performed in order.
class zk_steps {
public:
    void get_data(std::uint32_t tag, std::string path, bool watch = false)
    {
        steps_.push_back({zk_step::op::get_data, tag, std::move(path), watch});
    }
    void get_children(std::uint32_t tag, std::string path, bool watch = false)
    {
        steps_.push_back({zk_step::op::get_children, tag, std::move(path), watch});
    }
    void exists(std::uint32_t tag, std::string path, bool watch = false)
    {
        steps_.push_back({zk_step::op::exists, tag, std::move(path), watch});
    }
    void check_chroot(std::uint32_t tag) { steps_.push_back({zk_step::op::check_chroot, tag}); }
    void wait_connected(std::uint32_t tag, std::uint64_t generation = 0)
    {
        steps_.push_back({zk_step::op::wait_connected, tag, {}, false, generation});
    }
    void wait_watch(std::uint32_t tag) { steps_.push_back({zk_step::op::wait_watch, tag}); }
    void set_data(std::uint32_t tag, std::string path, std::string data, std::int32_t version)
    {
        steps_.push_back({zk_step::op::set_data, tag, std::move(path), false, 0, std::move(data), version});
    }
    void remove(std::uint32_t tag, std::string path, std::int32_t version = -1)
    {
        steps_.push_back({zk_step::op::remove, tag, std::move(path), false, 0, {}, version});
    }
    void multi(std::uint32_t tag, std::vector<multi_op> ops)
    {
        steps_.push_back({zk_step::op::multi, tag, {}, false, 0, {}, -1, std::move(ops)});
    }

    const std::vector<zk_step>& list() const noexcept { return steps_; }
    bool empty() const noexcept { return steps_.empty(); }
    std::vector<zk_step> take() noexcept { return std::exchange(steps_, {}); }

private:
    std::vector<zk_step> steps_;
};

/// Performs steps on a port and hands each outcome to on_outcome, on the port's executor.
/// Requests hold the runner until their reply: an operation lives until its replies are in.
class step_runner : public std::enable_shared_from_this<step_runner> {
public:
    /// What keeps the runner alive while it waits (for a connection, for a watch): the wait
    /// itself (an operation that completes a handler), or its owner (an observer lives as long as
    /// the object that observes; the waits hold it weakly).
    enum class held { by_waits, by_owner };

    step_runner(session_ptr s, held h) : s_(std::move(s)), held_(h) {}
    virtual ~step_runner();

    const asio::any_io_executor& executor() const noexcept { return s_->executor(); }

protected:
    void perform(zk_steps& steps);
    /// Lets go of the watch kept: a wait on it never completes.
    void drop_watch() noexcept;
    virtual void on_outcome(zk_outcome r) = 0;

    session_ptr s_;

private:
    void perform(zk_step st);

    held held_;
    std::uint32_t watch_tag_ = 0;
    std::shared_ptr<watch_state> watch_;
};

/// A machine that runs once and completes with the arguments of `signature`.
template <class M>
concept one_shot_machine = requires(M& m, const M& cm, zk_steps& out, zk_outcome r, error_code ec) {
    typename M::signature;
    m.start(out);
    m.resume(out, std::move(r));
    m.cancel(out, ec);
    { cm.done() } -> std::convertible_to<bool>;
    m.take_result();  // a std::tuple of the signature's arguments
};

/// The completion of an operation inside zklock (a lease's removal of its node): a callback,
/// possibly empty, that holds no work on any executor and has no cancellation slot.
template <class... Args> class internal_completion {
public:
    explicit internal_completion(unique_function<void(Args...)> cb) : cb_(std::move(cb)) {}
    explicit operator bool() const noexcept { return pending_; }
    void complete(Args... args)
    {
        pending_ = false;
        if (cb_) std::exchange(cb_, {})(std::move(args)...);
    }

private:
    unique_function<void(Args...)> cb_;
    bool pending_ = true;
};

/// Whether a cancellation reaches the machine: unless it says `cancellable = false`.
template <class M> constexpr bool cancellable_machine() noexcept
{
    if constexpr (requires { M::cancellable; }) return M::cancellable;
    else return true;
}

template <class Signature> struct user_completion_of;
template <class... Args> struct user_completion_of<void(Args...)> {
    using type = stored_handler<Args...>;
};

/// The runner of a one-shot machine: starts it, performs its steps, feeds their outcomes back,
/// passes a cancellation of the handler's slot on, and completes once the machine is done
/// (posted if that is inside the initiating call). `Completion`: a user's handler
/// (stored_handler) or an internal_completion.
template <one_shot_machine M, class Completion = typename user_completion_of<typename M::signature>::type>
class machine_op final : public step_runner {
public:
    machine_op(session_ptr s, M m, Completion done)
        : step_runner(std::move(s), held::by_waits), m_(std::move(m)), done_(std::move(done))
    {
    }

    /// Runs `m` for a user's handler `h`.
    template <class Handler> static void launch(session_ptr s, M m, Handler h)
    {
        const auto ex = s->executor();
        auto op = std::make_shared<machine_op>(std::move(s), std::move(m), Completion(std::move(h), ex));
        op->start();
    }
    /// Runs `m` for an internal callback.
    static void launch_internal(session_ptr s, M m, Completion done)
    {
        auto op = std::make_shared<machine_op>(std::move(s), std::move(m), std::move(done));
        op->start();
    }

private:
    void start()
    {
        in_start_ = true;
        zk_steps out;
        m_.start(out);
        if constexpr (cancellable_machine<M>() && requires { done_.slot(); }) {
            if (!m_.done()) {
                on_cancellation(done_, s_->executor(), [weak = weak_from_this()] {
                    if (auto self = weak.lock()) static_cast<machine_op&>(*self).cancel(asio::error::operation_aborted);
                });
            }
        }
        advance(out);
        in_start_ = false;
    }

    void cancel(error_code why)
    {
        if (!done_) return;
        zk_steps out;
        m_.cancel(out, why);
        advance(out);
    }

    void on_outcome(zk_outcome r) override
    {
        if (!done_) return;
        zk_steps out;
        m_.resume(out, std::move(r));
        advance(out);
    }

    void advance(zk_steps& out)
    {
        if (!m_.done()) return perform(out);
        if (!done_) return;
        drop_watch();
        std::apply(
            [this](auto&&... args) {
                if constexpr (requires { done_.post(s_->executor(), std::move(args)...); }) {
                    if (in_start_) return done_.post(s_->executor(), std::move(args)...);
                }
                done_.complete(std::move(args)...);
            },
            m_.take_result());
    }

    M m_;
    Completion done_;
    bool in_start_ = false;
};

}  // namespace zklock::detail
