// The one SIMD reduction unit (Highway, dynamic dispatch: the best instruction set of the machine
// is chosen at run time).
//
//   dst[i] = op(srcs[0][i], srcs[1][i], ..., srcs[n-1][i])   left to right, for i < count
//
// Policy (docs/02-primitives-data.md, docs/01-collectives.md):
// * Order: sources are combined left to right, so callers that pass ranks in ascending order get
//   the same bits on every rank and from every schedule that does the same.
// * fp16 / bf16 are widened to fp32, combined in fp32, and rounded once (round to nearest even).
// * Integers wrap on overflow (two's complement), as unsigned arithmetic does.
// * Max / Min with a NaN operand return the second operand (the x86 maxps rule), vector and
//   scalar paths alike; Sum / Prod propagate NaN as IEEE arithmetic does.
// * dst may alias any source.
#pragma once

#include <pld/types.hpp>

#include <cstddef>

namespace pld::detail {

void reduce(void* dst, const void* const* srcs, int nsrc, std::size_t count, DType dtype, ReduceOp op);

/// Name of the instruction set the dispatcher picked ("AVX2", "AVX3", "SSE4", ...).
const char* reduce_target();

}  // namespace pld::detail
