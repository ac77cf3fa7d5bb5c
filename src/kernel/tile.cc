// pld::tile on rank-local memory: tile shapes and storage, load/store, element access. The
// tile forms of remote_load / remote_store move data between ranks and live in remote_tile.cc.
#include "debug/checks.h"
#include "debug/race.h"
#include "kernel/region.h"

#include <pld/detail/checked.hpp>
#include <pld/error.hpp>
#include <pld/kernel.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <cstring>

namespace pld::detail {

namespace {

// `api` names the copy for the race detector (either side may be this rank's own window).
void copy_local(const char* api, const LocalDesc& dst, const Dims& doff, const Dims& dext, const LocalDesc& src,
                const Dims& soff, const Dims& sext) {
  const std::size_t esz = dtype_size(dst.dtype);
  for_each_run(dst.shape, doff, dext, src.shape, soff, sext, 0, 0, [&](Index d, Index s, Index n) {
    const std::size_t bytes = static_cast<std::size_t>(n) * esz;
    if (race_on()) [[unlikely]] {
      race_local(api, RaceKind::Read, src.data + s * esz, bytes);
      race_local(api, RaceKind::Write, dst.data + d * esz, bytes);
    }
    std::memmove(dst.data + d * esz, src.data + s * esz, bytes);
  });
}

}  // namespace

void check_same_shape(const char* api, const Dims& a, const Dims& b) {
  if (!(a == b))
    throw UsageError(fmt::format("{}: tile shapes {} and {} differ; element-wise operations need equal shapes", api,
                                 a.str(), b.str()));
}

Dims checked_valid(const char* api, const Dims& shape, const Dims& valid) {
  if (valid.size() != shape.size())
    throw UsageError(
        fmt::format("{}: valid_shape {} has rank {} but shape {} has rank {}; give one extent per "
                    "dimension",
                    api, valid.str(), valid.size(), shape.str(), shape.size()));
  for (int d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0)
      throw UsageError(fmt::format("{}: shape {} has a negative extent; extents must be >= 0", api, shape.str()));
    if (valid[d] < 0 || valid[d] > shape[d])
      throw UsageError(fmt::format("{}: valid_shape {} must lie within shape {} (dimension {}: {} not in [0, {}])", api,
                                   valid.str(), shape.str(), d, valid[d], shape[d]));
  }
  return valid;
}

std::size_t tile_elements(const char* api, const Dims& shape, std::size_t elem_size) {
  const Index bytes = checked_bytes(api, shape, elem_size);
  static const std::uint64_t memory =
      static_cast<std::uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(sysconf(_SC_PAGE_SIZE));
  if (static_cast<std::uint64_t>(bytes) > memory)
    throw UsageError(
        fmt::format("{}: tile shape {} needs {} bytes, more than this machine's memory ({} bytes); use a "
                    "smaller tile",
                    api, shape.str(), bytes, memory));
  return static_cast<std::size_t>(bytes) / elem_size;
}

void throw_tile_alloc(const char* api, const Dims& shape, std::size_t elem_size) {
  throw UsageError(fmt::format("{}: tile shape {} needs {} bytes, which cannot be allocated; use a smaller tile", api,
                               shape.str(), checked_bytes(api, shape, elem_size)));
}

void check_tile_load(const char* api, const LocalDesc& tile, const LocalDesc& src, const Dims& offsets) {
  check_dtype(api, src.dtype, tile.dtype);
  if (tile.shape.size() != src.shape.size())
    throw UsageError(
        fmt::format("{}: tile shape {} has rank {} but the source has rank {} (shape {}); load a box of "
                    "the source's rank",
                    api, tile.shape.str(), tile.shape.size(), src.shape.size(), src.shape.str()));
  check_box(api, "src", "box", src.shape, offsets, tile.valid, "load a smaller box or pass a smaller valid_shape");
}

void tile_load(const char* api, LocalDesc& tile, const LocalDesc& src, const Dims& offsets) {
  check_tile_load(api, tile, src, offsets);
  if (debug_checks()) check_nbi_read(api, src, offsets, tile.valid);
  copy_local(api, tile, zeros_like(tile.shape), tile.valid, src, offsets, tile.valid);
}

void tile_store(const char* api, const LocalDesc& tile, const LocalDesc& dst, const Dims& offsets) {
  check_dtype(api, tile.dtype, dst.dtype);
  if (tile.valid.size() > dst.shape.size())
    throw UsageError(fmt::format("{}: tile shape {} has more dimensions than the destination (shape {})", api,
                                 tile.shape.str(), dst.shape.str()));
  const Dims ext = pad_leading(tile.valid, dst.shape.size());
  check_box(api, "dst", "box", dst.shape, offsets, ext, "store at smaller offsets or into a larger tensor");
  copy_local(api, dst, offsets, ext, tile, zeros_like(tile.shape), tile.valid);
}

void element_read(const char* api, const LocalDesc& src, const Dims& offsets, void* value) {
  const std::size_t esz = dtype_size(src.dtype);
  const Index at = linear_index(api, offsets, src.shape);
  if (debug_checks()) {
    Dims one = offsets;
    for (int d = 0; d < one.size(); ++d) one[d] = 1;
    check_nbi_read(api, src, offsets, one);
  }
  if (race_on()) race_local(api, RaceKind::Read, src.data + at * static_cast<Index>(esz), esz);
  std::memcpy(value, src.data + at * static_cast<Index>(esz), esz);
}

void element_write(const char* api, const LocalDesc& dst, const Dims& offsets, const void* value) {
  const std::size_t esz = dtype_size(dst.dtype);
  std::byte* at = dst.data + linear_index(api, offsets, dst.shape) * static_cast<Index>(esz);
  if (race_on()) race_local(api, RaceKind::Write, at, esz);
  std::memcpy(at, value, esz);
}

}  // namespace pld::detail
