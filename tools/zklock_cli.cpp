// zklock — run a command while holding a fair ZooKeeper lock or a semaphore's permit (like
// flock(1), `etcdctl lock`, `consul lock`), list a lock's queue, ask its holders to let go, run a
// command while leading an election (`etcdctl elect`) and show or follow an election's leader.
// docs/zklock.1 and `zklock --help` describe it; the exit statuses are in cli_options.hpp.
//
// Everything runs on one io_context thread: the ZooKeeper session (the library drives the
// single-threaded C client from the reactor), the signals (a signalfd) and COMMAND's end (SIGCHLD
// through the same signalfd, then waitpid WNOHANG).
#include "child_process.hpp"
#include "cli_options.hpp"

#include <zklock/zklock.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <unistd.h>

namespace {

namespace asio = boost::asio;
namespace cli = zklock::cli;
namespace status = zklock::cli::exit_status;
using namespace asio::experimental::awaitable_operators;
using asio::awaitable;
using zklock::error_code;

constexpr auto tuple = asio::as_tuple(asio::use_awaitable);

/// A line on stderr, "zklock: " and printf's FORMAT. (C variadic, not a template: the compilers
/// check each call's arguments against its format.)
[[gnu::format(printf, 1, 2)]] void say(const char* format, ...)
{
    std::fputs("zklock: ", stderr);
    std::va_list args;
    va_start(args, format);
    std::vfprintf(stderr, format, args);
    va_end(args);
    std::fputc('\n', stderr);
}

bool is_interrupt(int sig) { return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT; }

/// Waits for a signal that interrupts a wait; the others (SIGUSR1/2, a SIGCHLD from a child we
/// inherited through an exec) mean nothing before COMMAND runs.
awaitable<int> interrupt(cli::signal_reader& signals)
{
    for (;;) {
        const auto info = co_await signals.async_receive();
        if (is_interrupt(static_cast<int>(info.ssi_signo))) co_return static_cast<int>(info.ssi_signo);
    }
}

zklock::session_config session_config_for(const cli::options& o)
{
    zklock::session_config config;
    config.servers = o.servers;
    config.session_timeout = o.session_timeout;
    config.connect_timeout = o.connect_timeout;
    config.tls.enabled = o.tls;
    config.tls.ca_file = o.tls_ca;
    config.tls.cert_file = o.tls_cert;
    config.tls.key_file = o.tls_key;
    // One session, one lock: if the session expires the lock is gone, and there is nothing a
    // fresh session could do for us.
    config.reconnect_on_expiry = false;
    return config;
}

/// Connects; the error's message as a one-line reason.
std::string connect_failure(const cli::options& o, const error_code& ec)
{
    if (ec == zklock::errc::connect_timeout)
        return "no ZooKeeper server at " + o.servers + " accepted a session within " + cli::format_duration(o.connect_timeout);
    if (ec == zklock::errc::unresolvable_host)
        return "cannot resolve host name: no host of " + o.servers + " resolves to an address";
    // The library's messages name session_config::tls; here the flags say it.
    if (ec == zklock::errc::tls_required)
        return "the server at " + o.servers + " accepts only TLS on this port: add --tls (and --tls-ca FILE)";
    if (ec == zklock::errc::tls_untrusted_certificate)
        return "cannot connect to ZooKeeper at " + o.servers +
               ": the server's TLS certificate is not signed by a trusted CA (check --tls-ca)";
    if (ec == zklock::errc::tls_client_certificate_refused)
        return "cannot connect to ZooKeeper at " + o.servers +
               ": the server refused the client certificate (check --tls-cert and --tls-key)";
    return "cannot connect to ZooKeeper at " + o.servers + ": " + ec.message();
}

/// A missing chroot, named: "the chroot /app of --servers does not exist ...".
std::string chroot_missing(const cli::options& o)
{
    return "the chroot " + o.servers.substr(o.servers.find('/')) + " of " + o.servers +
           " does not exist on the server (zklock does not create it)";
}

/// What the server granted: with --verbose the session and its timeout. A timeout other than the
/// one asked for (the server keeps it within 2..20 ticks) is a warning, also without --verbose
/// when --session-timeout was given.
void report_session(const zklock::session& zk, const cli::options& o)
{
    const auto granted = zk.negotiated_timeout();
    if (o.verbose)
        say("connected to %s (session 0x%llx, session timeout %s)", o.servers.c_str(),
            static_cast<unsigned long long>(zk.session_id()), cli::format_duration(granted).c_str());
    if (granted != o.session_timeout && (o.verbose || o.session_timeout_given))
        say("warning: the server granted a session timeout of %s, not the %s asked for (--session-timeout)",
            cli::format_duration(granted).c_str(), cli::format_duration(o.session_timeout).c_str());
}

/// How connecting went: connected (with --verbose, the session reported), interrupted by
/// `signal`, or failed (the reason said).
struct connect_outcome {
    bool connected = false;
    int signal = 0;
};

/// Connects `zk`; with `signals`, an interrupting signal stops the attempt.
awaitable<connect_outcome> connect(zklock::session& zk, const cli::options& o, cli::signal_reader* signals)
{
    error_code ec;
    if (signals) {
        auto r = co_await (zk.async_connect(tuple) || interrupt(*signals));
        if (r.index() == 1) co_return connect_outcome{false, std::get<1>(r)};
        ec = std::get<0>(std::get<0>(r));
    } else {
        std::tie(ec) = co_await zk.async_connect(tuple);
    }
    if (ec) {
        say("%s", connect_failure(o, ec).c_str());
        co_return connect_outcome{};
    }
    report_session(zk, o);
    co_return connect_outcome{true, 0};
}

/// What the run waits for, in --verbose's words: "the exclusive lock on /p", "one of the 3
/// permits of /p", "the leadership of /p".
std::string wanted(const cli::options& o)
{
    if (o.what == cli::mode::elect) return "the leadership of " + o.path;
    if (o.permits) return "one of the " + std::to_string(o.permits) + " permits of " + o.path;
    return (o.shared ? "a shared lock on " : "the exclusive lock on ") + o.path;
}

/// --verbose: the waiter's place in the queue as it changes, "waiting: 12 ahead". On a terminal one
/// progress line rewritten in place; otherwise (a pipe, a log file) one plain line per change.
/// Nothing at all when the grant comes at once: the first line comes from the acquire's first
/// listing that leaves it waiting (lock_options::on_queued).
struct queue_progress {
    explicit queue_progress(std::string what) : what(std::move(what)) {}
    std::string what;        // wanted(): what we wait for
    bool tty = ::isatty(2) == 1;
    bool line_open = false;  // a progress line without its newline is on the terminal
    std::string node;        // our queue node, once an acquire has queued it
    std::optional<std::size_t> shown;

