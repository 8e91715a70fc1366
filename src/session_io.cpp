// The reactor loop of session_impl (see session_impl.hpp): interest, readiness, processing, and
// the queue of completed C callbacks.
#include "session_impl.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace zklock::detail {

void session_impl::drive()
{
    if (!zh_ || in_process_) return;
    int fd = -1, interest = 0;
    struct timeval tv {};
    int rc = zookeeper_interest(zh_, &fd, &interest, &tv);
    update_fd(rc == ZOK ? fd : -1);
    if (fd_ != -1 && out_registered_ && !writing_ && !(interest & ZOOKEEPER_WRITE)) drop_write_registration();
    if (fd_ != -1) {
        auto self = shared_from_this();
        const auto gen = io_gen_;
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
            out_registered_ = true;
            desc_.async_wait(asio::posix::descriptor_base::wait_write, [self, gen](error_code ec) {
                if (gen != self->io_gen_) return;
                self->writing_ = false;
                if (!ec) self->process(ZOOKEEPER_WRITE);
            });
        }
    }
    auto delay = std::chrono::milliseconds(tv.tv_sec * 1000 + tv.tv_usec / 1000);
    // No spinning: an error (connection refused, ZOPERATIONTIMEOUT...) or no socket yet means the
    // client retries on a later call; give it a little time.
    if (rc != ZOK) delay = std::max(delay, std::chrono::milliseconds(50));
    else if (fd_ == -1) delay = std::max(delay, std::chrono::milliseconds(1));
    arm_timer(clock::now() + delay);
    if (!completed_.empty()) schedule_completions();
}

void session_impl::update_fd(int fd)
{
    // The C client closes and reopens its socket on reconnect, and the new socket may get the same
    // number: compare the socket's inode too, or a reused number would never be re-registered.
    // The inode is looked up only until the connection is up (an fstat on every drive was a
    // syscall per reply). A socket cannot be replaced unseen while connected: the client closes it
    // in zookeeper_process (the state leaves connected) and opens the next one only in
    // zookeeper_interest, which only drive() calls, right before it calls us; and it is connected
    // again only after zookeeper_process read the server's answer on the new socket. So between a
    // drive that saw the state connected and the next one that sees it connected on the same
    // number, some drive saw it not connected, and looked.
    const bool connected = fd != -1 && zoo_state(zh_) == ZOO_CONNECTED_STATE;
    if (fd == fd_ && fd_settled_ && connected) return;
    fd_settled_ = connected;
    ino_t ino = 0;
    if (fd != -1) {
        struct ::stat st {};
        if (::fstat(fd, &st) == 0) ino = st.st_ino;
    }
    if (fd == fd_ && ino == fd_inode_) return;
    ++io_gen_;
    if (desc_.is_open()) desc_.release();
    reading_ = writing_ = out_registered_ = false;
    fd_ = fd;
    fd_inode_ = ino;
    if (fd != -1) {
        // The C client opens its sockets without SOCK_CLOEXEC: a child started by exec (zklock(1)
        // runs one) must not inherit the connection.
        if (int flags = ::fcntl(fd, F_GETFD); flags != -1 && !(flags & FD_CLOEXEC)) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
        error_code ec;
        desc_.assign(fd, ec);
        if (ec) fd_ = -1;
    }
}

// Asio's epoll reactor keeps EPOLLOUT registered for a descriptor once a write wait was started
// on it, and re-arms the registration (EPOLL_CTL_MOD) with every new wait: the socket, writable
// nearly always, then wakes the reactor for nothing after every read. The C client writes its
// requests as they are made and asks to wait for writing only while it connects or its socket's
// buffer is full: once that is over, the descriptor is registered anew, for reading only.
void session_impl::drop_write_registration()
{
    ++io_gen_;
    desc_.release();
    reading_ = false;
    out_registered_ = false;
    error_code ec;
    desc_.assign(fd_, ec);
    if (ec) fd_ = -1;
}

void session_impl::arm_timer(clock::time_point when)
{
    if (timer_waiting_ && timer_deadline_ <= when) return;
    timer_deadline_ = when;
    timer_.expires_at(when);
    timer_waiting_ = true;
    timer_.async_wait([self = shared_from_this()](error_code ec) {
        if (ec == asio::error::operation_aborted) return;
        self->timer_waiting_ = false;
        self->process(0);
    });
}

namespace {
constexpr std::size_t max_drain_bytes = std::size_t{4} << 20;
}  // namespace

void session_impl::process(int events)
{
    if (!zh_) return;
    auto self = shared_from_this();
    in_process_ = true;
    if (events & ZOOKEEPER_READ) fsm_.on_heard(clock::now());
    int rc = zookeeper_process(zh_, events);
    // zookeeper_process handles one reply per call: drain what the socket already holds, up to
    // 256 replies or until the replies waiting for their completions hold 4 MB (a burst of long
    // listings, as when thousands of waiters queue at once, would otherwise pile up in memory).
    // What is left stays in the socket, which is readable at once when drive() asks again.
    if (events & ZOOKEEPER_READ) {
        for (int i = 0; i < 256 && rc == ZOK && zh_ && completed_bytes_ < max_drain_bytes; ++i) {
            int avail = 0;
            if (::ioctl(fd_, FIONREAD, &avail) != 0 || avail <= 0) break;
            rc = zookeeper_process(zh_, ZOOKEEPER_READ);
        }
    }
    in_process_ = false;
    // Ask for interest before any completion runs: if the client closed its socket, the
    // descriptor must be released before user code could open a new one with the same number
    // (releasing later would remove that one's registration from the reactor).
    drive();
    run_completions();
    after_process();
    drive();
}

void session_impl::schedule_completions()
{
    if (completions_posted_) return;
    completions_posted_ = true;
    asio::post(ex_, [self = shared_from_this()] {
        self->completions_posted_ = false;
        self->run_completions();
        self->after_process();
        self->drive();
    });
}

void session_impl::run_completions()
{
    if (running_completions_) return;  // the outer loop picks the new ones up
    running_completions_ = true;
    struct reset {
        bool& flag;
        ~reset() { flag = false; }
    } guard{running_completions_};
    while (!completed_.empty()) {
        auto e = std::move(completed_.front());
        completed_.pop_front();
        completed_bytes_ -= e->bytes;
        e->complete();
    }
}

void session_impl::after_process()
{
    if (!restart_pending_) return;
    restart_pending_ = false;
    close_handle_inline();
    if (restart_starts_ && state() == session_state::expired) start_handle();
}

void session_impl::release_io()
{
    ++io_gen_;
    if (desc_.is_open()) desc_.release();
    fd_ = -1;
    fd_inode_ = 0;
    fd_settled_ = false;
    reading_ = writing_ = out_registered_ = false;
    timer_.cancel();
    timer_waiting_ = false;
}

zhandle_t* session_impl::detach_handle()
{
    release_io();
    return std::exchange(zh_, nullptr);
}

// Only for a handle that is not connected (never was, expired, refused): zookeeper_close sends
// nothing then, and does not block. A connected one is closed by close(), on the close thread.
void session_impl::close_handle_inline()
{
    if (zhandle_t* zh = detach_handle()) {
        zookeeper_close(zh);  // its callbacks (ZCLOSING) land in completed_
        schedule_completions();
    }
}

}  // namespace zklock::detail
