// tile::remote_load and tile::remote_store: a tile's box moved from or to rank `peer`'s copy of a
// window, each operand checked first, through the transfer machinery of rma.h.
#include "debug/checks.h"
#include "kernel/region.h"
#include "kernel/rma.h"

#include <pld/error.hpp>
#include <pld/kernel.hpp>

#include <fmt/format.h>

namespace pld::detail {

void check_remote_load(const LocalDesc& tile, const WindowDesc& src, int peer, const Dims& offsets) {
  const char* api = "tile::remote_load";
  const DomainState& d = bound_state(api, src);
  check_peer(api, d, peer);
  check_dtype(api, src.dtype, tile.dtype);
  if (src.shape.size() == 0)
    throw UsageError("tile::remote_load: the source window view has rank 0; give it at least one dimension");
  if (tile.shape.size() != src.shape.size())
    throw UsageError(
        fmt::format("{}: shape {} has rank {} but the window has rank {} (shape {}); give one extent per "
                    "dimension",
                    api, tile.shape.str(), tile.shape.size(), src.shape.size(), src.shape.str()));
  check_box(api, "window", "box", src.shape, offsets, tile.valid, "reads past the end: pass a smaller valid_shape");
}

void remote_load(LocalDesc& tile, const WindowDesc& src, int peer, const Dims& offsets) {
  check_remote_load(tile, src, peer, offsets);
  const DomainState& d = *src.state;
  const int world_peer = d.members[static_cast<std::size_t>(peer)];
  record("tile::remote_load", OpKind::RemoteLoad, AtomicType::None, d, world_peer, src,
         tile.valid.numel() * static_cast<Index>(dtype_size(tile.dtype)), &offsets);
  move_boxes(d, world_peer, Direction::FromPeer, Issue{AtomicType::None, "tile::remote_load"}, src,
             Box{src.shape, offsets, tile.valid}, tile.data, Box{tile.shape, zeros_like(tile.shape), tile.valid});
}

void remote_store(const char* api, const LocalDesc& src, const WindowDesc& dst, int peer, const Dims& offsets,
                  AtomicType atomic) {
  const DomainState& d = bound_state(api, dst);
  check_peer(api, d, peer);
  check_dtype(api, src.dtype, dst.dtype);
  check_atomic(api, atomic, dst.dtype);
  if (dst.shape.size() < 2)
    throw UsageError(fmt::format("{}: target rank must be >= 2 (window shape {}); view the window as [rows, cols]", api,
                                 dst.shape.str()));
  if (src.shape.size() < 2)
    throw UsageError(
        fmt::format("{}: src must be at least 2-D (shape {}); reshape it as [1, n]", api, src.shape.str()));
  for (int i = 0; i + 2 < src.shape.size(); ++i)
    if (src.shape[i] != 1)
      throw UsageError(
          fmt::format("{}: src leading dimension {} must be 1 (src shape {}); only the inner two "
                      "dimensions are pushed",
                      api, i, src.shape.str()));
  const Dims inner{src.valid[src.valid.size() - 2], src.valid[src.valid.size() - 1]};
  const Dims ext = pad_leading(inner, dst.shape.size());
  check_box(api, "target", "box", dst.shape, offsets, ext,
            "push exceeds the peer's target region: store a smaller tile or at smaller offsets");
  const int world_peer = d.members[static_cast<std::size_t>(peer)];
  record(api, OpKind::RemoteStore, atomic, d, world_peer, dst, ext.numel() * static_cast<Index>(dtype_size(dst.dtype)),
         &offsets);
  move_boxes(d, world_peer, Direction::ToPeer, Issue{atomic, api}, dst, Box{dst.shape, offsets, ext}, src.data,
             Box{src.shape, zeros_like(src.shape), pad_leading(inner, src.shape.size())});
}

}  // namespace pld::detail
