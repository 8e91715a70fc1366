// The ZooKeeper bridge: one zhandle_t of the single-threaded C client, driven by the Asio reactor.
//
// The session is split along its seams:
//   port/session_core         what the session decides, as under every port: its state
//                             (session_fsm), presumed expiry, the leader probe, the observers and
//                             those waiting for a connection; this class feeds it the C client's
//                             events and does its I/O (session_io)
//   zk_requests.{hpp,cpp}     the C client's side: request objects and the C callbacks
//   session_io.cpp            the reactor loop (below)
//   session_servers.cpp       the server list: set_servers, and following the ensemble's config
//   watch_table.{hpp,cpp}     one-shot watches and the table of those the server holds for us
//   close_service.{hpp,cpp}   the thread the C client's blocking close runs on
//   session_impl.cpp          this class: events, connect and close, the requests
//   session.cpp               the public zklock::session and its type-erased entry points
//
// The reactor loop:
//  * zookeeper_interest() says which fd, which events, and by when the client must run again
//    (pings, connect timeouts). We wait for those events on a posix::stream_descriptor (released,
//    never closed: the C client owns the socket) and for the deadline on a steady_timer.
//  * Then zookeeper_process() runs; it invokes C callbacks, which only copy their data into a
//    request object and queue it. The queue runs after zookeeper_process has returned, so no user
//    code and no recipe step ever runs inside the C client.
//  * After every request sent and every event, interest is asked again.
//
// Everything here runs on the session's executor. session_impl is the port (port/zk_port.hpp) the
// operations talk to: the bridge knows nothing of the recipes.
#pragma once

#include "port/session_core.hpp"
#include "bridge/watch_table.hpp"
#include "bridge/client_io.hpp"
#include "bridge/zk_requests.hpp"
#include "port/zk_port.hpp"

#include <zklock/config.hpp>
#include <zklock/detail/unique_function.hpp>
#include <zklock/types.hpp>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <thread>

#include <unordered_map>

#include "bridge/zk_client.h"

#include <sys/socket.h>

#include <array>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace zklock::detail {

class close_service;
class tls_context;

class session_impl final : public zk_port, private session_io, public std::enable_shared_from_this<session_impl> {
public:
    session_impl(asio::any_io_executor ex, session_config cfg);
    ~session_impl() override;

    // zk_port
    const asio::any_io_executor& executor() const noexcept override { return ex_; }
    bool other_thread_runs_handlers() const noexcept override
    {
        const auto t = handler_thread_.load(std::memory_order_relaxed);
        return t != std::thread::id{} && t != std::this_thread::get_id();
    }
    session_state state() const noexcept override { return core_.fsm().state(); }
    std::uint64_t generation() const noexcept override { return core_.fsm().generation(); }
    std::uint64_t connections() const noexcept override { return connections_; }
    std::int64_t session_id() const noexcept override { return core_.fsm().session_id(); }
    /// A third of the session timeout, when an engaged session starts to doubt its server
    /// (session_fsm).
    clock::duration answer_deadline() const noexcept override { return core_.fsm().answer_deadline(); }
    std::size_t max_request_bytes() const noexcept override { return cfg_.max_request_bytes; }
    const log_sink& log() const noexcept override { return *log_; }
    session_reading read_now() override { return core_.read_now(); }
    void wait_connected(std::uint64_t generation, void_cb cb) override { core_.wait_connected(generation, std::move(cb)); }
    void subscribe(std::weak_ptr<session_observer> o) override { core_.subscribe(std::move(o)); }
    // Requests. The callback runs on the session executor, after zookeeper_process returned.
    void create(const std::string& path, std::string_view data, create_mode mode, create_cb cb) override;
    void remove(const std::string& path, std::int32_t version, void_cb cb) override;
    void exists(const std::string& path, std::shared_ptr<watch_state> w, stat_cb cb) override;
    void get_data(const std::string& path, std::shared_ptr<watch_state> w, data_cb cb) override;
    void set_data(const std::string& path, std::string_view data, std::int32_t version, set_cb cb) override;
    void get_children(const std::string& path, std::shared_ptr<watch_state> w, children_cb cb) override;
    void list_children(const std::string& path, names_cb cb) override;
    void multi(const std::vector<multi_op>& ops, multi_cb cb) override;
    void sync(const std::string& path, void_cb cb) override;

