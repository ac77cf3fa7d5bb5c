// pld::tile: tile load/store, element access, and the tile forms of remote_load / remote_store.
#include "debug/checks.h"
#include "kernel/region.h"
#include "rank/runtime.h"

#include <pld/error.hpp>
#include <pld/kernel.hpp>

#include <fmt/format.h>

#include <cstring>

namespace pld::detail {

namespace {

void copy_local(const LocalDesc& dst, const Dims& doff, const Dims& dext, const LocalDesc& src, const Dims& soff,
                const Dims& sext) {
  const std::size_t esz = dtype_size(dst.dtype);
  for_each_run(dst.shape, doff, dext, src.shape, soff, sext, 0, 0, [&](Index d, Index s, Index n) {
    std::memmove(dst.data + d * esz, src.data + s * esz, static_cast<std::size_t>(n) * esz);
  });
}

}  // namespace

void check_same_shape(const char* op, const Dims& a, const Dims& b) {
  if (!(a == b))
    throw UsageError(fmt::format("{}: tile shapes {} and {} differ; element-wise operations need equal shapes", op,
                                 a.str(), b.str()));
}

Dims checked_valid(const char* op, const Dims& shape, const Dims& valid) {
  if (valid.size() != shape.size())
    throw UsageError(fmt::format("{}: valid_shape {} has rank {} but shape {} has rank {}; give one extent per "
                                 "dimension",
                                 op, valid.str(), valid.size(), shape.str(), shape.size()));
  for (int d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0)
      throw UsageError(fmt::format("{}: shape {} has a negative extent; extents must be >= 0", op, shape.str()));
    if (valid[d] < 0 || valid[d] > shape[d])
      throw UsageError(fmt::format("{}: valid_shape {} must lie within shape {} (dimension {}: {} not in [0, {}])", op,
                                   valid.str(), shape.str(), d, valid[d], shape[d]));
  }
  return valid;
}

void tile_load(const char* op, LocalDesc& tile, const LocalDesc& src, const Dims& offsets) {
  check_dtype(op, src.dtype, tile.dtype);
  if (tile.shape.size() != src.shape.size())
    throw UsageError(fmt::format("{}: tile shape {} has rank {} but the source has rank {} (shape {}); load a box of "
                                 "the source's rank",
                                 op, tile.shape.str(), tile.shape.size(), src.shape.size(), src.shape.str()));
  check_box(op, "src", "box", src.shape, offsets, tile.valid, "load a smaller box or pass a smaller valid_shape");
  Dims zero = tile.shape;
  for (int d = 0; d < zero.size(); ++d) zero[d] = 0;
  copy_local(tile, zero, tile.valid, src, offsets, tile.valid);
}

void tile_store(const char* op, const LocalDesc& tile, const LocalDesc& dst, const Dims& offsets) {
  check_dtype(op, tile.dtype, dst.dtype);
  if (tile.valid.size() > dst.shape.size())
    throw UsageError(fmt::format("{}: tile shape {} has more dimensions than the destination (shape {})", op,
                                 tile.shape.str(), dst.shape.str()));
  const Dims ext = pad_leading(tile.valid, dst.shape.size());
  check_box(op, "dst", "box", dst.shape, offsets, ext, "store at smaller offsets or into a larger tensor");
  Dims zero = tile.shape;
  for (int d = 0; d < zero.size(); ++d) zero[d] = 0;
  copy_local(dst, offsets, ext, tile, zero, tile.valid);
}

void element_read(const char* op, const LocalDesc& src, const Dims& offsets, void* value) {
  const std::size_t esz = dtype_size(src.dtype);
  std::memcpy(value, src.data + linear_index(op, offsets, src.shape) * static_cast<Index>(esz), esz);
}

void element_write(const char* op, const LocalDesc& dst, const Dims& offsets, const void* value) {
  const std::size_t esz = dtype_size(dst.dtype);
  std::memcpy(dst.data + linear_index(op, offsets, dst.shape) * static_cast<Index>(esz), value, esz);
}

