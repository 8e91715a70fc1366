#include "port/zk_port.hpp"

#include <boost/asio/steady_timer.hpp>

#include <atomic>

namespace zklock::detail {

namespace {

class steady_port_timer final : public port_timer {
public:
    explicit steady_port_timer(const asio::any_io_executor& ex) : t_(ex) {}
    void start(std::chrono::steady_clock::duration d, unique_function<void()> cb) override
    {
        t_.expires_after(d);
        t_.async_wait([cb = std::move(cb)](error_code ec) mutable {
            if (!ec) cb();
        });
    }
    void cancel() noexcept override { t_.cancel(); }

private:
    asio::steady_timer t_;
};

}  // namespace

std::unique_ptr<port_timer> zk_port::make_timer() { return std::make_unique<steady_port_timer>(executor()); }

error_code zk_port::check_request_size(std::size_t path_bytes, std::size_t data_bytes, std::size_t ops) const noexcept
{
    // Request header (xid, type: 8), length prefixes, the ACL (world:anyone or auth: < 48), flags,
    // and per multi op its header: generous, so a request we pass is never one the server drops.
    constexpr std::size_t framing = 128, per_op = 64;
    const std::size_t limit = max_request_bytes();
    if (path_bytes > limit || data_bytes > limit || ops > limit / per_op) return errc::request_too_large;
    if (path_bytes + data_bytes + framing + ops * per_op > limit) return errc::request_too_large;
    return {};
}

std::size_t zk_port::next_extension_id() noexcept
{
    static std::atomic<std::size_t> next{0};
    return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace zklock::detail
