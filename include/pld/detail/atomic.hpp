// pld — plumbing of the atomics (internal; included by atomic.hpp and by the backends): the
// operation codes and the bit encoding of a cell's value.
#pragma once

#include <pld/types.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace pld::detail {

/// One atomic read-modify-write on a window cell. The values travel in op histories, traces and
/// the mpi backend's messages.
enum class AmoOp : std::uint8_t { Fetch = 0, Set, Swap, CompareSwap, Add, And, Or, Xor };

/// "fetch", "set", "swap", "compare_swap", "add", "and", "or", "xor".
inline const char* amo_name(AmoOp op) {
  switch (op) {
    case AmoOp::Fetch: return "fetch";
    case AmoOp::Set: return "set";
    case AmoOp::Swap: return "swap";
    case AmoOp::CompareSwap: return "compare_swap";
    case AmoOp::Add: return "add";
    case AmoOp::And: return "and";
    case AmoOp::Or: return "or";
    case AmoOp::Xor: return "xor";
  }
  return "?";
}

/// Whether `dtype` has atomics (int32, int64, uint32, uint64).
constexpr bool amo_dtype(DType dtype) {
  return dtype == DType::INT32 || dtype == DType::INT64 || dtype == DType::UINT32 || dtype == DType::UINT64;
}

/// Bytes of a cell of an atomic dtype (4 or 8), without a call.
constexpr std::size_t amo_width(DType dtype) {
  return dtype == DType::INT64 || dtype == DType::UINT64 ? 8 : 4;
}

/// A cell value as a 64-bit word (zero-extended from its unsigned form), and back. Element
/// types without atomics encode their bytes (the kernel then refuses the call by its dtype).
template <class T>
std::uint64_t amo_bits(T value) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<std::uint64_t>(static_cast<std::make_unsigned_t<T>>(value));
  } else {
    std::uint64_t bits = 0;
    std::memcpy(&bits, &value, sizeof(T) < sizeof bits ? sizeof(T) : sizeof bits);
    return bits;
  }
}
template <class T>
T amo_value(std::uint64_t bits) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(bits));
  } else {
    T value{};
    std::memcpy(static_cast<void*>(&value), &bits, sizeof(T) < sizeof bits ? sizeof(T) : sizeof bits);
    return value;
  }
}

}  // namespace pld::detail
