// bulk_copy: memmove semantics; copies of kStreamingBytes and more that do not overlap use
// streaming (non-temporal) stores followed by a store fence.
#pragma once

#include <cstddef>

namespace pld::detail {

/// Default size from which copies stream.
inline constexpr std::size_t kStreamingBytes = 8u << 20;

void bulk_copy(std::byte* dst, const std::byte* src, std::size_t bytes, std::size_t streaming_from = kStreamingBytes);

}  // namespace pld::detail
