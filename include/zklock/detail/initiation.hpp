// The initiation objects every zklock operation gives asio::async_initiate, as Beast and
// Boost.MySQL write theirs: the object the operation runs on, the executor it completes through
// by default (get_executor(), for completion tokens that ask the initiation for it, such as
// asio::cancel_after and asio::cancel_at in newer Asio), and the call that starts it.
#pragma once

#include <zklock/detail/session_fwd.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/io_context.hpp>

#include <memory>
#include <type_traits>
#include <utility>

namespace zklock::detail {

class lease_state;
class observer_state;

/// The executor an operation on this object completes through when its handler has none: the
/// session's. An empty lease, watch or observer has no session: asio::system_executor (the one
/// exception, documented at each such operation).
boost::asio::any_io_executor executor_of(const session_ptr& s) noexcept;
boost::asio::any_io_executor executor_of(const std::shared_ptr<watch_state>& w) noexcept;
boost::asio::any_io_executor executor_of(const std::shared_ptr<lease_state>& l) noexcept;
boost::asio::any_io_executor executor_of(const std::shared_ptr<observer_state>& o) noexcept;

/// Calls `start(handler)`. A handler whose associated executor is an any_io_executor around an
/// io_context's executor (a coroutine's, for one) gets that inner executor bound instead: the
/// same executor, which the type-erased handler converts to any_completion_executor in place,
/// where the any_io_executor would take an allocation at every use.
template <class Handler, class Start> void with_plain_executor(Handler&& h, const Start& start)
{
    namespace asio = boost::asio;
    using handler_type = std::decay_t<Handler>;
    if constexpr (std::is_same_v<asio::associated_executor_t<handler_type>, asio::any_io_executor>) {
        const asio::any_io_executor ex = asio::get_associated_executor(h);
        if (const auto* inner = ex.target<asio::io_context::executor_type>())
            return start(asio::bind_executor(*inner, std::forward<Handler>(h)));
    }
    start(std::forward<Handler>(h));
}

/// Starts an operation on `object` with `Start(object, args..., handler)`.
template <auto Start, class Object> struct initiation {
    Object object;

    using executor_type = boost::asio::any_io_executor;
    executor_type get_executor() const noexcept { return executor_of(object); }

    template <class Handler, class... Args> void operator()(Handler&& h, Args&&... args) &&
    {
        with_plain_executor(std::forward<Handler>(h), [&](auto&& handler) {
            Start(std::move(object), std::forward<Args>(args)..., std::forward<decltype(handler)>(handler));
        });
    }
    template <class Handler, class... Args> void operator()(Handler&& h, Args&&... args) const&
    {
        with_plain_executor(std::forward<Handler>(h), [&](auto&& handler) {
            Start(object, std::forward<Args>(args)..., std::forward<decltype(handler)>(handler));
        });
    }
};

}  // namespace zklock::detail
