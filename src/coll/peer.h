// How the composite collectives reach peers' windows (docs/01-collectives-schedules.md, "Direct
// and RMA schedules"): one schedule per collective, written over a peer access type.
//
// DirectPeers: every member's window is load/store addressable here (shm: DomainState::windows_in);
// a read returns the peer's bytes in place, a write is a copy into the peer's window.
// RmaPeers: a peer's window is reachable only through Backend::get and Backend::put (mpi:
// heap_base of a peer is nullptr), or PLD_COLL_RMA=1 asks for that on shm. The calling rank's own
// copy is always memory; a peer's copy is read with get into scratch (complete on return) and
// written with put (visible to a peer once this rank's next notify has returned — the next credit
// barrier). Reads of many elements go in steps (step_elems) through bounded scratch (stage).
//
// with_peers() makes the choice once per call, never per element, and the schedules are
// templates over the access type, so the direct path compiles to plain loads and copies. Both
// kinds use the same credits and the same ownership of segments and rows, so a member running one
// kind and another member the other kind still agree — except LL (coll/ll.cc), which only runs
// when the domain is direct; every member of a domain gets the same answer from direct_peers
// anyway (one backend, one inherited environment).
#pragma once

#include "backend/backend.h"
#include "coll/domain_state.h"
#include "coll/tuning.h"
#include "core/copy.h"
#include "rank/runtime.h"

#include <pld/kernel.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace pld::detail {

/// Whether the collectives on `d` may run their direct schedules: every member's window is
/// addressable from this process and PLD_COLL_RMA is off.
inline bool direct_peers(const DomainState& d) {
  return coll_state(d).direct;
}

/// Local address of the calling rank's own copy of `w` at `byte_offset` (always addressable).
inline std::byte* own_at(const DomainState& d, const WindowDesc& w, std::uint64_t byte_offset) {
  return d.windows_in[static_cast<std::size_t>(d.rank)] + w.ref.offset + byte_offset;
}

/// Local address of `peer`'s copy of `w` at `byte_offset`, for the direct schedules only; a peer
/// without an address is an internal error (the RMA schedule should have run).
std::byte* window_at(const char* api, const DomainState& d, int peer, const WindowDesc& w, std::uint64_t byte_offset);

/// Scratch for staged reads: slot i holds one step's bytes from the i-th peer read.
struct Stage {
  std::byte* base;
  std::size_t slot_bytes;
  std::byte* slot(int i) const { return base + static_cast<std::size_t>(i) * slot_bytes; }
};
/// Direct reads need no scratch.
struct NoStage {
  std::byte* slot(int) const { return nullptr; }
};

class DirectPeers {
 public:
  DirectPeers(const char* api, const DomainState& d) : api_(api), d_(d) {}
  const DomainState& domain() const { return d_; }
  std::byte* own(const WindowDesc& w, std::uint64_t off) const { return own_at(d_, w, off); }

  /// Elements per step of a schedule that reads `sources` ranks: `direct` (at least 1).
  Index step_elems(Index direct, int /*sources*/, std::size_t /*esz*/) const { return std::max<Index>(1, direct); }
  NoStage stage(std::size_t /*step_bytes*/, int /*slots*/) const { return {}; }

  /// Where bytes [off, off + bytes) of `peer`'s copy of `w` are: in place.
  const std::byte* read(int peer, const WindowDesc& w, std::uint64_t off, std::size_t /*bytes*/,
                        std::byte* /*scratch*/) const {
    return window_at(api_, d_, peer, w, off);
  }
  /// Copies bytes [off, off + bytes) of `peer`'s copy of `w` to local memory `dst`.
  void fetch(int peer, const WindowDesc& w, std::uint64_t off, std::byte* dst, std::size_t bytes) const {
    bulk_copy(dst, window_at(api_, d_, peer, w, off), bytes);
  }
  /// Writes `bytes` from `src` into `peer`'s copy of `w` at `off`.
  void write(int peer, const WindowDesc& w, std::uint64_t off, const std::byte* src, std::size_t bytes,
             std::size_t streaming_from = streaming_bytes(), CopyOrder order = CopyOrder::Forward) const {
    bulk_copy(window_at(api_, d_, peer, w, off), src, bytes, streaming_from, order);
  }
  /// write() of a small block (a step, a count): a plain copy, never streamed.
  void store(int peer, const WindowDesc& w, std::uint64_t off, const std::byte* src, std::size_t bytes) const {
    std::memcpy(window_at(api_, d_, peer, w, off), src, bytes);
  }
  /// Writes the same `bytes` from `src` into every member's copy of `w` at `off`, the calling rank
  /// first, then staggered; the blocks of src are read once for all (bulk_copy_multi).
  void write_all(const WindowDesc& w, std::uint64_t off, const std::byte* src, std::size_t bytes,
                 std::size_t streaming_from, CopyOrder order) const {
    const int n = d_.nranks();
    std::byte* dsts[kMaxRanks];
    for (int k = 0; k < n; ++k) dsts[k] = window_at(api_, d_, (d_.rank + k) % n, w, off);
    bulk_copy_multi(dsts, n, src, bytes, streaming_from, order);
  }
  /// Whether the pushes alternate the order of their copies from call to call (coll/push.h).
  static constexpr bool kOrdered = true;

