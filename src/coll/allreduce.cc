// allreduce, in place on a window, three schedules (docs/01-collectives.md), and for tiny
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
// Each has an RMA form for domains whose peers are reachable only through Backend::get/put
// (coll/peer.h): the same credits, the same segment ownership and the same reduction order, so
// the same bits; peers' data is fetched chunk by chunk (rma_chunk_elems) into bounded scratch.
//
//   Mesh     barrier; per chunk of my range: get the P-1 peer copies, reduce all P in rank order
//            into scratch; barrier; store.
//   TwoShot  barrier; per chunk of my segment: get the P-1 peer copies, reduce into my copy, put
//            the result into every peer's copy; barrier (its notifies publish the puts).
//   Ring     as direct, reading the left neighbour's segment with get (into scratch for the
//            reduce-scatter steps, straight into my copy for the allgather steps).
#include "coll/checks.h"
#include "coll/credit.h"
#include "debug/checks.h"
#include "core/copy.h"
#include "coll/lanes.h"
#include "coll/ll.h"
#include "coll/peer.h"
#include "reduce/reduce.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace pld::detail {

namespace {

struct Job {
  const char* op;
  const DomainState& d;
  const WindowDesc& target;
  const WindowDesc& signal;
  ReduceOp rop;
  std::size_t esz;
  int stride;   // signal column stride per lane
  bool direct;  // direct_peers(d): the direct schedules, else the RMA ones
};

std::vector<std::byte>& scratch(std::size_t bytes) {
  thread_local std::vector<std::byte> buf;
  if (buf.size() < bytes) buf.resize(bytes);
  return buf;
}

void mesh(const Job& j, int lane, Range r) {
  const int n = j.d.nranks();
  CreditBarrier b(j.op, j.d, j.signal, lane * j.stride);
  b.sync();  // every rank's input is staged
  const std::size_t bytes = static_cast<std::size_t>(r.size()) * j.esz;
  std::byte* tmp = scratch(bytes).data();
  std::vector<const void*> srcs(static_cast<std::size_t>(n));
  for (int p = 0; p < n; ++p)
    srcs[static_cast<std::size_t>(p)] = window_at(j.op, j.d, p, j.target, static_cast<std::uint64_t>(r.begin) * j.esz);
  reduce(tmp, srcs.data(), n, static_cast<std::size_t>(r.size()), j.target.dtype, j.rop);
  b.sync();  // every rank has read every copy: now overwrite mine
  std::memcpy(window_at(j.op, j.d, j.d.rank, j.target, static_cast<std::uint64_t>(r.begin) * j.esz), tmp, bytes);
  b.finish();
}

void two_shot(const Job& j, int lane, Range r) {
  const int n = j.d.nranks(), me = j.d.rank;
  CreditBarrier b(j.op, j.d, j.signal, lane * j.stride);
  b.sync();
  const Range seg = split(r.size(), n, me);
  const Index chunk = std::max<Index>(1, static_cast<Index>(coll_tuning().chunk_bytes / j.esz));
  std::vector<std::byte*> copy(static_cast<std::size_t>(n));
  std::vector<const void*> srcs(static_cast<std::size_t>(n));
  for (int p = 0; p < n; ++p) copy[static_cast<std::size_t>(p)] = window_at(j.op, j.d, p, j.target, 0);
  for (Index at = r.begin + seg.begin; at < r.begin + seg.end; at += chunk) {
    const Index len = std::min(chunk, r.begin + seg.end - at);
    const std::size_t off = static_cast<std::size_t>(at) * j.esz, bytes = static_cast<std::size_t>(len) * j.esz;
    for (int p = 0; p < n; ++p) srcs[static_cast<std::size_t>(p)] = copy[static_cast<std::size_t>(p)] + off;
    std::byte* mine = copy[static_cast<std::size_t>(me)] + off;
    reduce(mine, srcs.data(), n, static_cast<std::size_t>(len), j.target.dtype, j.rop);
    for (int k = 1; k < n; ++k) std::memcpy(copy[static_cast<std::size_t>((me + k) % n)] + off, mine, bytes);
  }
  b.sync();  // every segment has landed everywhere
  b.finish();
}

void ring(const Job& j, int lane, Range r) {
  const int n = j.d.nranks(), me = j.d.rank, left = (me + n - 1) % n;
  CreditBarrier b(j.op, j.d, j.signal, lane * j.stride);
  std::byte* mine = window_at(j.op, j.d, me, j.target, 0);
  std::byte* from = window_at(j.op, j.d, left, j.target, 0);
  auto seg = [&](int c) {
    const Range s = split(r.size(), n, ((c % n) + n) % n);
    return Range{r.begin + s.begin, r.begin + s.end};
  };
  for (int s = 0; s < n - 1; ++s) {  // reduce-scatter: my chunk (me - s - 1) += left's
    b.sync();
    const Range c = seg(me - s - 1);
    const std::size_t off = static_cast<std::size_t>(c.begin) * j.esz;
    const void* srcs[2] = {from + off, mine + off};
    reduce(mine + off, srcs, 2, static_cast<std::size_t>(c.size()), j.target.dtype, j.rop);
  }
  for (int s = 0; s < n - 1; ++s) {  // allgather: my chunk (me - s) = left's final chunk
    b.sync();
    const Range c = seg(me - s);
    const std::size_t off = static_cast<std::size_t>(c.begin) * j.esz;
    bulk_copy(mine + off, from + off, static_cast<std::size_t>(c.size()) * j.esz);
  }
  b.sync();  // my right neighbour has finished reading me
  b.finish();
}

void mesh_rma(const Job& j, int lane, Range r) {
  const int n = j.d.nranks(), me = j.d.rank;
  CreditBarrier b(j.op, j.d, j.signal, lane * j.stride);
  b.sync();  // every rank's input is staged
  const std::size_t bytes = static_cast<std::size_t>(r.size()) * j.esz;
  std::byte* tmp = scratch(bytes).data();
  const Index chunk = rma_chunk_elems(n, j.esz);
  const std::size_t chunk_bytes = static_cast<std::size_t>(chunk) * j.esz;
  std::byte* stage = rma_scratch(chunk_bytes * static_cast<std::size_t>(n - 1));
  const void* srcs[kMaxRanks];
  for (Index at = r.begin; at < r.end; at += chunk) {
    const Index len = std::min(chunk, r.end - at);
    const std::uint64_t off = static_cast<std::uint64_t>(at) * j.esz;
    const std::size_t len_bytes = static_cast<std::size_t>(len) * j.esz;
    for (int k = 1; k < n; ++k) {  // staggered: rank r reads r + 1 first
      const int p = (me + k) % n;
      srcs[p] = peer_read(j.d, p, j.target, off, len_bytes, stage + static_cast<std::size_t>(k - 1) * chunk_bytes);
    }
    srcs[me] = own_at(j.d, j.target, off);
    reduce(tmp + static_cast<std::size_t>(at - r.begin) * j.esz, srcs, n, static_cast<std::size_t>(len), j.target.dtype,
           j.rop);
  }
  b.sync();  // every rank has read every copy: now overwrite mine
  std::memcpy(own_at(j.d, j.target, static_cast<std::uint64_t>(r.begin) * j.esz), tmp, bytes);
  b.finish();
}

void two_shot_rma(const Job& j, int lane, Range r) {
  const int n = j.d.nranks(), me = j.d.rank;
  CreditBarrier b(j.op, j.d, j.signal, lane * j.stride);
  b.sync();
  const Range seg = split(r.size(), n, me);
  const Index chunk = rma_chunk_elems(n, j.esz);
  const std::size_t chunk_bytes = static_cast<std::size_t>(chunk) * j.esz;
  std::byte* stage = rma_scratch(chunk_bytes * static_cast<std::size_t>(n - 1));
  const void* srcs[kMaxRanks];
  for (Index at = r.begin + seg.begin; at < r.begin + seg.end; at += chunk) {
    const Index len = std::min(chunk, r.begin + seg.end - at);
    const std::uint64_t off = static_cast<std::uint64_t>(at) * j.esz;
    const std::size_t len_bytes = static_cast<std::size_t>(len) * j.esz;
    for (int k = 1; k < n; ++k) {
      const int p = (me + k) % n;
      srcs[p] = peer_read(j.d, p, j.target, off, len_bytes, stage + static_cast<std::size_t>(k - 1) * chunk_bytes);
    }
    std::byte* mine = own_at(j.d, j.target, off);
    srcs[me] = mine;
    reduce(mine, srcs, n, static_cast<std::size_t>(len), j.target.dtype, j.rop);
    for (int k = 1; k < n; ++k) peer_write(j.d, (me + k) % n, j.target, off, mine, len_bytes);
  }
  b.sync();  // my puts are published (notify releases them); every segment has landed everywhere
  b.finish();
}

void ring_rma(const Job& j, int lane, Range r) {
  const int n = j.d.nranks(), me = j.d.rank, left = (me + n - 1) % n;
  CreditBarrier b(j.op, j.d, j.signal, lane * j.stride);
  std::byte* mine = own_at(j.d, j.target, 0);
  const Index chunk = rma_chunk_elems(2, j.esz);
  std::byte* stage = rma_scratch(static_cast<std::size_t>(chunk) * j.esz);
  auto seg = [&](int c) {
    const Range s = split(r.size(), n, ((c % n) + n) % n);
    return Range{r.begin + s.begin, r.begin + s.end};
  };
  for (int s = 0; s < n - 1; ++s) {  // reduce-scatter: my chunk (me - s - 1) += left's
    b.sync();
    const Range c = seg(me - s - 1);
    for (Index at = c.begin; at < c.end; at += chunk) {
      const Index len = std::min(chunk, c.end - at);
      const std::size_t off = static_cast<std::size_t>(at) * j.esz;
      const void* srcs[2] = {peer_read(j.d, left, j.target, off, static_cast<std::size_t>(len) * j.esz, stage),
                             mine + off};
      reduce(mine + off, srcs, 2, static_cast<std::size_t>(len), j.target.dtype, j.rop);
    }
  }
  for (int s = 0; s < n - 1; ++s) {  // allgather: my chunk (me - s) = left's final chunk
    b.sync();
    const Range c = seg(me - s);
    const std::size_t off = static_cast<std::size_t>(c.begin) * j.esz;
    peer_fetch(j.d, left, j.target, off, mine + off, static_cast<std::size_t>(c.size()) * j.esz);
  }
  b.sync();  // my right neighbour has finished reading me
  b.finish();
}

}  // namespace

