// broadcast: barrier (the root's data is staged); every other rank copies the root's window into
// its own; barrier (the root may reuse its window). Two credits.
#include "coll/checks.h"
#include "coll/credit.h"
#include "core/copy.h"
#include "coll/lanes.h"

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
  if (d.nranks() == 1 || count == 0) return;
  const std::size_t esz = dtype_size(target.dtype);
  fenced_lanes(op, d, signal, stride, core_num, count, [&](Range r) {
    if (d.rank == root) return;
    const std::uint64_t off = static_cast<std::uint64_t>(r.begin) * esz;
    bulk_copy(window_at(op, d, d.rank, target, off), window_at(op, d, root, target, off),
                static_cast<std::size_t>(r.size()) * esz);
  });
}

}  // namespace pld::detail
