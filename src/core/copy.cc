// bulk_copy: the copy every large data movement in pld uses (shm put/get, collectives), and
// bulk_copy_multi: one source to several destinations (allgather).
#include "core/copy.h"

#include <cstdint>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace pld::detail {

// Large transfers use streaming (non-temporal) stores: a copy larger than a core's cache share
// ends up in DRAM anyway, and skipping the read-for-ownership of the destination doubles the
// bandwidth here (docs/performance.md). glibc decides this from the L3 size, which VMs often
// report as huge, so pld decides for itself. Overlapping or small copies use memmove.
#if defined(__x86_64__)
namespace {

// Streams `src` to every destination: each 64-byte block is loaded once and stored with
// non-temporal stores to all n destinations (which share one alignment modulo 16), then a store
// fence. Callers check size, alignment and overlap.
void stream_copy(std::byte* const* dsts, int n, const std::byte* src, std::size_t bytes) {
  const std::size_t head = (16 - reinterpret_cast<std::uintptr_t>(dsts[0]) % 16) % 16;
  for (int k = 0; k < n; ++k) std::memcpy(dsts[k], src, head);
  std::size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    for (int k = 0; k < n; ++k) {
      std::byte* to = dsts[k] + i;
      _mm_stream_si128(reinterpret_cast<__m128i*>(to), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(to + 48), d);
    }
  }
  _mm_sfence();  // streaming stores are weakly ordered: fence before any later notify
  for (int k = 0; k < n; ++k) std::memcpy(dsts[k] + i, src + i, bytes - i);
}

bool overlaps(const std::byte* a, const std::byte* b, std::size_t bytes) { return a < b + bytes && b < a + bytes; }

}  // namespace
#endif

void bulk_copy(std::byte* dst, const std::byte* src, std::size_t bytes, std::size_t streaming_from) {
  if (bytes == 0) return;  // empty tensors may have no memory at all (null data)
#if defined(__x86_64__)
  if (bytes >= streaming_from && bytes >= 64 && !overlaps(dst, src, bytes)) {
    stream_copy(&dst, 1, src, bytes);
    return;
  }
#endif
  std::memmove(dst, src, bytes);
}

// The fused form reads each 64-byte block of src once and streams it to every destination: a
// broadcast-style push (allgather) then moves bytes + n * bytes instead of n * (bytes + bytes).
// It needs destinations with one alignment (windows sit at the same offset of every rank's
// page-aligned heap, so they do); otherwise, below the threshold or on overlap, copy one by one.
void bulk_copy_multi(std::byte* const* dsts, int n, const std::byte* src, std::size_t bytes,
                     std::size_t streaming_from) {
#if defined(__x86_64__)
  bool fused = n > 1 && bytes >= streaming_from && bytes >= 64;
  const std::uintptr_t align = n > 0 ? reinterpret_cast<std::uintptr_t>(dsts[0]) % 16 : 0;
  for (int k = 0; fused && k < n; ++k)
    fused = reinterpret_cast<std::uintptr_t>(dsts[k]) % 16 == align && !overlaps(dsts[k], src, bytes);
  if (fused) {
    stream_copy(dsts, n, src, bytes);
    return;
  }
#endif
  for (int k = 0; k < n; ++k) bulk_copy(dsts[k], src, bytes, streaming_from);
}

}  // namespace pld::detail
