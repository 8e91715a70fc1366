// Whether the calling thread is running an executor's handlers: what the queries that must be
// called on the session's executor (lease::status() and its siblings) assert in a debug build.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/require.hpp>
#include <boost/asio/strand.hpp>

namespace zklock::detail {

/// What a debug build does when an operation is started off its session's executor: by default,
/// print what and abort. Tests replace it to observe the check.
using wrong_thread_handler = void (*)(const char* what) noexcept;
extern wrong_thread_handler wrong_thread;
/// True in a debug build of the library (NDEBUG not defined), where the callers are checked.
bool caller_checks_enabled() noexcept;

/// True if the calling thread runs `ex` now, as far as its type tells: an io_context's executor
/// (with or without tracked work) or a strand of one answers running_in_this_thread(); any other
/// executor cannot say, and is taken on trust.
inline bool running_on(const boost::asio::any_io_executor& ex) noexcept
{
    namespace asio = boost::asio;
    using plain = asio::io_context::executor_type;
    using tracked = asio::require_result<plain, asio::execution::outstanding_work_t::tracked_t>::type;
    if (const auto* e = ex.target<plain>()) return e->running_in_this_thread();
    if (const auto* e = ex.target<tracked>()) return e->running_in_this_thread();
    if (const auto* s = ex.target<asio::strand<plain>>()) return s->running_in_this_thread();
    if (const auto* s = ex.target<asio::strand<asio::any_io_executor>>()) return s->running_in_this_thread();
    return true;
}

}  // namespace zklock::detail
