// The push shape of the data-exchange collectives (allgather, all_to_all, all_to_all_v): each rank
// pushes its blocks straight into the peers' target windows between two credit barriers
// (fenced_lanes): the first makes sure every target is free (no rank still reads the previous
// call's result), the second that every block has landed and, with RMA peers, publishes the puts.
//
// With direct peers a rank's copies into a target run backward on every other call (next_order):
// calls repeated on the same buffers — a loop, or a benchmark — then start where the previous call
// ended, on lines still in the caches. At P = 2, an all_to_all of 1 MiB per rank touches 2 MiB per
// core, the L2's size: forward-only repetition misses on almost every line, alternation hits on
// most (bench/README.md). The push order over peers reverses with it, so it stays
// staggered. Puts and streamed copies (blocks of push_block_streaming_bytes() and more) always run
// forward.
#pragma once

#include "coll/credit.h"
#include "coll/peer.h"
#include "coll/tuning.h"

#include <algorithm>
#include <cstdint>

namespace pld::detail {

/// The order of this call's copies into `target`; flips with every call on the same target.
CopyOrder next_order(const DomainState& d, const WindowDesc& target);

/// The order of a push with `peers`: next_order() for direct peers, Forward for puts.
template <class Peers>
CopyOrder push_order(const Peers& peers, const WindowDesc& target) {
  if constexpr (Peers::kOrdered) return next_order(peers.domain(), target);
  return CopyOrder::Forward;
}

/// Size from which a push's block per peer streams in a domain of `nranks`: PLD_PUSH_STREAMING_BYTES
/// is the block size at P = 2, where a rank's call reads 2 blocks and writes 2; at P ranks it reads
/// P and writes P, so its working set outgrows the same cache at a block 2 / P times as large.
inline std::size_t push_block_streaming_bytes(int nranks) {
  return push_streaming_bytes() * 2 / static_cast<std::size_t>(std::max(2, nranks));
}

/// Both row collectives: rank `me` sends a SIZE-element row to row `me` of every rank's
/// [P, SIZE] target; `row_for(p)` is the local row that goes to rank p. When it is the same row
/// for every peer (Rows::Same, allgather), one fused copy reads it once for all of them.
enum class Rows { Same, PerPeer };

template <class RowFor>
void push_rows(const char* api, const DomainState& d, const WindowDesc& target, const WindowDesc& signal, int stride,
               int core_num, Rows rows, RowFor&& row_for) {
  const Index size = target.shape[1];
  if (size == 0) return;
  const int n = d.nranks(), me = d.rank;
  const std::size_t esz = dtype_size(target.dtype);
  const std::size_t streaming_from = push_block_streaming_bytes(n);
  with_peers(api, d, [&](const auto& peers) {
    const CopyOrder order = push_order(peers, target);
    fenced_lanes(api, d, signal, stride, core_num, size, [&](Range r) {
      const std::uint64_t dst =
          (static_cast<std::uint64_t>(me) * static_cast<std::uint64_t>(size) + static_cast<std::uint64_t>(r.begin)) *
          esz;
      const std::size_t from = static_cast<std::size_t>(r.begin) * esz;
      const std::size_t bytes = static_cast<std::size_t>(r.size()) * esz;
      if (rows == Rows::Same) return peers.write_all(target, dst, row_for(me) + from, bytes, streaming_from, order);
      for (int i = 0; i < n; ++i) {  // staggered, myself first (last when backward)
        const int p = (me + nth_in_order(i, n, order)) % n;
        peers.write(p, target, dst, row_for(p) + from, bytes, streaming_from, order);
      }
    });
  });
}

}  // namespace pld::detail
