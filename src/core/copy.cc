// bulk_copy: the copy every large data movement in pld uses (shm put/get, collectives), and
// bulk_copy_multi: one source to several destinations (allgather).
//
// A streamed copy runs forward in either order. Its destination bypasses the caches, so the only
// lines a backward pass could find cached are its source's, and restarting the stream at every
// block costs more than they save (8-80 % at 4-32 MiB; docs/performance-thresholds.md).
//
// Large transfers use streaming (non-temporal) stores: a copy larger than a core's cache share
// ends up in DRAM anyway, and skipping the read-for-ownership of the destination doubles the
// bandwidth here (docs/performance-thresholds.md). glibc decides this from the L3 size, which VMs
// often report as huge, so pld decides for itself, from a CPU's share of the caches
// (core/thresholds.h).
// Below that size a copy goes in blocks of copy_block_bytes() in either order: glibc's memcpy
// leaves rep movsb for a vector loop above its rep_movsb_stop_threshold (on AMD the L2's size),
// which copies 1-8 MiB up to 20 % slower there; blocks keep every memcpy under it.
// Overlapping or small copies use memmove.
//
// Highway "foreach_target" translation unit, like reduce/reduce.cc: the streaming loop is
// compiled once per SIMD target and the widest the CPU has runs (AVX-512: one 64-byte
// non-temporal store per cache line, ~10% faster than 16-byte stores at 4 MiB; bench/README.md).
#include "core/copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/copy.cc"
#include <hwy/cache_control.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace pld::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Whether this target has non-temporal stores: x86 with SIMD. Elsewhere (and on the SCALAR /
// EMU128 fallbacks) hn::Stream is an ordinary store, and memmove is the better copy.
constexpr bool kHasStreamingStores = HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128;

// Streams src[at, at + bytes) to every destination's [at, at + bytes) and returns true, or
// returns false (nothing copied) when streaming does not apply here: no streaming stores on this
// target, fewer than 8 vectors, or destinations that do not share one alignment modulo the vector
// size. Each block of four vectors is loaded once and stored to all n destinations, then a store
// fence. The caller checks the threshold and overlap.
bool StreamCopy(std::byte* const* dsts, int n, const std::byte* src_bytes, std::size_t at, std::size_t bytes) {
  if constexpr (!kHasStreamingStores) {
    return false;
  } else {
    const hn::ScalableTag<std::uint8_t> d;
    const std::size_t lanes = hn::Lanes(d);
    const std::uintptr_t align = reinterpret_cast<std::uintptr_t>(dsts[0] + at) % lanes;
    if (bytes < 8 * lanes) return false;
    for (int k = 1; k < n; ++k)
      if (reinterpret_cast<std::uintptr_t>(dsts[k] + at) % lanes != align) return false;
    const auto* src = reinterpret_cast<const std::uint8_t*>(src_bytes + at);
    const std::size_t head = (lanes - align) % lanes;
    for (int k = 0; k < n; ++k) std::memcpy(dsts[k] + at, src, head);
    std::size_t i = head;
    for (; i + 4 * lanes <= bytes; i += 4 * lanes) {
      const auto a = hn::LoadU(d, src + i);
      const auto b = hn::LoadU(d, src + i + lanes);
      const auto c = hn::LoadU(d, src + i + 2 * lanes);
      const auto e = hn::LoadU(d, src + i + 3 * lanes);
      for (int k = 0; k < n; ++k) {
        auto* to = reinterpret_cast<std::uint8_t*>(dsts[k] + at) + i;
        hn::Stream(a, d, to);
        hn::Stream(b, d, to + lanes);
        hn::Stream(c, d, to + 2 * lanes);
        hn::Stream(e, d, to + 3 * lanes);
      }
    }
    hwy::FlushStream();  // streaming stores are weakly ordered: fence before any later notify
    for (int k = 0; k < n; ++k) std::memcpy(dsts[k] + at + i, src + i, bytes - i);
    return true;
  }
}

}  // namespace pld::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pld::detail {