    /// The acquire looked at the queue and waits: say so the first time, then where we are.
    void queued(std::string_view queued_node, std::size_t ahead)
    {
        if (node.empty()) {
            const auto slash = queued_node.rfind('/');
            say("waiting for %s (node %s)", what.c_str(), std::string(queued_node.substr(slash + 1)).c_str());
        }
        node = queued_node;
        report(ahead);
    }
    void report(std::size_t ahead)
    {
        if (shown == ahead) return;
        shown = ahead;
        if (tty) {
            std::fprintf(stderr, "\rzklock: waiting: %zu ahead\033[K", ahead);
            std::fflush(stderr);
            line_open = true;
        } else {
            say("waiting: %zu ahead", ahead);
        }
    }
    /// Before any other line: end the progress line.
    void end_line()
    {
        if (!line_open) return;
        std::fputc('\n', stderr);
        line_open = false;
    }
};

/// While the acquire waits: the lock path's children listed every 500 ms (one request, not the
/// data of every node as async_list_queue reads it), the queue nodes older than ours counted (the
/// acquire itself lists again only when the node just ahead of ours goes). Never completes:
/// cancelled by `||`.
awaitable<void> poll_queue(zklock::session& zk, const cli::options& o, std::shared_ptr<queue_progress> progress)
{
    asio::steady_timer timer{co_await asio::this_coro::executor};
    for (;;) {
        timer.expires_after(std::chrono::milliseconds(500));
        if (auto [ec] = co_await timer.async_wait(tuple); ec) co_return;  // cancelled: acquired or interrupted
        if (progress->node.empty()) continue;
        auto [ec, children] = co_await zk.async_get_children(o.path, tuple);
        if (ec == asio::error::operation_aborted) co_return;
        const auto own = zklock::queue_sequence(progress->node);
        if (ec || !own) continue;
        std::size_t ahead = 0;
        bool queued = false;
        for (const auto& c : children) {
            const auto seq = zklock::queue_sequence(c);
            if (seq && *seq < *own) ++ahead;
            if (seq && *seq == *own) queued = true;
        }
        // Gone (granted and released, or deleted) or at the head: the acquire says what became of it.
        if (queued && ahead > 0) progress->report(ahead);
    }
}

awaitable<std::tuple<error_code, zklock::lease>> acquire_once(zklock::session& zk, const cli::options& o,
                                                              zklock::lock_options lock_options);

/// elect: campaigns with --value until we lead, as --try or --timeout say. The leadership is
/// handed on as the lease it is (what COMMAND's supervision needs of it).
awaitable<std::tuple<error_code, zklock::lease>> campaign(zklock::session& zk, const cli::options& o,
                                                          const std::shared_ptr<queue_progress>& progress)
{
    zklock::election_options options{o.names};
    if (progress)
        options.on_queued = [progress](std::string_view node, std::size_t ahead) { progress->queued(node, ahead); };
    zklock::election e{zk, o.path, std::move(options)};
    // A timeout <= 0 campaigns only if nobody leads now: --try, and --timeout 0 as for a lock.
    std::tuple<error_code, zklock::leadership> r;
    if (o.try_only) r = co_await e.async_campaign(o.value, std::chrono::milliseconds::zero(), tuple);
    else if (o.timeout) r = co_await e.async_campaign(o.value, *o.timeout, tuple);
    else r = co_await e.async_campaign(o.value, tuple);
    auto& [ec, leadership] = r;
    co_return std::tuple<error_code, zklock::lease>(ec, std::move(leadership));
}

/// Acquires (campaigns) as the options say; with --verbose (`progress`), the place in the queue
/// while it waits. --try never waits: nothing to show.
awaitable<std::tuple<error_code, zklock::lease>> acquire(zklock::session& zk, const cli::options& o,
                                                         const std::shared_ptr<queue_progress>& progress)
{
    const bool elect = o.what == cli::mode::elect;
    if (!progress || o.try_only) {
        if (elect) co_return co_await campaign(zk, o, nullptr);
        zklock::lock_options lock_options;
        lock_options.owner_info = o.owner;
        co_return co_await acquire_once(zk, o, std::move(lock_options));
    }
    if (elect) {
        auto r = co_await (campaign(zk, o, progress) || poll_queue(zk, o, progress));
        progress->end_line();
        co_return std::move(std::get<0>(r));
    }
    zklock::lock_options lock_options;
    lock_options.owner_info = o.owner;
    lock_options.on_queued = [progress](std::string_view node, std::size_t ahead) { progress->queued(node, ahead); };
    auto r = co_await (acquire_once(zk, o, std::move(lock_options)) || poll_queue(zk, o, progress));
    progress->end_line();
    co_return std::move(std::get<0>(r));
}

awaitable<std::tuple<error_code, zklock::lease>> acquire_once(zklock::session& zk, const cli::options& o,
                                                              zklock::lock_options lock_options)
{
    if (o.permits) {
        zklock::semaphore sem{zk, o.path, o.permits, lock_options};
        if (o.try_only) co_return co_await sem.async_try_acquire(tuple);
        if (o.timeout) co_return co_await sem.async_acquire(*o.timeout, tuple);
        co_return co_await sem.async_acquire(tuple);
    }
    if (o.shared) {
        zklock::shared_mutex m{zk, o.path, lock_options};
        if (o.try_only) co_return co_await m.async_try_acquire_shared(tuple);
        if (o.timeout) co_return co_await m.async_acquire_shared(*o.timeout, tuple);
        co_return co_await m.async_acquire_shared(tuple);
    }
    zklock::mutex m{zk, o.path, lock_options};
    if (o.try_only) co_return co_await m.async_try_acquire(tuple);
    if (o.timeout) co_return co_await m.async_acquire(*o.timeout, tuple);
    co_return co_await m.async_acquire(tuple);
}

/// Shared by COMMAND's supervision loop and the handlers that react to losing the lock or to a
/// revocation request.
struct supervision {
    explicit supervision(asio::any_io_executor ex) : kill_timer(std::move(ex)) {}
    cli::child_process child;
    asio::steady_timer kill_timer;
    error_code lost;          ///< why the lock was lost while COMMAND ran (empty: it was not)
    bool revoked = false;     ///< a revocation request asked us to let go while COMMAND ran
    bool terminating = false; ///< COMMAND has been sent SIGTERM (and the SIGKILL timer started)
};

/// "the lock on /p", "a permit of /p", "the leadership of /p": what was held, in messages.
std::string held(const cli::options& o)
{
    if (o.what == cli::mode::elect) return "the leadership of " + o.path;
    if (o.permits) return "a permit of " + o.path;
    return "the lock on " + o.path;
}

/// SIGTERM to COMMAND now, SIGKILL after --kill-after if it still runs; once only.
void terminate_command(const std::shared_ptr<supervision>& sv, const cli::options& o)
{
    if (sv->terminating) return;
    sv->terminating = true;
    sv->child.signal(SIGTERM);
    sv->kill_timer.expires_after(o.kill_after);
    sv->kill_timer.async_wait([sv, grace = o.kill_after](error_code ec) {
        if (ec || !sv->child.running()) return;
        say("COMMAND (pid %d) still runs %s after SIGTERM; sending SIGKILL", static_cast<int>(sv->child.pid()),
            cli::format_duration(grace).c_str());
        sv->child.signal(SIGKILL);
    });
}

/// A lease loss while COMMAND runs: SIGTERM now, SIGKILL after the grace period. A lost
/// leadership is a lost lease too, and treated the same way.
void on_lost(const std::shared_ptr<supervision>& sv, error_code reason, const cli::options& o)
{
    // operation_aborted: released; otherwise, once COMMAND has ended the loss is our own close.
    if (reason == asio::error::operation_aborted || !sv->child.running()) return;
    sv->lost = reason;
    if (sv->terminating) {
        say("lost %s (%s) while COMMAND (pid %d) was ending", held(o).c_str(), reason.message().c_str(),
            static_cast<int>(sv->child.pid()));
        return;
    }
    say("lost %s (%s); sending SIGTERM to COMMAND (pid %d)", held(o).c_str(), reason.message().c_str(),
        static_cast<int>(sv->child.pid()));
    terminate_command(sv, o);
}

/// A revocation request (`zklock revoke`, or any client writing zklock::revocation_request into
/// our node) while COMMAND runs: COMMAND is ended as on a loss, SIGTERM then SIGKILL after
/// --kill-after, and the lock is released once it has ended. We still hold the lock meanwhile.
void on_revocation(const std::shared_ptr<supervision>& sv, error_code ec, const cli::options& o)
{
    // An error: released, or lost (on_lost says so).
    if (ec || !sv->child.running() || sv->terminating) return;
    sv->revoked = true;
    say("revocation of %s requested; sending SIGTERM to COMMAND (pid %d)", held(o).c_str(),
        static_cast<int>(sv->child.pid()));
    terminate_command(sv, o);
}

/// Forward a signal to COMMAND? Not one the terminal generated (SI_KERNEL) while COMMAND shares
/// our process group: the terminal sent it to the whole foreground group, COMMAND included, and a
/// second ^C could break COMMAND's own handling of the first (cleanup code interrupted).
/// Not one COMMAND sent us itself either (no echo).
bool should_forward(const signalfd_siginfo& info, const cli::child_process& child)
{
    if (info.ssi_code == SI_KERNEL && ::getpgid(child.pid()) == ::getpgrp()) return false;
    if ((info.ssi_code == SI_USER || info.ssi_code == SI_QUEUE) && static_cast<pid_t>(info.ssi_pid) == child.pid())
        return false;
    return true;
}

/// The stored permit count of a semaphore path, for a message (0: none, or unreadable).
awaitable<std::uint32_t> stored_permits(zklock::session& zk, const std::string& path)
{
    auto [ec, listing] = co_await zklock::async_list_queue(zk, path, tuple);
    co_return ec ? 0 : listing.permits;
}

awaitable<int> run_locked(cli::options o, cli::inheritance inherited)
{
    auto ex = co_await asio::this_coro::executor;
    cli::signal_reader signals{ex};
    const auto config = session_config_for(o);  // (GCC 12: no braced temporary next to a co_await)
    zklock::session zk{ex, config};

    // 1. Connect, unless interrupted.
    const auto connected = co_await connect(zk, o, &signals);
    if (connected.signal) {
        say("interrupted by %s while connecting", cli::signal_name(connected.signal).c_str());
        co_return status::interrupted;
    }
    if (!connected.connected) co_return status::unavailable;

    // 2. Queue for the lock (campaign), unless interrupted. On a signal `||` cancels the acquire,
    //    which deletes our queue node before it completes: nobody waits behind a node of ours.
    const bool elect = o.what == cli::mode::elect;
    const char* path = o.path.c_str();
    if (o.verbose && elect) say("campaigning for %s (candidate names: %s)", path, std::string(cli::to_string(o.names)).c_str());
    auto progress = o.verbose ? std::make_shared<queue_progress>(wanted(o)) : nullptr;
    auto acquired = co_await (acquire(zk, o, progress) || interrupt(signals));
    if (progress) progress->end_line();
    if (acquired.index() == 1) {
        const auto sig = cli::signal_name(std::get<1>(acquired));
        if (elect) say("interrupted by %s while campaigning for %s; withdrew our candidate", sig.c_str(), path);
        else say("interrupted by %s while waiting for %s; left the queue", sig.c_str(), path);
        co_await zk.async_close(tuple);
        co_return status::interrupted;
    }
    auto& [acquire_ec, lease] = std::get<0>(acquired);
    if (acquire_ec) {
        int code = status::unavailable;
        const char* cannot = elect ? "cannot campaign for" : "cannot acquire";
        if (acquire_ec == zklock::errc::would_block) {
            if (elect) say("%s has a leader (--try)", path);
            else if (o.permits) say("%s has no free permit (--try)", path);
            else say("%s is taken (--try)", path);
            code = o.conflict_exit_code;
        } else if (acquire_ec == zklock::errc::timeout) {
            say(elect ? "timed out after %s campaigning for %s" : "timed out after %s waiting for %s",
                cli::format_duration(*o.timeout).c_str(), path);
            code = o.conflict_exit_code;
        } else if (acquire_ec == zklock::errc::chroot_missing) {
            say("%s %s: %s", cannot, path, chroot_missing(o).c_str());
        } else if (acquire_ec == zklock::errc::permit_mismatch) {
            const auto stored = co_await stored_permits(zk, o.path);
            if (stored) say("%s %s: it is a semaphore of %u permits, not %u (--semaphore)", cannot, path, stored, o.permits);
            else say("%s %s: %s", cannot, path, acquire_ec.message().c_str());
        } else if (acquire_ec == zklock::errc::recipe_mismatch) {
            say(o.permits ? "%s %s: it is a lock, not a semaphore (drop --semaphore)"
                          : "%s %s: it is a semaphore (add --semaphore N)",
                cannot, path);
        } else {
            say("%s %s: %s", cannot, path, acquire_ec.message().c_str());
        }
        co_await zk.async_close(tuple);
        co_return code;
    }
    if (o.verbose)
        say("%s %s (node %s, fencing token %lld)", elect ? "leading" : "acquired", path, lease.node().c_str(),
            static_cast<long long>(lease.fencing_token()));

    // A revocation request already in our node when the grant came: COMMAND does not start.
    if (lease.revocation_requested()) {
        say("revocation of %s requested before COMMAND started; not running it", held(o).c_str());
        co_await zk.async_close(tuple);
        co_return status::revoked;
    }

    // 3. Run COMMAND.
    auto sv = std::make_shared<supervision>(ex);
    const std::vector<std::string> env{"ZKLOCK_FENCING_TOKEN=" + std::to_string(lease.fencing_token()),
                                       "ZKLOCK_NODE=" + lease.node()};
    if (auto ec = sv->child.spawn(o.command, env, inherited)) {
        say("cannot run '%s': %s", o.command[0].c_str(), ec.message().c_str());
        co_await zk.async_close(tuple);
        co_return ec == boost::system::errc::no_such_file_or_directory ? status::not_found : status::cannot_execute;
    }
    lease.async_wait_lost([sv, o](error_code ec) { on_lost(sv, ec, o); });
    lease.async_wait_revocation([sv, o](error_code ec) { on_revocation(sv, ec, o); });

    // 4. Until COMMAND ends: pass signals on to it.
    while (!sv->child.try_reap()) {
        const auto info = co_await signals.async_receive();
        const int sig = static_cast<int>(info.ssi_signo);
        if (sig == SIGCHLD) continue;  // reaped (or not ours) at the top of the loop
        if (should_forward(info, sv->child)) {
            if (o.verbose) say("passing %s on to COMMAND (pid %d)", cli::signal_name(sig).c_str(), static_cast<int>(sv->child.pid()));
            sv->child.signal(sig);
        }
    }
    sv->kill_timer.cancel();

    // 5. Let go (release, resign): closing the session deletes our node with it, in one round
    //    trip, and the next in the queue holds (leads). (A release would wait for a lost connection
    //    to come back; a close does not wait longer than the C client's close, ~1.5 s at most, and
    //    the server drops the node at expiry anyway.)
    const bool lost = static_cast<bool>(sv->lost);
    const char* let_go = elect ? "resigned" : "released";
    if (lost) say("COMMAND %s after the %s was lost", sv->child.describe_exit().c_str(), elect ? "leadership" : "lock");
    co_await zk.async_close(tuple);
    if (!lost && sv->revoked)
        say("COMMAND %s after the revocation request; %s %s", sv->child.describe_exit().c_str(), let_go, path);
    else if (o.verbose && !lost)
        say("COMMAND %s; %s %s", sv->child.describe_exit().c_str(), let_go, path);
    if (lost) co_return status::lock_lost;
    co_return sv->revoked ? status::revoked : sv->child.exit_status();
}

// ---- zklock list ---------------------------------------------------------------------------------

std::string format_age(std::int64_t ms)
{
    ms = std::max<std::int64_t>(ms, 0);  // server and local clocks may disagree a little
    char buf[32];
    if (ms < 60'000) std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000);
    else if (ms < 3'600'000) std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(ms / 60'000), static_cast<long long>(ms / 1000 % 60));
    else if (ms < 86'400'000) std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(ms / 3'600'000), static_cast<long long>(ms / 60'000 % 60));
    else std::snprintf(buf, sizeof buf, "%lldd%02lldh", static_cast<long long>(ms / 86'400'000), static_cast<long long>(ms / 3'600'000 % 24));
    return buf;
}

/// A node's data as one line: control characters (a newline among them) shown as '?', "-" if empty.
std::string printable(std::string data)
{
    for (auto& c : data)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
    return data.empty() ? "-" : data;
}

/// A queue node's data as owner information, as stored.
std::string owner_data(std::string data)
{
    // Earlier zklock versions appended this holder mark to a holder's owner information.
    constexpr std::string_view mark = "\nzklock:held";
    if (data.size() >= mark.size() && data.compare(data.size() - mark.size(), mark.size(), mark) == 0)
        data.resize(data.size() - mark.size());
    return data;
}

/// A queue node's data as one line of owner information.
std::string owner_of(std::string data)
{
    if (data == zklock::revocation_request) return "(revocation requested)";
    return printable(owner_data(std::move(data)));
}

std::int64_t now_ms()
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

/// "0x100a3f2c9d10002": a session id as ZooKeeper's own tools print it.
std::string hex_session(std::int64_t id)
{
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(id));
    return buf;
}

const char* state_name(zklock::queue_entry::state s)
{
    using st = zklock::queue_entry::state;
    return s == st::holder ? "holder" : s == st::waiting ? "waiting" : "unknown";
}

/// list --json: the listing as one JSON object. Entry fields: those of the table (position, state,
/// kind, library, recipe, node, age_ms, owner), and what the table leaves out (sequence,
/// created_ms, session, revocation_requested, gone). `owner` is the node's data, null when a
/// revocation request replaced it or the node is gone; age_ms, created_ms and session are null
/// for a gone node. A missing lock path: exists false, no entries.
boost::json::object listing_json(const cli::options& o, const zklock::queue_listing* listing)
{
    namespace json = boost::json;
    static const std::vector<zklock::queue_entry> no_entries;
    json::object doc;
    doc["path"] = o.path;
    doc["exists"] = listing != nullptr;
    doc["permits"] = listing && listing->permits ? json::value(listing->permits) : json::value(nullptr);
    doc["other_children"] = listing ? listing->other_children : 0;
    json::array entries;
    const auto now = now_ms();
    std::size_t pos = 0;
    for (const auto& e : listing ? listing->entries : no_entries) {
        const bool revocation = !e.gone && e.data == zklock::revocation_request;
        json::object j;
        j["position"] = ++pos;
        j["state"] = state_name(e.status);
        j["kind"] = zklock::to_string(e.kind);
        j["library"] = zklock::to_string(e.library);
        j["recipe"] = e.recipe;
        j["node"] = e.name;
        j["sequence"] = e.sequence;
        j["age_ms"] = e.gone ? json::value(nullptr) : json::value(std::max<std::int64_t>(now - e.stat.ctime, 0));
        j["created_ms"] = e.gone ? json::value(nullptr) : json::value(e.stat.ctime);
        j["session"] = e.gone ? json::value(nullptr) : json::value(hex_session(e.stat.ephemeral_owner));
        j["owner"] = e.gone || revocation ? json::value(nullptr) : json::value(owner_data(e.data));
        j["revocation_requested"] = revocation;
        j["gone"] = e.gone;
        entries.push_back(std::move(j));
    }
    doc["entries"] = std::move(entries);
    return doc;
}

/// The table: POS STATE KIND LIBRARY RECIPE NODE AGE, each column as wide as its widest cell (at
/// least as wide as it always was), then OWNER, unpadded and last (it may contain spaces).
void print_table(const zklock::queue_listing& listing)
{
    constexpr std::size_t columns = 7;
    using row = std::array<std::string, columns + 1>;
    std::vector<row> rows;
    rows.push_back(row{"POS", "STATE", "KIND", "LIBRARY", "RECIPE", "NODE", "AGE", "OWNER"});
    const auto now = now_ms();
    std::size_t pos = 0;
    for (const auto& e : listing.entries) {
        using st = zklock::queue_entry::state;
        rows.push_back(row{std::to_string(++pos), e.status == st::unknown ? "?" : state_name(e.status),
                           zklock::to_string(e.kind), zklock::to_string(e.library), std::string(e.recipe), e.name,
                           e.gone ? "-" : format_age(now - e.stat.ctime), e.gone ? "(gone)" : owner_of(e.data)});
    }
    std::array<std::size_t, columns> width{4, 8, 9, 7, 12, 36, 8};
    for (const auto& r : rows)
        for (std::size_t c = 0; c < columns; ++c) width[c] = std::max(width[c], r[c].size());
    for (const auto& r : rows) {
        std::string line;
        for (std::size_t c = 0; c < columns; ++c) {
            line += r[c];
            line.append(width[c] - r[c].size() + 1, ' ');
        }
        line += r[columns];
        std::printf("%s\n", line.c_str());
    }
}

/// Connects `zk` and lists LOCKPATH, for list and revoke. nullopt: not connected, or the listing
/// failed for a reason other than a missing path (said on stderr); else the listing, or
/// zk_errc::no_node with an empty one.
awaitable<std::optional<std::pair<error_code, zklock::queue_listing>>> connect_and_list(zklock::session& zk,
                                                                                       const cli::options& o)
{
    std::optional<std::pair<error_code, zklock::queue_listing>> result;
    if (const auto connected = co_await connect(zk, o, nullptr); !connected.connected) co_return result;
    auto [ec, listing] = co_await zklock::async_list_queue(zk, o.path, tuple);
    if (ec && ec != zklock::zk_errc::no_node) {
        say("cannot list %s: %s", o.path.c_str(), (ec == zklock::errc::chroot_missing ? chroot_missing(o) : ec.message()).c_str());
        co_return result;
    }
    result.emplace(ec, std::move(listing));
    co_return result;
}

awaitable<int> run_list(cli::options o)
{
    auto ex = co_await asio::this_coro::executor;
    zklock::session zk{ex, session_config_for(o)};
    auto listed = co_await connect_and_list(zk, o);
    co_await zk.async_close(tuple);
    if (!listed) co_return status::unavailable;
    const auto& [ec, listing] = *listed;
    if (ec) {  // no_node
        if (o.json) std::printf("%s\n", boost::json::serialize(listing_json(o, nullptr)).c_str());
        else std::printf("%s: no such lock (the path does not exist)\n", o.path.c_str());
        co_return 0;
    }
    if (o.json) {
        std::printf("%s\n", boost::json::serialize(listing_json(o, &listing)).c_str());
        co_return 0;
    }
    if (listing.entries.empty()) {
        std::printf("%s: free (no holder, nobody waiting)\n", o.path.c_str());
        co_return 0;
    }
    std::printf("%s: %zu in the queue\n", o.path.c_str(), listing.entries.size());
    print_table(listing);
    co_return 0;
}

// ---- zklock revoke -------------------------------------------------------------------------------

/// Asks every holder of LOCKPATH to let go: zklock::revocation_request written into each holder's
/// node (the holder's lease::async_wait_revocation sees it; a `zklock` holder ends COMMAND and
/// releases). Every holder, because a shared lock or a semaphore has several and a writer waiting
/// behind readers needs all of them gone. The request is Curator's own (`__REVOKE__`, what its
/// Revoker writes), so Curator holders are asked the same way: one whose program made the lock
/// revocable (InterProcessMutex.makeRevocable) hears it, one that did not ignores it, and a note
/// on stderr says so. Kazoo holders are left alone: Kazoo's locks have no revocation, and the write
/// would replace the identifier Kazoo's contenders() reports.
/// One line on stdout per holder asked. 0: every zklock and Curator holder asked; 75: nobody to ask.
awaitable<int> run_revoke(cli::options o)
{
    auto ex = co_await asio::this_coro::executor;
    zklock::session zk{ex, session_config_for(o)};
    auto listed = co_await connect_and_list(zk, o);
    if (!listed || listed->first) {
        co_await zk.async_close(tuple);
        if (!listed) co_return status::unavailable;
        say("%s has no holder (no such lock); nothing to revoke", o.path.c_str());
        co_return status::no_holder;
    }
    const zklock::queue_listing& listing = listed->second;
    std::size_t asked = 0, foreign = 0, gone = 0;
    bool failed = false;
    for (const auto& e : listing.entries) {
        if (e.status != zklock::queue_entry::state::holder || e.gone) continue;
        if (e.library == zklock::lock_library::kazoo) {
            ++foreign;
            say("%s is held by %s (a kazoo node): Kazoo's locks have no revocation; left alone", o.path.c_str(),
                e.name.c_str());
            continue;
        }
        const std::string node = o.path + "/" + e.name;
        auto [set_ec, st] = co_await zk.async_set_data(node, std::string(zklock::revocation_request), -1, tuple);
        if (set_ec == zklock::zk_errc::no_node) {
            ++gone;  // it has let go since the listing: what we were asking for
            if (o.verbose) say("%s has let go already", e.name.c_str());
        } else if (set_ec) {
            failed = true;
            say("cannot ask %s to let go: %s", node.c_str(), set_ec.message().c_str());
        } else {
            ++asked;
            std::printf("%s: asked %s (%s) to let go\n", o.path.c_str(), e.name.c_str(), owner_of(e.data).c_str());
            if (e.library == zklock::lock_library::curator)
                say("%s is a Curator node: its holder hears the request only if its program made the lock revocable "
                    "(InterProcessMutex.makeRevocable)",
                    e.name.c_str());
        }
    }
    co_await zk.async_close(tuple);
    if (failed) co_return status::unavailable;
    if (asked + gone > 0) co_return 0;
    if (!foreign) say("%s has no holder; nothing to revoke", o.path.c_str());
    co_return status::no_holder;
}

// ---- zklock leader -------------------------------------------------------------------------------

/// The columns of a leader line: NODE (at least 36 wide, wider for a longer name: Kazoo's are
/// 40 and more), LIBRARY, AGE (of the candidate node, from its creation on the server), VALUE
/// (last: it may contain spaces).
constexpr const char* leader_row = "%-*s %-7s %-8s %s\n";

int node_width(const zklock::leader_info& who) { return static_cast<int>(std::max<std::size_t>(36, who.node.size())); }

void print_leader(const zklock::leader_info& who)
{
    std::printf(leader_row, node_width(who), who.node.c_str(), zklock::to_string(who.library),
                format_age(now_ms() - who.stat.ctime).c_str(), printable(who.value).c_str());
}

/// --watch: the local time a change was seen, "2026-11-26T12:00:03.123+0100".
std::string timestamp()
{
    const auto now = std::chrono::system_clock::now();
    const std::time_t t = std::chrono::system_clock::to_time_t(now);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm local{};
    ::localtime_r(&t, &local);
    char date[32], zone[8];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &local);
    std::strftime(zone, sizeof zone, "%z", &local);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s.%03d%s", date, static_cast<int>(ms), zone);
    return buf;
}

/// The session's state changes, on stderr (--watch --verbose): a watcher that goes quiet because
/// it lost its server should say so. Never completes: cancelled by `||`.
awaitable<void> report_states(zklock::session& zk, const cli::options& o)
{
    for (;;) {
        auto [ec, state] = co_await zk.async_wait_state_change(tuple);
        if (ec) co_return;
        switch (state) {
        case zklock::session_state::suspended:
            say("connection to ZooKeeper lost; reconnecting (no change of leader is seen meanwhile)");
            break;
        case zklock::session_state::expired: say("session expired; starting a new one"); break;
        case zklock::session_state::connected:
            say("connected to %s (session 0x%llx)", o.servers.c_str(), static_cast<unsigned long long>(zk.session_id()));
            break;
        default: break;
        }
    }
}

/// --watch: one line per leader the observer delivers, each flushed at once. Returns on an error
/// only (an exit status).
awaitable<int> follow(zklock::session& zk, const cli::options& o)
{
    zklock::election e{zk, o.path};
    auto observer = e.observe();
    for (;;) {
        auto [ec, who] = co_await observer.async_next(tuple);
        if (ec == asio::error::operation_aborted) co_return 0;  // cancelled by `||`: a signal ended the watch
        if (ec) {
            say("cannot watch the leader of %s: %s", o.path.c_str(),
                (ec == zklock::errc::chroot_missing ? chroot_missing(o) : ec.message()).c_str());
            co_return status::unavailable;
        }
        const auto at = timestamp();
        if (who) {
            std::printf("%s ", at.c_str());
            print_leader(who);
        } else {
            std::printf("%s %-36s %-7s %-8s %s\n", at.c_str(), "-", "-", "-", "(no leader)");
        }
        // A reader that went away (a closed pipe, with SIGPIPE ignored) ends the watch: nobody
        // reads what it would print.
        if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
            say("cannot write to stdout: %s", std::strerror(errno));
            co_return status::os_error;
        }
    }
}

awaitable<int> run_watch(cli::options o)
{
    auto ex = co_await asio::this_coro::executor;
    cli::signal_reader signals{ex};
    auto config = session_config_for(o);
    // A watcher holds nothing that an expiry could take: it goes on with a fresh session, and the
    // observer looks again on it.
    config.reconnect_on_expiry = true;
    zklock::session zk{ex, config};

    // Ending a watch with a signal is its normal end, also before it has connected.
    auto stopped = [&](int sig) {
        if (o.verbose) say("stopped by %s", cli::signal_name(sig).c_str());
        return 0;
    };
    const auto connected = co_await connect(zk, o, &signals);
    if (connected.signal) co_return stopped(connected.signal);
    if (!connected.connected) co_return status::unavailable;

    int code = 0;
    if (o.verbose) {
        auto r = co_await (follow(zk, o) || interrupt(signals) || report_states(zk, o));
        code = r.index() == 0 ? std::get<0>(r) : r.index() == 1 ? stopped(std::get<1>(r)) : 0;
    } else {
        auto r = co_await (follow(zk, o) || interrupt(signals));
        code = r.index() == 0 ? std::get<0>(r) : stopped(std::get<1>(r));
    }
    co_await zk.async_close(tuple);
    co_return code;
}

awaitable<int> run_leader(cli::options o)
{
    auto ex = co_await asio::this_coro::executor;
    const auto config = session_config_for(o);
    zklock::session zk{ex, config};
    if (const auto connected = co_await connect(zk, o, nullptr); !connected.connected) co_return status::unavailable;
    zklock::election e{zk, o.path};
    auto [ec, who] = co_await e.async_leader(tuple);
    co_await zk.async_close(tuple);
    if (ec == zklock::errc::no_leader) {
        say("%s has no leader (nobody is campaigning)", o.path.c_str());
        co_return status::no_leader;
    }
    if (ec == zklock::errc::chroot_missing) {
        say("cannot look up the leader of %s: %s", o.path.c_str(), chroot_missing(o).c_str());
        co_return status::unavailable;
    }
    if (ec) {
        say("cannot look up the leader of %s: %s", o.path.c_str(), ec.message().c_str());
        co_return status::unavailable;
    }
    std::printf(leader_row, node_width(who), "NODE", "LIBRARY", "AGE", "VALUE");
    print_leader(who);
    co_return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    auto parsed = cli::parse_command_line(argc, argv, cli::environment::of_process());
    if (!parsed.opts) {
        say("%s", parsed.error.c_str());
        return status::usage;
    }
    auto& o = *parsed.opts;
    if (o.what == cli::mode::help) {
        std::fputs(cli::help_text().c_str(), stdout);
        return 0;
    }
    if (o.what == cli::mode::version) {
        std::printf("zklock %s\n", ZKLOCK_VERSION);
        return 0;
    }

    cli::inheritance inherited;
    const bool runs_command = o.what == cli::mode::run || o.what == cli::mode::elect;
    if (runs_command || (o.what == cli::mode::leader && o.watch)) {
        // First, while this is the only thread: everything started later inherits the mask.
        if (auto ec = cli::take_over_signals(inherited)) {
            say("cannot set up signal handling: %s", ec.message().c_str());
            return status::os_error;
        }
    }

    asio::io_context ioc{1};
    int result = status::internal;
    auto done = [&](std::exception_ptr e, int code) {
        try {
            if (e) std::rethrow_exception(e);
            result = code;
        } catch (const boost::system::system_error& err) {
            say("%s", err.what());
            result = status::os_error;
        } catch (const std::exception& err) {
            say("internal error: %s", err.what());
        }
    };
    if (o.what == cli::mode::list) asio::co_spawn(ioc, run_list(o), done);
    else if (o.what == cli::mode::leader && o.watch) asio::co_spawn(ioc, run_watch(o), done);
    else if (o.what == cli::mode::leader) asio::co_spawn(ioc, run_leader(o), done);
    else if (o.what == cli::mode::revoke) asio::co_spawn(ioc, run_revoke(o), done);
    else asio::co_spawn(ioc, run_locked(o, inherited), done);
    ioc.run();
    std::fflush(stdout);
    return result;
}
