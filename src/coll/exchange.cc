// The data-exchange collectives: allgather, all_to_all, all_to_all_v. Each rank pushes its blocks
// straight into the peers' target windows between two barriers: the first makes sure every
// target is free (no rank still reads the previous call's result), the second that every block
// has landed. Two credits per call. On the direct path a rank's copies into a target run backward
// on every other call (next_order): a call repeated on the same buffers then starts on the lines
// the previous one touched last. allgather and all_to_all rows of at most PLD_COLL_LL_MAX bytes
// (all_to_all_v: blocks of at most that, with their 4-byte count) take the LL one-hop exchange
// instead (coll/ll.cc): no barriers, each rank writes only its own target.
//
// RMA form (peers reachable only through Backend::put, coll/peer.h): the same pushes, each a put
// (a store for the calling rank's own row); the closing barrier's notifies publish them. The
// sources are the caller's local data, so nothing is staged.
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

namespace {

// Pushes of a whole block per peer stream from 1 MiB: each rank's push lands in another rank's
// window and is not read again by the pusher (bench/README.md, finding 5).
constexpr std::size_t kPushStreamingBytes = 1u << 20;

// The order of this call's copies into `target`. Each rank alternates from one push call into
// a target buffer to the next (copy.h, CopyOrder): calls repeated on the same buffers — a loop,
// or a benchmark — then start where the previous call ended, on lines still in the caches. At
// P = 2, an all_to_all of 1 MiB per rank touches 2 MiB per core, the L2's size: forward-only
// repetition misses on almost every line, alternation hits on most (bench/README.md, session 6).
// The push order over peers reverses with it, so it stays staggered.
CopyOrder next_order(const DomainState& d, const WindowDesc& target) {
  if (target.ref.buffer >= d.push_backward.size()) return CopyOrder::Forward;
  std::uint8_t& backward = d.push_backward[target.ref.buffer];
  const CopyOrder order = backward ? CopyOrder::Backward : CopyOrder::Forward;
  backward ^= 1;
  return order;
}

// Bytes of one row of a [P, SIZE] window.
std::size_t row_bytes_of(const WindowDesc& w) { return static_cast<std::size_t>(w.shape[1]) * dtype_size(w.dtype); }

std::string name_of(const WindowDesc& w) { return w.state ? w.state->buffer_name(w.ref.buffer) : std::string("?"); }

void check_same_dtype(const char* op, DType a, DType b) {
  if (a != b)
    throw UsageError(fmt::format("{}: input dtype {} must match target dtype {}", op, dtype_name(a), dtype_name(b)));
}

// Both push collectives: rank `me` sends a SIZE-element row to row `me` of every rank's [P, SIZE]
// target; `row_for(p)` is the local row that goes to rank p. When it is the same row for every
// peer (allgather), one fused copy reads it once for all of them.
enum class Rows { Same, PerPeer };

template <class RowFor>
void push_rows(const char* op, const DomainState& d, const WindowDesc& target, const WindowDesc& signal, int stride,
               int core_num, Rows rows, RowFor&& row_for) {
  const Index size = target.shape[1];
  if (size == 0) return;
  const int n = d.nranks(), me = d.rank;
  const std::size_t esz = dtype_size(target.dtype);
  const bool direct = direct_peers(d);
  const CopyOrder order = direct ? next_order(d, target) : CopyOrder::Forward;
  fenced_lanes(op, d, signal, stride, core_num, size, [&](Range r) {
    const std::uint64_t dst = (static_cast<std::uint64_t>(me) * static_cast<std::uint64_t>(size) +
                               static_cast<std::uint64_t>(r.begin)) * esz;
    const std::size_t from = static_cast<std::size_t>(r.begin) * esz, bytes = static_cast<std::size_t>(r.size()) * esz;
    if (!direct) {
      for (int k = 0; k < n; ++k) {  // staggered, myself first
        const int p = (me + k) % n;
        peer_write(d, p, target, dst, row_for(p) + from, bytes, kPushStreamingBytes);
      }
      return;
    }
    std::byte* dsts[kMaxRanks];
    for (int k = 0; k < n; ++k) dsts[k] = window_at(op, d, (me + k) % n, target, dst);  // staggered, myself first
    if (rows == Rows::Same) return bulk_copy_multi(dsts, n, row_for(me) + from, bytes, kPushStreamingBytes, order);
    for (int i = 0; i < n; ++i) {
      const int k = nth_in_order(i, n, order);
      bulk_copy(dsts[k], row_for((me + k) % n) + from, bytes, kPushStreamingBytes, order);
    }
  });
}

}  // namespace

