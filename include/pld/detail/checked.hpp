// pld — overflow-checked arithmetic for every size, offset and element count (internal). The
// public headers and the library use these same functions, so a shape, a box or a byte size is
// checked one way everywhere. The `try_` forms return std::nullopt on overflow for callers that
// build their own message; the `checked_` forms throw UsageError naming the operation and the
// operands (never a wrapped result).
#pragma once

#include <pld/export.hpp>
#include <pld/types.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace pld::detail {

/// `a + b`, or nullopt when the sum does not fit an Index.
constexpr std::optional<Index> try_add(Index a, Index b) {
  Index r = 0;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// `a * b`, or nullopt when the product does not fit an Index.
constexpr std::optional<Index> try_mul(Index a, Index b) {
  Index r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

/// Element count of `shape`, or nullopt when an extent is negative or the product of the non-zero
/// extents does not fit an Index (such a shape's strides would not fit either, even when another
/// extent is 0).
constexpr std::optional<Index> try_numel(const Dims& shape) {
  Index n = 1;
  bool empty = false;
  for (Index e : shape) {
    if (e < 0) return std::nullopt;
    if (e == 0)
      empty = true;
    else if (__builtin_mul_overflow(n, e, &n))
      return std::nullopt;
  }
  return empty ? 0 : n;
}

/// Bytes of `shape` elements of `elem_size` bytes, or nullopt when it does not fit an Index.
constexpr std::optional<Index> try_bytes(const Dims& shape, std::size_t elem_size) {
  const std::optional<Index> n = try_numel(shape);
  if (!n) return std::nullopt;
  return try_mul(*n, static_cast<Index>(elem_size));
}

/// `offset + extent <= size` without overflow, for non-negative values (false for a negative one).
constexpr bool fits_within(Index offset, Index extent, Index size) {
  return offset >= 0 && extent >= 0 && size >= 0 && offset <= size && extent <= size - offset;
}

/// Throws UsageError "`op`: `a` `sign` `b` overflows int64 (`what`)".
[[noreturn]] PLD_API void throw_overflow(const char* api, const char* what, Index a, char sign, Index b);
/// Throws UsageError naming `op`, `shape` and why its element count or byte size is unusable.
[[noreturn]] PLD_API void throw_shape_overflow(const char* api, const Dims& shape, std::size_t elem_size);

/// `a + b`; throws UsageError naming `op` and `what` when it overflows.
inline Index checked_add(const char* api, const char* what, Index a, Index b) {
  if (const auto r = try_add(a, b)) return *r;
  throw_overflow(api, what, a, '+', b);
}

/// `a * b`; throws UsageError naming `op` and `what` when it overflows.
inline Index checked_mul(const char* api, const char* what, Index a, Index b) {
  if (const auto r = try_mul(a, b)) return *r;
  throw_overflow(api, what, a, '*', b);
}

/// Element count of `shape`; throws UsageError when an extent is negative or the count overflows.
inline Index checked_numel(const char* api, const Dims& shape) {
  if (const auto n = try_numel(shape)) return *n;
  throw_shape_overflow(api, shape, 0);
}

/// Byte size of `shape` elements of `elem_size` bytes; throws UsageError when an extent is negative
/// or the size overflows.
inline Index checked_bytes(const char* api, const Dims& shape, std::size_t elem_size) {
  if (const auto n = try_bytes(shape, elem_size)) return *n;
  throw_shape_overflow(api, shape, elem_size);
}

}  // namespace pld::detail
