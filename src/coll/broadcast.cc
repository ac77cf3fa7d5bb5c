// broadcast: up to PLD_BROADCAST_PUSH_MAX bytes over all peers, the root pushes to every peer:
// eagerly through every peer's staging ring up to kEagerMaxBytes (and the threshold over P - 1
// peers; coll/eager_broadcast.cc), else straight into the peers' windows between two LL barriers
// (coll/ll.cc). Larger: barrier (the root's data is staged); every rank copies its 1/P
// share of the root's window into every other non-root rank's window and, last, its own; barrier (the root may reuse
// its window, and every share has landed). Two credits. Like the push collectives (coll/push.h),
// a rank's copies run backward on every other call on the same target, so a repeated broadcast
// starts on the lines the previous one left cached.
//
// With RMA peers (coll/peer.h) a non-root rank first gets its share from the root straight into
// its own window and puts it from there; the closing barrier's notifies publish the puts.
#include "coll/checks.h"
#include "coll/credit.h"
#include "coll/eager_broadcast.h"
#include "coll/ll.h"
#include "coll/match.h"
#include "coll/native.h"
#include "coll/peer.h"
#include "coll/push.h"
#include "core/dtype.h"
#include "debug/checks.h"
#include "debug/race.h"
#include "trace/trace.h"

namespace pld::detail {

void coll_broadcast(const WindowDesc& target, const WindowDesc& signal, int root, int core_num) {
  const char* api = "broadcast";
  const trace::CollSpan span(api, target, root);
  const int stride = check_broadcast(target, signal, root, core_num);
  const DomainState& d = *signal.state;
  const Index count = target.shape.numel();
  CallKey key = call_key(CollKind::Broadcast, target, core_num);
  key.root = root;
  const std::size_t esz = elem_bytes(target.dtype);
  const std::size_t bytes = static_cast<std::size_t>(count) * esz;
  // The eager path orders the root's entry before every rank's return, and nothing else.
  const bool eager = eager_broadcast_fits(d, signal, bytes) && !native_for(d, signal);
  const RaceCollective race(d, eager ? root : -1);
  coll_enter(d, signal, key);
  if (d.nranks() == 1 || count == 0) return;
  if (eager) return eager_broadcast(api, d, target, bytes, signal, root);
  if (NativeCollectives* native = native_for(d, signal))
    return native_done(native->broadcast(own_at(d, target, 0), bytes, root, native_site(api, signal)), api, d);
  if (ll_push_broadcast_fits(d, signal, bytes)) return ll_push_broadcast(api, d, target, signal, root);
  // Every rank copies its 1/P share of the root's vector into every non-root rank, so all
  // cores copy at once instead of each non-root copying the whole vector alone.
  const int n = d.nranks();
  // The alternating order pays while a share and its copy stay cached from call to call; from the
  // push collectives' streaming size per block up they leave the cache anyway, and a backward pass
  // in blocks only costs time.
  const std::size_t share_bytes = static_cast<std::size_t>(count) * esz / static_cast<std::size_t>(n);
  with_peers(api, d, [&](const auto& peers) {
    const CopyOrder order = share_bytes < push_streaming_bytes() ? push_order(peers, target) : CopyOrder::Forward;
    fenced_lanes(api, d, signal, stride, core_num, count, [&](Range r) {
      const Range share = split(r.size(), d.nranks(), d.rank);
      const std::uint64_t off = static_cast<std::uint64_t>(r.begin + share.begin) * esz;
      const std::size_t bytes = static_cast<std::size_t>(share.size()) * esz;
      if (bytes == 0) return;
      std::byte* mine = peers.own(target, off);
      // Direct: the root's copy in place. RMA: fetched into my own copy (the root's is mine).
      const std::byte* from = peers.read(root, target, off, bytes, mine);
      // The other non-root ranks, staggered, then myself (direct, non-root); reversed when backward.
      for (int i = 0; i < n; ++i) {
        const int k = 1 + nth_in_order(i, n, order), p = (d.rank + k) % n;
        if (k < n ? p != root : from != mine) peers.write(p, target, off, from, bytes, streaming_bytes(), order);
      }
    });
  });
}

}  // namespace pld::detail