    const session_config& config() const noexcept { return cfg_; }
    std::chrono::milliseconds negotiated_timeout() const noexcept { return core_.fsm().negotiated_timeout(); }
    bool has_auth() const noexcept { return !cfg_.digest_auth.empty(); }
    /// The ACL of the nodes the session creates: with digest auth, the creator's alone; with a
    /// TLS client certificate (its x509 identity), the creator's, and reading for anyone; else
    /// open.
    const ACL_vector* node_acl() const noexcept;

    /// Completes once connected (posted if that is known now). Returns an id for cancel_connect,
    /// 0 if the outcome was known at once.
    std::uint64_t connect(void_cb cb);
    /// Completes that connect with operation_aborted; the last one abandons an attempt that has
    /// not connected yet.
    void cancel_connect(std::uint64_t id);
    /// The session is closed at once; the C client's close (which waits for the server's answer)
    /// runs on the close_service's thread, and `cb` completes (posted) after it.
    void close(void_cb cb);
    /// The execution context shuts down (close_service): the session is closed without a word to
    /// anyone. Every handler and callback it holds, or that its observers and the watches it
    /// knows hold, is buried (destroying them may bury more: call again until nothing comes);
    /// returns the C handle, detached, for the caller to close (once).
    zhandle_t* shut_down(graveyard& g);

    /// Completes at the next state change.
    void wait_state_change(unique_function<void(error_code, session_state)> cb);

    /// Reads the ensemble's dynamic configuration (/zookeeper/config, whatever the chroot), as
    /// get_data does.
    void get_config(std::shared_ptr<watch_state> w, data_cb cb);

    /// session::set_servers (session_servers.cpp).
    error_code set_servers(std::string servers);

    // For the C callbacks (zk_requests.cpp).
    void enqueue(std::unique_ptr<c_event> e);
    /// A request only the leader answers, sent at `sent`, was answered without error.
    void on_leader_answer(clock::time_point sent) { core_.on_leader_answer(sent); }
    void on_watcher(int type, int zstate, std::string path);
    void register_watch(watch_kind kind, std::string_view path, const std::shared_ptr<watch_state>& w);

private:
    // session_impl.cpp
    /// Starts a C handle; on failure (zh_ stays null) why: errc::unresolvable_host when no host
    /// name of the list resolved, else a system error. A list of addresses starts it within the
    /// call; one that names a host is looked up off the executor (resolver_) with the state
    /// connecting meanwhile, and a failure then ends the attempt as a connect timeout does.
    error_code start_handle();
    // session_io: the effects of the core's decisions on the C handle, its waiters and watches.
    void apply_io(const session_effects& e) override;
    void fail_watches(error_code ec) override;
    /// A sync to the leader, if connected (the leader probe: session_core).
    void send_probe() override;
    std::weak_ptr<void> owner() override { return weak_from_this(); }
    /// Tells the log of the state the session just entered.
    void log_state();
    void close_handle_inline();
    /// The read end of a fresh pipe (its write end in `write_end`), or null if there is none.
    std::shared_ptr<asio::posix::stream_descriptor> close_signal(int& write_end);
    template <class Req> void refuse(std::unique_ptr<Req> r, error_code ec);
    template <class Req> void submit(std::unique_ptr<Req> r, int rc, request_type type);
    /// Marks `r` as a request only the leader answers, sent now.
    void leader_request(request_base& r);

    // session_servers.cpp: the server list
    /// A server's address, as resolved for the C client.
    struct server_address {
        sockaddr_storage addr{};
        socklen_t len = 0;
    };
    /// A list set by set_servers that the C client does not have yet.
    struct pending_list {
        std::string numeric;  // "ip:port,..." as the C client reads it (IPv6 without brackets)
        std::vector<server_address> addresses;
        std::vector<std::string> hosts;  // the host of the server list each address is of

