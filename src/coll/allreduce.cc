// allreduce, in place on a window, three schedules (docs/01-collectives-reference.md), and for tiny
// payloads in Auto mode the one-hop LL path (coll/ll.cc):
//
//   Mesh     barrier; reduce all P copies into scratch; barrier (nobody reads me any more);
//            store. Reads P x n per rank: for small vectors, where the two barriers dominate.
//   TwoShot  barrier; rank r reduces segment r of every copy into its own copy and pushes the
//            result into segment r of every peer's copy; barrier. Reads n and writes n per rank:
//            the memory-traffic floor. Safe in place because only rank r touches segment r.
//   Ring     2(P-1) neighbour steps (reduce-scatter, then allgather), a barrier before each and
//            one after. Combines in ring order.
//
// Each schedule is written once over the peer access (coll/peer.h). With direct peers it reads
// peers' copies in place (TwoShot in steps of twoshot_step_bytes(), so a step's result is still
// cached when it is pushed); with RMA peers it fetches them step by step (rma_chunk_elems) into
// bounded scratch and pushes with put, whose visibility the closing barrier's notifies provide.
// Both use the same credits, the same segment ownership and the same reduction order, so the
// same bits.
#include "coll/checks.h"
#include "coll/credit.h"
#include "coll/lanes.h"
#include "coll/ll.h"
#include "coll/match.h"
#include "coll/native.h"
#include "coll/peer.h"
#include "coll/tuning.h"
#include "debug/checks.h"
#include "debug/race.h"
#include "reduce/reduce.h"
#include "trace/trace.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace pld::detail {

namespace {

struct Job {
  const DomainState& d;
  const WindowDesc& target;
  ReduceOp op;
  std::size_t esz;
};

std::vector<std::byte>& scratch(std::size_t bytes) {
  thread_local std::vector<std::byte> buf;
  if (buf.size() < bytes) buf.resize(bytes);
  return buf;
}

template <class Peers>
void mesh(const Job& j, const Peers& peers, CreditBarrier& b, Range r) {
  const int n = j.d.nranks();
  b.sync();  // every rank's input is staged
  std::byte* tmp = scratch(static_cast<std::size_t>(r.size()) * j.esz).data();
  const Index step = peers.step_elems(r.size(), n, j.esz);
  const auto stage = peers.stage(static_cast<std::size_t>(step) * j.esz, n - 1);
  const void* srcs[kMaxRanks];
  for (Index at = r.begin; at < r.end; at += step) {
    const Index len = std::min(step, r.end - at);
    read_copies(peers, j.target, static_cast<std::uint64_t>(at) * j.esz, static_cast<std::size_t>(len) * j.esz, stage,
                srcs);
    reduce(tmp + static_cast<std::size_t>(at - r.begin) * j.esz, srcs, n, static_cast<std::size_t>(len), j.target.dtype,
           j.op);
  }
  b.sync();  // every rank has read every copy: now overwrite mine
  std::memcpy(peers.own(j.target, static_cast<std::uint64_t>(r.begin) * j.esz), tmp,
              static_cast<std::size_t>(r.size()) * j.esz);
}

template <class Peers>
void two_shot(const Job& j, const Peers& peers, CreditBarrier& b, Range r) {
  const int n = j.d.nranks(), me = j.d.rank;
  b.sync();
  const Range seg = split(r.size(), n, me);
  const Index step = peers.step_elems(static_cast<Index>(twoshot_step_bytes() / j.esz), n, j.esz);
  const auto stage = peers.stage(static_cast<std::size_t>(step) * j.esz, n - 1);
  const void* srcs[kMaxRanks];
  for (Index at = r.begin + seg.begin; at < r.begin + seg.end; at += step) {
    const Index len = std::min(step, r.begin + seg.end - at);
    const std::uint64_t off = static_cast<std::uint64_t>(at) * j.esz;
    const std::size_t bytes = static_cast<std::size_t>(len) * j.esz;
    read_copies(peers, j.target, off, bytes, stage, srcs);
    std::byte* mine = peers.own(j.target, off);
    reduce(mine, srcs, n, static_cast<std::size_t>(len), j.target.dtype, j.op);
    for (int k = 1; k < n; ++k) peers.store((me + k) % n, j.target, off, mine, bytes);
  }
  b.sync();  // every segment has landed everywhere (the notifies publish RMA puts)
}

template <class Peers>
void ring(const Job& j, const Peers& peers, CreditBarrier& b, Range r) {
  const int n = j.d.nranks(), me = j.d.rank, left = (me + n - 1) % n;
  std::byte* mine = peers.own(j.target, 0);
  const Index step = peers.step_elems(r.size(), 2, j.esz);
  const auto stage = peers.stage(static_cast<std::size_t>(step) * j.esz, 1);
  auto seg = [&](int c) {
    const Range s = split(r.size(), n, ((c % n) + n) % n);
    return Range{r.begin + s.begin, r.begin + s.end};
  };
  for (int s = 0; s < n - 1; ++s) {  // reduce-scatter: my chunk (me - s - 1) += left's
    b.sync();
    const Range c = seg(me - s - 1);
    for (Index at = c.begin; at < c.end; at += step) {
      const Index len = std::min(step, c.end - at);
      const std::size_t off = static_cast<std::size_t>(at) * j.esz;
      const void* srcs[2] = {peers.read(left, j.target, off, static_cast<std::size_t>(len) * j.esz, stage.slot(0)),
                             mine + off};
      reduce(mine + off, srcs, 2, static_cast<std::size_t>(len), j.target.dtype, j.op);
    }
  }
  for (int s = 0; s < n - 1; ++s) {  // allgather: my chunk (me - s) = left's final chunk
    b.sync();
    const Range c = seg(me - s);
    const std::size_t off = static_cast<std::size_t>(c.begin) * j.esz;
    peers.fetch(left, j.target, off, mine + off, static_cast<std::size_t>(c.size()) * j.esz);
  }
  b.sync();  // my right neighbour has finished reading me
}

AllreduceMode resolve_mode(const AllreduceOptions& o, std::uint64_t bytes) {
  AllreduceMode m = o.mode;
  if (m == AllreduceMode::Auto)
    m = bytes <= coll_tuning().mesh_max_bytes ? AllreduceMode::Mesh : AllreduceMode::TwoShot;
  if (m == AllreduceMode::Ring && (o.reproducible || coll_tuning().reproducible)) m = AllreduceMode::TwoShot;
  return m;
}

}  // namespace

