// The public zklock::session over any port (src/port/zk_port.hpp) and control
// (src/port/session_control.hpp), and the type-erased entry points behind its templates: each
// holds the user's handler (stored_handler: work guard, associated executor, cancellation slot)
// and calls the session's port (requests) or its control (connect, close, state waits). The
// constructor from an executor, which makes a real session, is the bridge's (src/bridge/session.cpp).
#include "core/handler_util.hpp"
#include "port/session_control.hpp"
#include "port/zk_port.hpp"

#include <zklock/session.hpp>

#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/system_executor.hpp>

namespace zklock {

const char* to_string(log_level l) noexcept
{
    switch (l) {
    case log_level::debug: return "debug";
    case log_level::info: return "info";
    case log_level::warning: return "warning";
    case log_level::error: return "error";
    }
    return "unknown";
}

const char* to_string(session_state s) noexcept
{
    switch (s) {
    case session_state::disconnected: return "disconnected";
    case session_state::connecting: return "connecting";
    case session_state::connected: return "connected";
    case session_state::suspended: return "suspended";
    case session_state::expired: return "expired";
    case session_state::closed: return "closed";
    }
    return "unknown";
}

}  // namespace zklock

namespace zklock::detail {

// ---- type-erased entry points -------------------------------------------------------------------

namespace {

template <class... Args> std::shared_ptr<stored_handler<Args...>> store(handler<Args...> h, const session_ptr& s)
{
    return std::make_shared<stored_handler<Args...>>(std::move(h), s->executor());
}

}  // namespace

void initiate_connect(session_ptr s, control_ptr c, handler<error_code> h)
{
    if (!s) return post_without_session(std::move(h), error_code(errc::session_closed));
    auto sh = store(std::move(h), s);
    const std::uint64_t id = c->connect([sh](error_code ec) { sh->complete(ec); });
    if (id != 0)  // waiting: a cancellation ends this wait, and the attempt if it was the last
        on_cancellation(*sh, s->executor(), [weak = std::weak_ptr(c), id] {
            if (auto ci = weak.lock()) ci->cancel_connect(id);
        });
}

void initiate_close(session_ptr s, control_ptr c, handler<error_code> h)
{
    if (!s) return post_without_session(std::move(h), error_code());  // closing a closed session
    auto sh = store(std::move(h), s);
    c->close([sh](error_code ec) { sh->complete(ec); });
}

void initiate_wait_state(session_ptr s, control_ptr c, handler<error_code, session_state> h)
{
    if (!s) return post_without_session(std::move(h), error_code(errc::session_closed), session_state::closed);
    if (s->state() == session_state::closed) {  // a closed session changes no more
        stored_handler<error_code, session_state> sh(std::move(h), s->executor());
        return sh.post(s->executor(), errc::session_closed, session_state::closed);
    }
    auto sh = store(std::move(h), s);
    allow_cancel(sh, s->executor());
    c->wait_state_change([sh](error_code ec, session_state st) {
        if (*sh) sh->complete(ec, st);
    });
}

void initiate_create(session_ptr s, std::string path, std::string data, create_mode mode,
                     handler<error_code, std::string, zklock::stat> h)
{
    if (!s) return post_without_session(std::move(h), error_code(errc::session_closed), std::string(), zklock::stat());
    auto sh = store(std::move(h), s);
    s->create(path, data, mode, [sh](error_code ec, std::string p, zklock::stat st) { sh->complete(ec, std::move(p), st); });
}

void initiate_remove(session_ptr s, std::string path, std::int32_t version, handler<error_code> h)
{
    if (!s) return post_without_session(std::move(h), error_code(errc::session_closed));
    auto sh = store(std::move(h), s);
    s->remove(path, version, [sh](error_code ec) { sh->complete(ec); });
}

void initiate_exists(session_ptr s, std::string path, handler<error_code, std::optional<zklock::stat>> h)
{
    if (!s) return post_without_session(std::move(h), error_code(errc::session_closed), std::optional<zklock::stat>());
    auto sh = store(std::move(h), s);
    allow_cancel(sh, s->executor());
    s->exists(path, nullptr, [sh](error_code ec, std::optional<zklock::stat> st) {
        if (*sh) sh->complete(ec, st);
    });
}

void initiate_watch_exists(session_ptr s, std::string path,
                           handler<error_code, std::optional<zklock::stat>, zklock::watch> h)
{
    if (!s) return post_without_session(std::move(h), error_code(errc::session_closed), std::optional<zklock::stat>(), zklock::watch());
    auto sh = store(std::move(h), s);
    allow_cancel(sh, s->executor());
    auto w = s->make_watch();
    s->exists(path, w, [sh, w](error_code ec, std::optional<zklock::stat> st) {
        if (*sh) sh->complete(ec, st, ec ? zklock::watch{} : zklock::watch{w});
    });
}

void initiate_get_data(session_ptr s, std::string path, handler<error_code, std::string, zklock::stat> h)
{
    if (!s) return post_without_session(std::move(h), error_code(errc::session_closed), std::string(), zklock::stat());
    auto sh = store(std::move(h), s);
    allow_cancel(sh, s->executor());
    s->get_data(path, nullptr, [sh](error_code ec, std::string d, zklock::stat st) {
        if (*sh) sh->complete(ec, std::move(d), st);
    });
}

void initiate_watch_data(session_ptr s, std::string path,
                         handler<error_code, std::string, zklock::stat, zklock::watch> h)
{
    if (!s) return post_without_session(std::move(h), error_code(errc::session_closed), std::string(), zklock::stat(), zklock::watch());
    auto sh = store(std::move(h), s);
    allow_cancel(sh, s->executor());
    auto w = s->make_watch();
    s->get_data(path, w, [sh, w](error_code ec, std::string d, zklock::stat st) {
        if (*sh) sh->complete(ec, std::move(d), st, ec ? zklock::watch{} : zklock::watch{w});
    });
}

void initiate_set_data(session_ptr s, std::string path, std::string data, std::int32_t version,
                       handler<error_code, zklock::stat> h)
{
    if (!s) return post_without_session(std::move(h), error_code(errc::session_closed), zklock::stat());
    auto sh = store(std::move(h), s);
    s->set_data(path, data, version, [sh](error_code ec, zklock::stat st) { sh->complete(ec, st); });
}

void initiate_get_children(session_ptr s, std::string path, handler<error_code, std::vector<std::string>> h)
{
    if (!s) return post_without_session(std::move(h), error_code(errc::session_closed), std::vector<std::string>());
    auto sh = store(std::move(h), s);
    allow_cancel(sh, s->executor());
    s->get_children(path, nullptr, [sh](error_code ec, std::vector<std::string> c) {
        if (*sh) sh->complete(ec, std::move(c));
    });
}

void initiate_watch_children(session_ptr s, std::string path,
                             handler<error_code, std::vector<std::string>, zklock::watch> h)
{
    if (!s) return post_without_session(std::move(h), error_code(errc::session_closed), std::vector<std::string>(), zklock::watch());
    auto sh = store(std::move(h), s);
    allow_cancel(sh, s->executor());
    auto w = s->make_watch();
    s->get_children(path, w, [sh, w](error_code ec, std::vector<std::string> c) {
        if (*sh) sh->complete(ec, std::move(c), ec ? zklock::watch{} : zklock::watch{w});
    });
}

void initiate_multi(session_ptr s, std::vector<multi_op> ops, handler<error_code, std::vector<multi_result>> h)
{
    if (!s) {  // as a request not answered: every result carries the error
        std::vector<multi_result> r(ops.size());
        for (auto& x : r) x.ec = errc::session_closed;
        return post_without_session(std::move(h), error_code(errc::session_closed), std::move(r));
    }
    auto sh = store(std::move(h), s);
    s->multi(ops, [sh](error_code ec, std::vector<multi_result> r) { sh->complete(ec, std::move(r)); });
}

asio::any_io_executor executor_of(const session_ptr& s) noexcept
{
    return s ? s->executor() : asio::any_io_executor(asio::system_executor());
}

void check_caller(const session_ptr& s) noexcept { check_caller_on(s.get()); }
// A watch has no session of its own to ask: taken on trust.
void check_caller(const std::shared_ptr<watch_state>&) noexcept {}

asio::any_io_executor executor_of(const std::shared_ptr<watch_state>& w) noexcept
{
    return w ? w->executor() : asio::any_io_executor(asio::system_executor());
}

void initiate_watch_wait(std::shared_ptr<watch_state> w, handler<error_code, watch_event> h)
{
    if (!w) {  // an empty watch has no session: see lease.cpp's post_now
        stored_handler<error_code, watch_event> sh(std::move(h), asio::system_executor());
        return sh.post(asio::system_executor(), errc::invalid_argument, {});
    }
    if (w->has_waiter()) {  // copies of a watch share its state: one wait at a time
        stored_handler<error_code, watch_event> sh(std::move(h), w->executor());
        return sh.post(w->executor(), errc::operation_in_progress, {});
    }
    auto sh = std::make_shared<stored_handler<error_code, watch_event>>(std::move(h), w->executor());
    // Cancelling the wait leaves the ZooKeeper watch alone: it can be waited on again.
    on_cancellation(*sh, w->executor(), [weak = std::weak_ptr(w), sh_weak = std::weak_ptr(sh)] {
        auto ws = weak.lock();
        auto h = sh_weak.lock();
        if (!ws || !h || !*h) return;
        ws->cancel_wait();
        h->complete(asio::error::operation_aborted, {});
    });
    // The waiter holds its watch: the session holds watches weakly, and a wait whose watch
    // objects were all destroyed must still complete. The cycle ends when the watch fires (or
    // fails with the session), or the wait is cancelled.
    w->wait([sh, w](error_code ec, watch_event ev) {
        if (*sh) sh->complete(ec, std::move(ev));
    });
}

}  // namespace zklock::detail