        /// Adds one address of `host`, unless the list has it already.
        void add(const sockaddr* a, socklen_t len, const std::string& host);
        /// Done adding: errc::unresolvable_host if empty; else made of odd length.
        error_code finish();
    };
    /// The list to give the C client for the host list `hosts` (no chroot) when every host of it
    /// is an address (parsed, never looked up); nothing when one is a name.
    static std::optional<pending_list> numeric_servers(std::string_view hosts);
    /// The list for `hosts` resolved by resolver_, whose lookups run on Asio's resolver thread, not
    /// on the executor: `done` runs on the executor, with errc::unresolvable_host if no host
    /// resolves; not at all if the session is gone.
    void resolve_servers(std::string_view hosts, unique_function<void(error_code, pending_list)> done);
    struct resolve_job;
    void resolve_next(std::shared_ptr<resolve_job> job);
    /// set_servers' second half, with the new list resolved.
    void take_servers(std::string servers_with_chroot, pending_list l);
    /// start_handle's second half (session_impl.cpp): the C handle for the resolved list `l`.
    error_code open_handle(pending_list l);
    void apply_servers();
    void install_servers();
    /// Whether the server the socket is connected to is in `l`.
    bool peer_listed(const pending_list& l) const;
    void follow_ensemble();
    void on_ensemble_config(const std::string& data);

    // session_io.cpp: the reactor loop
    void drive();
    void process(int events);
    /// Lets the C client handle `events` (after process() checked them), then runs what it
    /// completed.
    void run_client(int events);
    void run_completions();
    void schedule_completions();
    void after_process();
    void update_fd(int fd);
    void arm_timer(clock::time_point when);
    /// How long after the connect attempt starting now the next one may start.
    clock::duration next_reconnect_delay();
    /// Whether the C client's next read finds bytes (the channel's: or the connection's end or an
    /// error).
    bool input_waiting();
    /// Whether a read would find data, the connection's end or an error (not: would block).
    bool readable();
    /// Whether the bytes waiting on the socket can be the start of a ZooKeeper ConnectResponse.
    bool handshake_plausible() const;
    /// Ends the connection so that the C client drops it as lost (see process()).
    void refuse_peer();
    /// Whether the server ended the connection before sending a byte (in the handshake).
    bool ended_unanswered() const;
    /// A plaintext session whose server ended the handshake unanswered: asks that server whether
    /// it speaks TLS (probe_tls), and if so refuses it with errc::tls_required.
    void probe_for_tls();
    /// Replaces the socket, under its number, by one whose peer is closed: the C client's next
    /// read sees the connection end, and it drops the connection as after any loss. The client
    /// must process it in the same handler (run_client): update_fd() trusts a number it saw
    /// connected to be the same socket while the client says connected.
    void drop_connection();
    void release_io();
    void drop_write_registration();
    /// Called before each request goes to the C client: opens the turn's batch (see batch_open_).
    void begin_request();
    void end_batch();
    /// Holds the turn's requests in the channel (only the connected handle's own socket).
    void hold_output();
    zhandle_t* detach_handle();

    asio::any_io_executor ex_;
    session_config cfg_;
    std::shared_ptr<log_sink> log_;  // shared with the close thread's job
    session_core core_;
    zhandle_t* zh_ = nullptr;

