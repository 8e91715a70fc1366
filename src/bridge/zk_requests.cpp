#include "bridge/zk_requests.hpp"

#include <cstring>

#include "core/log_sink.hpp"
#include "bridge/session_impl.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <limits>
#include <utility>

namespace zklock::detail {

namespace {

// Where C callbacks put their results: the session's queue, or (see redirect_results) a sink.
thread_local std::vector<std::unique_ptr<c_event>>* tl_sink = nullptr;

std::atomic<int> g_client_log_level{0};

// Whose the C client's log lines on this thread are (see log_scope).
thread_local const log_sink* tl_log = nullptr;

std::atomic<int> g_zoo_log_level{0};

// The error of a request's completion. The 3.8 C client reports ZRUNTIMEINCONSISTENCY for every
// request outstanding when it drops a connection because a reply came out of order. That happens
// after its nonblocking_send() found the socket broken and closed it without failing the requests
// in flight: they stay queued across the reconnect, the reply of one of them was lost with the old
// connection, so the next reply does not match. Their outcome is unknown, as after any connection
// loss: report one, so that callers retry (a create is found by its attempt id, a delete repeated).
// The same for ZOPERATIONTIMEOUT, which the C client reports for the requests in flight when
// its receive timeout ends the connection.
error_code reply_error(int rc) noexcept
{
    return make_zk_error(rc == ZRUNTIMEINCONSISTENCY || rc == ZOPERATIONTIMEOUT ? ZCONNECTIONLOSS : rc);
}

template <class Req> Req* from(const void* data) { return static_cast<Req*>(const_cast<void*>(data)); }

// Every C callback's result goes through here.
void hand_over(session_impl* s, std::unique_ptr<c_event> e)
{
    if (tl_sink) return tl_sink->push_back(std::move(e));
    s->enqueue(std::move(e));
}

template <class Req> void deliver(Req* r) { hand_over(r->s, std::unique_ptr<c_event>(r)); }

struct watcher_event final : c_event {
    session_impl* s;
    int type, zstate;
    std::string path;
    watcher_event(session_impl* si, int t, int st, std::string p) : s(si), type(t), zstate(st), path(std::move(p)) {}
    void complete() override { s->on_watcher(type, zstate, std::move(path)); }
};

// A per-op error no reply carries: marks the results a lost transaction never filled in.
constexpr int unanswered = std::numeric_limits<int>::min();

}  // namespace

redirect_results::redirect_results(std::vector<std::unique_ptr<c_event>>& sink) noexcept : previous_(tl_sink)
{
    tl_sink = &sink;
}

redirect_results::~redirect_results() { tl_sink = previous_; }

zklock::stat to_stat(const struct Stat& s) noexcept
{
    return {s.czxid, s.mzxid, s.ctime, s.mtime, s.version, s.cversion, s.aversion,
            s.ephemeralOwner, s.dataLength, s.numChildren, s.pzxid};
}

int create_flags(create_mode m) noexcept
{
    switch (m) {
    case create_mode::persistent: return 0;
    case create_mode::ephemeral: return ZOO_EPHEMERAL;
    case create_mode::persistent_sequential: return ZOO_SEQUENCE;
    case create_mode::ephemeral_sequential: return ZOO_EPHEMERAL | ZOO_SEQUENCE;
    case create_mode::container: return ZOO_CONTAINER;
    }
    return 0;
}

void set_client_log_level(int level) noexcept { g_client_log_level = level; }

void client_log(const char* message)
{
    if (tl_log && tl_log->has_logger()) return tl_log->client_line(message);
    // stderr: up to session_config::client_log_level (the client may log more for another
    // session's logger).
    std::string_view text;
    const int level = zoo_log_level(parse_client_line(message, text));
    if (g_client_log_level > 0 && level <= g_client_log_level) std::fprintf(stderr, "zookeeper: %s\n", message);
}

log_level parse_client_line(std::string_view raw, std::string_view& text) noexcept
{
    static constexpr std::pair<std::string_view, log_level> tags[] = {{"ZOO_ERROR@", log_level::error},
                                                                      {"ZOO_WARN@", log_level::warning},
                                                                      {"ZOO_INFO@", log_level::info},
                                                                      {"ZOO_DEBUG@", log_level::debug}};
    while (!raw.empty() && (raw.back() == '\n' || raw.back() == ' ')) raw.remove_suffix(1);  // one line
    for (const auto& [tag, level] : tags) {
        if (const auto at = raw.find(tag); at != std::string_view::npos) {
            text = raw.substr(at + tag.size());
            return level;
        }
    }
    text = raw;
    return log_level::info;
}

int zoo_log_level(log_level l) noexcept
{
    switch (l) {
    case log_level::debug: return ZOO_LOG_LEVEL_DEBUG;
    case log_level::info: return ZOO_LOG_LEVEL_INFO;
    case log_level::warning: return ZOO_LOG_LEVEL_WARN;
    case log_level::error: return ZOO_LOG_LEVEL_ERROR;
    }
    return ZOO_LOG_LEVEL_ERROR;
}

void raise_client_log_level(int zoo_level) noexcept
{
    int current = g_zoo_log_level.load();
    while (zoo_level > current) {
        if (g_zoo_log_level.compare_exchange_weak(current, zoo_level)) {
            zoo_set_debug_level(static_cast<ZooLogLevel>(zoo_level));
            return;
        }
    }
}

void log_sink::client_line(std::string_view raw) const
{
    std::string_view text;
    const auto level = parse_client_line(raw, text);
    if (wants(level)) deliver(level, text, "zookeeper", {}, {});
}

log_scope::log_scope(const log_sink* sink) noexcept : previous_(std::exchange(tl_log, sink)) {}
log_scope::~log_scope() { tl_log = previous_; }

void noop_void_completion(int, const void*) {}

void global_watcher(zhandle_t*, int type, int state, const char* path, void* ctx)
{
    auto* s = static_cast<session_impl*>(ctx);
    hand_over(s, std::make_unique<watcher_event>(s, type, state, path ? path : ""));
}

void on_create(int rc, const char* value, const struct Stat* st, const void* data)
{
    auto* r = from<create_req>(data);
    r->ec = reply_error(rc);
    if (rc == ZOK) {
        if (value) r->path = value;
        if (st) r->st = to_stat(*st);
    }
    deliver(r);
}

void on_void(int rc, const void* data)
{
    auto* r = from<void_req>(data);
    r->ec = reply_error(rc);
    deliver(r);
}

void on_sync(int rc, const char*, const void* data)
{
    auto* r = from<void_req>(data);
    r->ec = reply_error(rc);
    deliver(r);
}

void on_exists(int rc, const struct Stat* st, const void* data)
{
    auto* r = from<exists_req>(data);
    if (rc == ZOK && st) r->st = to_stat(*st);
    if (rc != ZNONODE) r->ec = reply_error(rc);  // a missing node is an answer, not an error
    deliver(r);
}

void on_data(int rc, const char* value, int len, const struct Stat* st, const void* data)
{
    auto* r = from<data_req>(data);
    r->ec = reply_error(rc);
    if (rc == ZOK) {
        r->reply = std::make_unique<data_req::reply_type>();
        if (value && len > 0) r->reply->data.assign(value, static_cast<std::size_t>(len));
        if (st) r->reply->st = to_stat(*st);
    }
    deliver(r);
}

void on_set(int rc, const struct Stat* st, const void* data)
{
    auto* r = from<set_req>(data);
    r->ec = reply_error(rc);
    if (rc == ZOK && st) r->st = to_stat(*st);
    deliver(r);
}

void on_children(int rc, const struct String_vector* sv, const void* data)
{
    auto* r = from<children_req>(data);
    r->ec = reply_error(rc);
    if (rc == ZOK && sv) {
        r->children.reserve(static_cast<std::size_t>(sv->count));
        for (int i = 0; i < sv->count; ++i) {
            r->children.emplace_back(sv->data[i]);
            r->bytes += sizeof(std::string) + r->children.back().capacity();
        }
    }
    deliver(r);
}

void on_names(int rc, const struct String_vector* sv, const void* data)
{
    auto* r = from<names_req>(data);
    r->ec = reply_error(rc);
    if (rc == ZOK && sv) {
        const auto n = static_cast<std::size_t>(sv->count);
        std::size_t bytes = 0;
        for (std::size_t i = 0; i < n; ++i) bytes += std::strlen(sv->data[i]);
        r->result.buffer.reserve(bytes);
        r->result.ends.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            r->result.buffer.append(sv->data[i]);
            r->result.ends.push_back(static_cast<std::uint32_t>(r->result.buffer.size()));
        }
        r->bytes = bytes + n * sizeof(std::uint32_t);
    }
    deliver(r);
}

