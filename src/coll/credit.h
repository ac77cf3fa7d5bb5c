// The self-clearing credit barrier every collective is built from (the model's protocol, PyPTO
// reference §1.12), plus the shared checks of collective operands.
//
// Cell [s, c] of rank r's signal counts credits from rank s on column c (one writer per cell).
// Barrier g of a call: +1 on cell [me, c] of every peer, then wait until every own cell [s, c]
// (s != me) is >= g. After the call's last barrier, finish() adds -g to every own cell [s, c]:
// each cell then got exactly g increments from its writer and one -g from its reader, so it is
// zero again after every rank finished — adds commute, so a fast rank's next-call +1 may land
// first, which the >= comparison tolerates. Never Set, never Eq.
#pragma once

#include "coll/lanes.h"
#include "rank/runtime.h"

#include <pld/collectives.hpp>
#include <pld/kernel.hpp>

#include <algorithm>
#include <cstdint>
#include <string>

namespace pld::detail {

/// The domain of a collective's operands, after checking they are bound and share it.
const DomainState& coll_domain(const char* op, const WindowDesc& signal, const WindowDesc* target,
                               const char* signal_name = "signal");

/// Checks signal dtype and shape for `core_num` lanes and returns the column stride per lane:
/// [P] (core_num 1), or [>= P, k] with k >= core_num (lane b uses column b * (k / core_num)).
int signal_lane_stride(const char* op, const WindowDesc& signal, int nranks, int core_num);

/// Throws unless op is Sum, Max, Min or Prod.
void check_reduce_op(const char* op, ReduceOp rop);

/// Throws unless the two window operands are different buffers.
void check_distinct(const char* op, const char* a_name, const WindowDesc& a, const char* b_name, const WindowDesc& b);

/// Throws unless `w` is [nranks, SIZE].
void check_rows(const char* op, const char* what, const WindowDesc& w, int nranks);

/// Throws unless 1 <= core_num <= kMaxCoreNum.
void check_core_num(const char* op, int core_num);

class CreditBarrier {
 public:
  CreditBarrier(const char* op, const DomainState& domain, const WindowDesc& signal, int column);
  /// One barrier: announce arrival to every peer, wait for every peer's arrival.
  void sync();
  /// The epilogue: give back the credits of this call (after the last sync()).
  void finish();

 private:
  std::uint64_t cell(int source) const {
    return base_ + (static_cast<std::uint64_t>(source) * cols_ + static_cast<std::uint64_t>(column_)) * 4;
  }
  const char* op_;
  const DomainState& d_;
  const WindowDesc& signal_;
  std::uint64_t base_;
  std::uint64_t cols_;
  int column_;
  int me_, n_;
  int g_ = 0;
};

/// The shape of every two-credit collective: `count` elements split over min(core_num, count)
/// lanes; each lane runs barrier, body(range), barrier, epilogue on its own signal column.
template <class Body>
void fenced_lanes(const char* op, const DomainState& d, const WindowDesc& signal, int stride, int core_num,
                  Index count, Body&& body) {
  const int lanes = static_cast<int>(std::min<Index>(core_num, count));
  run_lanes(lanes, [&](int lane) {
    CreditBarrier b(op, d, signal, lane * stride);
    b.sync();  // every rank has entered: inputs are staged, targets are free
    body(split(count, lanes, lane));
    b.sync();  // every rank is done with every peer's window
    b.finish();
  });
}

/// Local address of `peer`'s copy of a window operand at `byte_offset`, for the direct schedules
/// only: they run when direct_peers(d) (coll/peer.h) holds, i.e. every member's window is
/// load/store addressable here (shm). Where peers are reachable only through Backend::put/get
/// (mpi, or PLD_COLL_RMA=1), the collectives run their RMA schedules, which use coll/peer.h
/// instead; window_at on a peer without an address is an internal error.
std::byte* window_at(const char* op, const DomainState& d, int peer, const WindowDesc& w, std::uint64_t byte_offset);

/// Allreduce schedule thresholds and switches (read once per process from the settings).
struct CollTuning {
  std::uint64_t mesh_max_bytes;
  bool reproducible;
  std::size_t chunk_bytes;
};
const CollTuning& coll_tuning();

}  // namespace pld::detail
