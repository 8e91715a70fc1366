#include "bridge/client_io.hpp"

#include "bridge/tls_engine.hpp"
#include "bridge/zk_requests.hpp"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <atomic>
#include <mutex>
#include <unordered_map>

namespace zklock::detail {

namespace {

// The channels by socket, each registered from the C client's socket() to its close() of that
// socket: while a number is here, the kernel cannot have given it to anyone else. Numbers below
// direct_fds (nearly all) are looked up without a lock: every send and recv of the client asks. A
// socket is used by one thread at a time (its session's executor, or the close thread once the
// session let the handle go), so a channel is never looked up while it changes.
constexpr int direct_fds = 4096;
std::atomic<client_channel*> direct[direct_fds];
std::mutex others_mutex;
std::unordered_map<int, client_channel*>& others_map()
{
    static std::unordered_map<int, client_channel*> m;
    return m;
}

void set_channel(int fd, client_channel* c, client_channel* expected)
{
    if (fd < 0) return;
    if (fd < direct_fds) {
        if (c) direct[fd].store(c, std::memory_order_release);
        else direct[fd].compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel);
        return;
    }
    std::lock_guard lock(others_mutex);
    auto& others = others_map();
    auto it = others.find(fd);
    if (c) others[fd] = c;
    else if (it != others.end() && it->second == expected) others.erase(it);
}

}  // namespace

bool same_address(const sockaddr_storage& a, const sockaddr_storage& b) noexcept
{
    if (a.ss_family != b.ss_family) return false;
    if (a.ss_family == AF_INET) {
        const auto& x = reinterpret_cast<const sockaddr_in&>(a);
        const auto& y = reinterpret_cast<const sockaddr_in&>(b);
        return x.sin_port == y.sin_port && x.sin_addr.s_addr == y.sin_addr.s_addr;
    }
    if (a.ss_family == AF_INET6) {
        const auto& x = reinterpret_cast<const sockaddr_in6&>(a);
        const auto& y = reinterpret_cast<const sockaddr_in6&>(b);
        return x.sin6_port == y.sin6_port && x.sin6_scope_id == y.sin6_scope_id &&
               std::memcmp(&x.sin6_addr, &y.sin6_addr, sizeof x.sin6_addr) == 0;
    }
    return false;
}

client_channel* channel_of(int fd) noexcept
{
    if (fd < 0) return nullptr;
    if (fd < direct_fds) return direct[fd].load(std::memory_order_acquire);
    std::lock_guard lock(others_mutex);
    auto& others = others_map();
    auto it = others.find(fd);
    return it == others.end() ? nullptr : it->second;
}

namespace {
// One read takes up to read_chunk (some 150 replies of an uncontended acquire) into the thread's
// scratch buffer, and the channel keeps a copy of what it read until the C client has taken it: a
// session holds only what arrived, and a buffer grown past keep_input is let go once the C client
// has taken all of it (many sessions that read at once hold no read's worth each afterwards). A
// reply longer than what the buffer holds of it (a long listing) is read on from the socket
// straight into the C client's own buffer. A turn's requests go out once they
// reach flush_at, and an output buffer grown past keep_output is let go once empty.
constexpr std::size_t read_chunk = 16 * 1024;
constexpr std::size_t keep_input = 4 * 1024;
constexpr std::size_t flush_at = 256 * 1024;
constexpr std::size_t keep_output = 64 * 1024;

char* read_scratch()
{
    thread_local const std::unique_ptr<char[]> scratch(new char[read_chunk]);
    return scratch.get();
}

void let_go_if_grown(std::vector<char>& v, std::size_t keep)
{
    if (v.empty() && v.capacity() > keep) v = {};
}
}  // namespace

client_channel::client_channel() = default;
client_channel::~client_channel() = default;  // owns no socket: keep_alive_ would hold it

void client_channel::adopt(int fd)
{
    fd_ = fd;
    ++sockets_;
    reset_buffers();
    // TLS: the C client reads the channel's plaintext from the first byte (its handshake's
    // answer is encrypted too).
    if (tls_setup_) reading_ = true;
    keep_alive_ = shared_from_this();
    set_channel(fd, this, nullptr);
}

void client_channel::release()
{
    if (fd_ == -1) return;
    set_channel(fd_, nullptr, this);
    fd_ = -1;
    reset_buffers();
    auto self = std::move(keep_alive_);  // the last reference may be this one: dropped last
}

