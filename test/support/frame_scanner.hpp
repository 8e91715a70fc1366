// support/frame_scanner.hpp — incremental parser of ZooKeeper's wire framing (used by fault_proxy).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace zklock::test {

/// The start of one frame: a 4-byte big-endian length, then `fields` bytes of the body.
struct frame_header {
    bool first = false;         ///< the connection's first frame (ConnectRequest/Response): no fields read
    std::uint32_t length = 0;   ///< body length
    std::size_t fields = 0;     ///< body bytes decoded below: min(length, want), 0 for the first frame
    std::int32_t xid = 0;       ///< valid if fields >= 4 (RequestHeader.xid / ReplyHeader.xid)
    std::int32_t type = 0;      ///< valid if fields >= 8 (RequestHeader.type)
};

/// Follows the frames of one direction of a connection, whatever the chunking: frames may be
/// split across calls and several may come in one call. Nothing is buffered but the header.
class frame_scanner {
public:
    /// `want`: body bytes to decode per frame (8 for requests: xid, type; 4 for replies: xid).
    explicit frame_scanner(std::size_t want) : want_(std::min<std::size_t>(want, 8)) {}

    struct result {
        bool stopped = false;
        std::size_t frame_start = 0;  ///< where the stopping frame starts in `data` (0 if in an earlier call)
    };

    /// Calls on_header(const frame_header&) for every frame whose header completes in `data`;
    /// if it returns true the scan stops right after that header.
    template <class F>
    result scan(std::span<const std::uint8_t> data, F&& on_header)
    {
        std::size_t start = 0;
        for (std::size_t i = 0; i < data.size();) {
            if (skip_ > 0) {
                const auto k = static_cast<std::size_t>(std::min<std::uint64_t>(skip_, data.size() - i));
                i += k;
                skip_ -= k;
                continue;
            }
            if (have_ == 0) start = i;
            hdr_[have_++] = data[i++];
            if (have_ < 4) continue;
            const std::uint32_t length = be32(0);
            const std::size_t fields = first_ ? 0 : std::min<std::size_t>(length, want_);
            if (have_ < 4 + fields) continue;

            frame_header h{first_, length, fields, fields >= 4 ? static_cast<std::int32_t>(be32(4)) : 0,
                           fields >= 8 ? static_cast<std::int32_t>(be32(8)) : 0};
            first_ = false;
            have_ = 0;
            skip_ = length - fields;
            if (on_header(h)) return {true, start};
        }
        return {};
    }

    /// Bytes of a header begun but not completed by the calls so far.
    std::size_t partial() const { return have_; }
    /// Forgets those bytes, to scan them again (with what follows) in the next call.
    void rewind_partial() { have_ = 0; }

private:
    std::uint32_t be32(std::size_t at) const
    {
        return std::uint32_t{hdr_[at]} << 24 | std::uint32_t{hdr_[at + 1]} << 16 | std::uint32_t{hdr_[at + 2]} << 8 |
               std::uint32_t{hdr_[at + 3]};
    }

    std::size_t want_;
    std::array<std::uint8_t, 12> hdr_{};
    std::size_t have_ = 0;
    std::uint64_t skip_ = 0;
    bool first_ = true;
};

}  // namespace zklock::test