AllreduceMode resolve_mode(const AllreduceOptions& o, std::uint64_t bytes) {
  AllreduceMode m = o.mode;
  if (m == AllreduceMode::Auto) m = bytes <= coll_tuning().mesh_max_bytes ? AllreduceMode::Mesh : AllreduceMode::TwoShot;
  if (m == AllreduceMode::Ring && (o.reproducible || coll_tuning().reproducible)) m = AllreduceMode::TwoShot;
  return m;
}

int check_allreduce(const WindowDesc& target, const WindowDesc& signal, const AllreduceOptions& options) {
  const char* op = "allreduce";
  const DomainState& d = coll_domain(op, signal, &target);
  check_reduce_op(op, options.op);
  if (options.mode != AllreduceMode::Auto && options.mode != AllreduceMode::Mesh &&
      options.mode != AllreduceMode::Ring && options.mode != AllreduceMode::TwoShot)
    throw UsageError(fmt::format("allreduce: mode {} must be AllreduceMode::Auto, Mesh, Ring or TwoShot",
                                 static_cast<int>(options.mode)));
  check_distinct(op, "target", target, "signal", signal);
  return signal_lane_stride(op, signal, d.nranks(), options.core_num);
}

void coll_allreduce(const WindowDesc& target, const WindowDesc& signal, const AllreduceOptions& options) {
  const char* op = "allreduce";
  const int stride = check_allreduce(target, signal, options);
  const DomainState& d = *signal.state;
  const Index count = target.shape.numel();
  collective_enter(d, signal, CollKind::Allreduce, count, [&] {
    return coll_call(CollKind::Allreduce, target, signal, options.core_num, options.op, options.mode);
  });
  if (d.nranks() == 1 || count == 0) return;
  const std::size_t esz = dtype_size(target.dtype);
  const std::uint64_t bytes = static_cast<std::uint64_t>(count) * esz;
  if (options.mode == AllreduceMode::Auto && options.core_num == 1 && ll_fits(d, signal, bytes))
    return ll_allreduce(op, d, target, signal, count, options.op);
  const AllreduceMode mode = resolve_mode(options, bytes);
  const Job job{op, d, target, signal, options.op, esz, stride, direct_peers(d)};
  const int lanes = static_cast<int>(std::min<Index>(options.core_num, count));
  run_lanes(lanes, [&](int lane) {
    const Range r = split(count, lanes, lane);
    switch (mode) {
      case AllreduceMode::Mesh: return job.direct ? mesh(job, lane, r) : mesh_rma(job, lane, r);
      case AllreduceMode::Ring: return job.direct ? ring(job, lane, r) : ring_rma(job, lane, r);
      default: return job.direct ? two_shot(job, lane, r) : two_shot_rma(job, lane, r);
    }
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
