// The self-clearing credit barrier every collective is built from (the model's protocol, PyPTO
// reference §1.12), and fenced_lanes: the shape of every collective that runs its body between two
// credit barriers.
//
// Cell [s, c] of rank r's signal counts credits from rank s on column c (one writer per cell).
// Barrier g of a call: +1 on cell [me, c] of every peer, then wait until every own cell [s, c]
// (s != me) is >= g. After the call's last barrier, finish() adds -g to every own cell [s, c]:
// each cell then got exactly g increments from its writer and one -g from its reader, so it is
// zero again after every rank finished — adds commute, so a fast rank's next-call +1 may land
// first, which the >= comparison tolerates. Never Set, never Eq.
//
// A call's only lane on a domain with a staging channel (the LL barrier's condition) runs its
// first barrier as the LL barrier instead: its flags carry the call's signature, so ranks in
// different calls fail the match check there, before any data moves, without a call record. The
// credit cells then count the later barriers only.
#pragma once

#include "coll/lanes.h"
#include "rank/runtime.h"

#include <pld/kernel.hpp>

#include <algorithm>
#include <cstdint>

namespace pld::detail {

class CreditBarrier {
 public:
  /// `lanes`: how many lanes of the call run a barrier each (one: the first may run on LL flags).
  CreditBarrier(const char* api, const DomainState& domain, const WindowDesc& signal, int column, int lanes);
  /// One barrier: announce arrival to every peer, wait for every peer's arrival.
  void sync();
  /// The epilogue: give back the credits of this call (after the last sync()).
  void finish();

 private:
  std::uint64_t cell(int source) const {
    return base_ + (static_cast<std::uint64_t>(source) * cols_ + static_cast<std::uint64_t>(column_)) * 4;
  }
  const char* api_;
  const DomainState& d_;
  const WindowDesc& signal_;
  std::uint64_t base_;
  std::uint64_t cols_;
  int column_;
  int me_, n_;
  bool flags_first_;  // the first sync() is the LL barrier
  int syncs_ = 0;
  int g_ = 0;  // credits of this call so far
};

/// The shape of every two-credit collective: `count` elements split over min(core_num, count)
/// lanes; each lane runs barrier, body(range), barrier, epilogue on its own signal column.
template <class Body>
void fenced_lanes(const char* api, const DomainState& d, const WindowDesc& signal, int stride, int core_num,
                  Index count, Body&& body) {
  const int lanes = static_cast<int>(std::min<Index>(core_num, count));
  run_lanes(lanes, [&](int lane) {
    CreditBarrier b(api, d, signal, lane * stride, lanes);
    b.sync();  // every rank has entered: inputs are staged, targets are free
    body(split(count, lanes, lane));
    b.sync();  // every rank is done with every peer's window
    b.finish();
  });
}

}  // namespace pld::detail
