// tls_engine (see tls_engine.hpp).
#include "bridge/tls_engine.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace zklock::detail {

namespace {

bool is_address(const std::string& host)
{
    error_code ec;
    (void)asio::ip::make_address(host, ec);
    return !ec;
}

}  // namespace

tls_engine::tls_engine(std::shared_ptr<asio::ssl::context> ctx, const std::string& host, bool verify_host)
    : ctx_(std::move(ctx))
{
    ssl_ = SSL_new(ctx_->native_handle());
    in_ = BIO_new(BIO_s_mem());
    out_ = BIO_new(BIO_s_mem());
    if (!ssl_ || !in_ || !out_) {
        if (in_) BIO_free(in_);
        if (out_) BIO_free(out_);
        in_ = out_ = nullptr;
        error_ = errc::tls_handshake_failed;
        return;
    }
    BIO_set_mem_eof_return(in_, -1);  // empty: "retry", not the end of the stream
    SSL_set_bio(ssl_, in_, out_);
    SSL_set_connect_state(ssl_);
    if (!host.empty() && !is_address(host)) SSL_set_tlsext_host_name(ssl_, host.c_str());
    if (verify_host && !host.empty()) {
        if (is_address(host)) X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), host.c_str());
        else SSL_set1_host(ssl_, host.c_str());
    }
}

tls_engine::~tls_engine()
{
    if (ssl_) SSL_free(ssl_);  // and its BIOs
}

void tls_engine::put_input(const char* p, std::size_t n)
{
    if (!in_ || n == 0) return;
    if (!done_) answered_ = true;
    BIO_write(in_, p, static_cast<int>(n));
}

bool tls_engine::handshake()
{
    if (done_ || error_ || !ssl_) return done_;
    ERR_clear_error();
    const int rc = SSL_do_handshake(ssl_);
    if (rc == 1) {
        done_ = true;
        return true;
    }
    const int e = SSL_get_error(ssl_, rc);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) fail(e, rc);
    return false;
}

void tls_engine::encrypt(const char* p, std::size_t n)
{
    if (!done_ || error_ || n == 0) return;
    ERR_clear_error();
    // Memory BIOs take everything: a write is whole (records of 16 KB at most).
    const int rc = SSL_write(ssl_, p, static_cast<int>(n));
    if (rc <= 0) fail(SSL_get_error(ssl_, rc), rc);
}

bool tls_engine::decrypt(std::vector<char>& out)
{
    if (error_ || eof_ || !ssl_) return false;
    char buf[16384];
    for (;;) {
        ERR_clear_error();
        const int rc = SSL_read(ssl_, buf, sizeof buf);
        if (rc > 0) {
            heard_ = true;
            out.insert(out.end(), buf, buf + rc);
            continue;
        }
        const int e = SSL_get_error(ssl_, rc);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
        if (e == SSL_ERROR_ZERO_RETURN) {
            eof_ = true;
            return false;
        }
        fail(e, rc);
        return false;
    }
    if (!done_ && SSL_is_init_finished(ssl_)) done_ = true;
    return true;
}

void tls_engine::take_output(std::vector<char>& out)
{
    if (!out_) return;
    char* data = nullptr;
    const long n = BIO_get_mem_data(out_, &data);
    if (n <= 0) return;
    out.insert(out.end(), data, data + n);
    (void)BIO_reset(out_);
}

void tls_engine::ended_early()
{
    if (error_ || done_) return;
    error_ = answered_ ? error_code(errc::tls_handshake_failed) : error_code(errc::tls_server_not_tls);
    certain_ = false;
}

void tls_engine::fail(int ssl_error, int rc)
{
    if (error_) return;
    const unsigned long reason = ERR_peek_error();
    if (ssl_error == SSL_ERROR_SSL && reason != 0) {
        error_ = classify(ERR_GET_REASON(reason), SSL_get_verify_result(ssl_));
        certain_ = true;
    } else {
        // The stream ended (SSL_ERROR_SYSCALL with rc 0: no close_notify) or something else.
        error_ = !done_ && !answered_ && rc == 0 ? error_code(errc::tls_server_not_tls) : error_code(errc::tls_handshake_failed);
        certain_ = false;
    }
    ERR_clear_error();
}

error_code tls_engine::classify(int reason, long verify_result)
{
    switch (reason) {
    case SSL_R_CERTIFICATE_VERIFY_FAILED:
        switch (verify_result) {
        case X509_V_ERR_CERT_HAS_EXPIRED:
        case X509_V_ERR_CERT_NOT_YET_VALID: return errc::tls_certificate_expired;
        case X509_V_ERR_HOSTNAME_MISMATCH:
        case X509_V_ERR_IP_ADDRESS_MISMATCH: return errc::tls_host_mismatch;
        default: return errc::tls_untrusted_certificate;
        }
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
    case SSL_R_HTTP_REQUEST:
    case SSL_R_UNKNOWN_PROTOCOL:
    case SSL_R_RECORD_LENGTH_MISMATCH: return errc::tls_server_not_tls;
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED: return errc::tls_client_certificate_refused;
    default: return errc::tls_handshake_failed;
    }
}

}  // namespace zklock::detail
