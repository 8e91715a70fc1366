// tls_bridge: TLS for a C client that has none (session_config::tls).
//
// The C client is handed loopback addresses, one listener per host of the server list. When it
// connects to one, the bridge accepts the connection only if its peer is the C client's own
// socket (the session says which socket that is). It then puts one end of a local socket pair
// under the client's socket number, opens TCP and then TLS to that host, and carries the bytes
// both ways, on the session's executor, with no thread of its own. One link at a time: the C
// client has one socket, and a link whose socket is no longer the client's ends.
//
// A failed handshake ends the link (the C client sees its connection end and tries the next
// host) and is reported with the zklock error that says why; once every host of the list failed
// in a row, the session hears it (it fails async_connect then, not at the connect timeout).
#pragma once

#include "bridge/handler_util.hpp"

#include <zklock/config.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <sys/stat.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::detail {

class tls_bridge : public std::enable_shared_from_this<tls_bridge> {
public:
    struct hooks {
        /// The C client's socket (-1: none): only a connection from it is carried.
        std::function<int()> client_fd;
        /// Every host of the list refused the handshake in a row; `ec` is the latest refusal.
        std::function<void(error_code ec)> all_refused;
        /// The C client's socket was replaced under its number (by the bridge's own end of a
        /// local socket pair): the session registers it with its reactor again.
        std::function<void()> client_socket_replaced;
    };

    /// Loads the files of `options`; errc::tls_bad_config (and the reason in the client log) if
    /// one cannot be used.
    static std::shared_ptr<tls_bridge> create(asio::any_io_executor ex, tls_options options, hooks h, error_code& ec);
    ~tls_bridge();

    /// The list to give the C client for the host list `hosts` (no chroot): "127.0.0.1:port,..."
    /// with one listener per host that resolves (a host that does not is left out, as the C
    /// client leaves it out), reusing the listener of a host already listed. The listeners of
    /// hosts not in the list are closed. errc::unresolvable_host if no host resolves.
    std::string front(std::string_view hosts, error_code& ec);

    /// A new C handle starts: refusals seen before count no more.
    void forget_refusals();

    /// The C client's socket is now `fd` (-1: none) with inode `inode`: a link carrying another
    /// socket ends.
    void client_socket_changed(int fd, ino_t inode);

    /// The listener whose connection is carried now (none: no link).
    std::optional<asio::ip::tcp::endpoint> carried_front() const;

    /// Closes every listener and link (the session is closed or shut down).
    void shut_down();

    /// The latest handshake refusal since the last handshake that passed (empty: none). A
    /// connection that ended in the handshake counts here (errc::tls_server_not_tls), not
    /// towards `all_refused`: it may be a server going down.
    error_code last_refusal() const noexcept { return last_refusal_; }

    /// A handshake error as a zklock error: errc::tls_untrusted_certificate and the others.
    static error_code classify(const error_code& ec, long verify_result, bool heard_anything);

private:
    struct entry;
    struct link;
    struct file_stamp {
        std::string path;
        struct timespec mtime {};
        off_t size = 0;
        bool operator==(const file_stamp& o) const noexcept
        {
            return path == o.path && mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec &&
                   size == o.size;
        }
    };

    tls_bridge(asio::any_io_executor ex, tls_options options, hooks h);
    /// The context for the files as `stamps` saw them: the process's one if another session made
    /// it, else made now; nullptr (and the reason logged) if they do not load.
    std::shared_ptr<asio::ssl::context> load(const std::vector<file_stamp>& stamps) const;
    std::shared_ptr<asio::ssl::context> make_context() const;
    std::vector<file_stamp> stamps() const;
    /// The context for a new link: the files are read again if one of them changed.
    std::shared_ptr<asio::ssl::context> context();
    void accept(const std::shared_ptr<entry>& e);
    void on_accepted(const std::shared_ptr<entry>& e, asio::ip::tcp::socket s);
    void on_refused(const std::shared_ptr<entry>& e, error_code ec, bool certain);
    void on_handshake_done(const std::shared_ptr<entry>& e);

    asio::any_io_executor ex_;
    tls_options options_;
    hooks hooks_;
    std::shared_ptr<asio::ssl::context> ctx_;
    std::vector<file_stamp> stamps_;  // of the files ctx_ was loaded from
    std::vector<std::shared_ptr<entry>> entries_;
    std::shared_ptr<link> link_;  // the one carried now, if any
    error_code last_refusal_;
    bool shut_down_ = false;
};

/// Whether the server at `server` ("ip:port", IPv6 without brackets) answers a TLS ClientHello as a
/// TLS server does (a handshake, or an alert); `done(true)` if so. At most 2 s. For a plaintext
/// session whose connection the server ended without a word during the handshake: a TLS-only
/// port does that.
void probe_tls(const asio::any_io_executor& ex, const std::string& server, std::function<void(bool)> done);

}  // namespace zklock::detail
