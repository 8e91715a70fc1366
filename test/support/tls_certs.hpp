// support/tls_certs.hpp — throwaway certificates for the TLS tests, made with openssl at test time.
#pragma once

#include "support/zk_server.hpp"

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::test {

/// A test PKI made in a temp dir of its own by the `openssl` command line (nothing is checked in).
/// Every key is EC P-256 (unencrypted PKCS#8 PEM), every certificate a PEM file. The good
/// certificates are valid from an hour ago for two days, the CAs from 30 days ago for 60 days.
///
///   ca_cert()            "CN=zklock test CA,O=zklock", self-signed; what clients and servers trust
///   server_cert()        "CN=localhost,OU=zklock-test,O=zklock" by the CA; subjectAltName
///                        IP:127.0.0.1, IP:::1, DNS:localhost; extendedKeyUsage serverAuth
///   client_cert(name)    "CN=<name>,OU=zklock-test,O=zklock" by the CA, for each of
///                        client_names(); extendedKeyUsage clientAuth
///   expired_server_cert()        as server_cert(), valid from 10 days ago until yesterday
///   not_yet_valid_server_cert()  as server_cert(), valid from tomorrow for 9 days
///   wrong_host_server_cert()     "CN=wrong.example,...", subjectAltName DNS:wrong.example only
///   untrusted_server_cert()      as server_cert(), by untrusted_ca_cert() ("CN=zklock untrusted
///                                CA,O=zklock"), which no client is given
/// Each server certificate has a key of its own (the matching *_key()).
///
/// Generation takes about 0.3 s (some 16 openssl runs); shared_tls_certs() makes one set per
/// process. Throws std::runtime_error with openssl's stderr when a step fails (the dir is kept).
/// The destructor removes the dir unless keep_files() was called, an exception is unwinding or a
/// failure was noted (support/failure.hpp), as zk_server does.
class tls_certs {
public:
    /// The bad server certificates, for handshake-error tests.
    enum class bad_server { expired, not_yet_valid, wrong_host, untrusted };

    tls_certs();
    ~tls_certs();
    tls_certs(const tls_certs&) = delete;
    tls_certs& operator=(const tls_certs&) = delete;

    std::filesystem::path ca_cert() const { return dir_ / "ca.pem"; }
    std::filesystem::path server_cert() const { return dir_ / "server.pem"; }
    std::filesystem::path server_key() const { return dir_ / "server.key"; }

    /// "alice" and "bob".
    static const std::vector<std::string>& client_names();
    /// Throw std::invalid_argument for a name not in client_names().
    std::filesystem::path client_cert(std::string_view name) const;
    std::filesystem::path client_key(std::string_view name) const;
    /// The client's key followed by its certificate in one PEM file: a key store for ZooKeeper's
    /// Java client (zookeeper.ssl.keyStore.type=PEM).
    std::filesystem::path client_keystore(std::string_view name) const;
    /// The subject as ZooKeeper's X509AuthenticationProvider names the client (Java's
    /// X500Principal.getName(), RFC 2253: most specific RDN first): the client's ACL id is
    /// "x509:" + client_subject(name), e.g. "CN=alice,OU=zklock-test,O=zklock".
    static std::string client_subject(std::string_view name);

    std::filesystem::path expired_server_cert() const { return dir_ / "expired.pem"; }
    std::filesystem::path expired_server_key() const { return dir_ / "expired.key"; }
    std::filesystem::path not_yet_valid_server_cert() const { return dir_ / "not-yet-valid.pem"; }
    std::filesystem::path not_yet_valid_server_key() const { return dir_ / "not-yet-valid.key"; }
    std::filesystem::path wrong_host_server_cert() const { return dir_ / "wrong-host.pem"; }
    std::filesystem::path wrong_host_server_key() const { return dir_ / "wrong-host.key"; }
    std::filesystem::path untrusted_server_cert() const { return dir_ / "untrusted.pem"; }
    std::filesystem::path untrusted_server_key() const { return dir_ / "untrusted.key"; }
    std::filesystem::path untrusted_ca_cert() const { return dir_ / "untrusted-ca.pem"; }

    /// server_options::tls for a zk_server presenting server_cert() and trusting ca_cert() for
    /// client certificates.
    tls_server_options server_tls(tls_server_options::client_auth auth = tls_server_options::client_auth::want) const;
    /// The same with one of the bad certificates (the server still trusts ca_cert()).
    tls_server_options server_tls(bad_server which,
                                  tls_server_options::client_auth auth = tls_server_options::client_auth::want) const;

    void keep_files() { keep_ = true; }
    std::filesystem::path dir() const { return dir_; }

private:
    void generate();

    std::filesystem::path dir_;
    bool keep_ = false;
    int uncaught_ = 0;
};

/// One tls_certs per process, made on first use (thread-safe), removed at exit.
const tls_certs& shared_tls_certs();

}  // namespace zklock::test
