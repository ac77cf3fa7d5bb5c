// broadcast: targets of at most PLD_COLL_LL_MAX bytes take the LL one-hop exchange (coll/ll.cc).
// Larger: barrier (the root's data is staged); every rank copies its 1/P share of the root's
// window into every other non-root rank's window; barrier (the root may reuse its window, and
// every share has landed). Two credits.
//
// RMA form (peers reachable only through Backend::get/put, coll/peer.h): the same shares; a
// non-root rank gets its share from the root straight into its own window and puts it from there
// into every other non-root rank; the root puts its own share. The closing barrier's notifies
// publish the puts.
#include "coll/checks.h"
#include "coll/credit.h"
#include "debug/checks.h"
#include "core/copy.h"
#include "coll/lanes.h"
#include "coll/ll.h"
#include "coll/peer.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <cstring>

namespace pld::detail {

int check_broadcast(const WindowDesc& target, const WindowDesc& signal, int root, int core_num) {
  const char* op = "broadcast";
  const DomainState& d = coll_domain(op, signal, &target);
  check_distinct(op, "target", target, "signal", signal);
  if (root < 0 || root >= d.nranks())
    throw UsageError(fmt::format("broadcast: root {} out of range [0, {}) of comm domain {}; the root is a "
                                 "domain-local rank",
                                 root, d.nranks(), d.label));
  return signal_lane_stride(op, signal, d.nranks(), core_num);
}

void coll_broadcast(const WindowDesc& target, const WindowDesc& signal, int root, int core_num) {
  const char* op = "broadcast";
  const int stride = check_broadcast(target, signal, root, core_num);
  const DomainState& d = *signal.state;
  const Index count = target.shape.numel();
  collective_enter(d, signal, CollKind::Broadcast, count, [&] {
    CollCall call = coll_call(CollKind::Broadcast, target, signal, core_num);
    call.root = root;
    return call;
  });
  if (d.nranks() == 1 || count == 0) return;
  const std::size_t esz = dtype_size(target.dtype);
  if (ll_rows_fit(d, signal, static_cast<std::uint64_t>(count) * esz)) return ll_broadcast(op, d, target, signal, root);
  // Every rank copies its 1/P share of the root's vector into every non-root rank, so all
  // cores copy at once instead of each non-root copying the whole vector alone.
  const bool direct = direct_peers(d);
  fenced_lanes(op, d, signal, stride, core_num, count, [&](Range r) {
    const Range share = split(r.size(), d.nranks(), d.rank);
    const std::uint64_t off = static_cast<std::uint64_t>(r.begin + share.begin) * esz;
    if (!direct) {
      const std::size_t bytes = static_cast<std::size_t>(share.size()) * esz;
      std::byte* mine = own_at(d, target, off);
      if (d.rank != root) peer_fetch(d, root, target, off, mine, bytes);
      for (int k = 1; k < d.nranks(); ++k) {
        const int p = (d.rank + k) % d.nranks();
        if (p != root) peer_write(d, p, target, off, mine, bytes);
      }
      return;
    }
    const std::byte* from = window_at(op, d, root, target, off);
    for (int k = 1; k <= d.nranks(); ++k) {
      const int p = (d.rank + k) % d.nranks();  // staggered, myself last
      if (p != root) bulk_copy(window_at(op, d, p, target, off), from, static_cast<std::size_t>(share.size()) * esz);
    }
  });
}

}  // namespace pld::detail