// ---- zklock::session ----------------------------------------------------------------------------

namespace zklock {

session::session(detail::session_ptr port, detail::control_ptr control) noexcept
    : impl_(std::move(port)), control_(std::move(control))
{
}

session& session::operator=(session&& other) noexcept
{
    if (this != &other) {
        if (control_) control_->close([](error_code) {});  // never blocks: see session_control::close
        impl_ = std::move(other.impl_);
        control_ = std::move(other.control_);
    }
    return *this;
}

session::~session()
{
    if (control_) control_->close([](error_code) {});  // never blocks: see session_control::close
}

// A moved-from session has neither port nor control: it reads as a closed session that never
// connected, and has no executor of its own (asio::system_executor, as an empty lease).
session::executor_type session::get_executor() const noexcept { return detail::executor_of(impl_); }
const session_config& session::config() const noexcept
{
    static const session_config none;  // a moved-from session
    return control_ ? control_->config() : none;
}
session_state session::state() const noexcept { return impl_ ? impl_->state() : session_state::closed; }
std::int64_t session::session_id() const noexcept { return impl_ ? impl_->session_id() : 0; }
std::chrono::milliseconds session::negotiated_timeout() const noexcept
{
    return control_ ? control_->negotiated_timeout() : std::chrono::milliseconds::zero();
}
std::uint64_t session::generation() const noexcept { return impl_ ? impl_->generation() : 0; }
metrics_snapshot session::metrics() const { return impl_ ? impl_->metrics().snapshot() : detail::metrics_state{}.snapshot(); }
error_code session::set_servers(std::string servers)
{
    return control_ ? control_->set_servers(std::move(servers)) : error_code(errc::session_closed);
}

}  // namespace zklock
