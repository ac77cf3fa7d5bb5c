// reduce_scatter on a [P, SIZE] window. Rows of at most PLD_COLL_LL_MAX bytes take the LL one-hop
// exchange (coll/ll.cc); larger ones: barrier; rank r reduces row r of every copy (ranks in
// ascending order) into its own row r — only rank r touches row r, so no second barrier is needed
// before the store; barrier (peers have read my other rows). Two credits.
//
// With RMA peers (coll/peer.h) row `me` of each peer's copy is fetched step by step into bounded
// scratch; the reduction order is the same (ascending rank), so are the bits.
#include "coll/checks.h"
#include "coll/credit.h"
#include "coll/ll.h"
#include "coll/match.h"
#include "coll/native.h"
#include "coll/peer.h"
#include "debug/checks.h"
#include "debug/race.h"
#include "reduce/reduce.h"
#include "trace/trace.h"

#include <algorithm>

namespace pld::detail {

void coll_reduce_scatter(const WindowDesc& target, const WindowDesc& signal, ReduceOp op, int core_num) {
  const char* api = "reduce_scatter";
  const trace::CollSpan span(api, target, -1, static_cast<int>(op));
  const int stride = check_reduce_scatter(target, signal, op, core_num);
  const DomainState& d = *signal.state;
  const Index size = target.shape[1];
  const CallKey key = call_key(CollKind::ReduceScatter, target, core_num, op);
  const RaceCollective race(d);
  coll_enter(d, signal, key);
  if (d.nranks() == 1 || size == 0) return;
  const int n = d.nranks(), me = d.rank;
  const std::size_t esz = dtype_size(target.dtype);
  if (NativeCollectives* native = native_for(d, signal))
    return native_done(native->reduce_scatter(own_at(d, target, 0), static_cast<std::size_t>(size), target.dtype, op,
                                              native_site(api, signal)),
                       api, d);
  if (ll_rows_fit(d, signal, static_cast<std::uint64_t>(size) * esz))
    return ll_rows(api, LLRows::ReduceScatter, d, nullptr, target, signal, op);
  with_peers(api, d, [&](const auto& peers) {
    fenced_lanes(api, d, signal, stride, core_num, size, [&](Range r) {
      // Only rank `me` touches row `me`, so the result can go straight into it.
      const std::uint64_t row = static_cast<std::uint64_t>(me) * static_cast<std::uint64_t>(size) * esz;
      const Index step = peers.step_elems(r.size(), n, esz);
      const auto stage = peers.stage(static_cast<std::size_t>(step) * esz, n - 1);
      const void* srcs[kMaxRanks];
      for (Index at = r.begin; at < r.end; at += step) {
        const Index len = std::min(step, r.end - at);
        const std::uint64_t off = row + static_cast<std::uint64_t>(at) * esz;
        read_copies(peers, target, off, static_cast<std::size_t>(len) * esz, stage, srcs);
        reduce(peers.own(target, off), srcs, n, static_cast<std::size_t>(len), target.dtype, op);
      }
    });
  });
}

}  // namespace pld::detail