 private:
  const char* api_;
  const DomainState& d_;
};

class RmaPeers {
 public:
  RmaPeers(const char* /*api*/, const DomainState& d) : d_(d) {}
  const DomainState& domain() const { return d_; }
  std::byte* own(const WindowDesc& w, std::uint64_t off) const { return own_at(d_, w, off); }

  /// Elements per step of a schedule that reads `sources` ranks: what bounded scratch holds.
  Index step_elems(Index /*direct*/, int sources, std::size_t esz) const { return rma_chunk_elems(sources, esz); }
  /// The calling thread's scratch for `slots` reads of `step_bytes` (kept for the thread's life;
  /// each lane runs on its own thread).
  Stage stage(std::size_t step_bytes, int slots) const {
    thread_local std::vector<std::byte> buf;
    const std::size_t bytes = step_bytes * static_cast<std::size_t>(std::max(slots, 0));
    if (buf.size() < bytes) buf.resize(bytes);
    return {buf.data(), step_bytes};
  }

  /// The calling rank's own copy in place; a peer's copy fetched with get into `scratch`.
  const std::byte* read(int peer, const WindowDesc& w, std::uint64_t off, std::size_t bytes, std::byte* scratch) const {
    if (peer == d_.rank) return own(w, off);
    d_.backend->get(scratch, member(peer), w.ref.offset + off, bytes);
    return scratch;
  }
  void fetch(int peer, const WindowDesc& w, std::uint64_t off, std::byte* dst, std::size_t bytes) const {
    if (bytes == 0) return;
    if (peer == d_.rank) return bulk_copy(dst, own(w, off), bytes);
    d_.backend->get(dst, member(peer), w.ref.offset + off, bytes);
  }
  /// A store into the calling rank's own copy (streaming from `streaming_from` bytes), a put into
  /// a peer's; puts ignore `order`.
  void write(int peer, const WindowDesc& w, std::uint64_t off, const std::byte* src, std::size_t bytes,
             std::size_t streaming_from = streaming_bytes(), CopyOrder /*order*/ = CopyOrder::Forward) const {
    if (bytes == 0) return;
    if (peer == d_.rank) return bulk_copy(own(w, off), src, bytes, streaming_from);
    d_.backend->put(member(peer), w.ref.offset + off, src, bytes);
  }
  void store(int peer, const WindowDesc& w, std::uint64_t off, const std::byte* src, std::size_t bytes) const {
    write(peer, w, off, src, bytes);
  }
  void write_all(const WindowDesc& w, std::uint64_t off, const std::byte* src, std::size_t bytes,
                 std::size_t streaming_from, CopyOrder /*order*/) const {
    for (int k = 0; k < d_.nranks(); ++k) write((d_.rank + k) % d_.nranks(), w, off, src, bytes, streaming_from);
  }
  static constexpr bool kOrdered = false;

 private:
  int member(int peer) const { return d_.members[static_cast<std::size_t>(peer)]; }
  const DomainState& d_;
};

/// Calls fn(peers) with the access domain `d` allows: DirectPeers where direct_peers(d), else
/// RmaPeers. `fn` is a generic lambda; each access type gets its own instantiation.
template <class Fn>
decltype(auto) with_peers(const char* api, const DomainState& d, Fn&& fn) {
  if (direct_peers(d)) return fn(DirectPeers(api, d));
  return fn(RmaPeers(api, d));
}

/// srcs[p] = where rank p's copy of `w` at [off, off + bytes) is, for every rank p of the domain:
/// the calling rank's own copy in place, peers read staggered (rank r reads r + 1 first), the
/// i-th through stage.slot(i).
template <class Peers, class StageT>
void read_copies(const Peers& peers, const WindowDesc& w, std::uint64_t off, std::size_t bytes, const StageT& stage,
                 const void** srcs) {
  const DomainState& d = peers.domain();
  const int n = d.nranks(), me = d.rank;
  for (int k = 1; k < n; ++k) {
    const int p = (me + k) % n;
    srcs[p] = peers.read(p, w, off, bytes, stage.slot(k - 1));
  }
  srcs[me] = peers.own(w, off);
}

}  // namespace pld::detail
