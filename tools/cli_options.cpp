// The zklock command line. A small table-driven parser, not Boost.Program_options: see the comment
// above parse_command_line.
#include "cli_options.hpp"

#include <zklock/queue.hpp>

#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

namespace zklock::cli {

namespace {

// Which commands take an option (a bit per mode that reads options).
enum applies_to : unsigned {
    to_run = 1,
    to_list = 2,
    to_elect = 4,
    to_leader = 8,
    to_revoke = 16,
    to_all = to_run | to_list | to_elect | to_leader | to_revoke,
};

struct option_spec {
    std::string_view long_name;
    char short_name;  // 0: none
    std::string_view value_name;  // empty: a flag
    std::string_view help;
    unsigned applies;  // applies_to bits
};

constexpr std::array<option_spec, 22> specs{{
    {"servers", 0, "H:P,...",
     "ZooKeeper servers, optionally followed by a chroot (h1:2181,h2:2181/app). Default: $ZK_SERVERS, "
     "else 127.0.0.1:2181.",
     to_all},
    {"timeout", 'w', "DURATION",
     "Give up (status 75) if the lock (elect: leadership) is not acquired within DURATION. 0 means --try. "
     "Default: wait until acquired.",
     to_run | to_elect},
    {"try", 'n', "", "Fail at once (status 75) if the lock is taken (elect: if someone leads).", to_run | to_elect},
    {"conflict-exit-code", 'E', "N",
     "The exit status when the lock (elect: leadership) is not acquired, --try or --timeout failing, instead "
     "of 75 (0..255).",
     to_run | to_elect},
    {"shared", 's', "", "Take the lock shared (a reader): shared holders exclude only exclusive ones.", to_run},
    {"semaphore", 0, "N",
     "Hold one of N permits of a counting semaphore at LOCKPATH instead of the lock: at most N holders at "
     "once, in queue order. Every user of LOCKPATH gives the same N. Excludes --shared.",
     to_run},
    {"command", 'c', "CMDLINE", "Run CMDLINE with /bin/sh -c, instead of COMMAND [ARGS...].", to_run | to_elect},
    {"session-timeout", 0, "DURATION",
     "ZooKeeper session timeout (default 10s; the server clamps it to 2..20 ticks, and zklock warns when it "
     "did). If zklock cannot reach a server for this long, the lock (leadership) is lost.",
     to_run | to_elect | to_leader},
    {"connect-timeout", 0, "DURATION",
     "Give up (status 69) if no server accepts a session within DURATION (default 10s).", to_all},
    {"kill-after", 0, "DURATION",
     "When the lock (leadership) is lost or revoked, COMMAND gets SIGTERM, then SIGKILL if it still runs "
     "DURATION later (default 5s).",
     to_run | to_elect},
    {"tls", 0, "",
     "Reach the servers over TLS (the ports of their secureClientPort), trusting the system's CAs unless "
     "--tls-ca says otherwise. Any --tls-* option implies it.",
     to_all},
    {"tls-ca", 0, "FILE", "PEM file of the CAs to trust for the servers' certificates. Default: $ZKLOCK_TLS_CA.",
     to_all},
    {"tls-cert", 0, "FILE",
     "PEM client certificate, for servers that ask for one (with --tls-key). Default: $ZKLOCK_TLS_CERT.", to_all},
    {"tls-key", 0, "FILE", "PEM private key of --tls-cert. Default: $ZKLOCK_TLS_KEY.", to_all},
    {"owner", 0, "TEXT",
     "Stored in the queue node and shown by 'zklock list' (default: HOST:PID of this zklock).", to_run},
    {"value", 0, "TEXT",
     "elect: the candidate's value, stored in its node and shown by 'zklock leader' (default: HOST:PID of "
     "this zklock).",
     to_elect},
    {"names", 0, "NAMES",
     "elect: name the candidate node as the library sharing PATH names its own: curator-selector (Curator's "
     "LeaderSelector, the default), curator-latch (Curator's LeaderLatch) or kazoo (Kazoo's Election).",
     to_elect},
    {"watch", 0, "", "leader: print each change of leader, one line each, until SIGINT, SIGTERM, SIGHUP or SIGQUIT (status 0).",
     to_leader},
    {"json", 0, "", "list: print the queue as one JSON document.", to_list},
    {"verbose", 'v', "",
     "Report progress (connected and the session timeout granted, waiting and how many ahead when the lock is "
     "not granted at once, acquired, released) on stderr.",
     to_all},
    {"version", 'V', "", "Print the version and exit.", to_all},
    {"help", 'h', "", "Print this help and exit.", to_all},
}};

const option_spec* find_long(std::string_view name)
{
    for (auto& s : specs)
        if (s.long_name == name) return &s;
    return nullptr;
}

const option_spec* find_short(char c)
{
    for (auto& s : specs)
        if (s.short_name == c) return &s;
    return nullptr;
}

constexpr std::string_view usage_line =
    "usage: zklock [OPTIONS] LOCKPATH [--] COMMAND [ARGS...] | zklock [OPTIONS] LOCKPATH -c CMDLINE | "
    "zklock list [OPTIONS] LOCKPATH | zklock elect [OPTIONS] PATH [--] COMMAND [ARGS...] | "
    "zklock leader [OPTIONS] PATH | zklock revoke [OPTIONS] LOCKPATH | zklock --help | zklock --version";
constexpr std::string_view elect_usage = "usage: zklock elect [OPTIONS] PATH [--] COMMAND [ARGS...]";
constexpr std::string_view leader_usage = "usage: zklock leader [--watch] [OPTIONS] PATH";
constexpr std::string_view revoke_usage = "usage: zklock revoke [OPTIONS] LOCKPATH";

/// The subcommand word a mode is named by on the command line ("" for run).
std::string_view subcommand_name(mode m)
{
    switch (m) {
    case mode::list: return "list";
    case mode::elect: return "elect";
    case mode::leader: return "leader";
    case mode::revoke: return "revoke";
    default: return "";
    }
}

unsigned applies_bit(mode m)
{
    switch (m) {
    case mode::list: return to_list;
    case mode::elect: return to_elect;
    case mode::leader: return to_leader;
    case mode::revoke: return to_revoke;
    default: return to_run;
    }
}

/// Why `spec` is refused in mode `m`: names the command it belongs to, or the option to use instead.
std::string not_applicable(const option_spec& spec, mode m)
{
    const std::string flag = "option '--" + std::string(spec.long_name) + "'";
    if (m == mode::run) {
        for (mode other : {mode::elect, mode::leader, mode::list, mode::revoke})
            if (spec.applies == applies_bit(other))
                return flag + " applies only to 'zklock " + std::string(subcommand_name(other)) + "'";
        return flag + " does not apply to 'zklock LOCKPATH COMMAND'";
    }
    std::string message = flag + " does not apply to 'zklock " + std::string(subcommand_name(m)) + "'";
    if (m == mode::elect && spec.long_name == "owner") message += " (use --value)";
    if (m == mode::elect && (spec.long_name == "shared" || spec.long_name == "semaphore"))
        message += " (leadership is exclusive)";
    return message;
}

parse_result fail(std::string message) { return {std::nullopt, std::move(message)}; }

/// A whole decimal number within [min, max], nothing else ("+1", " 1", "1x" are refused).
std::optional<std::uint64_t> parse_number(std::string_view text, std::uint64_t min, std::uint64_t max)
{
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size() || n < min || n > max) return std::nullopt;
    return n;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text)
{
    // <number>[ms|s|m|h]; the number may have a fraction ("1.5s"). Bare numbers are seconds, as
    // flock(1)'s -w and timeout(1) read them.
    std::size_t unit_at = text.find_first_not_of("0123456789.");
    const std::string_view number = text.substr(0, unit_at);
    const std::string_view unit = unit_at == std::string_view::npos ? std::string_view{} : text.substr(unit_at);
    if (number.empty() || number.front() == '.' || number.back() == '.') return std::nullopt;
    double value = 0;
    auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (ec != std::errc{} || end != number.data() + number.size()) return std::nullopt;
    double scale = 0;
    if (unit == "ms") scale = 1;
    else if (unit.empty() || unit == "s") scale = 1e3;
    else if (unit == "m") scale = 60e3;
    else if (unit == "h") scale = 3600e3;
    else return std::nullopt;
    const double ms = std::round(value * scale);
    if (!(ms >= 0) || ms > 1e10) return std::nullopt;  // ~115 days: far beyond any sane wait
    return std::chrono::milliseconds(static_cast<std::int64_t>(ms));
}

std::string format_duration(std::chrono::milliseconds d)
{
    const auto ms = d.count();
    char buf[64];
    if (ms < 1000) std::snprintf(buf, sizeof buf, "%lldms", static_cast<long long>(ms));
    else if (ms < 60'000 && ms % 1000 == 0) std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(ms / 1000));
    else if (ms < 60'000) std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000);
    else if (ms % 60'000 == 0) std::snprintf(buf, sizeof buf, "%lldm", static_cast<long long>(ms / 60'000));
    else std::snprintf(buf, sizeof buf, "%lldm%llds", static_cast<long long>(ms / 60'000), static_cast<long long>(ms % 60'000 / 1000));
    return buf;
}

// Why not Boost.Program_options: it accepts options anywhere on the line, so in
// `zklock /l sh -c 'x'` it rejects COMMAND's `-c` ("unrecognised option"), and in
// `zklock /l tool --timeout 5` it would silently take the tool's --timeout for ours. zklock must
// stop reading options at COMMAND, as flock(1), env(1) and POSIX utilities do. Program_options'
// only hook for that (extra_style_parser) is also called on candidate option values as a probe
// (cmdline::finish_option), so a parser that counts operands would have to tell probes from real
// tokens by the address of a vector internal to Program_options. Twenty-odd options do not need a
// library: this table-driven parser is short, has no hidden rules (no abbreviations, no
// interleaving) and produces one-line messages.
//
// Syntax: options (--name VALUE, --name=VALUE, -w VALUE, -wVALUE, -sn grouped flags) come before
// the operands. The first operand is LOCKPATH, or a subcommand word ("list", "elect", "leader",
// "revoke") followed by a path. In run and elect modes the operand after the path starts COMMAND: it and
// everything after it are COMMAND's, options or not. "--" ends the options explicitly. Each
// option says which modes take it; any other mode refuses it by name.
environment environment::of_process()
{
    environment e;
    e.servers = std::getenv("ZK_SERVERS");
    e.tls_ca = std::getenv("ZKLOCK_TLS_CA");
    e.tls_cert = std::getenv("ZKLOCK_TLS_CERT");
    e.tls_key = std::getenv("ZKLOCK_TLS_KEY");
    return e;
}

parse_result parse_command_line(int argc, const char* const* argv, const char* env_servers)
{
    environment env;
    env.servers = env_servers;
    return parse_command_line(argc, argv, env);
}

std::optional<zklock::election_names> parse_election_names(std::string_view text)
{
    if (text == "curator-latch") return zklock::election_names::curator_latch;
    if (text == "kazoo") return zklock::election_names::kazoo;
    if (text == "curator-selector") return zklock::election_names::curator_selector;
    return std::nullopt;
}

std::string_view to_string(zklock::election_names names) noexcept
{
    switch (names) {
    case zklock::election_names::curator_latch: return "curator-latch";
    case zklock::election_names::kazoo: return "kazoo";
    case zklock::election_names::curator_selector: return "curator-selector";
    }
    return "?";
}

parse_result parse_command_line(int argc, const char* const* argv, const environment& env)
{
    std::vector<std::string> operands;
    std::vector<std::pair<const option_spec*, std::string>> given;  // in order; the last one wins
    mode what = mode::run;  // a subcommand word as the first operand changes it

    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        // After LOCKPATH (run) or PATH (elect) comes COMMAND; list, leader and revoke take no COMMAND.
        const bool command_next = (what == mode::run || what == mode::elect) && operands.size() == 1;
        if (arg == "--") {
            for (++i; i < argc; ++i) operands.emplace_back(argv[i]);
            break;
        }
        if (arg.size() >= 2 && arg[0] == '-') {  // between LOCKPATH and COMMAND too
            if (arg[1] == '-') {
                const auto eq = arg.find('=');
                const std::string_view name = arg.substr(2, eq == std::string_view::npos ? std::string_view::npos : eq - 2);
                const option_spec* spec = find_long(name);
                if (!spec) return fail("unknown option '--" + std::string(name) + "'; see 'zklock --help'");
                std::string value;
                if (spec->value_name.empty()) {
                    if (eq != std::string_view::npos)
                        return fail("option '--" + std::string(name) + "' takes no value");
                } else if (eq != std::string_view::npos) {
                    value = std::string(arg.substr(eq + 1));
                } else if (i + 1 < argc) {
                    value = argv[++i];
                } else {
                    return fail("option '--" + std::string(name) + "' needs a value (" + std::string(spec->value_name) + ")");
                }
                given.emplace_back(spec, std::move(value));
            } else {
                for (std::size_t j = 1; j < arg.size(); ++j) {
                    const option_spec* spec = find_short(arg[j]);
                    if (!spec) return fail(std::string("unknown option '-") + arg[j] + "'; see 'zklock --help'");
                    if (spec->value_name.empty()) {
                        given.emplace_back(spec, std::string{});
                        continue;
                    }
                    std::string value;
                    if (j + 1 < arg.size()) value = std::string(arg.substr(j + 1));
                    else if (i + 1 < argc) value = argv[++i];
                    else return fail(std::string("option '-") + arg[j] + "' needs a value (" + std::string(spec->value_name) + ")");
                    given.emplace_back(spec, std::move(value));
                    break;
                }
            }
            continue;
        }
        // An operand. A lock path is absolute, so a subcommand word is never one.
        if (operands.empty() && what == mode::run) {
            if (arg == "list") what = mode::list;
            else if (arg == "elect") what = mode::elect;
            else if (arg == "leader") what = mode::leader;
            else if (arg == "revoke") what = mode::revoke;
            if (what != mode::run) continue;
        }
        operands.emplace_back(arg);
        if (command_next) {  // COMMAND: the rest of the line is its, options included
            for (++i; i < argc; ++i) operands.emplace_back(argv[i]);
            break;
        }
    }

    options o;
    o.what = what;
    o.servers = env.servers && *env.servers ? env.servers : "127.0.0.1:2181";
    const auto set = [](const char* v) { return v && *v; };
    if (set(env.tls_ca)) o.tls_ca = env.tls_ca;
    if (set(env.tls_cert)) o.tls_cert = env.tls_cert;
    if (set(env.tls_key)) o.tls_key = env.tls_key;
    std::optional<std::string> shell_command;  // -c CMDLINE
    for (auto& [spec, value] : given) {
        const std::string_view name = spec->long_name;
        if (name == "help" || name == "version") {
            o.what = name == "help" ? mode::help : mode::version;
            return {o, {}};
        }
        if (!(spec->applies & applies_bit(what))) return fail(not_applicable(*spec, what));
        if (spec->value_name == "DURATION") {
            auto d = parse_duration(value);
            if (!d)
                return fail("invalid duration '" + value + "' for --" + std::string(name) +
                            " (expected e.g. 500ms, 10s, 1.5s, 2m)");
            if (name == "timeout") o.timeout = *d;
            else if (name == "kill-after") o.kill_after = *d;
            else if (*d == std::chrono::milliseconds::zero())
                return fail("--" + std::string(name) + " must be greater than zero");
            else if (name == "session-timeout") {
                o.session_timeout = *d;
                o.session_timeout_given = true;
            }
            else o.connect_timeout = *d;
        } else if (name == "servers") o.servers = value;
        else if (name == "owner") o.owner = value;
        else if (name == "value") o.value = value;
        else if (name == "names") {
            const auto names = parse_election_names(value);
            if (!names)
                return fail("invalid --names '" + value + "' (expected curator-latch, kazoo or curator-selector)");
            o.names = *names;
        }
        else if (name == "conflict-exit-code") {
            const auto n = parse_number(value, 0, 255);
            if (!n) return fail("invalid --conflict-exit-code '" + value + "' (expected a number from 0 to 255)");
            o.conflict_exit_code = static_cast<int>(*n);
        }
        else if (name == "semaphore") {
            const auto n = parse_number(value, 1, UINT32_MAX);
            if (!n) return fail("invalid --semaphore '" + value + "' (expected a number of permits, 1 or more)");
            o.permits = static_cast<std::uint32_t>(*n);
        }
        else if (name == "command") shell_command = value;
        else if (name == "json") o.json = true;
        else if (name == "watch") o.watch = true;
        else if (name == "tls") o.tls = true;
        else if (name == "tls-ca") o.tls_ca = value;
        else if (name == "tls-cert") o.tls_cert = value;
        else if (name == "tls-key") o.tls_key = value;
        else if (name == "try") o.try_only = true;
        else if (name == "shared") o.shared = true;
        else if (name == "verbose") o.verbose = true;
    }
    if (o.try_only && o.timeout) return fail("--try and --timeout exclude each other");
    if (o.shared && o.permits) return fail("--shared and --semaphore exclude each other");
    o.tls = o.tls || !o.tls_ca.empty() || !o.tls_cert.empty() || !o.tls_key.empty();
    if (o.tls_cert.empty() != o.tls_key.empty())
        return fail(o.tls_cert.empty() ? "--tls-key needs --tls-cert (or $ZKLOCK_TLS_CERT)"
                                       : "--tls-cert needs --tls-key (or $ZKLOCK_TLS_KEY)");
    for (const auto& [flag, file] : {std::pair{"--tls-ca", &o.tls_ca}, {"--tls-cert", &o.tls_cert}, {"--tls-key", &o.tls_key}})
        if (!file->empty() && ::access(file->c_str(), R_OK) != 0)
            return fail(std::string("cannot read ") + flag + " file '" + *file + "': " + std::strerror(errno));

    const bool election = what == mode::elect || what == mode::leader;
    if (operands.empty()) {
        if (what == mode::elect) return fail("missing election PATH; " + std::string(elect_usage));
        if (what == mode::leader) return fail("missing election PATH; " + std::string(leader_usage));
        if (what == mode::revoke) return fail("missing LOCKPATH; " + std::string(revoke_usage));
        return fail(std::string("missing LOCKPATH; ") + std::string(usage_line));
    }
    o.path = operands[0];
    if (what == mode::list || what == mode::revoke) {
        if (operands.size() > 1)
            return fail("'zklock " + std::string(subcommand_name(what)) + "' takes one LOCKPATH; unexpected '" +
                        operands[1] + "'");
    } else if (what == mode::leader) {
        if (operands.size() > 1) return fail("'zklock leader' takes one PATH; unexpected '" + operands[1] + "'");
    } else if (shell_command) {
        // As flock(1)'s -c: one argument, the whole command line.
        if (operands.size() > 1)
            return fail("-c takes the whole shell command as one argument: quote it (unexpected '" + operands[1] + "')");
        o.command = {"/bin/sh", "-c", *shell_command};
    } else if (operands.size() < 2) {
        if (what == mode::elect) return fail("missing COMMAND to run while leading; " + std::string(elect_usage));
        return fail(std::string("missing COMMAND to run under the lock; ") + std::string(usage_line));
    } else {
        o.command.assign(operands.begin() + 1, operands.end());
    }
    // An election path follows a lock path's rules: candidates are queue nodes under it.
    if (const auto problem = zklock::explain_lock_path(o.path); !problem.empty())
        return fail(std::string(election ? "invalid election path '" : "invalid lock path '") + o.path + "': " +
                    std::string(problem));
    if (auto ec = zklock::validate_servers(o.servers))
        return fail("invalid server list '" + o.servers + "': " + ec.message());
    return {o, {}};
}

std::string help_text()
{
    std::string h;
    h += "zklock - run a command while holding a fair ZooKeeper lock, or while leading an election\n"
         "\n"
         "SYNOPSIS\n"
         "  zklock [OPTIONS] LOCKPATH [--] COMMAND [ARGS...]\n"
         "  zklock [OPTIONS] LOCKPATH -c CMDLINE\n"
         "  zklock list [--json] [--servers H:P,...] [--connect-timeout DURATION] LOCKPATH\n"
         "  zklock elect [--value TEXT] [--names NAMES] [OPTIONS] PATH [--] COMMAND [ARGS...]\n"
         "  zklock leader [--watch] [--servers H:P,...] [--connect-timeout DURATION] PATH\n"
         "  zklock revoke [--servers H:P,...] [--connect-timeout DURATION] LOCKPATH\n"
         "  zklock --help | --version\n"
         "\n"
         "DESCRIPTION\n"
         "  Waits in LOCKPATH's queue (first come, first served), runs COMMAND while holding the lock,\n"
         "  releases it when COMMAND ends and exits with COMMAND's status (128+N if a signal N killed it).\n"
         "  COMMAND gets ZKLOCK_FENCING_TOKEN (a number that increases with every grant of LOCKPATH:\n"
         "  pass it to what you protect and have it refuse smaller ones) and ZKLOCK_NODE (our queue node).\n"
         "  Options end at COMMAND: what follows LOCKPATH is COMMAND's, options or not. With -c, CMDLINE\n"
         "  runs with /bin/sh -c. With --semaphore N, zklock holds one of N permits instead of the lock.\n"
         "  SIGINT, SIGTERM, SIGHUP or SIGQUIT while waiting leave the queue and exit 80. While COMMAND runs\n"
         "  they, SIGUSR1 and SIGUSR2 are passed on to it (not those the terminal already sent it).\n"
         "  If the lock is lost while COMMAND runs (session expired, node deleted), COMMAND gets SIGTERM,\n"
         "  SIGKILL after --kill-after, and zklock exits 79. If a revocation request ('zklock revoke') reaches\n"
         "  it while COMMAND runs, COMMAND gets SIGTERM, SIGKILL after --kill-after, and zklock releases the\n"
         "  lock and exits 81.\n"
         "  'zklock list' prints LOCKPATH's queue: position, holder or waiting, kind, library, recipe, node,\n"
         "  age, owner (with --json, one JSON document).\n"
         "  'zklock elect' campaigns in the election at PATH with --value (default HOST:PID), runs COMMAND\n"
         "  while it leads, resigns when COMMAND ends and exits with COMMAND's status; everything above\n"
         "  holds for it as for a lock (--try, --timeout, signals, 79 when leadership is lost, the\n"
         "  environment), candidates taking the lead in the order they campaigned.\n"
         "  'zklock leader' prints PATH's leader (node, library, age, value), or says on stderr that\n"
         "  nobody leads and exits 75; with --watch it prints a line at once and one per change of\n"
         "  leader (or of its value), until SIGINT, SIGTERM, SIGHUP or SIGQUIT end it with status 0.\n"
         "  'zklock revoke' asks every holder of LOCKPATH (every shared holder, every permit holder;\n"
         "  elect: the leader) to let go, by writing a revocation request into its node (Curator's own,\n"
         "  which a revocable Curator holder hears); it exits 0 once written, 75 if no holder could be\n"
         "  asked. Kazoo holders are left alone: Kazoo's locks have no revocation.\n"
         "\n"
         "OPTIONS\n";
    for (auto& s : specs) {
        std::string left = "  ";
        if (s.short_name) left += std::string("-") + s.short_name + ", ";
        else left += "    ";
        // (Appends, not `" " + std::string(...)`: GCC 12 at -O3 takes that for an overlapping
        // memcpy, -Wrestrict.)
        left.append("--").append(s.long_name);
        if (!s.value_name.empty()) left.append(" ").append(s.value_name);
        if (left.size() < 30) left.resize(30, ' ');
        else left.append("\n").append(30, ' ');
        h.append(left).append(s.help).append("\n");
    }
    h += "  DURATION is a number with a unit: 500ms, 10s, 1.5s, 2m, 1h (no unit: seconds).\n"
         "\n"
         "ENVIRONMENT\n"
         "  ZK_SERVERS             default for --servers\n"
         "  ZKLOCK_TLS_CA, ZKLOCK_TLS_CERT, ZKLOCK_TLS_KEY\n"
         "                         defaults for --tls-ca, --tls-cert, --tls-key\n"
         "  ZKLOCK_FENCING_TOKEN   set for COMMAND: the lock's (leadership's) fencing token (decimal)\n"
         "  ZKLOCK_NODE            set for COMMAND: the full path of our queue (candidate) node\n"
         "\n"
         "EXIT STATUS\n"
         "  0-255  COMMAND's own status; 128+N if signal N killed it\n"
         "  64     usage error: unknown option, missing path or COMMAND, bad path, duration or --names\n"
         "  69     no ZooKeeper server within --connect-timeout, or a ZooKeeper error before COMMAND ran\n"
         "  70     internal error\n"
         "  71     operating system error (signal setup; leader --watch: stdout not writable)\n"
         "  75     lock not acquired: taken (--try), or --timeout passed (another status with -E); elect:\n"
         "         someone leads (--try), or --timeout passed; leader: nobody leads; revoke: no holder\n"
         "  79     lock (leadership) lost while COMMAND ran; COMMAND was terminated\n"
         "  80     interrupted (SIGINT, SIGTERM, SIGHUP, SIGQUIT) while connecting or waiting; we left the queue\n"
         "  81     a revocation request ended COMMAND (SIGTERM, SIGKILL after --kill-after); lock released\n"
         "  126    COMMAND could not be executed\n"
         "  127    COMMAND not found\n"
         "  'zklock list': 0 (also for an empty or missing lock), 64, 69.\n"
         "  'zklock leader': 0 (a leader printed; --watch: ended by a signal), 75 (nobody leads), 64, 69.\n"
         "  'zklock revoke': 0 (every holder asked), 75 (no holder to ask), 64, 69.\n";
    return h;
}

}  // namespace zklock::cli
