// Element-wise atomic add into memory this process can address (a shm heap, or a window the mpi
// backend shares with ranks on its node): lock xadd for integers, a compare-and-swap loop for
// floating point (fp16/bf16 add in float and round once per element), correct under contention
// from every rank at once.
#pragma once

#include <pld/types.hpp>

#include <cstddef>

namespace pld::detail {

/// `dst[0..count) += src[0..count)` for fp32, fp16, bf16, int32, int16 and int8 (the caller has
/// validated the dtype).
void atomic_add_local(std::byte* dst, const void* src, std::size_t count, DType dtype);

}  // namespace pld::detail
