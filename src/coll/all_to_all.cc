// all_to_all and all_to_all_v: rank r's block p lands in block r of rank p's target. Messages of
// at most PLD_COLL_LL_MAX bytes take the LL one-hop exchange (coll/ll.cc: no barriers, each rank
// writes only its own target; all_to_all_v's message carries its 4-byte row count); larger ones
// are pushed between two barriers (coll/push.h). all_to_all_v first stores its count for rank p
// into recv_counts[me] of rank p; the closing barrier publishes counts and rows together.
#include "coll/checks.h"
#include "coll/ll.h"
#include "coll/match.h"
#include "coll/native.h"
#include "coll/peer.h"
#include "coll/push.h"
#include "debug/checks.h"
#include "debug/race.h"
#include "trace/trace.h"

namespace pld::detail {

void coll_all_to_all(const LocalDesc& input, const WindowDesc* input_window, const WindowDesc& target,
                     const WindowDesc& signal, int core_num) {
  const char* api = "all_to_all";
  const trace::CollSpan span(api, target);
  const int stride = check_all_to_all(input, input_window, target, signal, core_num);
  const DomainState& d = *signal.state;
  const CallKey key = call_key(CollKind::AllToAll, target, core_num);
  const RaceCollective race(d);
  coll_enter(d, signal, key);
  const std::size_t row_bytes = static_cast<std::size_t>(target.shape[1]) * dtype_size(target.dtype);
  if (NativeCollectives* native = native_for(d, signal))
    return native_done(native->all_to_all(input.data, own_at(d, target, 0), row_bytes, native_site(api, signal)), api,
                       d);
  if (ll_rows_fit(d, signal, row_bytes)) return ll_rows(api, LLRows::AllToAll, d, input.data, target, signal);
  push_rows(api, d, target, signal, stride, core_num, Rows::PerPeer,
            [&](int p) { return input.data + static_cast<std::size_t>(p) * row_bytes; });
}

void coll_all_to_all_v(const LocalDesc& input, const WindowDesc* input_window, const WindowDesc& target,
                       const WindowDesc& signal, const LocalDesc& send_counts, const WindowDesc& recv_counts) {
  const char* api = "all_to_all_v";
  const trace::CollSpan span(api, target);
  check_all_to_all_v(input, input_window, target, signal, send_counts, recv_counts);
  const DomainState& d = *signal.state;
  CallKey key = call_key(CollKind::AllToAllV, target, 1);
  key.extra = recv_counts.ref.buffer;
  const RaceCollective race(d);
  coll_enter(d, signal, key);
  const int n = d.nranks(), me = d.rank;
  const Index max_recv = target.shape[0] / n, size = target.shape[1];
  const auto* counts = reinterpret_cast<const std::int32_t*>(send_counts.data);
  check_send_counts(counts, n, max_recv);
  const std::size_t esz = dtype_size(target.dtype);
  const std::size_t block_bytes = static_cast<std::size_t>(max_recv * size) * esz;
  if (NativeCollectives* native = native_for(d, signal))
    return native_done(
        native->all_to_all_v(input.data, own_at(d, target, 0), static_cast<std::size_t>(max_recv),
                             static_cast<std::size_t>(size) * esz, counts,
                             reinterpret_cast<std::int32_t*>(own_at(d, recv_counts, 0)), native_site(api, signal)),
        api, d);
  if (ll_all_to_all_v_fits(d, signal, block_bytes))
    return ll_all_to_all_v(api, d, input.data, counts, target, recv_counts, signal);
  const std::uint64_t dst = static_cast<std::uint64_t>(me) * block_bytes;
  with_peers(api, d, [&](const auto& peers) {
    const CopyOrder order = push_order(peers, target);
    fenced_lanes(api, d, signal, 1, 1, 1, [&](Range) {
      for (int k = 0; k < n; ++k) {  // recv_counts[me] of every rank, staggered, myself first
        const int p = (me + k) % n;
        peers.store(p, recv_counts, static_cast<std::uint64_t>(me) * 4, reinterpret_cast<const std::byte*>(&counts[p]),
                    4);
      }
      for (int i = 0; i < n; ++i) {
        const int p = (me + nth_in_order(i, n, order)) % n;
        peers.write(p, target, dst, input.data + static_cast<std::size_t>(p) * block_bytes,
                    static_cast<std::size_t>(counts[p] * size) * esz, push_block_streaming_bytes(n), order);
      }
    });
  });
}

}  // namespace pld::detail
