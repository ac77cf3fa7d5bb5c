// bulk_copy: memmove semantics; copies of kStreamingBytes and more that do not overlap use
// streaming (non-temporal) stores followed by a store fence. bulk_copy_multi: one source, several
// destinations, each source block read once.
#pragma once

#include <cstddef>

namespace pld::detail {

/// Default size from which copies stream.
inline constexpr std::size_t kStreamingBytes = 8u << 20;

void bulk_copy(std::byte* dst, const std::byte* src, std::size_t bytes, std::size_t streaming_from = kStreamingBytes);

/// bulk_copy of `src` to each of dsts[0, n), in that order. From `streaming_from` bytes, when the
/// destinations share one alignment and none overlaps src, each block of src is read once and
/// streamed to all destinations.
void bulk_copy_multi(std::byte* const* dsts, int n, const std::byte* src, std::size_t bytes,
                     std::size_t streaming_from = kStreamingBytes);

}  // namespace pld::detail
