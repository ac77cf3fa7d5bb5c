// pld-bench: what runs inside the ranks. One Case per collective knows how to stage its inputs,
// run the collective once (composite path: pld::tensor::*) and check this rank's result. Both
// paths share the Cases:
//
//   composite_kernel   ONE dispatch per row: stage, warm-up, barrier, timed loop (time_loop),
//                      then re-stage, run once, check (nccl-tests' order)
//   stage_kernel /     the builtin path's stage and check steps around host builtin calls, which
//   verify_kernel      the host records itself (runner.cpp); stamp_kernel reads the clock
//   p2p_kernel         latency (notify->wait ping-pong), put and get bandwidth, rank 0 <-> rank 1
//   put_signal_kernel  put_signal against put and put + notify, rank 0 -> rank 1
//   nbi_kernel         put_nbi of 64 chunks + quiet against 64 blocking puts, rank 0 -> rank 1
//
// Kernels are plain function templates of the executable; every argument travels by value.
#pragma once

#include "check.hpp"
#include "options.hpp"
#include "timer.hpp"

#include <pld/pld.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>

namespace pldbench {

/// Everything a kernel needs besides its windows (trivially copyable: travels in the frame).
struct Args {
  Coll coll = Coll::Allreduce;
  pld::DType dtype = pld::DType::FP32;
  pld::ReduceOp redop = pld::ReduceOp::Sum;
  pld::AllreduceMode mode = pld::AllreduceMode::Auto;
  int root = 0;
  int core_num = 1;
  int check = 1;
  bool pin = false;
  int progress = 0;  // 0 none, 1 one updating line (terminal), 2 one line per row
  int index = 0, total = 0;
  std::uint64_t bytes = 0;
  std::int64_t warmup = 0, iters = 0;
  std::int64_t lat_warmup = 0, lat_iters = 0;  // p2p: notify->wait ping-pong (0 = skip)
};

void pin_rank(bool pin, int rank);   // kernels.cpp
void print_progress(const Args& a);  // kernels.cpp

template <class T>
T* local_of(const pld::DistributedTensor<T>& w) {
  auto ctx = pld::get_comm_ctx(w);
  return reinterpret_cast<T*>(ctx.windows_in(pld::rank(ctx)) + w.ref().offset);
}

/// The windows of one row. `data` is the collective's target; `aux` its second operand
/// (allgather local, all_to_all input); counts / recv_counts serve all_to_all_v (and barrier's check).
template <class T>
struct Operands {
  pld::DistributedTensor<T> data, aux;
  pld::DistributedTensor<std::int32_t> counts, recv_counts, sig;
  int me, n;
  Operands(pld::DistributedTensor<T> d, pld::DistributedTensor<T> x, pld::DistributedTensor<std::int32_t> c,
           pld::DistributedTensor<std::int32_t> rc, pld::DistributedTensor<std::int32_t> s)
      : data(d), aux(x), counts(c), recv_counts(rc), sig(s) {
    auto ctx = pld::get_comm_ctx(sig);
    me = pld::rank(ctx);
    n = pld::nranks(ctx);
  }
  pld::Index cols() const { return data.shape()[data.ndim() - 1]; }
};

// ----- one Case per collective ------------------------------------------------------------------

template <class T>
struct AllreduceCase {
  const Operands<T>& o;
  const Args& a;
  Pattern<T> pat{PatternKind::Reduce, a.redop, o.n};
  void stage(bool) { pat.stage(local_of(o.data), o.me, 0, o.data.numel()); }
  void run() { pld::tensor::allreduce(o.data, o.sig, {.op = a.redop, .mode = a.mode, .core_num = a.core_num}); }
  std::int64_t verify() { return count_wrong(local_of(o.data), pat.golden_period(), 0, o.data.numel()); }
};

template <class T>
struct BroadcastCase {
  const Operands<T>& o;
  const Args& a;
  Pattern<T> pat{PatternKind::Copy, pld::ReduceOp::Sum, o.n};
  void stage(bool) { pat.stage(local_of(o.data), o.me, 0, o.data.numel()); }  // non-roots: overwritten
  void run() { pld::tensor::broadcast(o.data, o.sig, {.root = a.root, .core_num = a.core_num}); }
  std::int64_t verify() { return count_wrong(local_of(o.data), input_period(pat, a.root), 0, o.data.numel()); }
};

/// Fills a [P, cols] target with a value no rank sends there, so a block that never lands is caught.
template <class T>
void poison(const pld::DistributedTensor<T>& w) {
  T* p = local_of(w);
  const T bad = from_int<T>(253);  // copy-pattern values are < 251
  for (pld::Index i = 0; i < w.numel(); ++i) p[i] = bad;
}

template <class T>
struct AllgatherCase {
  const Operands<T>& o;
  const Args& a;
  Pattern<T> pat{PatternKind::Copy, pld::ReduceOp::Sum, o.n};
  void stage(bool for_check) {
    pat.stage(local_of(o.aux), o.me, 0, o.cols());
    if (for_check) poison(o.data);
  }
  void run() { pld::tensor::allgather(o.aux, o.data, o.sig, {.core_num = a.core_num}); }
  std::int64_t verify() {
    std::int64_t wrong = 0;
    for (int s = 0; s < o.n; ++s)
      wrong += count_wrong(local_of(o.data) + s * o.cols(), input_period(pat, s), 0, o.cols());
    return wrong;
  }
};

template <class T>
struct ReduceScatterCase {
  const Operands<T>& o;
  const Args& a;
  Pattern<T> pat{PatternKind::Reduce, a.redop, o.n};
  void stage(bool) { pat.stage(local_of(o.data), o.me, 0, o.data.numel()); }
  void run() { pld::tensor::reduce_scatter(o.data, o.sig, {.op = a.redop, .core_num = a.core_num}); }
  std::int64_t verify() {
    const pld::Index first = o.me * o.cols();
    return count_wrong(local_of(o.data) + first, pat.golden_period(), first, o.cols());
  }
};

/// all_to_all and all_to_all_v (one row per peer block, every count full).
template <class T, bool kV>
struct AllToAllCase {
  const Operands<T>& o;
  const Args& a;
  Pattern<T> pat{PatternKind::Copy, pld::ReduceOp::Sum, o.n};
  void stage(bool for_check) {
    pat.stage(local_of(o.aux), o.me, 0, o.aux.numel());  // row d goes to rank d
    if constexpr (kV) {
      std::int32_t* c = local_of(o.counts);
      for (int p = 0; p < o.n; ++p) c[p] = 1;
      if (for_check)
        for (int p = 0; p < o.n; ++p) local_of(o.recv_counts)[p] = -1;
    }
    if (for_check) poison(o.data);
  }
  void run() {
    if constexpr (kV)
      pld::tensor::all_to_all_v(o.aux, o.data, o.sig, o.counts, o.recv_counts);
    else
      pld::tensor::all_to_all(o.aux, o.data, o.sig, {.core_num = a.core_num});
  }
  std::int64_t verify() {
    std::int64_t wrong = 0;
    for (int s = 0; s < o.n; ++s) {  // row s came from rank s's row me
      wrong += count_wrong(local_of(o.data) + s * o.cols(), input_period(pat, s), o.me * o.cols(), o.cols());
      if constexpr (kV) wrong += local_of(o.recv_counts)[s] != 1;
    }
    return wrong;
  }
};

/// The check of a barrier: in round k every rank publishes k, crosses the barrier, and must then
/// see k (or k + 1 from a rank already in the next round) from every peer.
template <class T>
struct BarrierCase {
  const Operands<T>& o;
  const Args& a;
  void stage(bool) { std::atomic_ref<std::int32_t>(local_of(o.counts)[0]).store(0, std::memory_order_relaxed); }
  void run() { pld::tensor::barrier(o.sig); }
  std::int64_t verify() {
    std::int64_t wrong = 0;
    for (std::int32_t k = 1; k <= 8; ++k) {
      std::atomic_ref<std::int32_t>(local_of(o.counts)[0]).store(k, std::memory_order_relaxed);
      run();
      for (int p = 0; p < o.n; ++p) {
        // Through the backend (remote_load), not windows_in(p): under the mpi backend peers'
        // windows are not memory of this process.
        const std::int32_t v = pld::tile::remote_load(o.counts, p, {0}, {1})(0);
        wrong += v != k && v != k + 1;
      }
    }
    run();  // nobody still reads my cell when the next row starts
    return wrong;
  }
};

template <Coll C, class T>
struct CaseOf;
template <class T>
struct CaseOf<Coll::Barrier, T> {
  using type = BarrierCase<T>;
};
template <class T>
struct CaseOf<Coll::Allreduce, T> {
  using type = AllreduceCase<T>;
};
template <class T>
struct CaseOf<Coll::Broadcast, T> {
  using type = BroadcastCase<T>;
};
template <class T>
struct CaseOf<Coll::Allgather, T> {
  using type = AllgatherCase<T>;
};
template <class T>
struct CaseOf<Coll::ReduceScatter, T> {
  using type = ReduceScatterCase<T>;
};
template <class T>
struct CaseOf<Coll::AllToAll, T> {
  using type = AllToAllCase<T, false>;
};
template <class T>
struct CaseOf<Coll::AllToAllV, T> {
  using type = AllToAllCase<T, true>;
};

// ----- kernels ----------------------------------------------------------------------------------

template <Coll C, class T>
void composite_kernel(pld::DistributedTensor<T> data, pld::DistributedTensor<T> aux,
                      pld::DistributedTensor<std::int32_t> counts, pld::DistributedTensor<std::int32_t> recv_counts,
                      pld::DistributedTensor<std::int32_t> sig, pld::Tensor<double> out, Args a) {
  const Operands<T> o(data, aux, counts, recv_counts, sig);
  pin_rank(a.pin, o.me);
  typename CaseOf<C, T>::type c{o, a};
  c.stage(false);
  out.data()[kTime0] = time_loop(sig, a.warmup, a.iters, [&] { c.run(); });
  if (a.check) {
    pld::tensor::barrier(sig);  // every rank is out of the loop before anyone re-stages
    c.stage(true);
    c.run();
    out.data()[kWrong0] = static_cast<double>(c.verify());
  }
  if (o.me == 0) print_progress(a);
}

template <Coll C, class T>
void stage_kernel(pld::DistributedTensor<T> data, pld::DistributedTensor<T> aux,
                  pld::DistributedTensor<std::int32_t> counts, pld::DistributedTensor<std::int32_t> recv_counts,
                  pld::DistributedTensor<std::int32_t> sig, pld::Tensor<double>, Args a) {
  const Operands<T> o(data, aux, counts, recv_counts, sig);
  pin_rank(a.pin, o.me);
  typename CaseOf<C, T>::type c{o, a};
  c.stage(a.check != 0);
}

template <Coll C, class T>
void verify_kernel(pld::DistributedTensor<T> data, pld::DistributedTensor<T> aux,
                   pld::DistributedTensor<std::int32_t> counts, pld::DistributedTensor<std::int32_t> recv_counts,
                   pld::DistributedTensor<std::int32_t> sig, pld::Tensor<double> out, Args a) {
  const Operands<T> o(data, aux, counts, recv_counts, sig);
  typename CaseOf<C, T>::type c{o, a};
  out.data()[kWrong1] = static_cast<double>(c.verify());
  if (o.me == 0) print_progress(a);
}

/// Builtin path without a check: rank 0 reports progress.
void progress_kernel(pld::DistributedTensor<std::int32_t> sig, Args a);  // kernels.cpp

/// Builtin path: a rank's clock, into out[field].
void stamp_kernel(pld::Tensor<double> out, int field);  // kernels.cpp

/// p2p: rank 0 <-> rank 1 (other ranks only join the barriers).
void p2p_kernel(pld::DistributedTensor<std::uint8_t> data, pld::DistributedTensor<std::uint8_t> aux,
                pld::DistributedTensor<std::int32_t> sig, pld::DistributedTensor<std::int32_t> ping,
                pld::Tensor<double> out, Args a);  // kernels.cpp

/// put_signal: put_signal, put, and put + notify loops, rank 0 -> rank 1 (rma_kernels.cpp).
void put_signal_kernel(pld::DistributedTensor<std::uint8_t> data, pld::DistributedTensor<std::uint8_t> aux,
                       pld::DistributedTensor<std::int32_t> sig, pld::DistributedTensor<std::int32_t> ping,
                       pld::Tensor<double> out, Args a);
/// nbi: kNbiChunks put_nbi + quiet, kNbiChunks blocking puts, and those + quiet (rma_kernels.cpp).
void nbi_kernel(pld::DistributedTensor<std::uint8_t> data, pld::DistributedTensor<std::uint8_t> aux,
                pld::DistributedTensor<std::int32_t> sig, pld::DistributedTensor<std::int32_t> ping,
                pld::Tensor<double> out, Args a);

}  // namespace pldbench
