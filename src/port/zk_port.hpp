// The port: everything an operation (src/ops) may ask of ZooKeeper and of its session, and nothing
// of how the C client is driven. Requests go out, replies come back to their callbacks, watch
// events through watch_state, session events to the observers; the executor is the operation's
// place to run, and its timers (make_timer) its clock.
//
// The bridge's session_impl implements it against a real server, with Asio's steady timers. The
// unit tests' fake (test/unit/fake_port.hpp) implements it with scripted replies, injected events
// and a manual clock, so that every operation is tested on its own.
//
// Every callback runs on the port's executor, never inside the call that made the request.
#pragma once

#include "core/executor_check.hpp"

#include "core/graveyard.hpp"
#include "core/log_sink.hpp"
#include "core/metrics_state.hpp"
#include "port/watch_state.hpp"

#include <zklock/detail/session_fwd.hpp>
#include <zklock/detail/unique_function.hpp>
#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::detail {

using void_cb = unique_function<void(error_code)>;
using create_cb = unique_function<void(error_code, std::string, zklock::stat)>;
using stat_cb = unique_function<void(error_code, std::optional<zklock::stat>)>;
using data_cb = unique_function<void(error_code, std::string, zklock::stat)>;
using set_cb = unique_function<void(error_code, zklock::stat)>;
using children_cb = unique_function<void(error_code, std::vector<std::string>)>;
using multi_cb = unique_function<void(error_code, std::vector<multi_result>)>;

/// A node's children as the server listed them: every name in one buffer, back to back, with no
/// allocation per name (a lock path may have tens of thousands of children).
struct child_names {
    std::string buffer;
    std::vector<std::uint32_t> ends;  ///< where each name ends in `buffer`, in the order listed

    std::size_t size() const noexcept { return ends.size(); }
    std::string_view operator[](std::size_t i) const noexcept
    {
        const std::uint32_t begin = i == 0 ? 0 : ends[i - 1];
        return std::string_view(buffer).substr(begin, ends[i] - begin);
    }
};
using names_cb = unique_function<void(error_code, child_names)>;

/// Told of the session's state changes, on the port's executor.
class session_observer {
public:
    virtual void on_session_state(session_state st, std::uint64_t generation) = 0;
    /// Cut off for (nearly) the session timeout: the server has presumably expired the session.
    virtual void on_presumed_expired() = 0;
    /// The execution context shuts down: every handler and callback held is buried, none called.
    virtual void on_shutdown(graveyard& g) = 0;

protected:
    ~session_observer() = default;
};

/// The session as a synchronous query reads it at one instant (zk_port::read_now).
struct session_reading {
    /// The state observers are told: suspended while connected but doubtful (no answer the
    /// leader vouches for within a third of the session timeout while engaged).
    session_state state = session_state::disconnected;
    std::uint64_t generation = 0;
    /// The session is presumed expired (its observers told or not yet): every lease of it reads
    /// lost, and no acquire grants a new one, until newer evidence or a new session.
    bool presumed = false;
    /// Until when the evidence shows that the server cannot have expired the session (the
    /// presumption's deadline), or time_point::min() when there is no such evidence.
    std::chrono::steady_clock::time_point valid_until = std::chrono::steady_clock::time_point::min();
};

/// A one-shot timer on the port's clock.
class port_timer {
public:
    virtual ~port_timer() = default;
    /// Calls `cb` on the port's executor once `d` has passed, never inside this call. Started again,
    /// cancelled or destroyed before then, it does not call the earlier `cb` (unless that one's
    /// expiry was already on its way: the callback checks what it acts on).
    virtual void start(std::chrono::steady_clock::duration d, unique_function<void()> cb) = 0;
    virtual void cancel() noexcept = 0;
};

class zk_port {
public:
    using clock = std::chrono::steady_clock;

    virtual ~zk_port() = default;

    virtual const asio::any_io_executor& executor() const noexcept = 0;
    /// True when the executor has run a handler of the session on a thread other than the
    /// calling one, the latest time it ran one: a caller not running the executor then races
    /// with it (a debug build checks that operations start on the executor: check_caller_on).
    /// A thread that runs the io_context itself now and then and calls in between is not one.
    virtual bool other_thread_runs_handlers() const noexcept { return false; }
    virtual session_state state() const noexcept = 0;
    /// The ZooKeeper session's number: it changes when the session expires and a new one starts.
    virtual std::uint64_t generation() const noexcept = 0;
    /// How many times the session became connected (the first connect included). After a
    /// reconnect the server replays the events of the watches it missed in the order of the
    /// client's watch list, not of the changes: an order between two watches' events that held
    /// before does not hold across a change of this number.
    virtual std::uint64_t connections() const noexcept = 0;
    virtual std::int64_t session_id() const noexcept = 0;
    /// The deadline of an operation that has none of its own (a try-acquire): a third of the
    /// session timeout, when an engaged session starts to doubt its server.
    virtual clock::duration answer_deadline() const noexcept = 0;
    /// session_config::max_request_bytes.
    virtual std::size_t max_request_bytes() const noexcept = 0;
    /// This session's log (session_config::logger).
    virtual const log_sink& log() const noexcept = 0;

