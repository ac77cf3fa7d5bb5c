// How the composite collectives reach peers' windows (docs/01-collectives.md, "Direct and RMA
// schedules").
//
// Direct: every member's window is load/store addressable here (shm: DomainState::windows_in), and
// the schedules read and write peers' copies as memory through window_at() (coll/credit.h).
// RMA: a peer's window is reachable only through Backend::get and Backend::put (mpi: heap_base of
// a peer is nullptr), or PLD_COLL_RMA=1 asks for that on shm. The RMA schedules use the helpers
// below: the calling rank's own copy is always memory; a peer's copy is read with get (complete
// on return) and written with put (visible to a peer once this rank's next notify has returned —
// the next credit barrier).
//
// The choice is made once per call (direct_peers), never per element. Both kinds of schedule use
// the same credits and the same ownership of segments and rows, so a member running one kind and
// another member the other kind still agree — except LL (coll/ll.cc), which only runs when the
// domain is direct; every member of a domain gets the same answer from direct_peers anyway (one
// backend, one inherited environment).
#pragma once

#include "backend/backend.h"
#include "core/copy.h"
#include "rank/runtime.h"

#include <pld/kernel.hpp>

#include <pld/types.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace pld::detail {

/// PLD_COLL_RMA != 0: run the RMA schedules even where peers' windows are memory. Read once per
/// process, by its first collective that moves data (coll/credit.cc).
bool coll_rma_forced();

/// Whether the collectives on `d` may run their direct schedules: every member's window is
/// addressable from this process and PLD_COLL_RMA is off.
inline bool direct_peers(const DomainState& d) { return d.direct; }

/// Local address of the calling rank's own copy of `w` at `byte_offset` (always addressable).
inline std::byte* own_at(const DomainState& d, const WindowDesc& w, std::uint64_t byte_offset) {
  return d.windows_in[static_cast<std::size_t>(d.rank)] + w.ref.offset + byte_offset;
}

/// Bytes [byte_offset, byte_offset + bytes) of `peer`'s copy of `w`: the calling rank's own copy
/// in place; a peer's copy fetched with Backend::get into `scratch` (complete on return). Returns
/// where the bytes are.
inline const std::byte* peer_read(const DomainState& d, int peer, const WindowDesc& w, std::uint64_t byte_offset,
                                  std::size_t bytes, std::byte* scratch) {
  if (peer == d.rank) return own_at(d, w, byte_offset);
  d.backend->get(scratch, d.members[static_cast<std::size_t>(peer)], w.ref.offset + byte_offset, bytes);
  return scratch;
}

/// Copies bytes [byte_offset, byte_offset + bytes) of `peer`'s copy of `w` to local memory `dst`
/// (which may be inside the calling rank's own window).
inline void peer_fetch(const DomainState& d, int peer, const WindowDesc& w, std::uint64_t byte_offset, std::byte* dst,
                       std::size_t bytes) {
  if (bytes == 0) return;
  if (peer == d.rank) return bulk_copy(dst, own_at(d, w, byte_offset), bytes);
  d.backend->get(dst, d.members[static_cast<std::size_t>(peer)], w.ref.offset + byte_offset, bytes);
}

/// Writes `bytes` from `src` into `peer`'s copy of `w` at `byte_offset`: a store into the calling
/// rank's own copy (streaming from `streaming_from` bytes), Backend::put into a peer's.
inline void peer_write(const DomainState& d, int peer, const WindowDesc& w, std::uint64_t byte_offset,
                       const std::byte* src, std::size_t bytes, std::size_t streaming_from = kStreamingBytes) {
  if (bytes == 0) return;
  if (peer == d.rank) return bulk_copy(own_at(d, w, byte_offset), src, bytes, streaming_from);
  d.backend->put(d.members[static_cast<std::size_t>(peer)], w.ref.offset + byte_offset, src, bytes);
}

/// One step of an RMA schedule moves at most this much per peer...
inline constexpr std::size_t kRmaChunkBytes = 256 * 1024;
/// ...and stages at most this much from all peers together (a lane's scratch stays bounded at
/// any rank count: 4 MiB / (P - 1) per peer above P = 17).
inline constexpr std::size_t kRmaScratchBytes = 4u << 20;

/// Elements of `esz` bytes per peer and step of an RMA schedule on `nranks` ranks (>= 1).
inline Index rma_chunk_elems(int nranks, std::size_t esz) {
  const std::size_t per_peer = std::clamp<std::size_t>(
      kRmaScratchBytes / static_cast<std::size_t>(std::max(1, nranks - 1)), 4096, kRmaChunkBytes);
  return static_cast<Index>(std::max<std::size_t>(1, per_peer / esz));
}

/// The calling thread's staging buffer for RMA gets, at least `bytes` long (kept for the thread's
/// life; each lane runs on its own thread).
inline std::byte* rma_scratch(std::size_t bytes) {
  thread_local std::vector<std::byte> buf;
  if (buf.size() < bytes) buf.resize(bytes);
  return buf.data();
}

}  // namespace pld::detail
