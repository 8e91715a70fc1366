// tls_context: a session's TLS settings (session_config::tls) as OpenSSL uses them. The context
// is made from the CA, certificate and key files, shared by the sessions of the process that use
// the same files as they are now, and made again when one of them changes (read at each new
// connection). The connection's TLS itself runs in the session's channel (client_io.hpp,
// tls_engine.hpp), on the C client's own socket.
#pragma once

#include "core/handler_util.hpp"

#include <zklock/config.hpp>


#include <sys/stat.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

// asio::ssl::context, declared only: a build without TLS (ZKLOCK_TLS=OFF) has no OpenSSL headers.
namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace zklock::detail {

class tls_context {
public:
    explicit tls_context(tls_options options) : options_(std::move(options)) {}

    /// Loads the files of `options`; errc::tls_bad_config (and the reason in the client log) if
    /// one cannot be used.
    static std::shared_ptr<tls_context> create(tls_options options, error_code& ec);

    const tls_options& options() const noexcept { return options_; }
    /// The context for a new connection: the files are read again if one of them changed (if
    /// they no longer load, the previous context stays).
    std::shared_ptr<asio::ssl::context> context();

private:
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
    /// The context for the files as `stamps` saw them: the process's one if another session made
    /// it, else made now; nullptr (and the reason logged) if they do not load.
    std::shared_ptr<asio::ssl::context> load(const std::vector<file_stamp>& stamps) const;
    std::shared_ptr<asio::ssl::context> make_context() const;
    std::vector<file_stamp> stamps() const;

    tls_options options_;
    std::shared_ptr<asio::ssl::context> ctx_;
    std::vector<file_stamp> stamps_;  // of the files ctx_ was loaded from
};

/// Whether the server at `server` ("ip:port", IPv6 without brackets) answers a TLS ClientHello as a
/// TLS server does (a handshake, or an alert); `done(true)` if so. At most 2 s. For a plaintext
/// session whose connection the server ended without a word during the handshake: a TLS-only
/// port does that.
void probe_tls(const asio::any_io_executor& ex, const std::string& server, std::function<void(bool)> done);

}  // namespace zklock::detail
