// The initiation objects every zklock operation gives asio::async_initiate, as Beast and
// Boost.MySQL write theirs: the object the operation runs on, the executor it completes through
// by default (get_executor(), for completion tokens that ask the initiation for it, such as
// asio::cancel_after and asio::cancel_at in newer Asio), and the call that starts it.
#pragma once

#include <zklock/detail/default_token.hpp>
#include <zklock/detail/session_fwd.hpp>

#include <boost/asio/any_io_executor.hpp>

#include <memory>
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

/// A debug build of the library (NDEBUG not defined) checks that an operation is started on its
/// object's executor, as the guide's threading model asks, where the executor can tell; a
/// release build does nothing here.
void check_caller(const session_ptr& s) noexcept;
void check_caller(const std::shared_ptr<watch_state>& w) noexcept;
void check_caller(const std::shared_ptr<lease_state>& l) noexcept;
void check_caller(const std::shared_ptr<observer_state>& o) noexcept;

/// Starts an operation on `object` with `Start(object, args..., handler)`.
template <auto Start, class Object> struct initiation {
    Object object;

    using executor_type = boost::asio::any_io_executor;
    executor_type get_executor() const noexcept { return executor_of(object); }

    template <class Handler, class... Args> void operator()(Handler&& h, Args&&... args) &&
    {
        check_caller(object);
        Start(std::move(object), std::forward<Args>(args)..., std::forward<Handler>(h));
    }
    template <class Handler, class... Args> void operator()(Handler&& h, Args&&... args) const&
    {
        check_caller(object);
        Start(object, std::forward<Args>(args)..., std::forward<Handler>(h));
    }
};

}  // namespace zklock::detail
