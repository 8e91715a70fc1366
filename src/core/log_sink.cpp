#include "core/log_sink.hpp"

namespace zklock::detail {

void log_sink::deliver(log_level l, std::string_view message, std::string_view source, std::string_view path,
                       std::string_view node) const noexcept
{
    // A logger that throws loses its line, never the operation that logged it.
    try {
        f_(l, message, log_fields{source, id_.load(std::memory_order_relaxed), path, node});
    } catch (...) {
    }
}

}  // namespace zklock::detail
