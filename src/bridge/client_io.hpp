// The C client's socket calls, through the session: libzklock carries the C client's objects with
// their send, recv and close renamed to zklock_cio_* (CMakeLists.txt), which look the socket up
// here and pass any socket that is not a session's through to the kernel. A session's channel
// holds the requests of one executor turn and sends them in one call, and once connected reads
// what the socket holds in one call and hands the C client its replies from that buffer: the C
// client writes each request with two sends and reads each reply with two reads.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace zklock::detail {

#ifdef ZKLOCK_OWN_CLIENT_IO
inline constexpr bool own_client_io = true;
#else
inline constexpr bool own_client_io = false;
#endif

class client_channel {
public:
    client_channel() = default;
    client_channel(const client_channel&) = delete;
    client_channel& operator=(const client_channel&) = delete;

    /// Registers `fd` (-1: none) as this channel's socket; drops what was buffered for another.
    void attach(int fd);
    /// Unregisters the socket (after this, the C client's calls on it go to the kernel).
    void detach();
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

    // The C client's calls.
    ssize_t send(const void* buf, std::size_t len, int flags);
    ssize_t recv(void* buf, std::size_t len, int flags);

    ~client_channel();

private:
    int fd_ = -1;
    bool holding_ = false;
    bool reading_ = false;
    int error_ = 0;        // a send failed: the next read reports it
    bool eof_ = false;     // the peer closed: the next read returns 0
    std::vector<char> out_;
    std::vector<char> in_;     // what one read brought, until the C client has taken it
    std::size_t in_pos_ = 0;   // how much of it the C client has taken
};

/// The channel a session registered for `fd`, if any.
client_channel* channel_of(int fd) noexcept;

}  // namespace zklock::detail
