// tls_context (see tls_context.hpp).
#include "bridge/tls_context.hpp"

#include "bridge/tls_engine.hpp"
#include "bridge/zk_requests.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <sys/stat.h>

#include <cstdlib>
#include <mutex>
#include <utility>

namespace zklock::detail {

using asio::ip::tcp;

namespace {
void log_tls(const std::string& what) { client_log(("tls: " + what).c_str()); }
}  // namespace

std::shared_ptr<tls_context> tls_context::create(tls_options options, error_code& ec)
{
    auto b = std::make_shared<tls_context>(std::move(options));
    std::vector<file_stamp> st = b->stamps();
    b->ctx_ = b->load(st);
    if (!b->ctx_) {
        ec = errc::tls_bad_config;
        return nullptr;
    }
    b->stamps_ = std::move(st);
    ec = {};
    return b;
}

std::vector<tls_context::file_stamp> tls_context::stamps() const
{
    std::vector<file_stamp> out;
    for (const std::string* p : {&options_.ca_file, &options_.ca_dir, &options_.cert_file, &options_.key_file}) {
        file_stamp s;
        s.path = *p;
        struct ::stat st {};
        if (!p->empty() && ::stat(p->c_str(), &st) == 0) {
            s.mtime = st.st_mtim;
            s.size = st.st_size;
        }
        out.push_back(s);
    }
    return out;
}

std::shared_ptr<asio::ssl::context> tls_context::load(const std::vector<file_stamp>& stamps) const
{
    // One context per set of files as they are now, shared by the sessions of the process that
    // use them (a context holds the parsed CA store: with the system's CAs, hundreds of KB).
    // Sessions of several threads make theirs: the table has a lock; a context itself is safe to
    // share (OpenSSL makes SSL objects from it on any thread).
    struct cached {
        std::vector<file_stamp> stamps;
        std::weak_ptr<asio::ssl::context> ctx;
    };
    static std::mutex mutex;
    static std::vector<cached> table;
    std::lock_guard lock(mutex);
    std::erase_if(table, [](const cached& c) { return c.ctx.expired(); });
    for (const auto& c : table)
        if (c.stamps == stamps)
            if (auto ctx = c.ctx.lock()) return ctx;
    auto ctx = make_context();
    if (ctx) table.push_back({stamps, ctx});
    return ctx;
}

namespace {

void parse_certificates(SSL_CTX* native)
{
    // OpenSSL parses a certificate's extensions on first use, under the certificate's lock, and
    // later readers skip the lock on an atomic flag. The context is shared by sessions on several
    // threads: parsing them here, before it is shared, leaves only reads to the handshakes. (A
    // thread sanitizer cannot see libcrypto's atomics, and took those reads for races.)
    const auto parse = [](X509* x) { X509_check_purpose(x, -1, 0); };
    X509_STORE* store = SSL_CTX_get_cert_store(native);
    if (X509_STORE_lock(store) == 1) {
        STACK_OF(X509_OBJECT)* objects = X509_STORE_get0_objects(store);
        for (int i = 0; i < sk_X509_OBJECT_num(objects); ++i)
            if (X509* x = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objects, i))) parse(x);
        X509_STORE_unlock(store);
    }
    if (X509* own = SSL_CTX_get0_certificate(native)) parse(own);
    STACK_OF(X509)* chain = nullptr;
    if (SSL_CTX_get0_chain_certs(native, &chain) == 1)
        for (int i = 0; i < sk_X509_num(chain); ++i) parse(sk_X509_value(chain, i));
}

}  // namespace

