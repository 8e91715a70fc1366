// The port (src/port/zk_port.hpp) of one simulated client session: what the C client and the
// bridge's session_impl do for a real session, done over the model (zk_model) and the simulation's
// virtual clock. Everything the session decides (its states, its doubt and presumed expiry, the
// leader probe, its observers and those waiting for a connection) is the library's own
// session_core, fed the events of the simulated connection; requests go to the model in order, replies and
// watch events come back when the scheduler delivers them; requests made while the connection is
// down wait for the next connection, and every request in flight fails with connection_loss when
// it drops, as the C client does. It is also the session's control (port/session_control.hpp),
// so that a zklock::session wraps it and the workload drives the public API: connecting is the
// simulation's (try_connect), and async_connect waits for it; async_close closes as close() does.
#pragma once

#include "virtual_clock.hpp"
#include "zk_model.hpp"

#include "port/session_control.hpp"
#include "port/session_core.hpp"
#include "port/zk_port.hpp"

#include <boost/asio/io_context.hpp>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace zklock::sim {

/// What a simulated client's session knows of the rest of the simulation.
struct port_env {
    zk_model* model = nullptr;
    virtual_clock* clock = nullptr;
    /// Shuffles a listing (the real server lists children in a hash set's order).
    std::function<void(std::vector<std::string>&)> shuffle;
    /// A line of the run's trace.
    std::function<void(std::string)> trace;
    /// Releases sent with a handoff mark (a multi: the lock path's data, then the node's delete),
    /// and those the server refused with no_auth.
    std::uint64_t* marked_releases = nullptr;
    std::uint64_t* marks_refused = nullptr;
};

