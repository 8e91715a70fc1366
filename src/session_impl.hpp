// The ZooKeeper bridge: one zhandle_t of the single-threaded C client, driven by the Asio reactor.
//
// How it runs:
//  * zookeeper_interest() says which fd, which events, and by when the client must run again
//    (pings, connect timeouts). We wait for those events on a posix::stream_descriptor (released,
//    never closed: the C client owns the socket) and for the deadline on a steady_timer.
//  * Then zookeeper_process() runs; it invokes C callbacks, which only copy their data into a
//    request object and queue it. The queue runs after zookeeper_process has returned, so no user
//    code and no recipe step ever runs inside the C client.
//  * After every request sent and every event, interest is asked again.
//
// Everything here runs on the session's executor.
#pragma once

#include "handler_util.hpp"

#include <zklock/config.hpp>
#include <zklock/detail/unique_function.hpp>
#include <zklock/types.hpp>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <zookeeper/zookeeper.h>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace zklock::detail {

/// A request (or watcher event) whose C callback has run: completes on the session's executor.
struct c_event {
    virtual ~c_event() = default;
    virtual void complete() = 0;
    std::size_t bytes = 0;  ///< payload held until complete() (listings): bounds the read drain
};

/// Shared state of a one-shot watch.
class watch_state {
public:
    explicit watch_state(asio::any_io_executor ex) : ex_(std::move(ex)) {}
    void fire(error_code ec, watch_event ev);
    /// Internal waiter (runs on the session executor); one at a time.
    void wait(unique_function<void(error_code, watch_event)> cb);
    void cancel_wait();
    bool fired() const noexcept { return result_.has_value(); }
    bool has_waiter() const noexcept { return static_cast<bool>(waiter_); }
    const asio::any_io_executor& executor() const noexcept { return ex_; }

private:
    asio::any_io_executor ex_;
    std::optional<std::pair<error_code, watch_event>> result_;
    unique_function<void(error_code, watch_event)> waiter_;
};

class lease_state;

enum class watch_kind { data, exist, child };

class session_impl : public std::enable_shared_from_this<session_impl> {
public:
    using clock = std::chrono::steady_clock;
    using void_cb = unique_function<void(error_code)>;
    using create_cb = unique_function<void(error_code, std::string, zklock::stat)>;
    using stat_cb = unique_function<void(error_code, std::optional<zklock::stat>)>;
    using data_cb = unique_function<void(error_code, std::string, zklock::stat)>;
    using children_cb = unique_function<void(error_code, std::vector<std::string>)>;
    using multi_cb = unique_function<void(error_code, std::vector<multi_result>)>;

    session_impl(asio::any_io_executor ex, session_config cfg);
    ~session_impl();

    const asio::any_io_executor& executor() const noexcept { return ex_; }
    const session_config& config() const noexcept { return cfg_; }
    session_state state() const noexcept { return state_; }
    std::uint64_t generation() const noexcept { return generation_; }
    std::int64_t session_id() const noexcept;
    std::chrono::milliseconds negotiated_timeout() const noexcept { return negotiated_; }
    bool has_auth() const noexcept { return !cfg_.digest_auth.empty(); }
    /// errc::request_too_large if a request with this much path and data would exceed
    /// config().max_request_bytes (with ZooKeeper's framing: header, ACL, flags).
    error_code check_request_size(std::size_t path_bytes, std::size_t data_bytes, std::size_t ops = 1) const noexcept;

    void connect(void_cb cb);
    void close(void_cb cb);   // async: zookeeper_close on a helper thread when connected
    void close_now();         // from the session's destructor

    /// Completes at the next state change.
    void wait_state_change(unique_function<void(error_code, session_state)> cb);
    /// Completes (posted) once connected within ZooKeeper session `generation`; with
    /// errc::session_expired if that session is gone, errc::session_closed after close.
    void wait_connected(std::uint64_t generation, void_cb cb);

