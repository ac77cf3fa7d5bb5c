// Bytes per element of each DType as a table, for the paths that need it on every call (a
// collective's message size): elem_bytes() is one load where pld::dtype_size is a call. Both read
// the same table; dtype_size (core/types.cc) throws for a value outside the enum.
#pragma once

#include <pld/types.hpp>

#include <cstddef>
#include <cstdint>
#include <iterator>

namespace pld::detail {

/// Bytes per element, indexed by the DType's value.
inline constexpr std::uint8_t kDTypeBytes[] = {
    4,  // FP32
    2,  // FP16
    2,  // BF16
    4,  // INT32
    2,  // INT16
    1,  // INT8
    8,  // INT64
    8,  // FP64
    1,  // UINT8
    4,  // UINT32
    8,  // UINT64
};
static_assert(std::size(kDTypeBytes) == static_cast<std::size_t>(DType::UINT64) + 1, "one entry per DType");

/// dtype_size(dtype), inline: a value outside the enum still throws (from dtype_size).
inline std::size_t elem_bytes(DType dtype) {
  const auto i = static_cast<std::size_t>(dtype);
  return i < std::size(kDTypeBytes) ? kDTypeBytes[i] : dtype_size(dtype);
}

}  // namespace pld::detail
