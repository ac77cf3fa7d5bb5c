// One-sided data movement of the shm backend: a peer's window is ordinary shared memory, so put
// and get are copies (streaming stores for large ones); atomic add is a per-element atomic read-modify-write (lock xadd for
// integers, a compare-and-swap loop for floating point), correct under contention from every
// rank at once.
#include "backend/shm/backend.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <bit>
#include <cstring>

namespace pld::detail {

namespace {

template <class T>
void add_integers(std::byte* dst, const void* src, std::size_t count) {
  auto* d = reinterpret_cast<T*>(dst);
  const auto* s = static_cast<const T*>(src);
  for (std::size_t i = 0; i < count; ++i) std::atomic_ref<T>(d[i]).fetch_add(s[i], std::memory_order_relaxed);
}

// Floating point: CAS on the bit pattern; fp16/bf16 add in float and round once per element.
template <class T, class Bits>
void add_floats(std::byte* dst, const void* src, std::size_t count) {
  auto* d = reinterpret_cast<Bits*>(dst);
  const auto* s = static_cast<const T*>(src);
  for (std::size_t i = 0; i < count; ++i) {
    std::atomic_ref<Bits> cell(d[i]);
    Bits old_bits = cell.load(std::memory_order_relaxed);
    Bits new_bits;
    do {
      if constexpr (std::is_same_v<T, float>) {
        new_bits = std::bit_cast<Bits>(std::bit_cast<float>(old_bits) + s[i]);
      } else {
        new_bits = T(static_cast<float>(T::from_bits(old_bits)) + static_cast<float>(s[i])).bits;
      }
    } while (!cell.compare_exchange_weak(old_bits, new_bits, std::memory_order_relaxed));
  }
}

// Large transfers use streaming (non-temporal) stores: a copy larger than a core's cache share
// ends up in DRAM anyway, and skipping the read-for-ownership of the destination doubles the
// bandwidth here (docs/performance.md). glibc decides this from the L3 size, which VMs often
// report as huge, so pld decides for itself. Overlapping or small copies use memmove.
constexpr std::size_t kStreamingBytes = 8u << 20;

void copy_bytes(std::byte* dst, const std::byte* src, std::size_t bytes) {
#if defined(__x86_64__)
  const bool overlap = dst < src + bytes && src < dst + bytes;
  if (bytes >= kStreamingBytes && !overlap) {
    std::size_t head = (16 - reinterpret_cast<std::uintptr_t>(dst) % 16) % 16;
    std::memcpy(dst, src, head);
    std::size_t i = head;
    for (; i + 64 <= bytes; i += 64) {
      const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
      const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
      const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
      _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
    }
    _mm_sfence();  // streaming stores are weakly ordered: fence before any later notify
    std::memcpy(dst + i, src + i, bytes - i);
    return;
  }
#endif
  std::memmove(dst, src, bytes);
}

}  // namespace

void ShmBackend::put(int rank, std::uint64_t offset, const void* src, std::size_t bytes) {
  copy_bytes(heap_base(rank) + offset, static_cast<const std::byte*>(src), bytes);
}

void ShmBackend::get(void* dst, int rank, std::uint64_t offset, std::size_t bytes) {
  copy_bytes(static_cast<std::byte*>(dst), heap_base(rank) + offset, bytes);
}

void ShmBackend::atomic_add(int rank, std::uint64_t offset, const void* src, std::size_t count, DType dtype) {
  std::byte* dst = heap_base(rank) + offset;
  switch (dtype) {
    case DType::FP32: return add_floats<float, std::uint32_t>(dst, src, count);
    case DType::FP16: return add_floats<fp16, std::uint16_t>(dst, src, count);
    case DType::BF16: return add_floats<bf16, std::uint16_t>(dst, src, count);
    case DType::INT32: return add_integers<std::int32_t>(dst, src, count);
    case DType::INT16: return add_integers<std::int16_t>(dst, src, count);
    case DType::INT8: return add_integers<std::int8_t>(dst, src, count);
    default:
      throw UsageError(fmt::format("atomic add: dtype {} is not supported (internal: validated above)",
                                   dtype_name(dtype)));
  }
}

}  // namespace pld::detail
