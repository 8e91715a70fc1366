// The TLS fault tests' server and sessions (test_tls.cpp, test_seam.cpp).
#pragma once

#include "fault_common.hpp"

#include "support/tls_certs.hpp"

#include <string>
#include <string_view>

#include <unistd.h>

namespace zklock::test {

// The lock tests' TLS server: plaintext port and TLS port, client certificates wanted.
inline zk_server& tls_server()
{
    static zk_server server{server_options{.tick_time = 200ms, .tls = shared_tls_certs().server_tls()}};
    return server;
}

// A TLS session trusting the test CA, with `who`'s client certificate (none when empty).
inline session_config tls_config(const std::string& servers, std::string_view who = "alice",
                                  std::chrono::milliseconds session_timeout = 4000ms)
{
    auto c = config_for(servers, session_timeout);
    const auto& certs = shared_tls_certs();
    c.tls.enabled = true;
    c.tls.ca_file = certs.ca_cert().string();
    if (!who.empty()) {
        c.tls.cert_file = certs.client_cert(who).string();
        c.tls.key_file = certs.client_key(who).string();
    }
    return c;
}

// A unique root: the nodes of a certificate's session are writable by it alone.
inline std::string unique_root(const std::string& name)
{
    static int counter = 0;
    return "/zklock-tls-" + name + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

}  // namespace zklock::test
