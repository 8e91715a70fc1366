// TLS in a build without it (ZKLOCK_TLS=OFF, no OpenSSL): a session configured with
// session_config::tls fails async_connect with errc::not_supported, and says why in the client
// log. No connection then has a TLS setup, so the engine is never made; its members are here only
// so that the channel (client_io.cpp), which is the same in both builds, links.
#include "bridge/tls_context.hpp"
#include "bridge/tls_engine.hpp"
#include "bridge/zk_requests.hpp"

#include <boost/asio/post.hpp>

#include <utility>

namespace zklock::detail {

std::shared_ptr<tls_context> tls_context::create(tls_options, error_code& ec)
{
    client_log("tls: this libzklock was built without TLS (ZKLOCK_TLS=OFF); session_config::tls cannot be used");
    ec = errc::not_supported;
    return nullptr;
}

std::shared_ptr<asio::ssl::context> tls_context::context() { return nullptr; }

void probe_tls(const asio::any_io_executor& ex, const std::string&, std::function<void(bool)> done)
{
    asio::post(ex, [done = std::move(done)] { done(false); });
}

tls_engine::tls_engine(std::shared_ptr<asio::ssl::context> ctx, const std::string&, bool) : ctx_(std::move(ctx))
{
    error_ = errc::not_supported;
    certain_ = true;
}
tls_engine::~tls_engine() = default;
void tls_engine::put_input(const char*, std::size_t) {}
bool tls_engine::handshake() { return false; }
void tls_engine::encrypt(const char*, std::size_t) {}
bool tls_engine::decrypt(std::vector<char>&) { return false; }
void tls_engine::take_output(std::vector<char>&) {}
void tls_engine::ended_early() {}

}  // namespace zklock::detail
