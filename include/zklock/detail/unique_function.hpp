// A move-only type-erased callable (std::move_only_function is C++23).
#pragma once

#include <memory>
#include <type_traits>
#include <utility>

namespace zklock::detail {

template <class Sig> class unique_function;

template <class R, class... Args> class unique_function<R(Args...)> {
    struct base {
        virtual ~base() = default;
        virtual R call(Args... args) = 0;
    };
    template <class F> struct holder final : base {
        F f;
        explicit holder(F&& fn) : f(std::move(fn)) {}
        R call(Args... args) override { return f(std::forward<Args>(args)...); }
    };
    std::unique_ptr<base> p_;

public:
    unique_function() noexcept = default;
    template <class F>
        requires(!std::is_same_v<std::decay_t<F>, unique_function> && std::is_invocable_r_v<R, F&, Args...>)
    unique_function(F&& f) : p_(std::make_unique<holder<std::decay_t<F>>>(std::forward<F>(f)))
    {
    }
    R operator()(Args... args) { return p_->call(std::forward<Args>(args)...); }
    explicit operator bool() const noexcept { return static_cast<bool>(p_); }
};

}  // namespace zklock::detail
