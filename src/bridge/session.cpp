// The public zklock::session made from an executor: a real ZooKeeper session, the bridge's
// session_impl, which is both the session's port and, through bridge_control, its control
// (connect, close, configuration, server list). Everything else of zklock::session works on any
// port and control (src/port/session_api.cpp).
#include "bridge/session_impl.hpp"
#include "port/session_control.hpp"

#include <zklock/session.hpp>

namespace zklock::detail {

namespace {

// The control of a real session: session_impl's own connect, close, configuration and server list.
class bridge_control final : public session_control {
public:
    explicit bridge_control(std::shared_ptr<session_impl> s) noexcept : s_(std::move(s)) {}
    std::uint64_t connect(void_cb cb) override { return s_->connect(std::move(cb)); }
    void cancel_connect(std::uint64_t id) override { s_->cancel_connect(id); }
    void close(void_cb cb) override { s_->close(std::move(cb)); }
    void wait_state_change(unique_function<void(error_code, session_state)> cb) override
    {
        s_->wait_state_change(std::move(cb));
    }
    const session_config& config() const noexcept override { return s_->config(); }
    std::chrono::milliseconds negotiated_timeout() const noexcept override { return s_->negotiated_timeout(); }
    error_code set_servers(std::string servers) override { return s_->set_servers(std::move(servers)); }

private:
    std::shared_ptr<session_impl> s_;
};

}  // namespace

}  // namespace zklock::detail

namespace zklock {

session::session(executor_type ex, const session_config& config)
{
    auto s = std::make_shared<detail::session_impl>(std::move(ex), config);
    control_ = std::make_shared<detail::bridge_control>(s);
    impl_ = std::move(s);
}

}  // namespace zklock
