// What a session lets go of when its execution context shuts down.
#pragma once

#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

namespace zklock::detail {

/// Handlers and callbacks taken out of a session when its execution context shuts down: they are
/// destroyed, never invoked (Asio's rule for the pending handlers of a destroyed context), and only
/// once every session of the context has given its own up, so that no destructor (a coroutine
/// frame's, a lease's) runs into a session in the middle of letting go.
class graveyard {
public:
    template <class T> void bury(T&& t)
    {
        items_.push_back(std::make_shared<std::decay_t<T>>(std::forward<T>(t)));
    }
    bool empty() const noexcept { return items_.empty(); }
    /// Destroys what was buried. The destructors may bury more (destroying a lease releases it,
    /// which queues a request): the caller goes round again until nothing is left.
    void clear()
    {
        auto items = std::move(items_);
        items_.clear();
        items.clear();
    }

private:
    std::vector<std::shared_ptr<void>> items_;
};

}  // namespace zklock::detail
