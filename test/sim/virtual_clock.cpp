#include "virtual_clock.hpp"

#include <boost/asio/post.hpp>

#include <vector>

namespace zklock::sim {

void virtual_clock::start(const std::shared_ptr<entry>& e, time_point due, detail::unique_function<void()> cb)
{
    cancel(*e);
    if (due < now_) due = now_;
    e->cb = std::move(cb);
    e->due = due;
    e->key = next_key_++;
    queue_.emplace(std::make_pair(due, e->key), e);
}

void virtual_clock::cancel(entry& e) noexcept
{
    if (e.key != 0) queue_.erase(std::make_pair(e.due, e.key));
    e.key = 0;
    e.cb = {};
}

std::optional<virtual_clock::time_point> virtual_clock::next_due() const
{
    for (const auto& [k, w] : queue_)
        if (!w.expired()) return k.first;
    return std::nullopt;
}

void virtual_clock::advance_to(time_point t)
{
    if (t > now_) now_ = t;
    while (!queue_.empty() && queue_.begin()->first.first <= now_) {
        auto node = queue_.extract(queue_.begin());
        auto e = node.mapped().lock();
        if (!e) continue;
        e->key = 0;
        boost::asio::post(e->ex, [cb = std::make_shared<detail::unique_function<void()>>(std::move(e->cb))] { (*cb)(); });
        e->cb = {};
    }
}

void virtual_clock::drop_all()
{
    std::vector<detail::unique_function<void()>> held;
    for (auto& [k, w] : queue_)
        if (auto e = w.lock()) {
            e->key = 0;
            held.push_back(std::move(e->cb));
            e->cb = {};
        }
    queue_.clear();
    held.clear();
}

}  // namespace zklock::sim
