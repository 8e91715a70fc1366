// support/fault_proxy.hpp — a fault-injecting TCP proxy between a ZooKeeper client and server.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace zklock::test {

/// ZooKeeper request types (RequestHeader.type), for drop_reply().
namespace zk_op {
inline constexpr std::int32_t create = 1;
inline constexpr std::int32_t delete_ = 2;
inline constexpr std::int32_t exists = 3;
inline constexpr std::int32_t get_data = 4;
inline constexpr std::int32_t set_data = 5;
inline constexpr std::int32_t get_children = 8;
inline constexpr std::int32_t ping = 11;
inline constexpr std::int32_t get_children2 = 12;
inline constexpr std::int32_t multi = 14;
inline constexpr std::int32_t create2 = 15;
inline constexpr std::int32_t create_container = 19;
}  // namespace zk_op

/// Listens on 127.0.0.1 and a free port and forwards every connection to 127.0.0.1:target,
/// with faults switched on and off from the test thread. It runs its own io_context on its own
/// thread, from construction to destruction. Every member function is thread-safe, and the
/// fault setters take effect before they return (they must not be called from a drop_reply
/// match function).
class fault_proxy {
public:
    explicit fault_proxy(std::uint16_t target_port);
    ~fault_proxy();
    fault_proxy(const fault_proxy&) = delete;
    fault_proxy& operator=(const fault_proxy&) = delete;

    std::uint16_t port() const;
    /// "127.0.0.1:PORT" of the proxy.
    std::string connect_string() const;

    /// Connections accepted from now on go to 127.0.0.1:port.
    void set_target(std::uint16_t port);
    /// When connecting a client's connection upstream fails (e.g. nothing listens there yet),
    /// tries again every 50 ms for up to `window`, holding the client's data meanwhile, before
    /// it resets the client. The client's own connect succeeded when the proxy accepted it, so
    /// a client that retries refused connects (as a ZooKeeper follower does towards a leader
    /// that is still opening its port) would otherwise see a reset it does not retry. 0 (the
    /// default): the client is reset at the first failure. Applies to connections accepted
    /// from now on.
    void retry_connect(std::chrono::milliseconds window);

    /// Normal forwarding: ends blackhole() (releasing held traffic in order) and delay().
    void pass();
    /// Forwards every chunk d after it was read (per direction, in order).
    void delay(std::chrono::milliseconds d);
    /// Holds all traffic both ways, on existing and new connections (new ones are accepted but
    /// not connected upstream), until pass() or delay().
    void blackhole();
    /// Closes every current connection abruptly (RST) on both sides; keeps listening.
    void reset();

    /// One shot: remembers the xid of the next client request (after the ConnectRequest) for
    /// which match(xid, type) is true; when the server's reply with that xid comes back, it is
    /// not forwarded and both sides of that connection are reset instead. So the server has
    /// applied the request but the client sees a connection loss. Frames before that reply
    /// are forwarded.
    void drop_reply(std::function<bool(std::int32_t xid, std::int32_t op_type)> match);
    /// drop_reply() for the next request of the given type (see zk_op).
    void drop_reply_to_next(std::int32_t op_type);

    /// For a proxy in front of a ZooKeeper server's election port: on connections accepted from
    /// now on, the connecting side's first message, ZooKeeper's InitialMessage (long protocol
    /// version -65536 or -65535, long sid, int length, then that many bytes of the sender's
    /// election address "host:port", several joined by '|' in the second version), is forwarded
    /// with `address` (e.g. "127.0.0.1:PORT") in place of the announced one and the length
    /// adjusted. A server with a higher id than the sender closes the connection and connects
    /// back to the announced address: announcing a proxy towards the sender makes that
    /// connection go through the proxy too. The message is held back until it is complete,
    /// however it was cut, and then written at once (the server reads the address with a single
    /// read); what follows it passes unchanged. A first message that is not an InitialMessage
    /// ZooKeeper accepts (other version, length not in 1..2048) passes unchanged, and so does an
    /// incomplete one when the connecting side closes. An empty `address` (the default) turns
    /// this off. Throws std::invalid_argument if `address` is longer than 2048 bytes.
    void rewrite_election_address(std::string address);

    std::size_t replies_dropped() const;
    std::size_t connections_accepted() const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

}  // namespace zklock::test