int check_allgather(const LocalDesc& local, const WindowDesc* local_window, const WindowDesc& target,
                    const WindowDesc& signal, int core_num) {
  const char* op = "allgather";
  const DomainState& d = coll_domain(op, signal, &target);
  check_distinct(op, "target", target, "signal", signal);
  if (local_window) check_distinct(op, "local_data", *local_window, "target", target);
  check_rows(op, "target", target, d.nranks());
  check_same_dtype(op, local.dtype, target.dtype);
  const Index size = target.shape[1];
  const bool shape_ok = (local.shape.size() == 1 && local.shape[0] == size) ||
                        (local.shape.size() == 2 && local.shape[0] == 1 && local.shape[1] == size);
  if (!shape_ok)
    throw UsageError(fmt::format("allgather: local_data has shape {} but target '{}' is {}; local_data must be [1, {}] "
                                 "or [{}]",
                                 local.shape.str(), name_of(target), target.shape.str(), size, size));
  return signal_lane_stride(op, signal, d.nranks(), core_num);
}

void coll_allgather(const LocalDesc& local, const WindowDesc* local_window, const WindowDesc& target,
                    const WindowDesc& signal, int core_num) {
  const char* op = "allgather";
  const int stride = check_allgather(local, local_window, target, signal, core_num);
  const DomainState& d = *signal.state;
  collective_enter(d, signal, CollKind::Allgather, target.shape.numel(),
                   [&] { return coll_call(CollKind::Allgather, target, signal, core_num); });
  if (ll_rows_fit(d, signal, row_bytes_of(target)))
    return ll_rows(op, LLRows::Allgather, d, local.data, target, signal);
  push_rows(op, *signal.state, target, signal, stride, core_num, Rows::Same, [&](int) { return local.data; });
}

int check_all_to_all(const LocalDesc& input, const WindowDesc* input_window, const WindowDesc& target,
                     const WindowDesc& signal, int core_num) {
  const char* op = "all_to_all";
  const DomainState& d = coll_domain(op, signal, &target);
  check_distinct(op, "target", target, "signal", signal);
  if (input_window) check_distinct(op, "input", *input_window, "target", target);
  check_rows(op, "target", target, d.nranks());
  check_same_dtype(op, input.dtype, target.dtype);
  if (!(input.shape == target.shape))
    throw UsageError(fmt::format("all_to_all: input has shape {} but target '{}' is {}; both must be [{}, SIZE]",
                                 input.shape.str(), name_of(target), target.shape.str(), d.nranks()));
  return signal_lane_stride(op, signal, d.nranks(), core_num);
}

void coll_all_to_all(const LocalDesc& input, const WindowDesc* input_window, const WindowDesc& target,
                     const WindowDesc& signal, int core_num) {
  const char* op = "all_to_all";
  const int stride = check_all_to_all(input, input_window, target, signal, core_num);
  const DomainState& d = *signal.state;
  collective_enter(d, signal, CollKind::AllToAll, target.shape.numel(),
                   [&] { return coll_call(CollKind::AllToAll, target, signal, core_num); });
  const std::size_t row_bytes = row_bytes_of(target);
  if (ll_rows_fit(d, signal, row_bytes))
    return ll_rows(op, LLRows::AllToAll, d, input.data, target, signal);
  push_rows(op, *signal.state, target, signal, stride, core_num, Rows::PerPeer,
            [&](int p) { return input.data + static_cast<std::size_t>(p) * row_bytes; });
}

