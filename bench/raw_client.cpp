// bench/raw_client.cpp — see raw_client.hpp.
#include "raw_client.hpp"

#include <zklock/error.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <sys/ioctl.h>
#include <sys/stat.h>

#include <algorithm>

namespace zklock_bench {

namespace {

error_code zk_error(int rc)
{
    if (rc == ZOK) return {};
    return zklock::make_error_code(static_cast<zklock::zk_errc>(rc));
}

template <class Op> Op* take(const void* data) { return static_cast<Op*>(const_cast<void*>(data)); }

struct create_op {
    asio::any_io_executor ex;
    asio::any_completion_handler<void(error_code, std::string)> h;
};
struct children_op {
    std::shared_ptr<raw_session> s;
    asio::any_io_executor ex;
    asio::any_completion_handler<void(error_code, std::vector<std::string>)> h;
};
struct void_op {
    asio::any_io_executor ex;
    asio::any_completion_handler<void(error_code)> h;
};

}  // namespace

struct raw_session::watch_state {
    asio::any_io_executor ex;
    std::optional<asio::any_completion_handler<void(error_code, bool)>> h;
    bool fired = false;
    bool deleted = false;
    error_code ec;
    std::shared_ptr<watch_state> keep;  // alive while the C client may call the watcher

    void fire(error_code e, bool del)
    {
        if (fired) return;
        fired = true;
        ec = e;
        deleted = del;
        if (h) {
            asio::post(ex, [h = std::move(*h), e, del]() mutable { std::move(h)(e, del); });
            h.reset();
        }
        keep.reset();  // may destroy *this: last
    }
};

struct watch_op {
    asio::any_io_executor ex;
    std::shared_ptr<raw_session::watch_state> w;
    asio::any_completion_handler<void(error_code, raw_session::watch)> h;
};

void raw_session::watch::wait(std::shared_ptr<watch_state> s, asio::any_completion_handler<void(error_code, bool)> h)
{
    if (s->fired) {
        asio::post(s->ex, [h = std::move(h), e = s->ec, d = s->deleted]() mutable { std::move(h)(e, d); });
        return;
    }
    s->h = std::move(h);
}

raw_session::raw_session(asio::any_io_executor ex)
    : ex_(std::move(ex)), desc_(ex_), timer_(ex_), connected_(ex_, std::chrono::steady_clock::time_point::max())
{
}

std::shared_ptr<raw_session> raw_session::make(asio::any_io_executor ex, const std::string& servers,
                                               std::chrono::milliseconds session_timeout)
{
    std::shared_ptr<raw_session> s(new raw_session(std::move(ex)));
    s->zh_ = zookeeper_init(servers.c_str(), &global_watcher, static_cast<int>(session_timeout.count()), nullptr,
                            s.get(), 0);
    // The 3.8 client re-resolves host names on every zookeeper_interest call unless told not to
    // (getaddrinfo and a netlink dump per call): any user driving it from an event loop says so.
    if (s->zh_) zoo_set_servers_resolution_delay(s->zh_, -1);
    s->drive();
    return s;
}

raw_session::~raw_session() { close(); }

void raw_session::close()
{
    if (!zh_) return;
    ++io_gen_;
    if (desc_.is_open()) desc_.release();
    timer_.cancel();
    zookeeper_close(std::exchange(zh_, nullptr));
}

asio::awaitable<error_code> raw_session::connect(std::chrono::milliseconds timeout)
{
    if (state_ != ZOO_CONNECTED_STATE) {
        connected_.expires_after(timeout);
        error_code ec;
        co_await connected_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
    co_return state_ == ZOO_CONNECTED_STATE ? error_code() : zklock::make_error_code(zklock::zk_errc::connection_loss);
}

void raw_session::global_watcher(zhandle_t*, int type, int state, const char*, void* ctx)
{
    auto* self = static_cast<raw_session*>(ctx);
    if (type != ZOO_SESSION_EVENT) return;
    self->state_ = state;
    if (state == ZOO_CONNECTED_STATE) self->connected_.cancel();
}

void raw_session::start_create(const std::string& path, const std::string& data,
                               asio::any_completion_handler<void(error_code, std::string)> h)
{
    auto* op = new create_op{ex_, std::move(h)};
    const int rc = zoo_acreate(
        zh_, path.c_str(), data.data(), static_cast<int>(data.size()), &ZOO_OPEN_ACL_UNSAFE,
        ZOO_EPHEMERAL | ZOO_SEQUENCE,
        [](int rc, const char* value, const void* d) {
            auto* op = take<create_op>(d);
            asio::post(op->ex, [h = std::move(op->h), ec = zk_error(rc), v = std::string(rc == ZOK && value ? value : "")]() mutable {
                std::move(h)(ec, std::move(v));
            });
            delete op;
        },
        op);
    if (rc != ZOK) {
        asio::post(ex_, [h = std::move(op->h), ec = zk_error(rc)]() mutable { std::move(h)(ec, std::string()); });
        delete op;
    }
    submitted(rc);
}

void raw_session::start_children(const std::string& path,
                                 asio::any_completion_handler<void(error_code, std::vector<std::string>)> h)
{
    auto* op = new children_op{shared_from_this(), ex_, std::move(h)};
    const int rc = zoo_aget_children(
        zh_, path.c_str(), 0,
        [](int rc, const struct String_vector* sv, const void* d) {
            auto* op = take<children_op>(d);
            std::vector<std::string> names;
            std::size_t bytes = 0;
            if (rc == ZOK && sv) {
                names.reserve(static_cast<std::size_t>(sv->count));
                for (int i = 0; i < sv->count; ++i) bytes += names.emplace_back(sv->data[i]).capacity() + sizeof(std::string);
            }
            op->s->pending_bytes_ += bytes;
            asio::post(op->ex, [h = std::move(op->h), ec = zk_error(rc), n = std::move(names), s = op->s, bytes]() mutable {
                s->pending_bytes_ -= bytes;
                std::move(h)(ec, std::move(n));
            });
            delete op;
        },
        op);
    if (rc != ZOK) {
        asio::post(ex_, [h = std::move(op->h), ec = zk_error(rc)]() mutable { std::move(h)(ec, std::vector<std::string>()); });
        delete op;
    }
    submitted(rc);
}

void raw_session::start_watch(const std::string& path, asio::any_completion_handler<void(error_code, watch)> h)
{
    auto w = std::make_shared<watch_state>();
    w->ex = ex_;
    w->keep = w;
    auto* op = new watch_op{ex_, w, std::move(h)};
    const int rc = zoo_awget(
        zh_, path.c_str(),
        [](zhandle_t*, int type, int state, const char*, void* ctx) {
            auto* w = static_cast<watch_state*>(ctx);
            if (type == ZOO_SESSION_EVENT) {  // the C client tells every watcher of the session's state
                if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE)
                    w->fire(zklock::make_error_code(zklock::zk_errc::session_expired), false);
                return;
            }
            w->fire({}, type == ZOO_DELETED_EVENT);
        },
        w.get(),
        [](int rc, const char*, int, const struct Stat*, const void* d) {
            auto* op = take<watch_op>(d);
            // No watch is left behind when the read failed (no_node: nothing to watch).
            if (rc != ZOK) op->w->keep.reset();
            asio::post(op->ex, [h = std::move(op->h), ec = zk_error(rc), w = std::move(op->w)]() mutable {
                std::move(h)(ec, watch{std::move(w)});
            });
            delete op;
        },
        op);
    if (rc != ZOK) {
        w->keep.reset();
        asio::post(ex_, [h = std::move(op->h), ec = zk_error(rc)]() mutable { std::move(h)(ec, watch{}); });
        delete op;
    }
    submitted(rc);
}

void raw_session::start_remove(const std::string& path, asio::any_completion_handler<void(error_code)> h)
{
    auto* op = new void_op{ex_, std::move(h)};
    const int rc = zoo_adelete(
        zh_, path.c_str(), -1,
        [](int rc, const void* d) {
            auto* op = take<void_op>(d);
            asio::post(op->ex, [h = std::move(op->h), ec = zk_error(rc)]() mutable { std::move(h)(ec); });
            delete op;
        },
        op);
    if (rc != ZOK) {
        asio::post(ex_, [h = std::move(op->h), ec = zk_error(rc)]() mutable { std::move(h)(ec); });
        delete op;
    }
    submitted(rc);
}

void raw_session::submitted(int rc)
{
    if (rc == ZOK) drive();
}

void raw_session::drive()
{
    if (!zh_ || in_process_) return;
    int fd = -1, interest = 0;
    struct timeval tv {};
    const int rc = zookeeper_interest(zh_, &fd, &interest, &tv);
    if (rc != ZOK) fd = -1;
    unsigned long ino = 0;
    if (fd != -1) {
        struct ::stat st {};
        if (::fstat(fd, &st) == 0) ino = st.st_ino;
    }
    if (fd != fd_ || ino != fd_ino_) {  // a new socket (reconnect): register it instead
        ++io_gen_;
        if (desc_.is_open()) desc_.release();
        reading_ = writing_ = false;
        fd_ = fd;
        fd_ino_ = ino;
        if (fd != -1) {
            error_code ec;
            desc_.assign(fd, ec);
            if (ec) fd_ = -1;
        }
    }
    auto self = shared_from_this();
    if (fd_ != -1) {
        const unsigned gen = io_gen_;
        if ((interest & ZOOKEEPER_READ) && !reading_) {
            reading_ = true;
            desc_.async_wait(asio::posix::descriptor_base::wait_read, [self, gen](error_code ec) {
                if (gen != self->io_gen_) return;
                self->reading_ = false;
                if (!ec) self->process(ZOOKEEPER_READ);
            });
        }
        if ((interest & ZOOKEEPER_WRITE) && !writing_) {
            writing_ = true;
            desc_.async_wait(asio::posix::descriptor_base::wait_write, [self, gen](error_code ec) {
                if (gen != self->io_gen_) return;
                self->writing_ = false;
                if (!ec) self->process(ZOOKEEPER_WRITE);
            });
        }
    }
    auto delay = std::chrono::milliseconds(tv.tv_sec * 1000 + tv.tv_usec / 1000);
    if (rc != ZOK) delay = std::max(delay, std::chrono::milliseconds(50));
    else if (fd_ == -1) delay = std::max(delay, std::chrono::milliseconds(1));
    if (!timer_armed_) {
        timer_armed_ = true;
        timer_.expires_after(delay);
        timer_.async_wait([self](error_code ec) {
            self->timer_armed_ = false;
            if (!ec) self->process(0);
        });
    }
}

void raw_session::process(int events)
{
    if (!zh_) return;
    in_process_ = true;
    int rc = zookeeper_process(zh_, events);
    // One reply per call: drain what the socket holds already, until the listings waiting for
    // their coroutines hold 4 MB (as zklock's session does: a burst of long listings would pile
    // up in memory otherwise).
    if (events & ZOOKEEPER_READ) {
        for (int i = 0; i < 256 && rc == ZOK && zh_ && pending_bytes_ < (std::size_t{4} << 20); ++i) {
            int avail = 0;
            if (::ioctl(fd_, FIONREAD, &avail) != 0 || avail <= 0) break;
            rc = zookeeper_process(zh_, ZOOKEEPER_READ);
        }
    }
    in_process_ = false;
    drive();
}

}  // namespace zklock_bench
