// The reactor loop of session_impl (see session_impl.hpp): interest, readiness, processing, and
// the queue of completed C callbacks.
#include "bridge/session_impl.hpp"

#include "bridge/tls_context.hpp"

#include <zklock/detail/server_list.hpp>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <cerrno>
#include <random>

namespace zklock::detail {

void session_impl::drive()
{
    if (!zh_ || in_process_) return;
    const log_scope scope(log_.get());
    // A list from set_servers goes to the C client while it has no socket, before it opens the
    // next one (see session_servers.cpp).
    if (pending_servers_ && (zoo_state(zh_) == 0 || zoo_state(zh_) == ZOO_NOTCONNECTED_STATE)) install_servers();
    // Without a socket (state 0: never opened, or closed after an error), the next
    // zookeeper_interest opens one at once: the C client's own pause after trying every server
    // (a 60th of the timeout) lasts one call, and we call it several times per turn. So a new
    // attempt waits for reconnect_at_, which backs off while attempts fail.
    const bool no_socket = zoo_state(zh_) == 0;
    const auto now = clock::now();
    if (no_socket && now < reconnect_at_) {
        update_fd(-1);
        arm_timer(reconnect_at_);
        return;
    }
    // A new connection reads the TLS files again if they changed.
    if (no_socket && tls_) refresh_tls();
    int fd = -1, interest = 0;
    struct timeval tv {};
    int rc;
    {
        const channel_scope owner(chan_.get());  // a socket it opens is this handle's
        rc = zookeeper_interest(zh_, &fd, &interest, &tv);
    }
    // An attempt began (or the client spent its own pause): the next one waits. A refused connect
    // can fail within this very call, so the state after it says nothing.
    if (no_socket) {
        reconnect_at_ = now + next_reconnect_delay();
        handshake_checked_ = false;
    }
    update_fd(rc == ZOK ? fd : -1);
    // Requests a flush left behind (the socket's buffer was full) wait for it to drain; the ones
    // the turn still holds go out when it ends.
    if (fd_ != -1 && !chan_->holding() && chan_->pending_output()) interest |= ZOOKEEPER_WRITE;
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
    if (fd != -1 && fd != chan_->fd()) {
        // Not a socket the seam saw opened (client_io.hpp): its calls would bypass the channel.
        // The sealed client cannot do this; a build that bound another copy of it could.
        client_log("zklock: the C client's socket did not come through zklock's seam (is another copy of "
                   "the ZooKeeper C client linked in its place?); connection dropped");
        log_->event(log_level::error, "the ZooKeeper C client's socket bypassed zklock's seam: not connecting");
        refused_ = errc::not_supported;
        fd_ = fd;
        drop_connection();
        fd_ = -1;
        fd = -1;
    }
    fd_settled_ = connected;
    ino_t ino = 0;
    if (fd != -1) {
        struct ::stat st {};
        if (::fstat(fd, &st) == 0) ino = st.st_ino;
    }
    if (fd == fd_ && ino == fd_inode_) {
        if (connected) chan_->buffer_reads(true);
        return;
    }
    if (connected) chan_->buffer_reads(true);
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

// Whether the C client's next read finds bytes: the channel knows from its buffer, refilled by one
// read when empty (and reports the connection's end or an error as input too); without it,
// FIONREAD asks the kernel.
bool session_impl::input_waiting()
{
    if (chan_->buffering_reads()) return chan_->input_ready();
    int avail = 0;
    return ::ioctl(fd_, FIONREAD, &avail) == 0 && avail > 0;
}

// A read wait can complete with nothing to read (the reactor re-arms its registration with each
// wait and may report a readiness that is gone). The C client must not be asked to read then: it
// keeps the empty buffer it set up for the next reply, and if a later send fails and it closes
// the socket on its own (nonblocking_send), the next connection's handshake replaces that buffer
// without freeing it. So data, the connection's end or an error, or no read.
bool session_impl::readable()
{
    if (input_waiting()) return true;
    if (chan_->buffering_reads()) return false;  // the channel saw no end or error
    char c;
    const ssize_t n = ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

// The C client takes the first 40 or 41 bytes it receives after its connect request for the
// server's ConnectResponse without looking at them: from a peer that is not ZooKeeper (an HTTP
// server's error page) it would make up a session (with the id " Bad Req"), or take ours for
// expired on a reconnect. So what arrived first is looked at before the client reads it: a frame
// of 36 bytes (37 with the read-only flag), protocol version 0, a timeout >= 0 and a password of
// 16 bytes, as far as those have arrived (a server sends the whole answer in one write).
bool session_impl::handshake_plausible() const
{
    unsigned char b[24];
    // With TLS the channel holds the answer, decrypted (process() asked it first).
    const ssize_t n = chan_->tls() ? static_cast<ssize_t>(chan_->peek(b, sizeof b))
                                   : ::recv(fd_, b, sizeof b, MSG_PEEK | MSG_DONTWAIT);
    if (n <= 0) return true;  // nothing yet, or an error the client sees itself
    const auto be32 = [&](int at) {
        return static_cast<std::uint32_t>(b[at]) << 24 | static_cast<std::uint32_t>(b[at + 1]) << 16 |
               static_cast<std::uint32_t>(b[at + 2]) << 8 | static_cast<std::uint32_t>(b[at + 3]);
    };
    if (n >= 4 && be32(0) != 36 && be32(0) != 37) return false;
    if (n >= 8 && be32(4) != 0) return false;
    if (n >= 12 && static_cast<std::int32_t>(be32(8)) < 0) return false;
    if (n >= 24 && be32(20) != 16) return false;
    return true;
}

bool session_impl::ended_unanswered() const
{
    char c;
    return ::recv(fd_, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

void session_impl::probe_for_tls()
{
    const char* current = zoo_get_current_server(zh_);
    if (!current) return;
    std::string server = current;
    if (std::find(tls_only_.begin(), tls_only_.end(), server) != tls_only_.end()) return;
    probe_tls(ex_, server, [w = weak_from_this(), server, handles = handles_](bool tls) {
        auto self = w.lock();
        if (!self || !tls || handles != self->handles_ || !self->zh_) return;
        client_log((server + " speaks only TLS: connection dropped (see session_config::tls)").c_str());
        self->refused_ = errc::tls_required;
        // (Two probes of one server may have been in flight.)
        if (std::find(self->tls_only_.begin(), self->tls_only_.end(), server) == self->tls_only_.end())
            self->tls_only_.push_back(server);
        // (The installed list may name its first address twice: see resolve_servers.)
        auto entries = server_entries(self->installed_servers_);
        std::sort(entries.begin(), entries.end());
        entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
        if (self->tls_only_.size() >= entries.size()) self->on_tls_refused(errc::tls_required);
    });
}

void session_impl::refuse_peer()
{
    refused_ = errc::not_zookeeper;
    const char* server = zoo_get_current_server(zh_);
    client_log((std::string(server ? server : "the server") +
                " does not speak the ZooKeeper protocol: connection dropped").c_str());
    // What the peer sent stays unread: the client sees only the connection's end.
    drop_connection();
}

void session_impl::drop_connection()
{
    // Closing the socket under the client would leave it holding a number that may be reused;
    // shutting it down would let it read what is buffered first. A closed peer under the same
    // number is read as the connection's end in every state: connecting, handshake, connected.
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0) {
        ::close(sv[1]);
        if (::dup3(sv[0], fd_, O_CLOEXEC) == -1) ::shutdown(fd_, SHUT_RDWR);
        ::close(sv[0]);
    } else {
        ::shutdown(fd_, SHUT_RDWR);
    }
}

session_impl::clock::duration session_impl::next_reconnect_delay()
{
    // The first attempt after a connection goes at once; then 50 ms, doubling up to 1 s, each
    // drawn uniformly from [d/2, d] so that sessions that lost the same server spread out.
    constexpr auto base = std::chrono::milliseconds(50), cap = std::chrono::milliseconds(1000);
    if (reconnect_attempts_++ == 0) return clock::duration::zero();
    auto d = std::chrono::duration_cast<clock::duration>(base);
    for (unsigned i = 1; i < reconnect_attempts_ - 1 && d < cap; ++i) d *= 2;
    d = std::min<clock::duration>(d, cap);
    std::uniform_int_distribution<clock::rep> pick(d.count() / 2, d.count());
    return clock::duration(pick(jitter_));
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
    handler_thread_.store(std::this_thread::get_id(), std::memory_order_relaxed);
    if (!zh_) return;
    const log_scope scope(log_.get());
    if (events & ZOOKEEPER_WRITE) chan_->flush();
    if ((events & ZOOKEEPER_READ) && !readable()) events &= ~ZOOKEEPER_READ;
    if (events & ZOOKEEPER_READ) core_.fsm_events().on_heard(clock::now());
    if ((events & ZOOKEEPER_READ) && !handshake_checked_ && zoo_state(zh_) == ZOO_ASSOCIATING_STATE) {
        handshake_checked_ = true;
        if (!handshake_plausible()) refuse_peer();
        else if (!cfg_.tls.enabled && ended_unanswered()) probe_for_tls();
    }
    run_client(events);
}

void session_impl::run_client(int events)
{
    if (!zh_) return;
    auto self = shared_from_this();
    in_process_ = true;
    std::optional<channel_scope> owner(std::in_place, chan_.get());
    int rc = zookeeper_process(zh_, events);
    // zookeeper_process handles one reply per call: drain what the socket already holds, up to
    // 256 replies or until the replies waiting for their completions hold 4 MB (a burst of long
    // listings, as when thousands of waiters queue at once, would otherwise pile up in memory).
    // Only while bytes are there: asked to read an empty socket, the C client keeps a buffer it
    // may later leak (see readable()); input_waiting() tells. What is left in the socket is
    // readable at once when drive() asks again; what is left in the channel's buffer is posted.
    if (events & ZOOKEEPER_READ) {
        for (int i = 0; i < 256 && rc == ZOK && zh_ && completed_bytes_ < max_drain_bytes; ++i) {
            if (!input_waiting()) break;
            rc = zookeeper_process(zh_, ZOOKEEPER_READ);
        }
    }
    owner.reset();
    in_process_ = false;
    // Replies the drain left in the channel's buffer (at its bounds) are not reported by the
    // socket again: a later turn takes them.
    if ((events & ZOOKEEPER_READ) && chan_->buffered_input())
        asio::post(ex_, [self] {
            if (self->zh_ && self->chan_->buffered_input()) self->process(ZOOKEEPER_READ);
        });
    // Ask for interest before any completion runs: if the client closed its socket, the
    // descriptor must be released before user code could open a new one with the same number
    // (releasing later would remove that one's registration from the reactor).
    drive();
    run_completions();
    after_process();
    drive();
    if (tls_) note_tls_outcome();
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
    // A failure (no host name resolves now) leaves the session expired without a handle: the
    // next async_connect starts one.
    if (restart_starts_ && state() == session_state::expired) (void)start_handle();
}

void session_impl::release_io()
{
    // The socket stays the channel's until the C client closes it: its close request, and the
    // replies already buffered, still go through the channel (the close thread's zookeeper_close).
    if (chan_->holding()) chan_->hold(false);
    else chan_->flush();
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
    if (!zh_) return nullptr;
    release_io();
    // The handle's socket, and so its channel, now belong to whoever closes the handle (the close
    // thread, for a connected one): the session keeps a channel of its own that nothing else uses.
    chan_ = std::make_shared<client_channel>();
    return std::exchange(zh_, nullptr);
}

// Only for a handle that is not connected (never was, expired, refused): zookeeper_close sends
// nothing then, and does not block. A connected one is closed by close(), on the close thread.
void session_impl::close_handle_inline()
{
    handle_lookup_ = 0;  // an attempt still looking its names up is abandoned with the handle
    if (zhandle_t* zh = detach_handle()) {
        const log_scope scope(log_.get());
        zookeeper_close(zh);  // its callbacks (ZCLOSING) land in completed_
        schedule_completions();
    }
}

}  // namespace zklock::detail
