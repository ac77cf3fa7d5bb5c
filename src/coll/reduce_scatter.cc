// reduce_scatter on a [P, SIZE] window. Rows of at most PLD_COLL_LL_MAX bytes take the LL one-hop
// exchange (coll/ll.cc); larger ones: barrier; rank r reduces row r of every copy (ranks in
// ascending order) into its own row r — only rank r touches row r, so no second barrier is needed
// before the store; barrier (peers have read my other rows). Two credits.
//
// RMA form (coll/peer.h): the same, with row `me` of each peer's copy fetched by Backend::get,
// chunk by chunk, into bounded scratch; the reduction order is the same (ascending rank).
#include "coll/checks.h"
#include "coll/credit.h"
#include "debug/checks.h"
#include "coll/lanes.h"
#include "coll/ll.h"
#include "coll/peer.h"
#include "reduce/reduce.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace pld::detail {

void check_rows(const char* op, const char* what, const WindowDesc& w, int nranks) {
  if (w.shape.size() != 2 || w.shape[0] != nranks)
    throw UsageError(fmt::format("{}: {} '{}' has shape {} but must be [{}, SIZE] (one row per rank of comm domain {})",
                                 op, what, w.state ? w.state->buffer_name(w.ref.buffer) : std::string("?"),
                                 w.shape.str(), nranks, w.state ? w.state->label : std::string("?")));
}

namespace {

// Row `me` of every copy, `count` elements from byte `off`, reduced into my own row in rank order.
void reduce_row_rma(const DomainState& d, const WindowDesc& target, ReduceOp rop, std::uint64_t off, Index count) {
  const int n = d.nranks(), me = d.rank;
  const std::size_t esz = dtype_size(target.dtype);
  const Index chunk = rma_chunk_elems(n, esz);
  const std::size_t chunk_bytes = static_cast<std::size_t>(chunk) * esz;
  std::byte* stage = rma_scratch(chunk_bytes * static_cast<std::size_t>(n - 1));
  const void* srcs[kMaxRanks];
  for (Index at = 0; at < count; at += chunk) {
    const Index len = std::min(chunk, count - at);
    const std::uint64_t o = off + static_cast<std::uint64_t>(at) * esz;
    for (int k = 1; k < n; ++k) {
      const int p = (me + k) % n;
      srcs[p] = peer_read(d, p, target, o, static_cast<std::size_t>(len) * esz,
                          stage + static_cast<std::size_t>(k - 1) * chunk_bytes);
    }
    std::byte* mine = own_at(d, target, o);
    srcs[me] = mine;
    reduce(mine, srcs, n, static_cast<std::size_t>(len), target.dtype, rop);
  }
}

}  // namespace

int check_reduce_scatter(const WindowDesc& target, const WindowDesc& signal, ReduceOp rop, int core_num) {
  const char* op = "reduce_scatter";
  const DomainState& d = coll_domain(op, signal, &target);
  check_reduce_op(op, rop);
  check_distinct(op, "target", target, "signal", signal);
  check_rows(op, "target", target, d.nranks());
  return signal_lane_stride(op, signal, d.nranks(), core_num);
}

void coll_reduce_scatter(const WindowDesc& target, const WindowDesc& signal, ReduceOp rop, int core_num) {
  const char* op = "reduce_scatter";
  const int stride = check_reduce_scatter(target, signal, rop, core_num);
  const DomainState& d = *signal.state;
  const Index size = target.shape[1];
  collective_enter(d, signal, CollKind::ReduceScatter, target.shape.numel(),
                   [&] { return coll_call(CollKind::ReduceScatter, target, signal, core_num, rop); });
  if (d.nranks() == 1 || size == 0) return;
  const int n = d.nranks(), me = d.rank;
  const std::size_t esz = dtype_size(target.dtype);
  if (ll_rows_fit(d, signal, static_cast<std::uint64_t>(size) * esz))
    return ll_rows(op, LLRows::ReduceScatter, d, nullptr, target, signal, rop);
  const bool direct = direct_peers(d);
  fenced_lanes(op, d, signal, stride, core_num, size, [&](Range r) {
    // Only rank `me` touches row `me`, so the result can go straight into it.
    const std::uint64_t off = (static_cast<std::uint64_t>(me) * static_cast<std::uint64_t>(size) +
                               static_cast<std::uint64_t>(r.begin)) * esz;
    if (!direct) return reduce_row_rma(d, target, rop, off, r.size());
    std::vector<const void*> srcs(static_cast<std::size_t>(n));
    for (int p = 0; p < n; ++p) srcs[static_cast<std::size_t>(p)] = window_at(op, d, p, target, off);
    reduce(window_at(op, d, me, target, off), srcs.data(), n, static_cast<std::size_t>(r.size()), target.dtype, rop);
  });
}

}  // namespace pld::detail
