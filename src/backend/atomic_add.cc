// Atomic add into addressable memory (atomic_add.h).
#include "backend/atomic_add.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <atomic>
#include <bit>
#include <cstdint>

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

}  // namespace

void atomic_add_local(std::byte* dst, const void* src, std::size_t count, DType dtype) {
  switch (dtype) {
    case DType::FP32: return add_floats<float, std::uint32_t>(dst, src, count);
    case DType::FP16: return add_floats<fp16, std::uint16_t>(dst, src, count);
    case DType::BF16: return add_floats<bf16, std::uint16_t>(dst, src, count);
    case DType::INT32: return add_integers<std::int32_t>(dst, src, count);
    case DType::INT16: return add_integers<std::int16_t>(dst, src, count);
    case DType::INT8: return add_integers<std::int8_t>(dst, src, count);
    default:
      throw UsageError(
          fmt::format("atomic add: dtype {} is not supported (internal: validated above)", dtype_name(dtype)));
  }
}

}  // namespace pld::detail