void client_channel::reset_buffers()
{
    holding_ = reading_ = eof_ = false;
    error_ = 0;
    out_.clear();
    let_go_if_grown(out_, keep_output);
    in_.clear();
    let_go_if_grown(in_, keep_input);
    in_pos_ = 0;
    tls_.reset();
    plain_out_.clear();
    let_go_if_grown(plain_out_, keep_output);
    tls_reported_ = false;
}

std::size_t client_channel::peek(void* buf, std::size_t n) const noexcept
{
    const std::size_t k = std::min(n, in_.size() - in_pos_);
    if (k > 0) std::memcpy(buf, in_.data() + in_pos_, k);
    return k;
}

void client_channel::hold(bool on)
{
    holding_ = on;
    if (on) return;
    encrypt_held();
    flush();
}

void client_channel::start_tls()
{
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    std::string host;
    if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&peer), &len) == 0) {
        for (const auto& [addr, name] : tls_setup_->hosts)
            if (same_address(addr, peer)) {
                host = name;
                break;
            }
    }
    tls_ = std::make_unique<tls_engine>(tls_setup_->ctx, host, tls_setup_->verify_host);
    tls_peer_ = peer;
    tls_->handshake();
    after_tls();
}

void client_channel::encrypt_held()
{
    if (!tls_ || !tls_->handshake_done() || plain_out_.empty()) return;
    tls_->encrypt(plain_out_.data(), plain_out_.size());
    plain_out_.clear();
    let_go_if_grown(plain_out_, keep_output);
    after_tls();
}

void client_channel::after_tls()
{
    tls_->take_output(out_);
    if (tls_->error() && error_ == 0) error_ = ECONNRESET;  // the C client sees its connection fail
    if (tls_reported_) return;
    // The handshake passed once the server's first plaintext came: with TLS 1.3 the server judges
    // the client's certificate after the client's side of the handshake is done, and its refusal
    // is then the first thing read.
    if (tls_->error() && !tls_->heard()) {
        tls_outcome_ = tls_outcome{tls_->error(), tls_->certain(), tls_peer_};
        tls_reported_ = true;
    } else if (tls_->heard() && !tls_->error()) {
        tls_outcome_ = tls_outcome{{}, false, tls_peer_};
        tls_reported_ = true;
    }
}

void client_channel::buffer_reads(bool on) { reading_ = on; }

