// A session's log (session_config::logger): zklock's events, and the ZooKeeper C client's lines
// routed to the session they are about.
//
// The C client's log callback carries no context, but the single-threaded client logs only from
// inside the calls a session makes into it (init, interest, process, requests, close), on the
// thread that makes them. A log_scope around each such call names the session whose lines they
// are.
#pragma once

#include <zklock/config.hpp>

#include <atomic>
#include <cstdint>
#include <string_view>

namespace zklock::detail {

class log_sink {
public:
    log_sink(log_function f, log_level min) : f_(std::move(f)), min_(min) {}

    bool has_logger() const noexcept { return static_cast<bool>(f_); }
    bool wants(log_level l) const noexcept { return f_ && l >= min_; }

    /// One of zklock's events.
    void event(log_level l, std::string_view message, std::string_view path = {}, std::string_view node = {}) const
    {
        if (wants(l)) deliver(l, message, "zklock", path, node);
    }
    /// A line of the C client's log (its own format: "<time>:<pid>(<tid>):ZOO_<LEVEL>@<where>: <text>").
    void client_line(std::string_view raw) const;

    void set_session_id(std::int64_t id) noexcept { id_.store(id, std::memory_order_relaxed); }

private:
    void deliver(log_level l, std::string_view message, std::string_view source, std::string_view path,
                 std::string_view node) const noexcept;

    log_function f_;
    log_level min_;
    std::atomic<std::int64_t> id_{0};
};

/// The level of a C client log line, from its "ZOO_<LEVEL>@" tag; the text after the tag (where
/// and what) in `text`.
log_level parse_client_line(std::string_view raw, std::string_view& text) noexcept;

/// While it lives, the C client's log lines on this thread are `sink`'s (null: none; they go to
/// stderr as session_config::client_log_level says).
class log_scope {
public:
    explicit log_scope(const log_sink* sink) noexcept;
    ~log_scope();
    log_scope(const log_scope&) = delete;
    log_scope& operator=(const log_scope&) = delete;

private:
    const log_sink* previous_;
};

/// Raises the C client's process-wide verbosity to at least `level` (ZOO_LOG_LEVEL_*).
void raise_client_log_level(int zoo_level) noexcept;
/// ZOO_LOG_LEVEL_* of a log_level.
int zoo_log_level(log_level l) noexcept;

}  // namespace zklock::detail
