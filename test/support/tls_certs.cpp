#include "support/tls_certs.hpp"

#include "support/failure.hpp"
#include "support/process_util.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <stdexcept>

namespace zklock::test {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

using sys_clock = std::chrono::system_clock;

// The form `openssl ca -startdate/-enddate` takes (GeneralizedTime, UTC).
std::string asn1_time(sys_clock::time_point t)
{
    const std::time_t tt = sys_clock::to_time_t(t);
    std::tm tm{};
    ::gmtime_r(&tt, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y%m%d%H%M%SZ", &tm);
    return buf;
}

void openssl(std::vector<std::string> args)
{
    args.insert(args.begin(), "openssl");
    const detail::process_result r = detail::run_process(args, 30s);
    if (r.status == 0) return;
    std::string command;
    for (const auto& a : args) command += (command.empty() ? "" : " ") + a;
    throw std::runtime_error("tls_certs: `" + command + "` " +
                             (r.timed_out ? "timed out" : "failed with status " + std::to_string(r.status)) +
                             ":\n" + r.err);
}

// One config for every step: `openssl req` needs a [req] section, `openssl ca` a CA section (a
// database and a policy). -preserveDN keeps each request's RDN order; the policy only lists the
// fields allowed. Both CAs share the database (unique_subject = no, random serials).
std::string openssl_config(const fs::path& dir)
{
    return "[req]\n"
           "distinguished_name = req_dn\n"
           "[req_dn]\n"
           "[ca]\n"
           "default_ca = test_ca\n"
           "[test_ca]\n"
           "database = " + (dir / "db/index.txt").string() + "\n"
           "new_certs_dir = " + (dir / "db").string() + "\n"
           "rand_serial = yes\n"
           "default_md = sha256\n"
           "policy = any_dn\n"
           "unique_subject = no\n"
           "email_in_dn = no\n"
           "copy_extensions = none\n"
           "[any_dn]\n"
           "organizationName = optional\n"
           "organizationalUnitName = optional\n"
           "commonName = supplied\n"
           "[ca_ext]\n"
           "basicConstraints = critical, CA:true\n"
           "keyUsage = critical, keyCertSign, cRLSign\n"
           "subjectKeyIdentifier = hash\n"
           "[server_ext]\n"
           "basicConstraints = critical, CA:false\n"
           "keyUsage = critical, digitalSignature\n"
           "extendedKeyUsage = serverAuth\n"
           "subjectKeyIdentifier = hash\n"
           "authorityKeyIdentifier = keyid\n"
           "subjectAltName = IP:127.0.0.1, IP:::1, DNS:localhost\n"
           "[wrong_host_ext]\n"
           "basicConstraints = critical, CA:false\n"
           "keyUsage = critical, digitalSignature\n"
           "extendedKeyUsage = serverAuth\n"
           "subjectKeyIdentifier = hash\n"
           "authorityKeyIdentifier = keyid\n"
           "subjectAltName = DNS:wrong.example\n"
           "[client_ext]\n"
           "basicConstraints = critical, CA:false\n"
           "keyUsage = critical, digitalSignature\n"
           "extendedKeyUsage = clientAuth\n"
           "subjectKeyIdentifier = hash\n"
           "authorityKeyIdentifier = keyid\n";
}

constexpr const char* leaf_dn_suffix = "/O=zklock/OU=zklock-test/CN=";

void check_client_name(std::string_view name)
{
    const auto& names = tls_certs::client_names();
    if (std::find(names.begin(), names.end(), name) == names.end())
        throw std::invalid_argument("tls_certs: no client named \"" + std::string(name) + "\"");
}

}  // namespace

tls_certs::tls_certs() : dir_(detail::make_temp_dir("zklock-tls")), uncaught_(std::uncaught_exceptions())
{
    try {
        generate();
    } catch (...) {
        std::fprintf(stderr, "zklock::test::tls_certs: generation failed, kept %s\n", dir_.c_str());
        throw;
    }
}

tls_certs::~tls_certs()
{
    if (keep_ || std::uncaught_exceptions() > uncaught_ || should_keep_files()) {
        std::fprintf(stderr, "zklock::test::tls_certs: kept %s\n", dir_.c_str());
    } else {
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }
}

void tls_certs::generate()
{
    fs::create_directory(dir_ / "db");
    detail::write_file(dir_ / "db/index.txt", "");
    const fs::path config = dir_ / "openssl.cnf";
    detail::write_file(config, openssl_config(dir_));

    const auto now = sys_clock::now();
    const auto day = std::chrono::hours(24);
    // A key and a request for `subject`, then the certificate, signed by `ca` (self-signed if
    // empty) and valid over [from, until).
    const auto make = [&](const std::string& name, const std::string& subject, const std::string& extensions,
                          const std::string& ca, sys_clock::time_point from, sys_clock::time_point until) {
        const fs::path key = dir_ / (name + ".key"), csr = dir_ / "db" / (name + ".csr"), cert = dir_ / (name + ".pem");
        openssl({"req", "-config", config.string(), "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-nodes", "-keyout", key.string(), "-out", csr.string(), "-subj", subject});
        std::vector<std::string> sign = {"ca", "-config", config.string(), "-batch", "-notext", "-preserveDN",
                                         "-in", csr.string(), "-out", cert.string(), "-extensions", extensions,
                                         "-startdate", asn1_time(from), "-enddate", asn1_time(until)};
        if (ca.empty()) {
            sign.insert(sign.end(), {"-selfsign", "-keyfile", key.string()});
        } else {
            sign.insert(sign.end(), {"-cert", (dir_ / (ca + ".pem")).string(), "-keyfile", (dir_ / (ca + ".key")).string()});
        }
        openssl(std::move(sign));
    };

    make("ca", "/O=zklock/CN=zklock test CA", "ca_ext", "", now - 30 * day, now + 30 * day);
    make("untrusted-ca", "/O=zklock/CN=zklock untrusted CA", "ca_ext", "", now - 30 * day, now + 30 * day);
    const auto from = now - 1h, until = now + 2 * day;
    make("server", leaf_dn_suffix + std::string("localhost"), "server_ext", "ca", from, until);
    for (const auto& name : client_names()) {
        make("client-" + name, leaf_dn_suffix + name, "client_ext", "ca", from, until);
        detail::write_file(client_keystore(name), detail::read_file_from(client_key(name)) +
                                                      detail::read_file_from(client_cert(name)));
    }
    make("expired", leaf_dn_suffix + std::string("localhost"), "server_ext", "ca", now - 10 * day, now - day);
    make("not-yet-valid", leaf_dn_suffix + std::string("localhost"), "server_ext", "ca", now + day, now + 10 * day);
    make("wrong-host", leaf_dn_suffix + std::string("wrong.example"), "wrong_host_ext", "ca", from, until);
    make("untrusted", leaf_dn_suffix + std::string("localhost"), "server_ext", "untrusted-ca", from, until);
}

const std::vector<std::string>& tls_certs::client_names()
{
    static const std::vector<std::string> names = {"alice", "bob"};
    return names;
}

fs::path tls_certs::client_cert(std::string_view name) const
{
    check_client_name(name);
    return dir_ / ("client-" + std::string(name) + ".pem");
}

fs::path tls_certs::client_key(std::string_view name) const
{
    check_client_name(name);
    return dir_ / ("client-" + std::string(name) + ".key");
}

fs::path tls_certs::client_keystore(std::string_view name) const
{
    check_client_name(name);
    return dir_ / ("client-" + std::string(name) + "-keystore.pem");
}

std::string tls_certs::client_subject(std::string_view name)
{
    check_client_name(name);
    return "CN=" + std::string(name) + ",OU=zklock-test,O=zklock";
}

tls_server_options tls_certs::server_tls(tls_server_options::client_auth auth) const
{
    return {.cert = server_cert(), .key = server_key(), .ca = ca_cert(), .auth = auth};
}

tls_server_options tls_certs::server_tls(bad_server which, tls_server_options::client_auth auth) const
{
    tls_server_options tls = server_tls(auth);
    switch (which) {
    case bad_server::expired: tls.cert = expired_server_cert(), tls.key = expired_server_key(); break;
    case bad_server::not_yet_valid: tls.cert = not_yet_valid_server_cert(), tls.key = not_yet_valid_server_key(); break;
    case bad_server::wrong_host: tls.cert = wrong_host_server_cert(), tls.key = wrong_host_server_key(); break;
    case bad_server::untrusted: tls.cert = untrusted_server_cert(), tls.key = untrusted_server_key(); break;
    }
    return tls;
}

const tls_certs& shared_tls_certs()
{
    static const tls_certs certs;
    return certs;
}

}  // namespace zklock::test
