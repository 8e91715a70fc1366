// Holding a user's completion handler across asynchronous steps, the way Asio's own operations do:
// outstanding work on the handler's executor, completion dispatched there, cancellation slot
// cleared before the upcall.
#pragma once

#include <zklock/detail/session_fwd.hpp>

#include <boost/asio/any_completion_executor.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/system_executor.hpp>

#include <boost/asio/cancellation_type.hpp>

#include <memory>
#include <optional>
#include <type_traits>
#include <variant>
#include <utility>

namespace zklock::detail {

namespace asio = boost::asio;

/// Outstanding work on a handler's executor, in 16 bytes. In the common case its target is an
/// io_context executor (a coroutine's any_io_executor keeps its inner target when converted):
/// preferred directly, the tracked executor is kept as itself (8 bytes). Any other executor goes
/// through the type-erased prefer, kept on the heap. (An any_completion_executor is 56 bytes, and
/// a waiting acquire holds this: bench W10000, ten thousand at once; the type-erased prefer of an
/// io_context's executor would heap-allocate its result as well.)
class tracked_work {
public:
    tracked_work() = default;
    explicit tracked_work(const asio::any_completion_executor& ex)
    {
        constexpr auto tracked = asio::execution::outstanding_work.tracked;
        if (const auto* t = ex.target<asio::io_context::executor_type>()) w_.emplace<io_tracked>(asio::prefer(*t, tracked));
        else w_.emplace<std::unique_ptr<asio::any_completion_executor>>(
            std::make_unique<asio::any_completion_executor>(asio::prefer(ex, tracked)));
    }
    explicit operator bool() const noexcept { return w_.index() != 0; }
    /// The tracked executor, moved out (the work ends with it).
    asio::any_completion_executor take()
    {
        auto v = std::exchange(w_, std::monostate{});
        if (auto* t = std::get_if<io_tracked>(&v)) return asio::any_completion_executor(std::move(*t));
        return std::move(*std::get<std::unique_ptr<asio::any_completion_executor>>(v));
    }
    void reset() noexcept { w_ = std::monostate{}; }

private:
    using io_tracked = std::decay_t<decltype(asio::prefer(std::declval<asio::io_context::executor_type>(),
                                                          asio::execution::outstanding_work.tracked))>;
    std::variant<std::monostate, io_tracked, std::unique_ptr<asio::any_completion_executor>> w_;
};

template <class... Args> class stored_handler {
public:
    stored_handler() = default;
    /// `io_ex`: the executor of the I/O object, the handler's executor when it has none of its
    /// own (not kept: the tracked executor is all a completion needs).
    stored_handler(handler<Args...> h, const asio::any_io_executor& io_ex)
        : work_(asio::get_associated_executor(h, io_ex)), h_(std::move(h))
    {
    }

    explicit operator bool() const noexcept { return static_cast<bool>(h_); }

    asio::cancellation_slot slot() const noexcept { return asio::get_associated_cancellation_slot(h_); }

    /// Completes from a context that is not the initiating function (dispatch: may run inline).
    void complete(Args... args) { finish<false>(nullptr, std::move(args)...); }
    /// Completes from the initiating function (post: never inline), out through `io_ex` (the I/O
    /// object's executor: the handler's own, a type-erased completion executor, cannot promise
    /// blocking.never) and on to the handler's executor.
    void post(const asio::any_io_executor& io_ex, Args... args) { finish<true>(&io_ex, std::move(args)...); }
    /// Gives the handler up to another operation (which keeps its own work guard).
    handler<Args...> release()
    {
        work_.reset();
        return std::move(h_);
    }

private:
    template <bool Post> void finish(const asio::any_io_executor* io_ex, Args... args)
    {
        if (!h_) return;
        if (auto s = slot(); s.is_connected()) s.clear();
        auto ex = work_.take();
        auto h = std::move(h_);
        if constexpr (Post)
            asio::post(*io_ex, [ex = std::move(ex), h = asio::append(std::move(h), std::move(args)...)]() mutable {
                asio::dispatch(ex, std::move(h));
            });
        else
            asio::dispatch(ex, asio::append(std::move(h), std::move(args)...));
    }

    tracked_work work_;
    handler<Args...> h_;
};

/// Completes `h` from its initiating function with `args` for an object that has no session (moved
/// from, default-constructed, or bound to a moved-from session): nothing to run the operation on,
/// and no executor of its own. Posted (never inline) through asio::system_executor on to the
/// handler's associated executor, which is where it runs when the handler has one.
template <class... Args> void post_without_session(handler<Args...> h, Args... args)
{
    const asio::any_io_executor none = asio::system_executor();
    stored_handler<Args...> sh(std::move(h), none);
    sh.post(none, std::move(args)...);
}

/// A signal of any of the three cancellation types (terminal, partial, total).
inline bool is_cancellation(asio::cancellation_type t) noexcept
{
    return (t & (asio::cancellation_type::terminal | asio::cancellation_type::partial | asio::cancellation_type::total)) !=
           asio::cancellation_type::none;
}

/// A signal that asks for total cancellation only: Asio's "no apparent side effects", so an
/// operation may complete for it only once all it did is undone (never with work left in the
/// background), and must ignore it where it cannot undo.
inline bool total_only(asio::cancellation_type t) noexcept
{
    return is_cancellation(t) &&
           (t & (asio::cancellation_type::terminal | asio::cancellation_type::partial)) == asio::cancellation_type::none;
}

/// Connects the handler's cancellation slot, if it has one, to `on_cancel`, which runs posted to
/// `ex` (the session's executor): a signal may be emitted from anywhere (another operation's
/// completion, another thread's strand). `on_cancel` is called with the signal's
/// asio::cancellation_type if it takes one, else with nothing; it is copied for each signal and
/// should hold the operation weakly.
template <class... Args, class F>
void on_cancellation(const stored_handler<Args...>& h, const asio::any_io_executor& ex, F on_cancel)
{
    auto slot = h.slot();
    if (!slot.is_connected()) return;
    slot.assign([ex, on_cancel = std::move(on_cancel)](asio::cancellation_type t) {
        if (!is_cancellation(t)) return;
        if constexpr (std::is_invocable_v<F&, asio::cancellation_type>)
            asio::post(ex, [on_cancel, t]() mutable { on_cancel(t); });
        else
            asio::post(ex, on_cancel);
    });
}

/// Cancellation of a wait that has no side effect to undo: completes the handler at once with
/// operation_aborted (on the session's executor); whatever completes later finds it empty.
/// With `side_effects`, the wait is for work that goes on whatever the signal (a release): then
/// a total cancellation, which promises no side effect, is ignored.
template <class... Rest>
void allow_cancel(const std::shared_ptr<stored_handler<error_code, Rest...>>& sh, const asio::any_io_executor& ex,
                  bool side_effects = false)
{
    on_cancellation(*sh, ex, [weak = std::weak_ptr(sh), side_effects](asio::cancellation_type t) {
        if (side_effects && total_only(t)) return;
        if (auto h = weak.lock(); h && *h) h->complete(asio::error::operation_aborted, Rest{}...);
    });
}

}  // namespace zklock::detail
