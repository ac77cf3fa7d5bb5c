// pld — plumbing of host tensors (internal; included by tensor.hpp): pld's shared memory blocks
// and the index and shape checks of the inline templates.
#pragma once

#include <pld/detail/checked.hpp>
#include <pld/export.hpp>
#include <pld/types.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace pld {
namespace detail {

/// A block of shared memory that rank processes can map (memfd). `id` names it in dispatch frames.
struct SharedBlock {
  std::shared_ptr<void> owner;  // unmaps and closes when the last reference goes
  std::byte* base = nullptr;
  std::uint32_t id = 0;  // 0 = not pld shared memory
};

/// Allocates a shared block of `bytes` (rounded up to a page; 0 is allowed), zero-filled unless
/// `zero` is false (the caller overwrites every byte): a released block of the same size is reused.
PLD_API SharedBlock shared_alloc(std::size_t bytes, bool zero = true);
/// The live shared block holding the `bytes` bytes at `p`, with `*offset` set to p - base; a block
/// with id 0 when no live block holds all of them (ordinary memory, or a released block).
PLD_API SharedBlock shared_block_at(const void* p, std::size_t bytes, std::uint64_t* offset);

[[noreturn]] PLD_API void throw_usage(const std::string& message);
[[noreturn]] PLD_API void throw_index(const char* api, const Dims& index, const Dims& shape);
[[noreturn]] PLD_API void throw_bad_shape(const char* api, const Dims& shape);

inline Index linear_index(const char* api, const Dims& index, const Dims& shape) {
  if (index.size() != shape.size()) throw_index(api, index, shape);
  Index lin = 0;
  for (int d = 0; d < shape.size(); ++d) {
    if (index[d] < 0 || index[d] >= shape[d]) throw_index(api, index, shape);
    lin = lin * shape[d] + index[d];
  }
  return lin;
}

/// Throws UsageError unless every extent of `shape` is >= 0 and `shape` elements of `elem_size`
/// bytes have a byte size that fits an Index.
inline void check_shape(const char* api, const Dims& shape, std::size_t elem_size = 1) {
  for (Index e : shape)
    if (e < 0) throw_bad_shape(api, shape);
  checked_bytes(api, shape, elem_size);
}

}  // namespace detail
}  // namespace pld
