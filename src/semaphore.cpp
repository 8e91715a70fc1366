// The semaphore's first step: make sure the stored permit count is ours, then the common acquire.
#include "deadline.hpp"
#include "session_impl.hpp"

#include <zklock/detail/path.hpp>
#include <zklock/semaphore.hpp>

#include <boost/asio/cancellation_type.hpp>

#include <charconv>

namespace zklock::detail {

namespace {

constexpr std::string_view count_prefix = "zklock-semaphore permits=";

// Before the queue node is created, nothing needs undoing: a timeout or a cancellation (any type)
// completes at once, also while the count read waits for a lost connection to come back.
class permit_check : public std::enable_shared_from_this<permit_check> {
public:
    permit_check(session_ptr s, acquire_request req, handler<error_code, lease> h)
        : s_(std::move(s)), req_(std::move(req)), h_(std::move(h), s_->executor()), timer_(s_->executor()),
          deadline_(req_.timeout ? deadline_after(*req_.timeout) : steady::time_point::max())
    {
    }

    void start()
    {
        if (req_.policy.permits == 0) return finish(errc::invalid_argument, true);
        if (validate_lock_path(req_.dir)) return proceed();  // the acquire reports the bad path
        if (auto slot = h_.slot(); slot.is_connected()) {
            slot.assign([weak = weak_from_this(), ex = s_->executor()](asio::cancellation_type t) {
                if ((t & (asio::cancellation_type::terminal | asio::cancellation_type::partial |
                          asio::cancellation_type::total)) == asio::cancellation_type::none)
                    return;
                asio::post(ex, [weak] {
                    if (auto self = weak.lock()) self->finish(asio::error::operation_aborted, false);
                });
            });
        }
        if (req_.timeout) {
            timer_.expires_at(deadline_);
            timer_.async_wait([weak = weak_from_this()](error_code ec) {
                if (ec) return;
                if (auto self = weak.lock()) self->finish(errc::timeout, false);
            });
        }
        in_initiation_ = true;
        read();
        in_initiation_ = false;
    }

private:
    std::string count_data() const { return std::string(count_prefix) + std::to_string(req_.policy.permits); }

    void read()
    {
        auto self = shared_from_this();
        s_->get_data(req_.dir, nullptr, [self](error_code ec, std::string data, zklock::stat st) {
            if (self->done_) return;
            if (!ec) {
                if (data.empty()) return self->claim(st.version);
                if (data == self->count_data()) return self->proceed();
                return self->finish(errc::permit_mismatch, false);
            }
            if (ec == zk_errc::no_node && ++self->tries_ < 16) {
                return self->s_->create_containers(self->req_.dir, [self](error_code ec2) {
                    if (self->done_) return;
                    if (ec2) return self->finish(ec2, false);
                    self->read();
                });
            }
            if (is_retryable(ec) && ++self->tries_ < 16) {
                return self->s_->wait_connected(0, [self](error_code ec2) {
                    if (self->done_) return;
                    if (ec2) return self->finish(ec2, false);
                    self->read();
                });
            }
            self->finish(ec, false);
        });
    }

    // The node exists without a count (created as a parent by someone): write ours, if nobody
    // wrote one in between (compare-and-set on the data version).
    void claim(std::int32_t version)
    {
        auto self = shared_from_this();
        s_->set_data(req_.dir, count_data(), version, [self](error_code ec, zklock::stat) {
            if (self->done_) return;
            if (!ec) return self->proceed();
            if ((ec == zk_errc::bad_version || ec == zk_errc::no_node || is_retryable(ec)) && ++self->tries_ < 16)
                return self->read();
            self->finish(ec, false);
        });
    }

    void proceed()
    {
        done_ = true;
        timer_.cancel();
        if (req_.timeout) {  // the deadline counts from the call, not from here
            req_.timeout = std::max<steady::duration>(time_left(deadline_), std::chrono::nanoseconds(1));
        }
        // The acquire takes the handler over, with its cancellation slot.
        initiate_acquire(s_, std::move(req_), h_.release());
    }

    void finish(error_code ec, bool from_initiation)
    {
        if (done_) return;
        done_ = true;
        timer_.cancel();
        if (from_initiation || in_initiation_) h_.post(ec, lease{});
        else h_.complete(ec, lease{});
    }

    session_ptr s_;
    acquire_request req_;
    stored_handler<error_code, lease> h_;
    asio::steady_timer timer_;
    steady::time_point deadline_;
    int tries_ = 0;
    bool done_ = false;
    bool in_initiation_ = false;
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
