// tls_bridge (see tls_bridge.hpp).
#include "bridge/tls_bridge.hpp"

#include "bridge/zk_requests.hpp"

#include <zklock/detail/server_list.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/write.hpp>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

namespace zklock::detail {

using asio::ip::tcp;

struct tls_bridge::entry {
    entry(asio::any_io_executor ex) : acceptor(ex), retry(ex) {}
    std::string name;  // "host:port" as the server list has it
    std::string host;  // without brackets
    std::vector<tcp::endpoint> endpoints;
    tcp::acceptor acceptor;
    asio::steady_timer retry;    // a failed accept (out of descriptors) is tried again later
    tcp::endpoint front;         // the listener's address, which the C client connects to
    error_code refusal;          // this host's last handshake refusal since the last handshake that passed
};

struct tls_bridge::link : std::enable_shared_from_this<link> {
    link(asio::any_io_executor ex, std::shared_ptr<asio::ssl::context> c, tcp::socket accepted)
        : ctx(std::move(c)), first(std::move(accepted)), down(ex), up(std::move(ex), *ctx)
    {
    }

    std::weak_ptr<tls_bridge> bridge;
    std::shared_ptr<entry> e;
    std::shared_ptr<asio::ssl::context> ctx;  // outlives `up`, which refers to it
    tcp::socket first;                        // the C client's TCP connection: what it sent before the swap
    asio::local::stream_protocol::socket down;  // the C client's side since the swap
    ino_t client_inode = 0;                     // of the socket the C client holds since the swap
    asio::ssl::stream<tcp::socket> up;          // the server's
    // A TLS record holds 16 KiB at most; the C client's requests are small.
    std::array<char, 16384> to_server{};
    std::array<char, 16384> to_client{};
    bool ended = false;
    bool heard = false;  // a byte came from the server after the handshake

    void start(bool verify_host);
    void pump_to_server();
    template <class Stream>
    void forward_to_server(Stream& from);
    void pump_to_client();
    std::size_t decrypt_buffered(std::size_t used);
    void refused(error_code ec, bool handshake_done)
    {
        if (auto b = bridge.lock()) {
            const long verify = handshake_done ? X509_V_OK : SSL_get_verify_result(up.native_handle());
            // Only TLS's own verdicts are certain: a connection that ends may be a server going down.
            b->on_refused(e, classify(ec, verify, heard), ec.category() == asio::error::get_ssl_category());
        }
    }
    void end()
    {
        if (ended) return;
        ended = true;
        error_code ignored;
        first.close(ignored);
        down.close(ignored);
        up.lowest_layer().close(ignored);
    }
};

namespace {

void log_tls(const std::string& what) { client_log(("tls: " + what).c_str()); }

// Asio opens its sockets without FD_CLOEXEC: a child started by exec (zklock(1) runs one) must
// not inherit the bridge's listeners and connections.
void close_on_exec(int fd)
{
    if (int flags = ::fcntl(fd, F_GETFD); flags != -1 && !(flags & FD_CLOEXEC)) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

// Whether `s`'s peer is the socket `fd` (a loopback IPv4 one): its local address is the peer's.
bool connected_to(const tcp::socket& s, int fd)
{
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    error_code ec;
    const tcp::endpoint peer = s.remote_endpoint(ec);
    if (ec || fd == -1 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0 || local.ss_family != AF_INET)
        return false;
    const auto& in = reinterpret_cast<const sockaddr_in&>(local);
    return tcp::endpoint(asio::ip::address_v4(ntohl(in.sin_addr.s_addr)), ntohs(in.sin_port)) == peer;
}

bool is_address(const std::string& host)
{
    error_code ec;
    (void)asio::ip::make_address(host, ec);
    return !ec;
}

}  // namespace

void tls_bridge::link::start(bool verify_host)
{
    SSL* ssl = up.native_handle();
    if (!is_address(e->host)) SSL_set_tlsext_host_name(ssl, e->host.c_str());
    if (verify_host) {
        if (is_address(e->host)) X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), e->host.c_str());
        else SSL_set1_host(ssl, e->host.c_str());
    }
    auto self = shared_from_this();
    asio::async_connect(up.lowest_layer(), e->endpoints, [self](error_code ec, const tcp::endpoint&) {
        if (self->ended) return;
        // Unreachable: the C client sees its connection end, as it would see a refused one.
        if (ec) return self->end();
        close_on_exec(self->up.lowest_layer().native_handle());
        error_code ignored;
        self->up.lowest_layer().set_option(tcp::no_delay(true), ignored);
        self->up.async_handshake(asio::ssl::stream_base::client, [self](error_code ec) {
            if (self->ended) return;
            if (ec) {
                self->refused(ec, false);
                return self->end();
            }
            if (auto b = self->bridge.lock()) b->on_handshake_done(self->e);
            self->pump_to_server();
            self->pump_to_client();
        });
    });
}

// What the C client sent on its TCP connection before the swap goes first: that connection ends
// (the swap closed the client's side) once it has been read.
void tls_bridge::link::pump_to_server()
{
    if (first.is_open()) forward_to_server(first);
    else forward_to_server(down);
}