class sim_port final : public detail::zk_port,
                       public detail::session_control,
                       private detail::session_io,
                       public std::enable_shared_from_this<sim_port> {
public:
    sim_port(port_env env, int client, boost::asio::io_context& io, sim_clock::duration session_timeout);
    ~sim_port() override;

    // ---- the port ----
    const boost::asio::any_io_executor& executor() const noexcept override { return ex_; }
    session_state state() const noexcept override { return core_.fsm().state(); }
    std::uint64_t generation() const noexcept override { return core_.fsm().generation(); }
    std::uint64_t connections() const noexcept override { return connections_; }
    std::int64_t session_id() const noexcept override { return core_.fsm().session_id(); }
    clock::duration answer_deadline() const noexcept override { return core_.fsm().answer_deadline(); }
    std::size_t max_request_bytes() const noexcept override { return 1024 * 1024; }
    const detail::log_sink& log() const noexcept override { return log_; }
    detail::session_reading read_now() override { return core_.read_now(); }
    void wait_connected(std::uint64_t generation, detail::void_cb cb) override
    {
        core_.wait_connected(generation, std::move(cb));
    }
    void subscribe(std::weak_ptr<detail::session_observer> o) override { core_.subscribe(std::move(o)); }
    void create(const std::string& path, std::string_view data, create_mode mode, detail::create_cb cb) override;
    void remove(const std::string& path, std::int32_t version, detail::void_cb cb) override;
    void exists(const std::string& path, std::shared_ptr<detail::watch_state> w, detail::stat_cb cb) override;
    void get_data(const std::string& path, std::shared_ptr<detail::watch_state> w, detail::data_cb cb) override;
    void set_data(const std::string& path, std::string_view data, std::int32_t version, detail::set_cb cb) override;
    void get_children(const std::string& path, std::shared_ptr<detail::watch_state> w, detail::children_cb cb) override;
    void list_children(const std::string& path, detail::names_cb cb) override;
    void multi(const std::vector<multi_op>& ops, detail::multi_cb cb) override;
    void sync(const std::string& path, detail::void_cb cb) override;
    std::unique_ptr<detail::port_timer> make_timer() override;
    clock::time_point now() const noexcept override { return env_.clock->now(); }

    // ---- the session's control ----
    /// Waits for the connection the simulation makes (not cancellable: returns 0).
    std::uint64_t connect(detail::void_cb cb) override;
    void cancel_connect(std::uint64_t) override {}
    /// close(), then `cb` (posted).
    void close(detail::void_cb cb) override;
    void wait_state_change(detail::unique_function<void(error_code, session_state)> cb) override;
    const session_config& config() const noexcept override { return cfg_; }
    std::chrono::milliseconds negotiated_timeout() const noexcept override { return core_.fsm().negotiated_timeout(); }
    /// The simulation has no server list: errc::invalid_argument, nothing changed.
    error_code set_servers(std::string) override { return errc::invalid_argument; }

    // ---- the simulation's side (never from inside a handler of this port) ----

    /// The first connection attempt (the session starts connecting).
    void start();
    /// Whether the session wants a connection (connecting, or suspended).
    bool wants_connection() const noexcept;
    /// One connection attempt to `server`: a fresh session while connecting, the same one while
    /// suspended (which the server may answer with expired, after which a fresh one is started).
    /// Returns whether the session is connected after it.
    bool try_connect(int server);
    /// The model session this client speaks for (0: none).
    zklock::sim::session_id model_session() const noexcept { return sid_; }
    /// The connection is up (as the client sees it).
    bool link_up() const noexcept { return link_up_; }
    /// Delivers the oldest message of the model's outbox for this session.
    void deliver(message m);
    /// The connection dropped (the client sees it now).
    void connection_lost();
    /// The user closes the session: a close request, then closed.
    void close();
    /// The client's process ends or the run ends: observers bury what they hold, and every
    /// callback held (requests, waits, the watches) is let go without being called.
    void shut_down();

    /// How many requests wait for a reply, and how many wait for a connection.
    std::size_t in_flight() const noexcept { return in_flight_.size(); }
    /// Whether a request on `path` or under it waits for a reply or for a connection.
    bool in_flight_under(std::string_view path) const noexcept
    {
        for (const auto& o : in_flight_)
            if (o.path.starts_with(path) && (o.path.size() == path.size() || o.path[path.size()] == '/')) return true;
        return false;
    }

private:
    struct outstanding {
        std::uint64_t tag = 0;
        request::kind kind = request::kind::exists;
        std::string path;
        std::shared_ptr<detail::watch_state> watch;
        sim_clock::time_point leader_sent{};  ///< a write or sync: when it was sent
        std::function<void(const reply&)> done;
    };
    class timer;

    void send(request r, std::shared_ptr<detail::watch_state> w, std::function<void(const reply&)> done);
    void submit(outstanding o, request r);
    void complete(outstanding& o, const reply& r);
    void fail_all(error_code ec);
    // session_io: what the core's decisions ask of the connection.
    void apply_io(const detail::session_effects& e) override;
    void fail_watches(error_code ec) override;
    void send_probe() override;
    std::weak_ptr<void> owner() override { return weak_from_this(); }
    void arm_ping();
    void add_watch(int kind, const std::string& path, const std::shared_ptr<detail::watch_state>& w);
    void fire_watches(event_type type, const std::string& path);

    port_env env_;
    int client_;
    boost::asio::io_context& io_;
    boost::asio::any_io_executor ex_;
    sim_clock::duration timeout_;
    session_config cfg_;
    detail::session_core core_;
    detail::log_sink log_{{}, log_level::error};
    zklock::sim::session_id sid_ = 0;
    bool link_up_ = false;
    std::int64_t last_zxid_ = 0;
    std::uint64_t next_tag_ = 1;
    std::uint64_t connections_ = 0;
    std::deque<outstanding> in_flight_;
    std::deque<std::pair<outstanding, request>> unsent_;
    std::unique_ptr<detail::port_timer> ping_timer_;
    std::vector<detail::unique_function<void(error_code, session_state)>> state_waiters_;
    // The client's watches, as the C client keeps them: data, exist, child.
    std::map<std::string, std::vector<std::weak_ptr<detail::watch_state>>> watches_[3];
};

}  // namespace zklock::sim
