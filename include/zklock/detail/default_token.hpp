// The default completion token of zklock's operations, as Asio's own I/O objects choose theirs.
#pragma once

#include <boost/asio/async_result.hpp>
#include <boost/asio/deferred.hpp>

#include <type_traits>

namespace zklock::detail {

/// asio::default_completion_token_t of the executor when it names one (an executor made by a
/// token's as_default_on, or any executor in an Asio that defaults to deferred); asio::deferred
/// where it is void, as for Boost 1.81's any_io_executor: `co_await m.async_acquire(5s)` then
/// works in a coroutine, and the operation starts when awaited.
template <class Executor>
using default_token_t = std::conditional_t<std::is_void_v<boost::asio::default_completion_token_t<Executor>>,
                                           boost::asio::deferred_t, boost::asio::default_completion_token_t<Executor>>;

}  // namespace zklock::detail