void check_all_to_all_v(const LocalDesc& input, const WindowDesc* input_window, const WindowDesc& target,
                        const WindowDesc& signal, const LocalDesc& send_counts, const WindowDesc& recv_counts) {
  const char* op = "all_to_all_v";
  const DomainState& d = coll_domain(op, signal, &target);
  coll_domain(op, recv_counts, &target, "recv_counts");
  const int n = d.nranks();
  signal_lane_stride(op, signal, n, 1);
  check_distinct(op, "target", target, "signal", signal);
  check_distinct(op, "recv_counts", recv_counts, "target", target);
  check_distinct(op, "recv_counts", recv_counts, "signal", signal);
  if (input_window) check_distinct(op, "input", *input_window, "target", target);
  check_same_dtype(op, input.dtype, target.dtype);
  if (target.shape.size() != 2 || target.shape[0] % n != 0 || target.shape[0] == 0)
    throw UsageError(fmt::format("all_to_all_v: target '{}' has shape {}; it must be [{} * MAX_RECV, SIZE] with "
                                 "MAX_RECV >= 1 ({} ranks must divide target dim 0)",
                                 name_of(target), target.shape.str(), n, n));
  if (!(input.shape == target.shape))
    throw UsageError(fmt::format("all_to_all_v: input has shape {} but target '{}' is {}; both must be [{} * MAX_RECV, "
                                 "SIZE]",
                                 input.shape.str(), name_of(target), target.shape.str(), n));
  const bool counts_ok = send_counts.dtype == DType::INT32 &&
                         ((send_counts.shape.size() == 1 && send_counts.shape[0] == n) ||
                          (send_counts.shape.size() == 2 && send_counts.shape[0] == n && send_counts.shape[1] == 1));
  if (!counts_ok)
    throw UsageError(fmt::format("all_to_all_v: send_counts has shape {}; it must be INT32 [{}] or [{}, 1]",
                                 send_counts.shape.str(), n, n));
  if (!(recv_counts.dtype == DType::INT32 && recv_counts.shape == Dims{n, 1}))
    throw UsageError(fmt::format("all_to_all_v: recv_counts '{}' has shape {}; it must be an INT32 window [{}, 1]",
                                 name_of(recv_counts), recv_counts.shape.str(), n));
}

void coll_all_to_all_v(const LocalDesc& input, const WindowDesc* input_window, const WindowDesc& target,
                       const WindowDesc& signal, const LocalDesc& send_counts, const WindowDesc& recv_counts) {
  const char* op = "all_to_all_v";
  check_all_to_all_v(input, input_window, target, signal, send_counts, recv_counts);
  const DomainState& d = *signal.state;
  collective_enter(d, signal, CollKind::AllToAllV, target.shape.numel(), [&] {
    CollCall call = coll_call(CollKind::AllToAllV, target, signal, 1);
    call.extra = recv_counts.ref.buffer;
    return call;
  });
  const int n = d.nranks(), me = d.rank;
  const Index max_recv = target.shape[0] / n, size = target.shape[1];
  const auto* counts = reinterpret_cast<const std::int32_t*>(send_counts.data);
  for (int p = 0; p < n; ++p)
    if (counts[p] < 0 || counts[p] > max_recv)
      throw UsageError(fmt::format("all_to_all_v: send_counts[{}] = {} is outside [0, MAX_RECV = {}]; a count is the "
                                   "number of rows sent to that rank and must fit its block",
                                   p, counts[p], max_recv));
  const std::size_t esz = dtype_size(target.dtype);
  if (ll_all_to_all_v_fits(d, signal, static_cast<std::uint64_t>(max_recv * size) * esz))
    return ll_all_to_all_v(op, d, input.data, counts, target, recv_counts, signal);
  const std::uint64_t dst = static_cast<std::uint64_t>(me) * static_cast<std::uint64_t>(max_recv * size) * esz;
  if (!direct_peers(d)) {
    fenced_lanes(op, d, signal, 1, 1, 1, [&](Range) {
      // recv_counts[me] and the rows: puts, published by the closing barrier's notifies.
      for (int k = 0; k < n; ++k) {
        const int p = (me + k) % n;
        peer_write(d, p, recv_counts, static_cast<std::uint64_t>(me) * 4,
                   reinterpret_cast<const std::byte*>(&counts[p]), 4);
      }
      for (int k = 0; k < n; ++k) {
        const int p = (me + k) % n;
        const std::size_t src = static_cast<std::size_t>(p) * static_cast<std::size_t>(max_recv * size) * esz;
        peer_write(d, p, target, dst, input.data + src, static_cast<std::size_t>(counts[p] * size) * esz,
                   kPushStreamingBytes);
      }
    });
    return;
  }
  const CopyOrder order = next_order(d, target);
  fenced_lanes(op, d, signal, 1, 1, 1, [&](Range) {
    // recv_counts[me] of every peer: plain stores, published by the closing barrier like the rows.
    for (int k = 0; k < n; ++k) {
      const int p = (me + k) % n;
      std::memcpy(window_at(op, d, p, recv_counts, static_cast<std::uint64_t>(me) * 4), &counts[p], 4);
    }
    for (int i = 0; i < n; ++i) {
      const int p = (me + nth_in_order(i, n, order)) % n;
      const Index rows = counts[p];
      if (rows == 0 || size == 0) continue;
      const std::size_t src = static_cast<std::size_t>(p) * static_cast<std::size_t>(max_recv * size) * esz;
      bulk_copy(window_at(op, d, p, target, dst), input.data + src, static_cast<std::size_t>(rows * size) * esz,
                kPushStreamingBytes, order);
    }
  });
}

}  // namespace pld::detail