    /// Whether a node's ephemeralOwner is this session (as it is now).
    bool owns(const zklock::stat& st) const noexcept { return st.ephemeral_owner != 0 && st.ephemeral_owner == session_id(); }
    /// errc::request_too_large if a request with this much path and data would exceed
    /// max_request_bytes() (with ZooKeeper's framing: header, ACL, flags).
    error_code check_request_size(std::size_t path_bytes, std::size_t data_bytes, std::size_t ops = 1) const noexcept;

    /// The session as of now, on the port's clock. A doubt or a presumption of expiry that is due
    /// by now is made now, as its timer would have made it, however long the executor has been
    /// busy: the observers are told from a posted handler, and until then `presumed` says so. So a
    /// read never disagrees with what the observers are told afterwards.
    virtual session_reading read_now() = 0;

    /// Completes (posted) once connected within ZooKeeper session `generation` (0: any); with
    /// errc::session_expired if that session is gone, errc::session_closed after close.
    virtual void wait_connected(std::uint64_t generation, void_cb cb) = 0;
    /// `o` hears of every state change from now on, for as long as it lives.
    virtual void subscribe(std::weak_ptr<session_observer> o) = 0;

    // Requests. One session's requests are answered in the order they were made, and a watch's
    // event never comes before the reply of the read that set it. Watches (a non-null `w`) are
    // set only when the read succeeds.
    virtual void create(const std::string& path, std::string_view data, create_mode mode, create_cb cb) = 0;
    virtual void remove(const std::string& path, std::int32_t version, void_cb cb) = 0;
    virtual void exists(const std::string& path, std::shared_ptr<watch_state> w, stat_cb cb) = 0;
    virtual void get_data(const std::string& path, std::shared_ptr<watch_state> w, data_cb cb) = 0;
    virtual void set_data(const std::string& path, std::string_view data, std::int32_t version, set_cb cb) = 0;
    virtual void get_children(const std::string& path, std::shared_ptr<watch_state> w, children_cb cb) = 0;
    /// get_children without a watch, the names in one buffer (child_names).
    virtual void list_children(const std::string& path, names_cb cb) = 0;
    virtual void multi(const std::vector<multi_op>& ops, multi_cb cb) = 0;
    /// ZooKeeper's sync: completes once the session's server has applied every write the leader
    /// had committed when the sync reached it, so that a read sent after it sees them (the server
    /// may be a follower behind the leader, and after a reconnect it may be another one).
    virtual void sync(const std::string& path, void_cb cb) = 0;

    /// A watch's state; `path`: the node it is for, shared (see watch_state).
    std::shared_ptr<watch_state> make_watch(shared_path path = {})
    {
        // One copy of the executor for all the session's watches (an any_io_executor is 56
        // bytes; bench W10000 holds some 20 000 watches at once).
        std::call_once(watch_ex_once_, [this] { watch_ex_ = std::make_shared<const asio::any_io_executor>(executor()); });
        return std::make_shared<watch_state>(watch_ex_, std::move(path));
    }
    /// A timer on the port's clock: Asio's steady clock on the executor, unless the port has
    /// another (the fake's manual one).
    virtual std::unique_ptr<port_timer> make_timer();
    /// The port's clock (the one its timers run on): what an operation's deadline arithmetic reads.
    virtual clock::time_point now() const { return clock::now(); }

    /// What this session counts (zklock/metrics.hpp): the operations report to it.
    metrics_state& metrics() noexcept { return metrics_; }
    const metrics_state& metrics() const noexcept { return metrics_; }

    /// State that an operation keeps per session (cohort mode's local queues, the queue-size hints
    /// of the acquires, the listings being shared): one object per type T, made by T's default
    /// constructor on first use and destroyed with the session.
    template <class T> T& extension()
    {
        const std::size_t id = extension_id<T>();
        if (id >= extensions_.size()) extensions_.resize(id + 1);
        auto& slot = extensions_[id];
        if (!slot) slot = std::make_shared<T>();
        return *static_cast<T*>(slot.get());
    }

protected:
    zk_port() = default;
    zk_port(const zk_port&) = delete;
    zk_port& operator=(const zk_port&) = delete;

    /// The extensions, destroyed first (a session's own destructor may want them gone before it
    /// lets go of anything else).
    void drop_extensions() noexcept { extensions_.clear(); }

    metrics_state metrics_;

private:
    static std::size_t next_extension_id() noexcept;
    template <class T> static std::size_t extension_id() noexcept
    {
        static const std::size_t id = next_extension_id();
        return id;
    }
    std::vector<std::shared_ptr<void>> extensions_;  // see extension(), by extension_id
    std::once_flag watch_ex_once_;
    std::shared_ptr<const asio::any_io_executor> watch_ex_;  // make_watch's, made on first use
};

/// Debug builds of the library: calls wrong_thread when the session has run handlers on its
/// executor and this thread does not run that executor now (as far as running_on can tell).
inline void check_caller_on([[maybe_unused]] const zk_port* s) noexcept
{
#ifndef NDEBUG
    if (s && s->other_thread_runs_handlers() && !running_on(s->executor())) wrong_thread("a zklock operation");
#endif
}

}  // namespace zklock::detail
