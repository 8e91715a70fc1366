#include "port/watch_state.hpp"

#include <boost/asio/post.hpp>

namespace zklock::detail {

void watch_state::fire(error_code ec, watch_event ev)
{
    if (result_) return;
    result_ = std::make_unique<std::pair<error_code, watch_event>>(ec, std::move(ev));
    if (waiter_) {
        auto w = std::move(waiter_);
        w(result_->first, result_->second);
    }
}

void watch_state::wait(unique_function<void(error_code, watch_event)> cb)
{
    if (result_) {
        asio::post(*ex_, [cb = std::move(cb), r = *result_]() mutable { cb(r.first, r.second); });
        return;
    }
    waiter_ = std::move(cb);
}

void watch_state::cancel_wait()
{
    // The waiter may hold the last reference to us (a pending watch::async_wait): it goes last.
    auto waiter = std::move(waiter_);
    waiter_ = {};
}

void watch_state::abandon(graveyard& g)
{
    if (waiter_) g.bury(std::move(waiter_));
    waiter_ = {};
}

}  // namespace zklock::detail