std::shared_ptr<asio::ssl::context> tls_context::make_context() const
{
    auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
    SSL_CTX* native = ctx->native_handle();
    SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
    ctx->set_verify_mode(asio::ssl::verify_peer);
    error_code ec;
    const auto fail = [&](const std::string& what) {
        log_tls(what + ": " + ec.message());
        return nullptr;
    };
    if (options_.ca_file.empty() && options_.ca_dir.empty()) {
        if (ctx->set_default_verify_paths(ec); ec) return fail("cannot use the default CA paths");
    }
    if (!options_.ca_file.empty())
        if (ctx->load_verify_file(options_.ca_file, ec); ec) return fail("cannot load the CA file " + options_.ca_file);
    if (!options_.ca_dir.empty())
        if (ctx->add_verify_path(options_.ca_dir, ec); ec) return fail("cannot use the CA directory " + options_.ca_dir);
    if (options_.cert_file.empty() != options_.key_file.empty()) {
        ec = asio::error::invalid_argument;
        return fail("a client certificate needs its key, and a key its certificate");
    }
    if (!options_.cert_file.empty()) {
        if (ctx->use_certificate_chain_file(options_.cert_file, ec); ec)
            return fail("cannot load the certificate " + options_.cert_file);
        if (ctx->use_private_key_file(options_.key_file, asio::ssl::context::pem, ec); ec)
            return fail("cannot load the key " + options_.key_file);
        if (SSL_CTX_check_private_key(native) != 1) {
            ec = error_code(static_cast<int>(ERR_get_error()), asio::error::get_ssl_category());
            return fail("the key " + options_.key_file + " does not match the certificate " + options_.cert_file);
        }
    }
    parse_certificates(native);
    return ctx;
}

std::shared_ptr<asio::ssl::context> tls_context::context()
{
    std::vector<file_stamp> now = stamps();
    if (now == stamps_) return ctx_;
    if (auto fresh = load(now)) {
        ctx_ = std::move(fresh);
        log_tls("certificate files changed: reloaded");
    } else {
        log_tls("certificate files changed but do not load: the previous ones are kept");
    }
    stamps_ = std::move(now);  // a file that failed is tried again once it changes again
    return ctx_;
}

// ---- the probe ----------------------------------------------------------------------------------

namespace {

struct probe_state {
    probe_state(const asio::any_io_executor& ex) : ctx(asio::ssl::context::tls_client), stream(ex, ctx), timer(ex) {}
    asio::ssl::context ctx;
    asio::ssl::stream<tcp::socket> stream;
    asio::steady_timer timer;
    std::function<void(bool)> done;
    void finish(bool tls)
    {
        if (!done) return;
        error_code ignored;
        timer.cancel();
        stream.lowest_layer().close(ignored);
        std::exchange(done, {})(tls);
    }
};

}  // namespace

void probe_tls(const asio::any_io_executor& ex, const std::string& server, std::function<void(bool)> done)
{
    const std::size_t colon = server.rfind(':');
    error_code ec;
    const auto address = asio::ip::make_address(server.substr(0, colon), ec);
    int port = 0;
    if (!ec && colon != std::string::npos) port = std::atoi(server.c_str() + colon + 1);
    if (ec || port <= 0 || port > 65535) {
        asio::post(ex, [done = std::move(done)] { done(false); });
        return;
    }
    auto p = std::make_shared<probe_state>(ex);
    p->ctx.set_verify_mode(asio::ssl::verify_none);  // only whether it speaks TLS matters
    p->done = std::move(done);
    p->timer.expires_after(std::chrono::seconds(2));
    p->timer.async_wait([p](error_code ec) {
        if (!ec) p->finish(false);
    });
    p->stream.lowest_layer().async_connect(tcp::endpoint(address, static_cast<std::uint16_t>(port)), [p](error_code ec) {
        if (ec) return p->finish(false);
        p->stream.async_handshake(asio::ssl::stream_base::client, [p](error_code ec) {
            // A TLS server answers with its handshake, or with an alert (TLS's own error).
            p->finish(!ec || (ec.category() == asio::error::get_ssl_category() &&
                              tls_engine::classify(ERR_GET_REASON(static_cast<unsigned long>(ec.value())), X509_V_OK) != error_code(errc::tls_server_not_tls)));
        });
    });
}

}  // namespace zklock::detail
