#include "kernel/region.h"

#include "rank/runtime.h"

#include <pld/detail/checked.hpp>
#include <pld/error.hpp>

#include <fmt/format.h>

namespace pld::detail {

void check_box(const std::string& op, const char* operand, const char* region, const Dims& shape, const Dims& offsets,
               const Dims& extent, const char* remedy) {
  if (offsets.size() != shape.size())
    throw UsageError(
        fmt::format("{}: {} offsets {} have rank {} but the {} has rank {} (shape {}); give one offset per "
                    "dimension",
                    op, operand, offsets.str(), offsets.size(), operand, shape.size(), shape.str()));
  if (extent.size() != shape.size())
    throw UsageError(
        fmt::format("{}: {} extent {} has rank {} but the {} has rank {} (shape {}); give one extent per "
                    "dimension",
                    op, operand, extent.str(), extent.size(), operand, shape.size(), shape.str()));
  for (int d = 0; d < shape.size(); ++d) {
    if (offsets[d] < 0)
      throw UsageError(fmt::format("{}: {} offset {} in dimension {} is negative (offsets {}); offsets must be >= 0",
                                   op, operand, offsets[d], d, offsets.str()));
    if (extent[d] < 0)
      throw UsageError(fmt::format("{}: extent {} in dimension {} is negative (extent {}); extents must be >= 0", op,
                                   extent[d], d, extent.str()));
    if (shape[d] < 0)
      throw UsageError(
          fmt::format("{}: {} shape {} has a negative extent; extents must be >= 0", op, operand, shape.str()));
    if (!fits_within(offsets[d], extent[d], shape[d]))
      throw UsageError(fmt::format(
          "{}: {} {} exceeds dimension {}: offset {} + extent {} > {} (shape {}, offsets {}, "
          "extent {}); {}",
          op, operand, region, d, offsets[d], extent[d], shape[d], shape.str(), offsets.str(), extent.str(), remedy));
  }
}

void check_peer(const std::string& op, const DomainState& state, int peer) {
  if (peer < 0 || peer >= state.nranks())
    throw UsageError(
        fmt::format("{}: peer {} out of range [0, {}) of comm domain {}; peers are domain-local ranks "
                    "(use pld::rank(ctx) / pld::nranks(ctx))",
                    op, peer, state.nranks(), state.label));
}

const DomainState& bound_state(const std::string& op, const WindowDesc& w) {
  if (!w.state) {
    RankRuntime::get(op.c_str());  // throws "called outside a kernel" on the host
    throw UsageError(
        fmt::format("{}: the window view is not bound to a comm domain; create it with "
                    "Host::window<T>() and pass it to the kernel through Host::dispatch",
                    op));
  }
  return *w.state;
}

void check_dtype(const char* api, DType a, DType b) {
  if (a != b)
    throw UsageError(fmt::format("{}: src dtype ({}) must match target dtype ({})", api, dtype_name(a), dtype_name(b)));
}

void check_atomic(const char* api, AtomicType atomic, DType dtype) {
  if (atomic == AtomicType::None) return;
  if (atomic != AtomicType::Add)
    throw UsageError(
        fmt::format("{}: atomic {} must be AtomicType::None or AtomicType::Add", api, static_cast<int>(atomic)));
  switch (dtype) {
    case DType::FP32:
    case DType::FP16:
    case DType::BF16:
    case DType::INT32:
    case DType::INT16:
    case DType::INT8: return;
    default:
      throw UsageError(
          fmt::format("{}: AtomicType::Add requires an fp32/bf16/fp16/int32/int16/int8 dtype, got {}; "
                      "accumulate in one of those types or use a plain store with a signal",
                      api, dtype_name(dtype)));
  }
}

Dims strides_of(const Dims& shape) {
  Dims s = shape;
  Index acc = 1;
  for (int d = shape.size() - 1; d >= 0; --d) {
    s[d] = acc;
    acc *= shape[d];
  }
  return s;
}

RowCursor::RowCursor(const Dims& shape, const Dims& offsets, const Dims& extent)
    : stride_(strides_of(shape)), extent_(extent), index_(extent) {
  for (int d = 0; d < shape.size(); ++d) {
    index_[d] = 0;
    linear_ += offsets[d] * stride_[d];
  }
}

void RowCursor::next() {
  for (int d = extent_.size() - 2; d >= 0; --d) {
    ++index_[d];
    linear_ += stride_[d];
    if (index_[d] < extent_[d]) return;
    linear_ -= extent_[d] * stride_[d];
    index_[d] = 0;
  }
}

void RowCursor::seek(Index row) {
  for (int d = extent_.size() - 2; d >= 0; --d) {
    linear_ -= index_[d] * stride_[d];
    index_[d] = extent_[d] ? row % extent_[d] : 0;
    row = extent_[d] ? row / extent_[d] : 0;
    linear_ += index_[d] * stride_[d];
  }
}

bool box_contiguous(const Dims& shape, const Dims& extent) {
  // Contiguous iff, after the first dimension with extent > 1, every extent equals the shape.
  int d = 0;
  while (d < extent.size() && extent[d] == 1) ++d;
  for (++d; d < extent.size(); ++d)
    if (extent[d] != shape[d]) return false;
  return true;
}

void check_nbi_read(const char* api, const LocalDesc& src, const Dims& offsets, const Dims& extent) {
  RankRuntime* rt = RankRuntime::current();
  if (!rt || !rt->nbi().gets_outstanding()) return;
  const auto esz = static_cast<Index>(dtype_size(src.dtype));
  for_each_run(src.shape, offsets, extent, src.shape, offsets, extent, 0, 0, [&](Index at, Index, Index n) {
    rt->nbi().check_read(api, src.data + at * esz, static_cast<std::size_t>(n * esz));
  });
}

Dims pad_leading(const Dims& extent, int rank) {
  Dims out;
  for (int d = 0; d < rank - extent.size(); ++d) out.push_back(1);
  for (Index e : extent) out.push_back(e);
  return out;
}

Dims zeros_like(const Dims& shape) {
  Dims z = shape;
  for (int i = 0; i < z.size(); ++i) z[i] = 0;
  return z;
}

void check_chunks(const char* api, Index chunk_rows, Index chunk_cols, bool pipeline) {
  if (chunk_rows < 0)
    throw UsageError(fmt::format("{}: chunk_rows {} must be non-negative (0 = the whole transfer)", api, chunk_rows));
  if (chunk_cols < 0)
    throw UsageError(fmt::format("{}: chunk_cols {} must be non-negative (0 = the whole transfer)", api, chunk_cols));
  if (pipeline && (chunk_rows <= 0 || chunk_cols <= 0))
    throw UsageError(
        fmt::format("{}: pipeline=true requires both chunk_rows>0 and chunk_cols>0 (got chunk_rows={}, "
                    "chunk_cols={})",
                    api, chunk_rows, chunk_cols));
}

Region region_of(const char* api, const char* window_side, const char* local_side, const Dims& window_shape,
                 const Dims& local_shape, const Dims* window_offsets, const Dims* local_offsets, const Dims* shape) {
  if (window_shape.size() != local_shape.size())
    throw UsageError(fmt::format("{}: {} (shape {}) and {} (shape {}) must have the same rank", api, window_side,
                                 window_shape.str(), local_side, local_shape.str()));
  Region r;
  if (!shape) {
    if (!(window_shape == local_shape))
      throw UsageError(
          fmt::format("{}: {} and {} must have the same static shape for a full-slice transfer ({} vs "
                      "{}); pass dst_offsets, src_offsets and shape to move a region",
                      api, window_side, local_side, window_shape.str(), local_shape.str()));
    r.shape = window_shape;
    r.window_offsets = r.local_offsets = zeros_like(window_shape);
    return r;
  }
  r.shape = *shape;
  r.window_offsets = *window_offsets;
  r.local_offsets = *local_offsets;
  check_box(api, window_side, "subregion", window_shape, r.window_offsets, r.shape, "shrink shape or move the offsets");
  check_box(api, local_side, "subregion", local_shape, r.local_offsets, r.shape, "shrink shape or move the offsets");
  return r;
}

}  // namespace pld::detail