template <class Stream>
void tls_bridge::link::forward_to_server(Stream& from)
{
    from.async_read_some(asio::buffer(to_server), [self = shared_from_this(), &from](error_code ec, std::size_t n) {
        if (self->ended) return;
        if (ec == asio::error::eof && static_cast<void*>(&from) == static_cast<void*>(&self->first)) {
            error_code ignored;
            self->first.close(ignored);
            return self->pump_to_server();
        }
        if (ec) return self->end();
        asio::async_write(self->up, asio::buffer(self->to_server.data(), n), [self](error_code ec, std::size_t) {
            if (self->ended) return;
            if (ec) return self->end();
            self->pump_to_server();
        });
    });
}

// The server writes each reply and watch event as a TLS record of its own, and one read of the
// socket often brings several; a read of the stream returns one record's plaintext. The records
// already read are decrypted here too (never reading the socket), so that they reach the C client
// in one write and one wake-up, not one each. A record still incomplete is left to the next read.
std::size_t tls_bridge::link::decrypt_buffered(std::size_t used)
{
    SSL* ssl = up.native_handle();
    std::size_t added = 0;
    while (used + added < to_client.size() && (SSL_pending(ssl) > 0 || BIO_ctrl_pending(SSL_get_rbio(ssl)) > 0)) {
        ERR_clear_error();
        const int r = SSL_read(ssl, to_client.data() + used + added, static_cast<int>(to_client.size() - used - added));
        if (r <= 0) break;  // incomplete, or an alert or an error: the next read of the stream meets it
        added += static_cast<std::size_t>(r);
    }
    ERR_clear_error();
    return added;
}

void tls_bridge::link::pump_to_client()
{
    up.async_read_some(asio::buffer(to_client), [self = shared_from_this()](error_code ec, std::size_t n) {
        if (self->ended) return;
        if (ec) {
            // With TLS 1.3 the server checks the client's certificate after the client's side of
            // the handshake is done: its refusal is the first thing read.
            if (!self->heard && ec.category() == asio::error::get_ssl_category()) self->refused(ec, true);
            return self->end();
        }
        self->heard = true;
        n += self->decrypt_buffered(n);
        asio::async_write(self->down, asio::buffer(self->to_client.data(), n), [self](error_code ec, std::size_t) {
            if (self->ended) return;
            if (ec) return self->end();
            self->pump_to_client();
        });
    });
}

// ---- the bridge ---------------------------------------------------------------------------------

tls_bridge::tls_bridge(asio::any_io_executor ex, tls_options options, hooks h)
    : ex_(std::move(ex)), options_(std::move(options)), hooks_(std::move(h))
{
}

tls_bridge::~tls_bridge() { shut_down(); }