HWY_EXPORT(StreamCopy);

namespace {

bool overlaps(const std::byte* a, const std::byte* b, std::size_t bytes) {
  return a < b + bytes && b < a + bytes;
}

// Calls copy(at, len) for the blocks of copy_block_bytes() of [0, bytes) (the last one shorter), in
// `order`: Backward takes the last first.
template <class Fn>
void for_each_block_in(std::size_t bytes, CopyOrder order, Fn&& copy) {
  const std::size_t block = copy_block_bytes();
  if (order == CopyOrder::Forward) {
    for (std::size_t at = 0; at < bytes; at += block) copy(at, std::min(block, bytes - at));
    return;
  }
  for (std::size_t at = (bytes - 1) / block * block;; at -= block) {
    copy(at, std::min(block, bytes - at));
    if (at == 0) return;
  }
}

}  // namespace

void bulk_copy(std::byte* dst, const std::byte* src, std::size_t bytes, std::size_t streaming_from, CopyOrder order) {
  if (bytes == 0) return;  // empty tensors may have no memory at all (null data)
  if (overlaps(dst, src, bytes)) {
    std::memmove(dst, src, bytes);
    return;
  }
  if (bytes >= streaming_from && HWY_DYNAMIC_DISPATCH(StreamCopy)(&dst, 1, src, 0, bytes)) return;  // forward
  for_each_block_in(bytes, order, [&](std::size_t at, std::size_t len) { std::memcpy(dst + at, src + at, len); });
}

// Below the streaming size, the copies go block by block (copy_block_bytes()), each block to every
// destination before the next: src is read from memory once, the other destinations' copies read
// it from the L1/L2 (at P = 2 an allgather of 2-8 MiB then takes ~0.3-0.7x the time of two whole
// copies one after the other, whose second read of src misses once src outgrows the L2).
// The fused streaming form reads each block of src once and streams it to every destination: a
// broadcast-style push (allgather) then moves bytes + n * bytes instead of n * (bytes + bytes).
// It needs destinations with one alignment (windows sit at the same offset of every rank's
// page-aligned heap, so they do; others are copied one by one, each streaming on its own). It
// runs forward in either order: its source is read once and stays cached, and the 64 KiB blocks
// of a backward pass cost ~3 % there (measured with pld-bench --op allgather).
void bulk_copy_multi(std::byte* const* dsts, int n, const std::byte* src, std::size_t bytes, std::size_t streaming_from,
                     CopyOrder order) {
  if (bytes == 0 || n < 1) return;
  constexpr std::uintptr_t kLine = 64;  // a multiple of every target's vector size
  const std::uintptr_t align = reinterpret_cast<std::uintptr_t>(dsts[0]) % kLine;
  bool fused = n > 1 && bytes >= streaming_from;
  for (int k = 0; fused && k < n; ++k)
    fused = !overlaps(dsts[k], src, bytes) && reinterpret_cast<std::uintptr_t>(dsts[k]) % kLine == align;
  if (!fused) {
    bool cached = n > 1 && bytes < streaming_from;
    for (int k = 0; cached && k < n; ++k) cached = !overlaps(dsts[k], src, bytes);
    if (!cached) {
      for (int k = 0; k < n; ++k) bulk_copy(dsts[nth_in_order(k, n, order)], src, bytes, streaming_from, order);
      return;
    }
    // Cached stores: block by block, each block to every destination while it is in the L1/L2.
    for_each_block_in(bytes, order, [&](std::size_t at, std::size_t len) {
      for (int k = 0; k < n; ++k) std::memcpy(dsts[nth_in_order(k, n, order)] + at, src + at, len);
    });
    return;
  }
  if (!HWY_DYNAMIC_DISPATCH(StreamCopy)(dsts, n, src, 0, bytes))  // forward, whatever the order
    for (int k = 0; k < n; ++k) std::memcpy(dsts[k], src, bytes);
}

}  // namespace pld::detail
#endif