void on_multi(int rc, const void* data)
{
    auto* r = from<multi_req>(data);
    r->ec = reply_error(rc);
    // The C client fills the per-op results from the server's reply, or with the error when the
    // request fails after it was queued (connection loss, close); the mark says if it did.
    r->answered = r->results.empty() || r->results.front().err != unanswered;
    deliver(r);
}

// Watch registration happens when the read's reply is handled: the reply always precedes any event
// of the watch in ZooKeeper's stream, and our queue keeps that order.
void exists_req::abandon(graveyard& g)
{
    if (w) w->abandon(g);
}

void data_req::abandon(graveyard& g)
{
    if (w) w->abandon(g);
}

void children_req::abandon(graveyard& g)
{
    if (w) w->abandon(g);
}

void exists_req::complete()
{
    if (w && !ec) s->register_watch(watch_kind::exist, path, w);
    cb(ec, st);
}

void data_req::complete()
{
    if (w && !ec) s->register_watch(watch_kind::data, path.empty() ? w->path().view() : std::string_view(path), w);
    if (!reply) return cb(ec, std::string(), zklock::stat{});
    cb(ec, std::move(reply->data), reply->st);
}

void children_req::complete()
{
    if (w && !ec) s->register_watch(watch_kind::child, path, w);
    cb(ec, std::move(children));
}

void multi_req::complete()
{
    // One result per op, always. A request refused before it was queued (not connected, too large)
    // never reached the C client: every op carries the request's error, never "ok".
    confirm_leader();
    std::vector<multi_result> out(n_ops);
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (!answered || i >= results.size()) {
            out[i].ec = ec ? ec : error_code(zk_errc::connection_loss);
            continue;
        }
        // Only the C client reports ZOPERATIONTIMEOUT (its receive timeout ended the connection),
        // for every op: a connection loss, as for the request. (A server's ZRUNTIMEINCONSISTENCY
        // for an op rolled back with a failed one stays what it is.)
        out[i].ec = make_zk_error(results[i].err == ZOPERATIONTIMEOUT ? ZCONNECTIONLOSS : results[i].err);
        if (ops[i].type == ZOO_CREATE_OP && results[i].err == ZOK && results[i].value) out[i].path = results[i].value;
        if (ops[i].type == ZOO_SETDATA_OP && results[i].err == ZOK && results[i].stat) out[i].stat = to_stat(*results[i].stat);
    }
    cb(ec, std::move(out));
}

void mark_unanswered(multi_req& r)
{
    for (auto& x : r.results) x.err = unanswered;
}

}  // namespace zklock::detail