void coll_allreduce(const WindowDesc& target, const WindowDesc& signal, const AllreduceOptions& options) {
  const char* api = "allreduce";
  const trace::CollSpan span(api, target, -1, static_cast<int>(options.op));
  const int stride = check_allreduce(target, signal, options);
  const DomainState& d = *signal.state;
  const Index count = target.shape.numel();
  const CallKey key = call_key(CollKind::Allreduce, target, options.core_num, options.op, options.mode);
  const RaceCollective race(d);
  coll_enter(d, signal, key);
  if (d.nranks() == 1 || count == 0) return;
  if (NativeCollectives* native = native_for(d, signal))
    return native_done(native->allreduce(own_at(d, target, 0), static_cast<std::size_t>(count), target.dtype,
                                         options.op, native_site(api, signal)),
                       api, d);
  const std::size_t esz = dtype_size(target.dtype);
  const std::uint64_t bytes = static_cast<std::uint64_t>(count) * esz;
  if (options.mode == AllreduceMode::Auto && options.core_num == 1 && ll_fits(d, signal, bytes))
    return ll_allreduce(api, d, target, signal, count, options.op);
  const AllreduceMode mode = resolve_mode(options, bytes);
  const Job job{d, target, options.op, esz};
  const int lanes = static_cast<int>(std::min<Index>(options.core_num, count));
  with_peers(api, d, [&](const auto& peers) {
    run_lanes(lanes, [&](int lane) {
      const Range r = split(count, lanes, lane);
      CreditBarrier b(api, d, signal, lane * stride, lanes);
      switch (mode) {
        case AllreduceMode::Mesh: mesh(job, peers, b, r); break;
        case AllreduceMode::Ring: ring(job, peers, b, r); break;
        default: two_shot(job, peers, b, r); break;
      }
      b.finish();
    });
  });
}

}  // namespace pld::detail

namespace pld {

const char* to_string(AllreduceMode mode) {
  switch (mode) {
    case AllreduceMode::Auto: return "Auto";
    case AllreduceMode::Mesh: return "Mesh";
    case AllreduceMode::Ring: return "Ring";
    case AllreduceMode::TwoShot: return "TwoShot";
  }
  return "?";
}

}  // namespace pld