    // Requests. The callback runs on the session executor, after zookeeper_process returned.
    // Data watches (watch = true) are registered only when the read succeeds.
    void create(const std::string& path, std::string_view data, create_mode mode, create_cb cb);
    void remove(const std::string& path, std::int32_t version, void_cb cb);
    void exists(const std::string& path, std::shared_ptr<watch_state> w, stat_cb cb);
    void get_data(const std::string& path, std::shared_ptr<watch_state> w, data_cb cb);
    void set_data(const std::string& path, std::string_view data, std::int32_t version,
                  unique_function<void(error_code, zklock::stat)> cb);
    void get_children(const std::string& path, std::shared_ptr<watch_state> w, children_cb cb);
    void multi(const std::vector<multi_op>& ops, multi_cb cb);
    /// Creates "/a", "/a/b", ... up to `dir` as container nodes (the server removes them again
    /// once they have had children and are empty). Existing ones are fine.
    void create_containers(const std::string& dir, void_cb cb);

    std::shared_ptr<watch_state> make_watch() { return std::make_shared<watch_state>(ex_); }

    // Leases are told of suspension, reconnection and loss of the session.
    void add_lease(const std::shared_ptr<lease_state>& l);

    // For the C callbacks.
    void enqueue(std::unique_ptr<c_event> e);
    void on_watcher(int type, int zstate, std::string path);
    void register_watch(watch_kind kind, const std::string& path, const std::shared_ptr<watch_state>& w);

private:
    void start_handle();
    void drive();
    void process(int events);
    void run_completions();
    void schedule_completions();
    void update_fd(int fd);
    void arm_timer(clock::time_point when);
    void set_state(session_state s);
    void on_connected();
    void on_suspended();
    void on_expired();
    void after_process();
    void fail_connect_waiters(error_code ec);
    void fail_connected_waiters(error_code ec);
    void release_io();
    zhandle_t* detach_handle();
    void close_handle_inline();
    /// The read end of a fresh pipe (its write end in `write_end`), or null if there is none.
    std::shared_ptr<asio::posix::stream_descriptor> close_signal(int& write_end);
    void deliver_watch(std::unordered_map<std::string, std::vector<std::weak_ptr<watch_state>>>& table,
                       const std::string& path, watch_event ev);
    void fail_all_watches(error_code ec);
    void notify_leases();
    template <class Req> bool submit(std::unique_ptr<Req>& r, int rc);
    error_code no_handle_error() const;

    asio::any_io_executor ex_;
    session_config cfg_;
    zhandle_t* zh_ = nullptr;
    asio::posix::stream_descriptor desc_;
    int fd_ = -1;
    ino_t fd_inode_ = 0;
    std::uint64_t io_gen_ = 0;
    bool reading_ = false;
    bool writing_ = false;
    asio::steady_timer timer_;
    bool timer_waiting_ = false;
    clock::time_point timer_deadline_{};
    asio::steady_timer connect_timer_;
    asio::steady_timer suspend_timer_;
    bool in_process_ = false;
    bool completions_posted_ = false;
    bool restart_pending_ = false;
    bool running_completions_ = false;

    session_state state_ = session_state::disconnected;
    std::uint64_t generation_ = 0;
    std::int64_t last_session_id_ = 0;
    std::chrono::milliseconds negotiated_{0};
    clock::time_point last_heard_{};  // last time the server's bytes reached us

    std::deque<std::unique_ptr<c_event>> completed_;
    std::size_t completed_bytes_ = 0;  // payload of completed_ (see process())
    std::vector<void_cb> connect_waiters_;
    std::vector<std::pair<std::uint64_t, void_cb>> connected_waiters_;
    std::vector<unique_function<void(error_code, session_state)>> state_waiters_;
    using watch_table = std::unordered_map<std::string, std::vector<std::weak_ptr<watch_state>>>;
    watch_table data_watches_, exist_watches_, child_watches_;
    std::vector<std::weak_ptr<lease_state>> leases_;
};

}  // namespace zklock::detail
