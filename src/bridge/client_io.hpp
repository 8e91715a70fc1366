// The seam between zklock and the ZooKeeper C client it carries: the client's socket calls.
//
// libzklock holds the C client sealed (cmake/seal_zookeeper.cmake): its socket, close, send,
// recv, poll and read are renamed zklock_cio_* (client_io.cpp). Each C handle has a
// client_channel. A socket the client opens while a channel_scope names the handle's channel (the
// session's calls into the client) belongs to that channel from the socket() call that made it to
// the close() that ends it, and only then do the seam's calls on its number go through the
// channel: no state of one connection can touch a socket it does not own, and none outlives its
// socket. Every other descriptor passes straight through to the kernel.
//
// A channel holds the requests of one executor turn and sends them in one call, and once
// connected reads what the socket holds in one call and hands the C client its replies from that
// buffer (the rest of a reply longer than the buffer holds is read into the client's own): the C
// client writes each request with two sends and reads each reply with two reads.
// With TLS (session_config::tls) the channel encrypts the socket itself (tls_engine): the C client
// reads and writes plaintext, the server sees TLS from the first byte.
#pragma once

#include "core/handler_util.hpp"


#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// asio::ssl::context, declared only: a build without TLS (ZKLOCK_TLS=OFF) has no OpenSSL headers.
namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace zklock::detail {

class tls_engine;

/// How a channel's sockets speak TLS: the context, and the host name of each server address (the
/// certificate is checked against the host of the server list, not the address).
struct tls_setup {
    std::shared_ptr<asio::ssl::context> ctx;
    bool verify_host = true;
    std::vector<std::pair<sockaddr_storage, std::string>> hosts;
};

/// What a TLS handshake came to: passed (no error), or refused and why (tls_engine::error()).
struct tls_outcome {
    error_code ec;
    bool certain = false;
    sockaddr_storage peer{};
};

class client_channel : public std::enable_shared_from_this<client_channel> {
public:
    client_channel();
    client_channel(const client_channel&) = delete;
    client_channel& operator=(const client_channel&) = delete;
    ~client_channel();

    /// The socket the C client opened for this channel and has not closed yet (-1: none).
    int fd() const noexcept { return fd_; }
    /// How many sockets the C client opened for this channel.
    std::uint64_t sockets() const noexcept { return sockets_; }
    /// Sockets opened from now on speak TLS with `s` (null: plaintext).
    void use_tls(std::shared_ptr<const tls_setup> s) { tls_setup_ = std::move(s); }
    bool tls() const noexcept { return tls_setup_ != nullptr; }
    /// The outcome of the latest TLS handshake, once (nothing if none ended since).
    std::optional<tls_outcome> take_tls_outcome() { return std::exchange(tls_outcome_, std::nullopt); }
    /// Copies up to `n` bytes the C client has yet to read, without taking them.
    std::size_t peek(void* buf, std::size_t n) const noexcept;

    /// While held, the C client's sends are gathered; releasing sends them (flush()).
    void hold(bool on);
    /// Whether the C client's sends are being gathered (a close of the socket ends it).
    bool holding() const noexcept { return holding_; }
    /// Reads from the channel's buffer (after a connection is up: before it, the C client reads
    /// the kernel's socket directly).
    void buffer_reads(bool on);
    /// Sends what was gathered; false if some is left (the socket is full: wait for writable).
    bool flush();
    bool pending_output() const noexcept { return !out_.empty(); }
    /// Whether the C client's next read finds something: buffered bytes, or one read of the
    /// socket brought some, or the connection's end or an error (which the client must see).
    bool input_ready();
    bool buffering_reads() const noexcept { return reading_ && fd_ != -1; }
    /// Bytes read from the socket that the C client has not taken yet: the socket will not report
    /// them readable again.
    bool buffered_input() const noexcept { return reading_ && in_pos_ < in_.size(); }
    /// Whether the C client has sent plaintext that waits for the TLS handshake.
    bool awaiting_handshake() const noexcept { return !plain_out_.empty(); }

    // The seam (client_io.cpp): the C client's calls on this channel's socket.
    /// The client opened `fd`: the channel's until it closes it.
    void adopt(int fd);
    /// The client closes the channel's socket: everything of it goes first.
    void release();
    ssize_t send(const void* buf, std::size_t len, int flags);
    ssize_t recv(void* buf, std::size_t len, int flags);
    /// poll() of the channel's socket alone: buffered replies are readable at once.
    int poll(pollfd& p, int timeout_ms);

private:
    void reset_buffers();
    /// Reads up to `len` more bytes from the socket into `buf`, until it has no more; an end or
    /// an error is kept for the next read.
    std::size_t read_on(char* buf, std::size_t len);
    void start_tls();
    /// Encrypts the plaintext the C client sent (once the handshake is done) into out_.
    void encrypt_held();
    /// What the engine made goes to out_; a refusal or a passed handshake is noted.
    void after_tls();

    int fd_ = -1;
    std::uint64_t sockets_ = 0;
    bool holding_ = false;
    bool reading_ = false;
    int error_ = 0;        // a send failed: the next read reports it
    bool eof_ = false;     // the peer closed: the next read returns 0
    std::vector<char> out_;
    std::vector<char> in_;     // what one read brought, until the C client has taken it
    std::size_t in_pos_ = 0;   // how much of it the C client has taken
    std::shared_ptr<const tls_setup> tls_setup_;
    std::unique_ptr<tls_engine> tls_;  // this socket's TLS, from the C client's first send
    std::vector<char> plain_out_;      // with TLS: sent by the C client, not encrypted yet
    bool tls_reported_ = false;        // this socket's handshake outcome was noted
    sockaddr_storage tls_peer_{};
    std::optional<tls_outcome> tls_outcome_;
    // While the channel owns a socket, the seam finds it by the socket's number and it lives at
    // least as long: the C client may close a socket after the session let its handle go (on the
    // close thread).
    std::shared_ptr<client_channel> keep_alive_;
};

/// While it lives, the C client's calls on this thread are made for `c`: a socket the client
/// opens belongs to `c`. A socket opened with no scope is refused (the client sees socket() fail
/// with EPROTO and reports a connection error), and logged: every call into the client is
/// zklock's own, and each names its handle's channel.
class channel_scope {
public:
    explicit channel_scope(client_channel* c) noexcept;
    ~channel_scope();
    channel_scope(const channel_scope&) = delete;
    channel_scope& operator=(const channel_scope&) = delete;

private:
    client_channel* previous_;
};

/// Whether `a` and `b` are one address and port.
bool same_address(const sockaddr_storage& a, const sockaddr_storage& b) noexcept;

/// The channel that owns socket `fd` now, if any.
client_channel* channel_of(int fd) noexcept;

}  // namespace zklock::detail
