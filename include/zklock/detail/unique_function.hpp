// A move-only type-erased callable (std::move_only_function is C++23).
//
// A callable of up to four pointers that moves without throwing is stored inline: the callbacks
// of a lock cycle capture one or two shared_ptrs, so a request costs no allocation for its
// callback. A larger one is stored on the heap.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace zklock::detail {

template <class Sig> class unique_function;

template <class R, class... Args> class unique_function<R(Args...)> {
    static constexpr std::size_t inline_size = 4 * sizeof(void*);
    static constexpr std::size_t inline_align = alignof(void*);

    template <class F>
    static constexpr bool fits_inline = sizeof(F) <= inline_size && alignof(F) <= inline_align &&
                                        std::is_nothrow_move_constructible_v<F>;

    struct ops {
        R (*call)(void* self, Args&&... args);
        /// Moves the callable from `src` into the empty storage `dst` and destroys what is left in `src`.
        void (*relocate)(void* dst, void* src) noexcept;
        void (*destroy)(void* self) noexcept;
    };

    template <class F> static F& inline_object(void* p) noexcept { return *std::launder(static_cast<F*>(p)); }
    template <class F> static F*& heap_pointer(void* p) noexcept { return *std::launder(static_cast<F**>(p)); }

    template <class F> static constexpr ops inline_ops{
        [](void* self, Args&&... args) -> R { return inline_object<F>(self)(std::forward<Args>(args)...); },
        [](void* dst, void* src) noexcept {
            ::new (dst) F(std::move(inline_object<F>(src)));
            inline_object<F>(src).~F();
        },
        [](void* self) noexcept { inline_object<F>(self).~F(); },
    };
    template <class F> static constexpr ops heap_ops{
        [](void* self, Args&&... args) -> R { return (*heap_pointer<F>(self))(std::forward<Args>(args)...); },
        [](void* dst, void* src) noexcept { ::new (dst) F*(heap_pointer<F>(src)); },
        [](void* self) noexcept { delete heap_pointer<F>(self); },
    };

    alignas(inline_align) unsigned char storage_[inline_size];
    const ops* ops_ = nullptr;

    void reset() noexcept
    {
        if (ops_) ops_->destroy(storage_);
        ops_ = nullptr;
    }

public:
    unique_function() noexcept = default;
    template <class F>
        requires(!std::is_same_v<std::decay_t<F>, unique_function> && std::is_invocable_r_v<R, std::decay_t<F>&, Args...>)
    unique_function(F&& f)
    {
        using D = std::decay_t<F>;
        if constexpr (fits_inline<D>) {
            ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
            ops_ = &inline_ops<D>;
        } else {
            ::new (static_cast<void*>(storage_)) D*(new D(std::forward<F>(f)));
            ops_ = &heap_ops<D>;
        }
    }
    unique_function(unique_function&& other) noexcept : ops_(other.ops_)
    {
        if (ops_) ops_->relocate(storage_, other.storage_);
        other.ops_ = nullptr;
    }
    unique_function& operator=(unique_function&& other) noexcept
    {
        if (this != &other) {
            reset();
            ops_ = other.ops_;
            if (ops_) ops_->relocate(storage_, other.storage_);
            other.ops_ = nullptr;
        }
        return *this;
    }
    unique_function& operator=(std::nullptr_t) noexcept
    {
        reset();
        return *this;
    }
    unique_function(const unique_function&) = delete;
    unique_function& operator=(const unique_function&) = delete;
    ~unique_function() { reset(); }

    R operator()(Args... args) { return ops_->call(storage_, std::forward<Args>(args)...); }
    explicit operator bool() const noexcept { return ops_ != nullptr; }
};

}  // namespace zklock::detail