std::shared_ptr<tls_bridge> tls_bridge::create(asio::any_io_executor ex, tls_options options, hooks h, error_code& ec)
{
    std::shared_ptr<tls_bridge> b(new tls_bridge(std::move(ex), std::move(options), std::move(h)));
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

std::vector<tls_bridge::file_stamp> tls_bridge::stamps() const
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

std::shared_ptr<asio::ssl::context> tls_bridge::load(const std::vector<file_stamp>& stamps) const
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

std::shared_ptr<asio::ssl::context> tls_bridge::make_context() const
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

std::shared_ptr<asio::ssl::context> tls_bridge::context()
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

std::string tls_bridge::front(std::string_view hosts, error_code& ec)
{
    ec = {};
    std::vector<std::shared_ptr<entry>> next;
    std::vector<std::shared_ptr<entry>> fresh;
    std::string list;
    for (std::string_view name : server_entries(hosts)) {
        if (std::any_of(next.begin(), next.end(), [&](const auto& e) { return e->name == name; })) continue;
        auto it = std::find_if(entries_.begin(), entries_.end(), [&](const auto& e) { return e->name == name; });
        std::shared_ptr<entry> e;
        if (it != entries_.end()) {
            e = *it;
        } else {
            e = std::make_shared<entry>(ex_);
            e->name = std::string(name);
            auto [host, port] = host_and_port(name);
            e->host = std::move(host);
            // As the C client resolves its list: once, here, on the calling thread.
            tcp::resolver resolver(ex_);
            error_code rec;
            auto results = resolver.resolve(e->host, port, rec);
            if (rec || results.empty()) continue;  // left out, as the C client leaves it out
            for (const auto& r : results) e->endpoints.push_back(r.endpoint());
            error_code aec;
            e->acceptor.open(tcp::v4(), aec);
            if (!aec) close_on_exec(e->acceptor.native_handle());
            if (!aec) e->acceptor.bind(tcp::endpoint(asio::ip::address_v4::loopback(), 0), aec);
            if (!aec) e->acceptor.listen(asio::socket_base::max_listen_connections, aec);
            if (!aec) e->front = e->acceptor.local_endpoint(aec);
            if (aec) {
                ec = aec;
                return {};
            }
            fresh.push_back(e);
        }
        next.push_back(e);
        if (!list.empty()) list += ',';
        list += "127.0.0.1:" + std::to_string(e->front.port());
    }
    if (next.empty()) {
        ec = errc::unresolvable_host;
        return {};
    }
    for (auto& e : entries_)
        if (std::find(next.begin(), next.end(), e) == next.end()) {
            error_code ignored;
            e->acceptor.close(ignored);  // a link accepted from it goes on until it ends
            e->retry.cancel();
        }
    entries_ = std::move(next);
    for (auto& e : fresh) accept(e);
    return list;
}

void tls_bridge::accept(const std::shared_ptr<entry>& e)
{
    e->acceptor.async_accept([w = weak_from_this(), e](error_code ec, tcp::socket s) {
        auto self = w.lock();
        if (!self || self->shut_down_ || !e->acceptor.is_open()) return;
        if (ec) {
            // Out of descriptors, most likely: not again at once.
            e->retry.expires_after(std::chrono::milliseconds(100));
            e->retry.async_wait([w, e](error_code ec) {
                auto self = w.lock();
                if (!ec && self && !self->shut_down_ && e->acceptor.is_open()) self->accept(e);
            });
            return;
        }
        close_on_exec(s.native_handle());
        self->on_accepted(e, std::move(s));
        self->accept(e);
    });
}

void tls_bridge::on_accepted(const std::shared_ptr<entry>& e, tcp::socket s)
{
    // Only the C client's own socket is carried.
    const int fd = hooks_.client_fd ? hooks_.client_fd() : -1;
    if (!connected_to(s, fd)) return;  // someone else: closed unanswered
    if (link_) link_->end();
    link_.reset();
    // The C client's socket becomes one end of a local socket pair, the bridge holds the other:
    // the bytes between them skip the loopback TCP stack. The swap happens under the same
    // number (the client keeps using it), and closes the client's side of the TCP connection.
    // Without a swap, `s` closes with the link: the client sees its connection end and tries again.
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) != 0) return;
    auto l = std::make_shared<link>(ex_, context(), std::move(s));
    error_code ec;
    l->down.assign(asio::local::stream_protocol(), sv[1], ec);
    if (ec) ::close(sv[1]);
    const bool swapped = !ec && ::dup3(sv[0], fd, O_CLOEXEC) != -1;
    ::close(sv[0]);
    if (!swapped) return;
    struct ::stat st {};
    ::fstat(fd, &st);  // a descriptor just made by dup3
    l->client_inode = st.st_ino;
    l->bridge = weak_from_this();
    l->e = e;
    link_ = l;
    l->start(options_.verify_host);
    // The session's reactor registration was for the socket the swap closed.
    if (hooks_.client_socket_replaced) hooks_.client_socket_replaced();
}

void tls_bridge::client_socket_changed(int fd, ino_t inode)
{
    if (!link_) return;
    if (link_->ended || fd == -1 || inode != link_->client_inode) {
        link_->end();
        link_.reset();
    }
}

std::optional<tcp::endpoint> tls_bridge::carried_front() const
{
    if (!link_ || link_->ended) return std::nullopt;
    return link_->e->front;
}

void tls_bridge::on_refused(const std::shared_ptr<entry>& e, error_code ec, bool certain)
{
    if (!ec) return;
    log_tls(e->name + ": " + ec.message());
    last_refusal_ = ec;
    if (!certain) return;
    e->refusal = ec;
    if (std::all_of(entries_.begin(), entries_.end(), [](const auto& x) { return bool(x->refusal); }) &&
        std::find(entries_.begin(), entries_.end(), e) != entries_.end() && hooks_.all_refused)
        hooks_.all_refused(ec);
}

void tls_bridge::on_handshake_done(const std::shared_ptr<entry>&) { forget_refusals(); }

void tls_bridge::forget_refusals()
{
    for (auto& x : entries_) x->refusal = {};
    last_refusal_ = {};
}

void tls_bridge::shut_down()
{
    shut_down_ = true;
    for (auto& e : entries_) {
        error_code ignored;
        e->acceptor.close(ignored);
        e->retry.cancel();
    }
    entries_.clear();
    if (link_) link_->end();
    link_.reset();
}

error_code tls_bridge::classify(const error_code& ec, long verify_result, bool heard_anything)
{
    if (ec.category() != asio::error::get_ssl_category()) {
        // The connection ended in the handshake: a plaintext ZooKeeper closes it at once on a
        // ClientHello (its first four bytes are no frame length it accepts).
        if (!heard_anything && (ec == asio::ssl::error::stream_truncated || ec == asio::error::eof ||
                                ec == asio::error::connection_reset))
            return errc::tls_server_not_tls;
        return {};
    }
    switch (ERR_GET_REASON(static_cast<unsigned long>(ec.value()))) {
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
                              tls_bridge::classify(ec, X509_V_OK, true) != error_code(errc::tls_server_not_tls)));
        });
    });
}

}  // namespace zklock::detail