    // the reactor loop
    asio::posix::stream_descriptor desc_;
    int fd_ = -1;
    ino_t fd_inode_ = 0;
    bool fd_settled_ = false;  // fd_ was checked while connected, and every drive since saw connected
    std::uint64_t io_gen_ = 0;
    bool reading_ = false;
    bool writing_ = false;
    bool out_registered_ = false;  // a write wait was started on desc_'s registration (see drop_write_registration)
    asio::steady_timer timer_;
    bool timer_waiting_ = false;
    clock::time_point timer_deadline_{};
    bool in_process_ = false;
    clock::time_point reconnect_at_{};  // no new connect attempt before (see drive())
    unsigned reconnect_attempts_ = 0;   // attempts since the last connection (or handle) began
    bool handshake_checked_ = false;    // this attempt's first answer was looked at
    error_code refused_;                // why a peer was refused since the last connection (or handle) began
    std::minstd_rand jitter_{std::random_device{}()};
    bool completions_posted_ = false;
    // Requests of one executor turn leave together (begin_request): they are held in the
    // channel's buffer while the batch is open, and end_batch, posted by the turn's first request,
    // sends them and drives the C client once for all of them; a long batch goes out in parts of
    // max_batch_requests.
    static constexpr unsigned max_batch_requests = 64;
    bool batch_open_ = false;
    unsigned batch_requests_ = 0;
    // The C client's socket calls for the current handle (client_io.hpp); a new one per handle,
    // since the last handle's socket may still be closing on the close thread.
    std::shared_ptr<client_channel> chan_ = std::make_shared<client_channel>();
    bool restart_pending_ = false;  // an expiry: close the handle (and start anew) after processing
    bool running_completions_ = false;
    std::deque<std::unique_ptr<c_event>> completed_;
    std::size_t completed_bytes_ = 0;  // payload of completed_ (see process())

    // the state's timers and waiters
    asio::steady_timer connect_timer_;
    std::uint64_t next_connect_id_ = 0;
    std::vector<std::pair<std::uint64_t, void_cb>> connect_waiters_;
    std::vector<unique_function<void(error_code, session_state)>> state_waiters_;
    watch_table watches_;
    bool shut_down_ = false;       // see shut_down()
    bool restart_starts_ = false;  // with restart_pending_: start a fresh handle (reconnect_on_expiry)
    bool was_connected_ = false;   // a connection was established before: the next one is a reconnect
    std::uint64_t connections_ = 0;  // see connections()

    // TLS (session_config::tls): the context, made by the first start_handle and kept across
    // handles; the channel runs each connection's TLS (client_io.hpp).
    std::shared_ptr<tls_context> tls_;
    std::vector<std::string> tls_only_;  // servers a plaintext session found speaking only TLS (this handle)
    std::uint64_t handles_ = 0;          // C handles started
    std::vector<std::pair<sockaddr_storage, error_code>> tls_refusals_;  // by address, since a handshake passed
    error_code tls_last_refusal_;        // the latest refusal since a handshake passed
    std::vector<std::pair<sockaddr_storage, std::string>> tls_hosts_;  // of the installed list
    /// The channel's TLS for the list `l`.
    void set_tls_setup(const pending_list& l);
    /// The channel's TLS for its next connection: the context read again if its files changed.
    void refresh_tls();
    /// Takes what the channel's latest handshake came to: a refusal from every address of the
    /// list in a row fails a waiting connect (on_tls_refused).
    void note_tls_outcome();
    /// Every server refused the connection for a reason of its own (TLS): `ec`, the latest.
    void on_tls_refused(error_code ec);

    // the server list (session_servers.cpp)
    std::optional<pending_list> pending_servers_;  // installed once the C client has no socket
    std::string installed_servers_;                // the host list the C client has
    bool servers_posted_ = false;                  // apply_servers() is posted
    std::shared_ptr<watch_state> config_watch_;    // follow_ensemble: on /zookeeper/config
    std::uint64_t config_reads_ = 0;               // the latest read of it
    asio::ip::tcp::resolver resolver_;             // host names, looked up on Asio's resolver thread
    std::uint64_t handle_lookup_ = 0;              // start_handle's latest lookup (0: none pending)
    std::uint64_t servers_lookup_ = 0;             // set_servers' latest lookup
    std::uint64_t lookups_ = 0;                    // lookups started
    std::atomic<std::thread::id> handler_thread_{};  // the latest to run process(): other_thread_runs_handlers()

    // Last: the service must come after the reactor that desc_ and the timers register (see the
    // constructor).
    close_service& closer_;
};

}  // namespace zklock::detail
