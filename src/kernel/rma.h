// The transfer machinery the kernel's one-sided operations share (rma.cc): a box of a window
// moved to or from a box of a local array, run by run, through the backend, with the op-history
// record and the race detector's view of each run. tensor::put/get and their forms use it in
// rma.cc, tile::remote_load/remote_store in remote_tile.cc.
#pragma once

#include "backend/backend.h"
#include "rank/domain.h"
#include "rank/nbi.h"

#include <pld/detail/kernel.hpp>

#include <cstddef>
#include <cstdint>

namespace pld::detail {

/// Which way the data moves: into the peer's window or out of it.
enum class Direction { ToPeer, FromPeer };

/// A box `[offsets, offsets + extent)` of an array of `shape`.
struct Box {
  const Dims& shape;
  const Dims& offsets;
  const Dims& extent;
};

/// How the runs of a transfer reach the backend: blocking or not, and for put_signal the run held
/// back to travel with the signal (the last plain run of the box).
struct Issue {
  AtomicType atomic = AtomicType::None;
  const char* api = "";  // the race detector's name of the operation
  bool nbi = false;
  bool hold_last = false;
  NbiLedger::Spans* spans = nullptr;  // debug mode: the local runs of a non-blocking put
};

/// One contiguous run: heap bytes [offset, offset + bytes) of the peer, `local` on this rank.
struct Run {
  std::uint64_t offset = 0;
  std::byte* local = nullptr;
  std::size_t bytes = 0;
};

/// Checks a window operand in debug mode and records the operation in the rank's op history.
void record(const char* api, OpKind kind, AtomicType atomic, const DomainState& d, int world_peer, const WindowDesc& w,
            Index bytes, const Dims* offsets);

/// The race detector's view of one run: the peer's window bytes and the local side (which may be
/// this rank's own window) are read or written as the direction says.
void race_runs(const char* api, Direction dir, AtomicType atomic, int world_peer, const Run& run);

/// Moves box `wbox` of world rank `world_peer`'s copy of window `w` to or from box `lbox` of the
/// local array at `local`; both boxes hold the same elements in row-major order. With
/// `how.hold_last`, the last run of a plain put is returned instead of moved.
Run move_boxes(const DomainState& d, int world_peer, Direction dir, const Issue& how, const WindowDesc& w,
               const Box& wbox, std::byte* local, const Box& lbox, Index chunk_rows = 0, Index chunk_cols = 0);

}  // namespace pld::detail