bool client_channel::flush()
{
    std::size_t off = 0;
    while (off < out_.size() && fd_ != -1 && error_ == 0) {
        const ssize_t n = ::send(fd_, out_.data() + off, out_.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            off += static_cast<std::size_t>(n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        error_ = n < 0 ? errno : EPIPE;
    }
    if (error_ != 0) out_.clear();
    else out_.erase(out_.begin(), out_.begin() + static_cast<std::ptrdiff_t>(off));
    let_go_if_grown(out_, keep_output);
    return out_.empty();
}

ssize_t client_channel::send(const void* buf, std::size_t len, int flags)
{
    if (error_ != 0) {
        errno = error_;
        return -1;
    }
    if (tls_setup_) {
        const auto* p = static_cast<const char*>(buf);
        plain_out_.insert(plain_out_.end(), p, p + len);
        if (!tls_) start_tls();  // the C client's first bytes: the connection is up
        if (!holding_ || plain_out_.size() >= flush_at) {
            encrypt_held();
            flush();
        }
        return static_cast<ssize_t>(len);
    }
    if (!holding_ && out_.empty()) return ::send(fd_, buf, len, flags);
    const auto* p = static_cast<const char*>(buf);
    out_.insert(out_.end(), p, p + len);
    if (out_.size() >= flush_at) flush();
    return static_cast<ssize_t>(len);
}

bool client_channel::input_ready()
{
    if (in_pos_ < in_.size() || eof_ || error_ != 0) return true;
    char* const scratch = read_scratch();
    for (;;) {
        const ssize_t n = ::recv(fd_, scratch, read_chunk, MSG_DONTWAIT);
        if (n > 0 && tls_) {
            tls_->put_input(scratch, static_cast<std::size_t>(n));
            const bool was_done = tls_->handshake_done();
            if (!was_done) tls_->handshake();
            in_.clear();
            in_pos_ = 0;
            if (tls_->handshake_done() || tls_->error()) tls_->decrypt(in_);
            after_tls();
            if (!was_done && tls_->handshake_done()) encrypt_held();
            flush();
            if (!in_.empty() || error_ != 0) return true;
            if (tls_->end_of_stream()) {
                eof_ = true;
                return true;
            }
            continue;  // a record not whole yet
        }
        if (n > 0) {
            in_.assign(scratch, scratch + n);
            in_pos_ = 0;
            return true;
        }
        if (n == 0) {
            if (tls_) {
                tls_->ended_early();
                after_tls();
                error_ = 0;  // the C client sees the end
            }
            eof_ = true;
            return true;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
        error_ = errno;
        return true;
    }
}

std::size_t client_channel::read_on(char* buf, std::size_t len)
{
    std::size_t got = 0;
    while (got < len) {
        const ssize_t n = ::recv(fd_, buf + got, len - got, MSG_DONTWAIT);
        if (n > 0) {
            got += static_cast<std::size_t>(n);
            continue;
        }
        if (n == 0) eof_ = true;  // the next read returns 0
        else if (errno == EINTR) continue;
        else if (errno != EAGAIN && errno != EWOULDBLOCK) error_ = errno;  // the next read reports it
        break;
    }
    return got;
}

ssize_t client_channel::recv(void* buf, std::size_t len, int flags)
{
    if (!reading_) return ::recv(fd_, buf, len, flags);
    if (!input_ready()) {
        errno = EAGAIN;
        return -1;
    }
    if (in_pos_ < in_.size()) {
        std::size_t n = std::min(len, in_.size() - in_pos_);
        std::memcpy(buf, in_.data() + in_pos_, n);
        in_pos_ += n;
        if (in_pos_ == in_.size()) {
            in_.clear();
            in_pos_ = 0;
            let_go_if_grown(in_, keep_input);
            // Without TLS, the rest of what the client wants comes from the socket directly.
            if (n < len && !tls_) n += read_on(static_cast<char*>(buf) + n, len - n);
        }
        return static_cast<ssize_t>(n);
    }
    if (error_ != 0) {
        errno = error_;
        return -1;
    }
    return 0;  // eof_
}

}  // namespace zklock::detail

namespace zklock::detail {

namespace {
thread_local client_channel* tl_channel = nullptr;
}  // namespace

channel_scope::channel_scope(client_channel* c) noexcept : previous_(std::exchange(tl_channel, c)) {}
channel_scope::~channel_scope() { tl_channel = previous_; }

int client_channel::poll(pollfd& p, int timeout_ms)
{
    if ((p.events & POLLIN) && buffered_input()) {
        p.revents = POLLIN;
        return 1;
    }
    flush();  // what an earlier send left (a full socket) goes before the client waits on it
    return ::poll(&p, 1, timeout_ms);
}

}  // namespace zklock::detail

// The names the sealed C client's socket calls were given (cmake/seal_zookeeper.cmake).
extern "C" {

int zklock_cio_socket(int domain, int type, int protocol)
{
    using namespace zklock::detail;
    client_channel* const c = tl_channel;
    if (!c || c->fd() != -1) {
        client_log(c ? "zklock: the C client opened a second socket for one handle; refused"
                     : "zklock: the C client opened a socket outside a session's call; refused");
        errno = EPROTO;
        return -1;
    }
    const int fd = ::socket(domain, type, protocol);
    if (fd != -1) c->adopt(fd);
    return fd;
}

int zklock_cio_close(int fd)
{
    if (auto* c = zklock::detail::channel_of(fd)) c->release();
    return ::close(fd);
}

ssize_t zklock_cio_send(int fd, const void* buf, size_t len, int flags)
{
    if (auto* c = zklock::detail::channel_of(fd)) return c->send(buf, len, flags);
    return ::send(fd, buf, len, flags);
}

ssize_t zklock_cio_recv(int fd, void* buf, size_t len, int flags)
{
    if (auto* c = zklock::detail::channel_of(fd)) return c->recv(buf, len, flags);
    return ::recv(fd, buf, len, flags);
}

ssize_t zklock_cio_read(int fd, void* buf, size_t len)
{
    if (auto* c = zklock::detail::channel_of(fd)) return c->recv(buf, len, 0);
    return ::read(fd, buf, len);
}

int zklock_cio_poll(struct pollfd* fds, nfds_t n, int timeout_ms)
{
    if (n == 1)
        if (auto* c = zklock::detail::channel_of(fds[0].fd)) return c->poll(fds[0], timeout_ms);
    return ::poll(fds, n, timeout_ms);
}

}
