// pld::tensor: put (push) and get (pull) between a rank-local array and a peer's window.
#include "debug/checks.h"
#include "kernel/region.h"
#include "rank/runtime.h"

#include <pld/error.hpp>
#include <pld/kernel.hpp>

#include <fmt/format.h>

namespace pld::detail {

namespace {

void check_chunks(const char* op, Index chunk_rows, Index chunk_cols, bool pipeline) {
  if (chunk_rows < 0)
    throw UsageError(fmt::format("{}: chunk_rows {} must be non-negative (0 = the whole transfer)", op, chunk_rows));
  if (chunk_cols < 0)
    throw UsageError(fmt::format("{}: chunk_cols {} must be non-negative (0 = the whole transfer)", op, chunk_cols));
  if (pipeline && (chunk_rows <= 0 || chunk_cols <= 0))
    throw UsageError(fmt::format("{}: pipeline=true requires both chunk_rows>0 and chunk_cols>0 (got chunk_rows={}, "
                                 "chunk_cols={})",
                                 op, chunk_rows, chunk_cols));
}

struct Region {
  Dims window_offsets, local_offsets, shape;
};

// Validates the region arguments of put/get and returns the boxes on both sides.
Region region_of(const char* op, const char* window_side, const char* local_side, const Dims& window_shape,
                 const Dims& local_shape, const Dims* window_offsets, const Dims* local_offsets, const Dims* shape) {
  if (window_shape.size() != local_shape.size())
    throw UsageError(fmt::format("{}: {} (shape {}) and {} (shape {}) must have the same rank", op, window_side,
                                 window_shape.str(), local_side, local_shape.str()));
  Region r;
  if (!shape) {
    if (!(window_shape == local_shape))
      throw UsageError(fmt::format("{}: {} and {} must have the same static shape for a full-slice transfer ({} vs "
                                   "{}); pass dst_offsets, src_offsets and shape to move a region",
                                   op, window_side, local_side, window_shape.str(), local_shape.str()));
    r.shape = window_shape;
    r.window_offsets = r.local_offsets = Dims(window_shape.begin(), window_shape.end());
    for (int d = 0; d < r.shape.size(); ++d) r.window_offsets[d] = r.local_offsets[d] = 0;
    return r;
  }
  r.shape = *shape;
  r.window_offsets = *window_offsets;
  r.local_offsets = *local_offsets;
  check_box(op, window_side, "subregion", window_shape, r.window_offsets, r.shape, "shrink shape or move the offsets");
  check_box(op, local_side, "subregion", local_shape, r.local_offsets, r.shape, "shrink shape or move the offsets");
  return r;
}

}  // namespace

namespace {
// The common case — whole tensor, same shape and dtype, plain copy, no chunking — goes straight to
// the backend; anything else (including every error) takes the checked general path.
bool plain_full_slice(const WindowDesc& w, int peer, const LocalDesc& l, const Dims* shape, Index chunk_rows,
                      Index chunk_cols, bool pipeline) {
  return !shape && w.state && peer >= 0 && peer < w.state->nranks() && w.dtype == l.dtype && w.shape == l.shape &&
         chunk_rows == 0 && chunk_cols == 0 && !pipeline;
}
}  // namespace

void put(const WindowDesc& dst, int peer, const LocalDesc& src, const Dims* dst_offsets, const Dims* src_offsets,
         const Dims* shape, const PutOptions& options) {
  if (options.atomic == AtomicType::None &&
      plain_full_slice(dst, peer, src, shape, options.chunk_rows, options.chunk_cols, options.pipeline)) {
    const int world_peer = dst.state->members[static_cast<std::size_t>(peer)];
    const std::size_t bytes = static_cast<std::size_t>(src.shape.numel()) * dtype_size(src.dtype);
    if (debug_checks()) debug_check_view("tensor::put", dst);
    dst.state->backend->put(world_peer, dst.ref.offset, src.data, bytes);
    dst.state->backend->record_op(OpKind::Put, 0, world_peer, saturate(static_cast<Index>(bytes)), dst.ref.domain,
                             dst.ref.buffer, dst.ref.offset, nullptr);
    return;
  }
  const char* op = "tensor::put";
  const DomainState& d = bound_state(op, dst);
  check_peer(op, d, peer);
  check_dtype(op, src.dtype, dst.dtype);
  check_atomic(op, options.atomic, dst.dtype);
  check_chunks(op, options.chunk_rows, options.chunk_cols, options.pipeline);
  const Region r = region_of(op, "dst", "src", dst.shape, src.shape, dst_offsets, src_offsets, shape);
  const std::size_t esz = dtype_size(dst.dtype);
  const int world_peer = d.members[static_cast<std::size_t>(peer)];
  if (debug_checks()) debug_check_view(op, dst);
  d.backend->record_op(OpKind::Put, static_cast<std::uint8_t>(options.atomic), world_peer,
                  saturate(r.shape.numel() * static_cast<Index>(esz)), dst.ref.domain, dst.ref.buffer, dst.ref.offset,
                  &r.window_offsets);
  for_each_run(dst.shape, r.window_offsets, r.shape, src.shape, r.local_offsets, r.shape, options.chunk_rows,
               options.chunk_cols, [&](Index w, Index l, Index n) {
                 const std::uint64_t off = dst.ref.offset + static_cast<std::uint64_t>(w) * esz;
                 if (options.atomic == AtomicType::Add)
                   d.backend->atomic_add(world_peer, off, src.data + l * esz, static_cast<std::size_t>(n), dst.dtype);
                 else
                   d.backend->put(world_peer, off, src.data + l * esz, static_cast<std::size_t>(n) * esz);
               });
}

void get(const LocalDesc& dst, int peer, const WindowDesc& src, const Dims* dst_offsets, const Dims* src_offsets,
         const Dims* shape, const GetOptions& options) {
  if (plain_full_slice(src, peer, dst, shape, options.chunk_rows, options.chunk_cols, options.pipeline)) {
    const int world_peer = src.state->members[static_cast<std::size_t>(peer)];
    const std::size_t bytes = static_cast<std::size_t>(dst.shape.numel()) * dtype_size(dst.dtype);
    if (debug_checks()) debug_check_view("tensor::get", src);
    src.state->backend->get(dst.data, world_peer, src.ref.offset, bytes);
    src.state->backend->record_op(OpKind::Get, 0, world_peer, saturate(static_cast<Index>(bytes)), src.ref.domain,
                             src.ref.buffer, src.ref.offset, nullptr);
    return;
  }
  const char* op = "tensor::get";
  const DomainState& d = bound_state(op, src);
  check_peer(op, d, peer);
  check_dtype(op, src.dtype, dst.dtype);
  check_chunks(op, options.chunk_rows, options.chunk_cols, options.pipeline);
  const Region r = region_of(op, "src", "dst", src.shape, dst.shape, src_offsets, dst_offsets, shape);
  const std::size_t esz = dtype_size(src.dtype);
  const int world_peer = d.members[static_cast<std::size_t>(peer)];
  if (debug_checks()) debug_check_view(op, src);
  d.backend->record_op(OpKind::Get, 0, world_peer, saturate(r.shape.numel() * static_cast<Index>(esz)), src.ref.domain,
                  src.ref.buffer, src.ref.offset, &r.window_offsets);
  for_each_run(src.shape, r.window_offsets, r.shape, dst.shape, r.local_offsets, r.shape, options.chunk_rows,
               options.chunk_cols, [&](Index w, Index l, Index n) {
                 d.backend->get(dst.data + l * esz, world_peer, src.ref.offset + static_cast<std::uint64_t>(w) * esz,
                                static_cast<std::size_t>(n) * esz);
               });
}

}  // namespace pld::detail
