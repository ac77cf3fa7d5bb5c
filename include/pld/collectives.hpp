// pld — collectives composed of pld's own primitives (notify / wait and window access), for every
// element type. Two ways to call them, with the same arguments and the same options:
//
//   * in a kernel (the composite path), with an explicit signal window:
//       pld::tensor::allreduce(target, signal, {.op = pld::ReduceOp::Max});
//       pld::tensor::broadcast(target, signal, {.root = 1});
//   * from the orchestrator (the host builtin path), which records one builtin dispatch per member
//     of the target's comm domain (host.hpp); the signal may be omitted there:
//       h.reduce_scatter(target, {.op = pld::ReduceOp::Max, .core_num = 2});
//
// One call shape: every collective takes its operands, then its signal, then one options struct
// of its own (AllreduceOptions, BroadcastOptions, ...), written with designated initializers and
// defaulted to `{}`. The structs are per collective rather than one shared struct so that a field
// that does not apply (a root given to allreduce, a mode given to broadcast) does not compile
// instead of failing at run time; the fields they share have the same names and meanings.
//
// Signals are self-clearing (the model's credit barrier): every call leaves its signal cells as it
// found them, so one signal window serves any number of back-to-back calls and loops. A signal is
// INT32 `[nranks]` or `[nranks, k]` with k >= core_num; lane b of a call uses column b * (k / core_num)
// (give `[nranks, 16 * core_num]` to put every cell on its own cache line). Cell [s, b] on rank r
// counts credits from rank s, so one writer per cell. Never write a collective's signal cells
// yourself, and use one signal per set of concurrently running collectives.
//
// Results are bit-identical on every rank. Reductions combine ranks in ascending domain-rank order
// (Mesh, TwoShot, reduce_scatter); Ring combines in ring order and rounds fp16/bf16 at every hop.
// fp16/bf16 accumulate in fp32 and round once per element (Mesh, TwoShot, reduce_scatter).
//
// Errors: every collective throws pld::UsageError (carried to the host with the rank number when
// raised in a rank) naming the collective, the operand and the fix for a wrong dtype or shape, a
// signal too small for core_num, a root out of range, operands of different comm domains or
// operands that must be different buffers but are the same; and fails with the wait report of
// every rank when a peer never arrives (a rank that does not call the collective).
#pragma once

#include <pld/detail/collectives.hpp>
#include <pld/export.hpp>
#include <pld/kernel.hpp>
#include <pld/tensor.hpp>
#include <pld/types.hpp>
#include <pld/window.hpp>

#include <cstdint>

