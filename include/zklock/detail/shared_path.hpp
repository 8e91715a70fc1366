// An immutable, reference-counted string in one allocation (a count, a size, the characters and a
// NUL): a node path that several holders keep at once. A waiter's watched node is named by its
// acquire_fsm, by the watch's state (port/watch_state.hpp) and by the session's table of watches
// (bridge/watch_table.hpp); with this they share one copy, 8 bytes each, instead of a std::string
// each (32 bytes and a heap copy). Copies may be made and dropped on any thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <utility>

namespace zklock::detail {

class shared_path {
public:
    shared_path() noexcept = default;
    explicit shared_path(std::string_view s)
    {
        if (s.empty()) return;
        void* mem = ::operator new(offsetof(rep, chars) + s.size() + 1);
        rep_ = ::new (mem) rep{{1}, static_cast<std::uint32_t>(s.size()), {}};
        std::memcpy(rep_->chars, s.data(), s.size());
        rep_->chars[s.size()] = '\0';
    }
    shared_path(const shared_path& o) noexcept : rep_(o.rep_)
    {
        if (rep_) rep_->refs.fetch_add(1, std::memory_order_relaxed);
    }
    shared_path(shared_path&& o) noexcept : rep_(std::exchange(o.rep_, nullptr)) {}
    shared_path& operator=(shared_path o) noexcept
    {
        std::swap(rep_, o.rep_);
        return *this;
    }
    ~shared_path() { release(); }

    std::string_view view() const noexcept { return rep_ ? std::string_view(rep_->chars, rep_->size) : std::string_view(); }
    operator std::string_view() const noexcept { return view(); }
    std::string str() const { return std::string(view()); }
    /// NUL-terminated (an empty path is "").
    const char* c_str() const noexcept { return rep_ ? rep_->chars : ""; }
    bool empty() const noexcept { return rep_ == nullptr; }
    std::size_t size() const noexcept { return rep_ ? rep_->size : 0; }
    void clear() noexcept
    {
        release();
        rep_ = nullptr;
    }

    friend bool operator==(const shared_path& a, const shared_path& b) noexcept { return a.rep_ == b.rep_ || a.view() == b.view(); }
    friend bool operator==(const shared_path& a, std::string_view b) noexcept { return a.view() == b; }
    friend bool operator==(const shared_path& a, const std::string& b) noexcept { return a.view() == b; }
    friend bool operator==(const shared_path& a, const char* b) noexcept { return a.view() == b; }

private:
    struct rep {
        std::atomic<std::uint32_t> refs;
        std::uint32_t size;
        char chars[1];
    };
    void release() noexcept
    {
        if (rep_ && rep_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            rep_->~rep();
            ::operator delete(rep_);
        }
    }
    rep* rep_ = nullptr;
};

}  // namespace zklock::detail
