// tls_engine: the client side of one TLS connection, with no I/O of its own (OpenSSL over memory
// BIOs). The session's channel (client_io.hpp) feeds it what the socket brought and sends what it
// produced, on the C client's own socket: the server connection itself is encrypted, from the
// first byte the C client sends (its ConnectRequest, which carries the session password).
#pragma once

#include "core/handler_util.hpp"


#include <cstddef>
#include <memory>
#include <string>
#include <vector>

using SSL = struct ssl_st;
using BIO = struct bio_st;

// asio::ssl::context, declared only: a build without TLS (ZKLOCK_TLS=OFF) has no OpenSSL headers.
namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace zklock::detail {

class tls_engine {
public:
    /// A connection to `host` (a name, or an address; empty: none known), its certificate
    /// checked against the context's CAs and, with `verify_host`, against `host`.
    tls_engine(std::shared_ptr<asio::ssl::context> ctx, const std::string& host, bool verify_host);
    ~tls_engine();
    tls_engine(const tls_engine&) = delete;
    tls_engine& operator=(const tls_engine&) = delete;

    /// Ciphertext the socket brought.
    void put_input(const char* p, std::size_t n);
    /// Runs the handshake as far as the input allows; true once it is done.
    bool handshake();
    bool handshake_done() const noexcept { return done_; }
    /// Encrypts `n` bytes of plaintext (after the handshake).
    void encrypt(const char* p, std::size_t n);
    /// Decrypts what the input holds, appending it to `out`. False once the connection is over:
    /// the server closed it (end_of_stream()) or TLS failed (error()).
    bool decrypt(std::vector<char>& out);
    /// Moves the ciphertext made so far (handshake, records, alerts) to the end of `out`.
    void take_output(std::vector<char>& out);

    /// The server ended the TLS stream (close_notify).
    bool end_of_stream() const noexcept { return eof_; }
    /// Why TLS failed (empty: it did not), as a zklock error (errc::tls_untrusted_certificate,
    /// ...) where TLS said why, else errc::tls_handshake_failed; `certain()` when TLS itself
    /// said so (an alert or a check of ours), not a connection that merely ended.
    error_code error() const noexcept { return error_; }
    bool certain() const noexcept { return certain_; }
    /// Whether any plaintext came from the server.
    bool heard() const noexcept { return heard_; }
    /// The connection ended before the handshake did: a server that closes a ClientHello
    /// unanswered speaks no TLS (errc::tls_server_not_tls), one that answered something may be
    /// going down (not certain).
    void ended_early();

    /// A handshake or read error as a zklock error: `reason` is OpenSSL's ERR_GET_REASON,
    /// `verify_result` the certificate check's result.
    static error_code classify(int reason, long verify_result);

private:
    void fail(int ssl_error, int rc);

    std::shared_ptr<asio::ssl::context> ctx_;  // outlives ssl_
    SSL* ssl_ = nullptr;
    BIO* in_ = nullptr;   // ciphertext from the server (the SSL object owns both BIOs)
    BIO* out_ = nullptr;  // ciphertext to the server
    bool done_ = false;
    bool eof_ = false;
    bool heard_ = false;
    bool answered_ = false;  // the server sent something during the handshake
    bool certain_ = false;
    error_code error_;
};

}  // namespace zklock::detail
