// The semaphore's first step: make sure the stored permit count is ours, then the common acquire.
#include "session_impl.hpp"

#include <zklock/detail/path.hpp>
#include <zklock/semaphore.hpp>

#include <boost/asio/cancellation_type.hpp>

#include <charconv>

namespace zklock::detail {

namespace {

constexpr std::string_view count_prefix = "zklock-semaphore permits=";

class permit_check : public std::enable_shared_from_this<permit_check> {
public:
    permit_check(session_ptr s, acquire_request req, handler<error_code, lease> h)
        : s_(std::move(s)), req_(std::move(req)), h_(std::move(h)), started_(std::chrono::steady_clock::now())
    {
    }

    void start()
    {
        if (req_.policy.permits == 0) return fail_now(errc::invalid_argument);
        if (validate_lock_path(req_.dir)) return proceed();  // the acquire reports the bad path
        // Cancellation before the acquire starts: nothing created yet, complete at once.
        if (auto slot = asio::get_associated_cancellation_slot(h_); slot.is_connected()) {
            slot.assign([weak = weak_from_this(), ex = s_->executor()](asio::cancellation_type) {
                asio::post(ex, [weak] {
                    if (auto self = weak.lock()) self->cancelled_ = true;
                });
            });
        }
        read();
    }

private:
    std::string count_data() const { return std::string(count_prefix) + std::to_string(req_.policy.permits); }

    void read()
    {
        auto self = shared_from_this();
        s_->get_data(req_.dir, nullptr, [self](error_code ec, std::string data, zklock::stat st) {
            if (self->cancelled_) return self->fail(asio::error::operation_aborted);
            if (!ec) {
                if (data.empty()) return self->claim(st.version);
                if (data == self->count_data()) return self->proceed();
                return self->fail(errc::permit_mismatch);
            }
            if (ec == zk_errc::no_node && ++self->tries_ < 16) {
                return self->s_->create_containers(self->req_.dir, [self](error_code ec2) {
                    if (ec2) return self->fail(ec2);
                    self->read();
                });
            }
            if (is_retryable(ec) && ++self->tries_ < 16) {
                return self->s_->wait_connected(0, [self](error_code ec2) {
                    if (ec2) return self->fail(ec2);
                    self->read();
                });
            }
            self->fail(ec);
        });
    }

    // The node exists without a count (created as a parent by someone): write ours, if nobody
    // wrote one in between (compare-and-set on the data version).
    void claim(std::int32_t version)
    {
        auto self = shared_from_this();
        s_->set_data(req_.dir, count_data(), version, [self](error_code ec, zklock::stat) {
            if (!ec) return self->proceed();
            if ((ec == zk_errc::bad_version || ec == zk_errc::no_node || is_retryable(ec)) && ++self->tries_ < 16)
                return self->read();
            self->fail(ec);
        });
    }

    void proceed()
    {
        if (req_.timeout) {  // the deadline counts from the call, not from here
            auto left = *req_.timeout - (std::chrono::steady_clock::now() - started_);
            req_.timeout = std::max<std::chrono::steady_clock::duration>(left, std::chrono::nanoseconds(1));
        }
        initiate_acquire(s_, std::move(req_), std::move(h_));
    }

    void fail(error_code ec) { stored_handler<error_code, lease>(std::move(h_), s_->executor()).complete(ec, lease{}); }
    void fail_now(error_code ec) { stored_handler<error_code, lease>(std::move(h_), s_->executor()).post(ec, lease{}); }

    session_ptr s_;
    acquire_request req_;
    handler<error_code, lease> h_;
    std::chrono::steady_clock::time_point started_;
    int tries_ = 0;
    bool cancelled_ = false;
};

}  // namespace

void initiate_semaphore_acquire(session_ptr s, acquire_request req, handler<error_code, lease> h)
{
    std::make_shared<permit_check>(std::move(s), std::move(req), std::move(h))->start();
}

}  // namespace zklock::detail

namespace zklock {

semaphore::executor_type semaphore::get_executor() const noexcept { return s_->executor(); }

}  // namespace zklock
