// bulk_copy: memmove semantics; copies of streaming_bytes() and more (PLD_STREAMING_BYTES, derived
// from the caches: core/thresholds.h) that do not overlap use streaming (non-temporal) stores
// followed by a store fence, front to back. bulk_copy_multi: one source, several
// destinations, each source block read once. Below the streaming size either may visit its bytes
// backward (CopyOrder).
#pragma once

#include "core/thresholds.h"

#include <cstddef>
#include <cstring>

namespace pld::detail {

/// The order in which a copy visits its bytes. Backward copies blocks of copy_block_bytes() from
/// the last to the first, each block front to back (the direction the hardware prefetchers follow).
/// A copy repeated on the same buffers in alternating orders then starts with the lines the
/// previous one touched last, which are still cached when the buffers are a little larger than
/// the caches (a forward-only repetition evicts each line just before it is needed again).
/// An overlapping copy is always one memmove, and a streamed one always forward, whatever the order.
enum class CopyOrder { Forward, Backward };

/// Block of a cached copy, in either order (PLD_COPY_BLOCK_BYTES; derived from the L2:
/// core/thresholds.h).
inline std::size_t copy_block_bytes() {
  return thresholds()[Threshold::CopyBlock];
}

/// Position of the k-th of n items (destinations, peers) visited in `order`.
inline int nth_in_order(int k, int n, CopyOrder order) {
  return order == CopyOrder::Forward ? k : n - 1 - k;
}

void bulk_copy(std::byte* dst, const std::byte* src, std::size_t bytes, std::size_t streaming_from = streaming_bytes(),
               CopyOrder order = CopyOrder::Forward);

/// Copies shorter than this never stream (StreamCopy needs eight of the smallest vectors it
/// streams, 16 bytes each).
inline constexpr std::size_t kNeverStreamedBytes = 128;

/// bulk_copy for the call sites whose copies are mostly a few elements (the fast paths of put and
/// put_signal): below kNeverStreamedBytes one memmove, without the threshold lookup.
inline void bulk_copy_small(std::byte* dst, const std::byte* src, std::size_t bytes) {
  if (bytes >= kNeverStreamedBytes) return bulk_copy(dst, src, bytes);
  if (bytes) std::memmove(dst, src, bytes);
}

/// bulk_copy of `src` to each of dsts[0, n) (Backward: dsts[n - 1] first). Below `streaming_from`
/// bytes, when no destination overlaps src, it goes block by block (copy_block_bytes(), in `order`),
/// each block to every destination while it is cached. From `streaming_from` bytes, when the
/// destinations share one alignment and none overlaps src, each block of src is read once and
/// streamed to all destinations; that fused copy always runs forward (its one source stays cached
/// either way, and 64 KiB blocks would only cost).
void bulk_copy_multi(std::byte* const* dsts, int n, const std::byte* src, std::size_t bytes,
                     std::size_t streaming_from = streaming_bytes(), CopyOrder order = CopyOrder::Forward);

}  // namespace pld::detail
