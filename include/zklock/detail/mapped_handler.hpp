// A completion handler that hands its arguments to a function of the handler and the arguments,
// keeping every association of the handler it wraps (executor, allocator, cancellation slot): an
// operation built on another, with another completion signature, stays cancellable and completes
// where its own handler wants.
#pragma once

#include <boost/asio/associator.hpp>

#include <utility>

namespace zklock::detail {

template <class Handler, class F> struct mapped_handler {
    Handler handler;
    F f;

    template <class... Args> void operator()(Args&&... args) { f(std::move(handler), std::forward<Args>(args)...); }
};

template <class Handler, class F> mapped_handler(Handler, F) -> mapped_handler<Handler, F>;

}  // namespace zklock::detail

namespace boost::asio {

template <template <class, class> class Associator, class Handler, class F, class DefaultCandidate>
struct associator<Associator, zklock::detail::mapped_handler<Handler, F>, DefaultCandidate>
    : Associator<Handler, DefaultCandidate> {
    static typename Associator<Handler, DefaultCandidate>::type
    get(const zklock::detail::mapped_handler<Handler, F>& h) noexcept
    {
        return Associator<Handler, DefaultCandidate>::get(h.handler);
    }
    static auto get(const zklock::detail::mapped_handler<Handler, F>& h, const DefaultCandidate& c) noexcept
        -> decltype(Associator<Handler, DefaultCandidate>::get(h.handler, c))
    {
        return Associator<Handler, DefaultCandidate>::get(h.handler, c);
    }
};

}  // namespace boost::asio
