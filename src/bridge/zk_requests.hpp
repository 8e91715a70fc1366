// The C client's side of the bridge: one request object per asynchronous ZooKeeper call, and the
// C callbacks that fill them in.
//
// A C callback runs inside zookeeper_process() (or zookeeper_close()). It only copies the reply
// into its request object and hands the object over (to the session's queue, or, while a close
// runs on the close thread, to that thread's sink). The session completes the queue after the C
// client has returned, so no user code and no recipe step ever runs inside the C client.
#pragma once

#include "core/graveyard.hpp"
#include "port/zk_port.hpp"

#include <zklock/detail/unique_function.hpp>
#include <zklock/error.hpp>
#include <zklock/types.hpp>

#include "bridge/zk_client.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zklock::detail {

class session_impl;

/// A request (or watcher event) whose C callback has run: completes on the session's executor.
struct c_event {
    virtual ~c_event() = default;
    virtual void complete() = 0;
    /// It will never complete (the execution context shuts down): let go of what a watch holds.
    virtual void abandon(graveyard&) {}
    std::size_t bytes = 0;  ///< payload held until complete() (listings): bounds the read drain
};

/// What every request carries: its session, and the error its completion reports.
struct request_base : c_event {
    session_impl* s = nullptr;
    error_code ec;
    /// A request only the leader answers (a write, a sync): when it was sent. Answered without
    /// error, it is evidence that the leader counted the session alive (session_fsm).
    std::chrono::steady_clock::time_point leader_sent{};
    /// Reports that evidence to the session; called first by complete().
    void confirm_leader() const;
};

struct create_req final : request_base {
    create_cb cb;
    std::string path;
    zklock::stat st;
    void complete() override
    {
        confirm_leader();
        cb(ec, std::move(path), st);
    }
};

struct void_req final : request_base {
    void_cb cb;
    void complete() override
    {
        confirm_leader();
        cb(ec);
    }
};

struct exists_req final : request_base {
    stat_cb cb;
    std::shared_ptr<watch_state> w;
    std::string path;
    std::optional<zklock::stat> st;
    void complete() override;  // registers the watch if the read succeeded
    void abandon(graveyard& g) override;
};

struct data_req final : request_base {
    data_cb cb;
    std::shared_ptr<watch_state> w;
    std::string path;  ///< with `w`, unless `w` carries its path (watch_state::path)
    /// The node's data and stat, from a successful reply. Apart from the request, so that a
    /// request still waiting for its reply (one per waiter of a long queue) does not hold room for them.
    struct reply_type {
        std::string data;
        zklock::stat st;
    };
    std::unique_ptr<reply_type> reply;
    void complete() override;
    void abandon(graveyard& g) override;
};

struct set_req final : request_base {
    set_cb cb;
    zklock::stat st;
    void complete() override
    {
        confirm_leader();
        cb(ec, st);
    }
};

struct children_req final : request_base {
    children_cb cb;
    std::shared_ptr<watch_state> w;
    std::string path;
    std::vector<std::string> children;
    void complete() override;
    void abandon(graveyard& g) override;
};

/// get_children's names in one buffer (port::list_children).
struct names_req final : request_base {
    names_cb cb;
    child_names result;
    void complete() override { cb(ec, std::move(result)); }
};

struct multi_req final : request_base {
    multi_cb cb;
    std::vector<zoo_op_t> ops;
    std::vector<zoo_op_result_t> results;
    std::vector<std::string> paths, datas;
    std::vector<std::vector<char>> path_buffers;
    std::vector<struct Stat> stats;
    std::size_t n_ops = 0;
    bool answered = false;  ///< the C client filled `results` in (from the reply, or with its error)
    void complete() override;
};

/// Before sending: marks every result as not answered (see on_multi).
void mark_unanswered(multi_req& r);

// The C callbacks (their `data` is the request object, owned by the C client until then).
void on_create(int rc, const char* value, const struct Stat* st, const void* data);
void on_void(int rc, const void* data);
void on_exists(int rc, const struct Stat* st, const void* data);
void on_data(int rc, const char* value, int len, const struct Stat* st, const void* data);
void on_set(int rc, const struct Stat* st, const void* data);
void on_children(int rc, const struct String_vector* sv, const void* data);
void on_multi(int rc, const void* data);
/// zoo_async's completion: `data` is a void_req.
void on_sync(int rc, const char* value, const void* data);
void on_names(int rc, const struct String_vector* sv, const void* data);
/// The handle's watcher: `ctx` is the session.
void global_watcher(zhandle_t*, int type, int state, const char* path, void* ctx);
void noop_void_completion(int, const void*);

/// While one exists on a thread, the C callbacks on that thread put their results into `sink`
/// instead of the session's queue (the close thread: the session may be gone by then).
class redirect_results {
public:
    explicit redirect_results(std::vector<std::unique_ptr<c_event>>& sink) noexcept;
    ~redirect_results();
    redirect_results(const redirect_results&) = delete;
    redirect_results& operator=(const redirect_results&) = delete;

private:
    std::vector<std::unique_ptr<c_event>>* previous_;
};

zklock::stat to_stat(const struct Stat& s) noexcept;
int create_flags(create_mode m) noexcept;

/// The C client's log: process-wide, like its own log level (the last session started sets it).
void set_client_log_level(int level) noexcept;
void client_log(const char* message);

}  // namespace zklock::detail