namespace pld {

/// Schedule of an allreduce.
enum class AllreduceMode : int {
  Auto = 0,     ///< LL one-hop up to PLD_ALLREDUCE_LL_MAX (64) bytes with core_num 1, else Mesh up
                ///< to PLD_ALLREDUCE_MESH_MAX bytes (default 0), else TwoShot
  Mesh = 1,     ///< one-shot: every rank reads every peer and reduces the whole vector
  Ring = 2,     ///< 2(P-1) neighbour steps: reduce-scatter then allgather around the ring
  TwoShot = 3,  ///< each rank reduces its 1/P segment from every peer and pushes it to every peer
};

/// "Auto", "Mesh", "Ring", "TwoShot".
PLD_API const char* to_string(AllreduceMode mode);

// ----- Options, one struct per collective ------------------------------------------------------
// core_num: threads that split this rank's share (1..kMaxCoreNum); needs a [nranks, >= core_num]
// signal. op: the reduction (Sum, Max, Min, Prod). root: the domain-local rank whose data is sent.

/// Options of allreduce: `{.op = ReduceOp::Max, .mode = AllreduceMode::Ring, .core_num = 2}`.
struct AllreduceOptions {
  ReduceOp op = ReduceOp::Sum;
  AllreduceMode mode = AllreduceMode::Auto;
  int core_num = 1;
  /// Same bits whatever the schedule: Ring requests run TwoShot (canonical rank order). Also
  /// switched on for every call by PLD_REPRODUCIBLE=1.
  bool reproducible = false;
};

/// Options of broadcast: `{.root = 1, .core_num = 2}`.
struct BroadcastOptions {
  int root = 0;
  int core_num = 1;
};

/// Options of allgather: `{.core_num = 2}`.
struct AllgatherOptions {
  int core_num = 1;
};

/// Options of reduce_scatter: `{.op = ReduceOp::Max, .core_num = 2}`.
struct ReduceScatterOptions {
  ReduceOp op = ReduceOp::Sum;
  int core_num = 1;
};

/// Options of all_to_all: `{.core_num = 2}`.
struct AllToAllOptions {
  int core_num = 1;
};

/// Options of all_to_all_v. core_num is checked (1..kMaxCoreNum) and accepted for the uniform call
/// shape; all_to_all_v runs on one lane today whatever its value.
struct AllToAllVOptions {
  int core_num = 1;
};

namespace tensor {

/// Every rank of the signal's domain waits until all have arrived. One credit per call; returns
/// `signal` (PyPTO: `signal = barrier(signal)`).
///   pld::tensor::barrier(sig);
inline const DistributedTensor<std::int32_t>& barrier(const DistributedTensor<std::int32_t>& signal) {
  detail::coll_barrier(detail::desc(signal));
  return signal;
}

/// In place: every rank's `target` becomes op(target of rank 0, ..., target of rank P-1).
/// Returns `target`.
///   pld::tensor::allreduce(data, sig, {.op = pld::ReduceOp::Max});
template <class T>
const DistributedTensor<T>& allreduce(const DistributedTensor<T>& target, const DistributedTensor<std::int32_t>& signal,
                                      const AllreduceOptions& options = {}) {
  detail::coll_allreduce(detail::desc(target), detail::desc(signal), options);
  return target;
}

/// Every rank's `target` becomes rank `options.root`'s (the root stages its data before the call).
/// Returns `target`. Throws UsageError for a root outside [0, nranks).
///   pld::tensor::broadcast(data, sig, {.root = 1});
template <class T>
const DistributedTensor<T>& broadcast(const DistributedTensor<T>& target, const DistributedTensor<std::int32_t>& signal,
                                      const BroadcastOptions& options = {}) {
  detail::coll_broadcast(detail::desc(target), detail::desc(signal), options.root, options.core_num);
  return target;
}

/// `target` is [P, SIZE]; row s of every rank's target becomes rank s's `local` ([1, SIZE] or
/// [SIZE], a rank-local tensor or a window view). Push-based; `local` must not be `target`.
/// Returns `target`.
///   pld::tensor::allgather(mine, all, sig);
template <class T>
const DistributedTensor<T>& allgather(const Tensor<T>& local, const DistributedTensor<T>& target,
                                      const DistributedTensor<std::int32_t>& signal,
                                      const AllgatherOptions& options = {}) {
  detail::coll_allgather(detail::desc(local), nullptr, detail::desc(target), detail::desc(signal), options.core_num);
  return target;
}
template <class T>
const DistributedTensor<T>& allgather(const DistributedTensor<T>& local, const DistributedTensor<T>& target,
                                      const DistributedTensor<std::int32_t>& signal,
                                      const AllgatherOptions& options = {}) {
  const auto& w = detail::desc(local);
  detail::coll_allgather(detail::window_local("allgather", w), &w, detail::desc(target), detail::desc(signal),
                         options.core_num);
  return target;
}

/// `target` is [P, SIZE] on every rank; afterwards row r of rank r's target is op over ranks of
/// their row r. Other rows are left as they were. Sum, Max, Min and Prod. Returns `target`.
///   pld::tensor::reduce_scatter(data, sig, {.op = pld::ReduceOp::Max});
template <class T>
const DistributedTensor<T>& reduce_scatter(const DistributedTensor<T>& target,
                                           const DistributedTensor<std::int32_t>& signal,
                                           const ReduceScatterOptions& options = {}) {
  detail::coll_reduce_scatter(detail::desc(target), detail::desc(signal), options.op, options.core_num);
  return target;
}

/// `input` and `target` are [P, SIZE]; row s of rank r's target becomes row r of rank s's input.
/// `input` is a rank-local tensor or a window view, not `target`. Returns `target`.
///   pld::tensor::all_to_all(send, recv, sig);
template <class T>
const DistributedTensor<T>& all_to_all(const Tensor<T>& input, const DistributedTensor<T>& target,
                                       const DistributedTensor<std::int32_t>& signal,
                                       const AllToAllOptions& options = {}) {
  detail::coll_all_to_all(detail::desc(input), nullptr, detail::desc(target), detail::desc(signal), options.core_num);
  return target;
}
template <class T>
const DistributedTensor<T>& all_to_all(const DistributedTensor<T>& input, const DistributedTensor<T>& target,
                                       const DistributedTensor<std::int32_t>& signal,
                                       const AllToAllOptions& options = {}) {
  const auto& w = detail::desc(input);
  detail::coll_all_to_all(detail::window_local("all_to_all", w), &w, detail::desc(target), detail::desc(signal),
                          options.core_num);
  return target;
}

/// Variable all-to-all. `input` and `target` are [P * MAX_RECV, SIZE] (MAX_RECV = rows per peer
/// block, from target.shape[0] / P); rank r sends rows [d * MAX_RECV, d * MAX_RECV + send_counts[d])
/// of its input to rank d, which receives them at rows [r * MAX_RECV, ...) of its target and finds
/// the count in recv_counts[r, 0]. send_counts is INT32 [P] or [P, 1] (rank-local or a window)
/// with every count in [0, MAX_RECV]; recv_counts is an INT32 window [P, 1]. Rows past a count are
/// left as they were. Returns `target`. Runs on one lane (options.core_num is only checked).
///   pld::tensor::all_to_all_v(send, recv, sig, send_counts, recv_counts);
template <class T>
const DistributedTensor<T>& all_to_all_v(const Tensor<T>& input, const DistributedTensor<T>& target,
                                         const DistributedTensor<std::int32_t>& signal,
                                         const Tensor<std::int32_t>& send_counts,
                                         const DistributedTensor<std::int32_t>& recv_counts,
                                         const AllToAllVOptions& options = {}) {
  detail::check_core_num_option("all_to_all_v", options.core_num);
  detail::coll_all_to_all_v(detail::desc(input), nullptr, detail::desc(target), detail::desc(signal),
                            detail::desc(send_counts), detail::desc(recv_counts));
  return target;
}
template <class T>
const DistributedTensor<T>& all_to_all_v(const DistributedTensor<T>& input, const DistributedTensor<T>& target,
                                         const DistributedTensor<std::int32_t>& signal,
                                         const DistributedTensor<std::int32_t>& send_counts,
                                         const DistributedTensor<std::int32_t>& recv_counts,
                                         const AllToAllVOptions& options = {}) {
  detail::check_core_num_option("all_to_all_v", options.core_num);
  const auto& w = detail::desc(input);
  detail::coll_all_to_all_v(detail::window_local("all_to_all_v", w), &w, detail::desc(target), detail::desc(signal),
                            detail::window_local("all_to_all_v", detail::desc(send_counts)), detail::desc(recv_counts));
  return target;
}

}  // namespace tensor
}  // namespace pld