void remote_load(LocalDesc& tile, const WindowDesc& src, int peer, const Dims& offsets) {
  const std::string op = "tile::remote_load";
  const DomainState& d = bound_state(op, src);
  check_peer(op, d, peer);
  check_dtype(op.c_str(), src.dtype, tile.dtype);
  if (src.shape.size() == 0)
    throw UsageError("tile::remote_load: the source window view has rank 0; give it at least one dimension");
  if (tile.shape.size() != src.shape.size())
    throw UsageError(fmt::format("{}: shape {} has rank {} but the window has rank {} (shape {}); give one extent per "
                                 "dimension",
                                 op, tile.shape.str(), tile.shape.size(), src.shape.size(), src.shape.str()));
  check_box(op, "window", "box", src.shape, offsets, tile.valid, "reads past the end: pass a smaller valid_shape");
  const std::size_t esz = dtype_size(tile.dtype);
  Dims zero = tile.shape;
  for (int i = 0; i < zero.size(); ++i) zero[i] = 0;
  const int world_peer = d.members[static_cast<std::size_t>(peer)];
  if (debug_checks()) debug_check_view(op.c_str(), src);
  d.backend->record_op(OpKind::RemoteLoad, 0, world_peer, saturate(tile.valid.numel() * static_cast<Index>(esz)),
                  src.ref.domain, src.ref.buffer, src.ref.offset, &offsets);
  for_each_run(tile.shape, zero, tile.valid, src.shape, offsets, tile.valid, 0, 0, [&](Index t, Index s, Index n) {
    d.backend->get(tile.data + t * esz, world_peer, src.ref.offset + static_cast<std::uint64_t>(s) * esz,
                   static_cast<std::size_t>(n) * esz);
  });
}

void remote_store(const char* op, const LocalDesc& src, const WindowDesc& dst, int peer, const Dims& offsets,
                  AtomicType atomic) {
  const DomainState& d = bound_state(op, dst);
  check_peer(op, d, peer);
  check_dtype(op, src.dtype, dst.dtype);
  check_atomic(op, atomic, dst.dtype);
  if (dst.shape.size() < 2)
    throw UsageError(fmt::format("{}: target rank must be >= 2 (window shape {}); view the window as [rows, cols]", op,
                                 dst.shape.str()));
  if (src.shape.size() < 2)
    throw UsageError(fmt::format("{}: src must be at least 2-D (shape {}); reshape it as [1, n]", op, src.shape.str()));
  for (int i = 0; i + 2 < src.shape.size(); ++i)
    if (src.shape[i] != 1)
      throw UsageError(fmt::format("{}: src leading dimension {} must be 1 (src shape {}); only the inner two "
                                   "dimensions are pushed",
                                   op, i, src.shape.str()));
  const Dims inner{src.valid[src.valid.size() - 2], src.valid[src.valid.size() - 1]};
  const Dims ext = pad_leading(inner, dst.shape.size());
  check_box(op, "target", "box", dst.shape, offsets, ext, "push exceeds the peer's target region: store a smaller tile or "
                                                   "at smaller offsets");
  const std::size_t esz = dtype_size(dst.dtype);
  Dims zero = src.shape;
  for (int i = 0; i < zero.size(); ++i) zero[i] = 0;
  const Dims src_ext = pad_leading(inner, src.shape.size());
  const int world_peer = d.members[static_cast<std::size_t>(peer)];
  if (debug_checks()) debug_check_view(op, dst);
  d.backend->record_op(OpKind::RemoteStore, static_cast<std::uint8_t>(atomic), world_peer,
                  saturate(ext.numel() * static_cast<Index>(esz)), dst.ref.domain, dst.ref.buffer, dst.ref.offset,
                  &offsets);
  for_each_run(dst.shape, offsets, ext, src.shape, zero, src_ext, 0, 0, [&](Index t, Index s, Index n) {
    const std::uint64_t off = dst.ref.offset + static_cast<std::uint64_t>(t) * esz;
    if (atomic == AtomicType::Add)
      d.backend->atomic_add(world_peer, off, src.data + s * esz, static_cast<std::size_t>(n), dst.dtype);
    else
      d.backend->put(world_peer, off, src.data + s * esz, static_cast<std::size_t>(n) * esz);
  });
}

}  // namespace pld::detail
