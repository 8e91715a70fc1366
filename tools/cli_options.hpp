// tools/cli_options.hpp — the zklock command line: its exit statuses, and how argv is read.
#pragma once

#include <zklock/election.hpp>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zklock::cli {

/// zklock's own exit statuses. They sit where sysexits(3) puts them (64..78) or just after that
/// range, so they do not collide with the statuses ordinary commands use (0, 1, 2), with the
/// shell's 126/127 or with 128+N for "killed by signal N". COMMAND's own status passes through
/// unchanged: a COMMAND that itself exits with one of these values cannot be told apart.
namespace exit_status {
inline constexpr int usage = 64;           ///< EX_USAGE: bad option, missing operand, bad path or duration
inline constexpr int unavailable = 69;     ///< EX_UNAVAILABLE: no server within --connect-timeout, ZooKeeper error
inline constexpr int internal = 70;        ///< EX_SOFTWARE: a bug (unexpected exception)
inline constexpr int os_error = 71;        ///< EX_OSERR: a system call failed (signalfd, ...)
inline constexpr int not_acquired = 75;    ///< EX_TEMPFAIL: --try found the lock taken (or a leader), or --timeout passed
                                           ///< (the default of --conflict-exit-code)
inline constexpr int no_leader = 75;       ///< EX_TEMPFAIL: `zklock leader` found nobody leading (a later look may)
inline constexpr int no_holder = 75;       ///< EX_TEMPFAIL: `zklock revoke` found no holder to ask
inline constexpr int lock_lost = 79;       ///< the lock (or leadership) was lost while COMMAND ran; COMMAND was terminated
inline constexpr int interrupted = 80;     ///< SIGINT/SIGTERM/SIGHUP/SIGQUIT while connecting, waiting or campaigning
inline constexpr int revoked = 81;         ///< a revocation request (`zklock revoke`) ended COMMAND; the lock was released
inline constexpr int cannot_execute = 126; ///< COMMAND found but could not be executed (as in sh, env, timeout)
inline constexpr int not_found = 127;      ///< COMMAND not found
}  // namespace exit_status

enum class mode {
    run,     ///< zklock [options] LOCKPATH [--] COMMAND [ARGS...]
    list,    ///< zklock list [options] LOCKPATH
    elect,   ///< zklock elect [options] PATH [--] COMMAND [ARGS...]
    leader,  ///< zklock leader [options] PATH
    revoke,  ///< zklock revoke [options] LOCKPATH
    help,    ///< zklock --help
    version, ///< zklock --version
};

struct options {
    mode what = mode::run;
    std::string servers;
    std::string path;  ///< LOCKPATH, or the election's PATH
    std::vector<std::string> command;  ///< COMMAND [ARGS...], or {"/bin/sh", "-c", CMDLINE} for -c
    std::optional<std::chrono::milliseconds> timeout;  ///< none: wait until acquired
    bool try_only = false;
    int conflict_exit_code = exit_status::not_acquired;  ///< -E: the status when --try or --timeout fails
    bool shared = false;
    std::uint32_t permits = 0;  ///< --semaphore N: hold one of N permits (0: a lock)
    std::chrono::milliseconds session_timeout{10'000};
    bool session_timeout_given = false;  ///< --session-timeout was on the command line
    std::chrono::milliseconds connect_timeout{10'000};
    std::chrono::milliseconds kill_after{5'000};
    std::string owner;  ///< empty: the library's "<host>:<pid>"
    std::string value;  ///< elect: the candidate's value; empty: the library's "<host>:<pid>"
    zklock::election_names names = zklock::election_names::curator_selector;  ///< elect: --names
    bool watch = false;  ///< leader: --watch
    bool json = false;   ///< list: --json
    bool verbose = false;
    bool tls = false;  ///< --tls, or any --tls-* option or variable given
    std::string tls_ca, tls_cert, tls_key;
};

/// The environment variables zklock reads (null: unset).
struct environment {
    const char* servers = nullptr;   ///< ZK_SERVERS: default for --servers
    const char* tls_ca = nullptr;    ///< ZKLOCK_TLS_CA: default for --tls-ca
    const char* tls_cert = nullptr;  ///< ZKLOCK_TLS_CERT
    const char* tls_key = nullptr;   ///< ZKLOCK_TLS_KEY
    /// The process's own ones.
    static environment of_process();
};

/// Either options, or a one-line message for a usage error (exit status 64).
struct parse_result {
    std::optional<options> opts;
    std::string error;
};

/// Reads argv. `env_servers` is $ZK_SERVERS (may be null). Validates everything that can be
/// validated without a server: the lock or election path, the server list, the durations, --names.
parse_result parse_command_line(int argc, const char* const* argv, const environment& env);
/// The same with only $ZK_SERVERS set (or nothing, for null).
parse_result parse_command_line(int argc, const char* const* argv, const char* env_servers);

/// "500ms", "10s", "1.5s", "2m", "1h"; a bare number is seconds. nullopt if malformed or huge.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text);

/// "curator-latch", "kazoo", "curator-selector" (what --names takes). nullopt for anything else.
std::optional<zklock::election_names> parse_election_names(std::string_view text);
/// The inverse.
std::string_view to_string(zklock::election_names names) noexcept;

/// The inverse of parse_duration, for messages: "500ms", "10s", "1.5s", "2m", "1m30s".
std::string format_duration(std::chrono::milliseconds d);

/// What `zklock --help` prints.
std::string help_text();

}  // namespace zklock::cli
