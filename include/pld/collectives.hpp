// pld — collectives composed of pld's own primitives (notify / wait and window access), for every
// element type. Two ways to call them:
//
//   * in a kernel (the composite path): `pld::tensor::allreduce(target, signal, {...})`, with an
//     explicit signal window;
//   * from the orchestrator (the host builtin path): `host.allreduce(target[, signal], {...})`,
//     which records one builtin dispatch per member of the target's comm domain (host.hpp).
//
// Signals are self-clearing (the model's credit barrier): every call leaves its signal cells as it
// found them, so one signal window serves any number of back-to-back calls and loops. A signal is
// INT32 `[nranks]` or `[nranks, k]` with k >= core_num; lane b of a call uses column b * (k / core_num)
// (give `[nranks, 16 * core_num]` to put every cell on its own cache line). Cell [s, b] on rank r counts credits
// from rank s, so one writer per cell. Never write a collective's signal cells yourself, and use
// one signal per set of concurrently running collectives.
//
// Results are bit-identical on every rank. Reductions combine ranks in ascending domain-rank order
// (Mesh, TwoShot, reduce_scatter); Ring combines in ring order and rounds fp16/bf16 at every hop.
// fp16/bf16 accumulate in fp32 and round once per element (Mesh, TwoShot, reduce_scatter).
#pragma once

#include <pld/export.hpp>
#include <pld/kernel.hpp>
#include <pld/tensor.hpp>
#include <pld/types.hpp>
#include <pld/window.hpp>

#include <cstdint>
#include <string>

namespace pld {

/// Schedule of an allreduce.
enum class AllreduceMode : int {
  Auto = 0,     ///< LL one-hop up to PLD_ALLREDUCE_LL_MAX (64) bytes with core_num 1, else Mesh up
                ///< to PLD_ALLREDUCE_MESH_MAX bytes (default 0), else TwoShot
  Mesh = 1,     ///< one-shot: every rank reads every peer and reduces the whole vector
  Ring = 2,     ///< 2(P-1) neighbour steps: reduce-scatter then allgather around the ring
  TwoShot = 3,  ///< each rank reduces its 1/P segment from every peer and pushes it to every peer
};

PLD_API const char* to_string(AllreduceMode mode);

/// Largest core_num (threads splitting one rank's share of a collective).
inline constexpr int kMaxCoreNum = 16;

struct AllreduceOptions {
  ReduceOp op = ReduceOp::Sum;
  AllreduceMode mode = AllreduceMode::Auto;
  /// Threads that split this rank's share (1..kMaxCoreNum); needs a [nranks, >= core_num] signal.
  int core_num = 1;
  /// Same bits whatever the schedule: Ring requests run TwoShot (canonical rank order). Also
  /// switched on for every call by PLD_REPRODUCIBLE=1.
  bool reproducible = false;
};

namespace detail {
/// Swimlane span of one collective call (a no-op unless swimlanes are recording).
class PLD_API CollTrace {
 public:
  /// Describes `target` only while swimlanes are recording (no copy on the untraced path).
  template <class T>
  CollTrace(const char* name, const DistributedTensor<T>& target, int root = -1, int op = -1) {
    if (trace_on()) begin(name, desc(target), root, op);
  }
  ~CollTrace() {
    if (t0_) end();
  }
  CollTrace(const CollTrace&) = delete;
  CollTrace& operator=(const CollTrace&) = delete;
  static bool trace_on();

 private:
  void begin(const char* name, const WindowDesc& target, int root, int op);
  void end();
  const char* name_ = nullptr;
  std::int64_t t0_ = 0;
  std::string args_;
};

PLD_API void coll_barrier(const WindowDesc& signal);
PLD_API void coll_allreduce(const WindowDesc& target, const WindowDesc& signal, const AllreduceOptions& options);
PLD_API void coll_broadcast(const WindowDesc& target, const WindowDesc& signal, int root, int core_num);
PLD_API void coll_allgather(const LocalDesc& local, const WindowDesc* local_window, const WindowDesc& target,
                            const WindowDesc& signal, int core_num);
PLD_API void coll_reduce_scatter(const WindowDesc& target, const WindowDesc& signal, ReduceOp op, int core_num);
PLD_API void coll_all_to_all(const LocalDesc& input, const WindowDesc* input_window, const WindowDesc& target,
                             const WindowDesc& signal, int core_num);
PLD_API void coll_all_to_all_v(const LocalDesc& input, const WindowDesc* input_window, const WindowDesc& target,
                               const WindowDesc& signal, const LocalDesc& send_counts, const WindowDesc& recv_counts);
}  // namespace detail

namespace tensor {

/// Every rank of the signal's domain waits until all have arrived. One credit per call.
inline void barrier(const DistributedTensor<std::int32_t>& signal) {
  detail::CollTrace span("barrier", signal);
  detail::coll_barrier(detail::desc(signal));
}

/// In place: every rank's `target` becomes op(target of rank 0, ..., target of rank P-1).
template <class T>
const DistributedTensor<T>& allreduce(const DistributedTensor<T>& target, const DistributedTensor<std::int32_t>& signal,
                                      const AllreduceOptions& options = {}) {
  detail::CollTrace span("allreduce", target, -1, static_cast<int>(options.op));
  detail::coll_allreduce(detail::desc(target), detail::desc(signal), options);
  return target;
}

/// Every rank's `target` becomes rank `root`'s (root stages its data before the call).
template <class T>
const DistributedTensor<T>& broadcast(const DistributedTensor<T>& target, const DistributedTensor<std::int32_t>& signal,
                                      int root, int core_num = 1) {
  detail::CollTrace span("broadcast", target, root);
  detail::coll_broadcast(detail::desc(target), detail::desc(signal), root, core_num);
  return target;
}

/// `target` is [P, SIZE]; row s of every rank's target becomes rank s's `local` ([1, SIZE] or
/// [SIZE]). Push-based; `local` must not be `target`.
template <class T>
const DistributedTensor<T>& allgather(const Tensor<T>& local, const DistributedTensor<T>& target,
                                      const DistributedTensor<std::int32_t>& signal, int core_num = 1) {
  detail::CollTrace span("allgather", target);
  detail::coll_allgather(detail::desc(local), nullptr, detail::desc(target), detail::desc(signal), core_num);
  return target;
}
template <class T>
const DistributedTensor<T>& allgather(const DistributedTensor<T>& local, const DistributedTensor<T>& target,
                                      const DistributedTensor<std::int32_t>& signal, int core_num = 1) {
  const auto w = detail::desc(local);
  detail::CollTrace span("allgather", target);
  detail::coll_allgather(detail::window_local("allgather", w), &w, detail::desc(target), detail::desc(signal),
                         core_num);
  return target;
}

/// `target` is [P, SIZE] on every rank; afterwards row r of rank r's target is op over ranks of
/// their row r. Other rows are left as they were. Sum, Max, Min and Prod.
template <class T>
const DistributedTensor<T>& reduce_scatter(const DistributedTensor<T>& target,
                                           const DistributedTensor<std::int32_t>& signal, ReduceOp op = ReduceOp::Sum,
                                           int core_num = 1) {
  detail::CollTrace span("reduce_scatter", target, -1, static_cast<int>(op));
  detail::coll_reduce_scatter(detail::desc(target), detail::desc(signal), op, core_num);
  return target;
}

/// `input` and `target` are [P, SIZE]; row s of rank r's target becomes row r of rank s's input.
template <class T>
const DistributedTensor<T>& all_to_all(const Tensor<T>& input, const DistributedTensor<T>& target,
                                       const DistributedTensor<std::int32_t>& signal, int core_num = 1) {
  detail::CollTrace span("all_to_all", target);
  detail::coll_all_to_all(detail::desc(input), nullptr, detail::desc(target), detail::desc(signal), core_num);
  return target;
}
template <class T>
const DistributedTensor<T>& all_to_all(const DistributedTensor<T>& input, const DistributedTensor<T>& target,
                                       const DistributedTensor<std::int32_t>& signal, int core_num = 1) {
  const auto w = detail::desc(input);
  detail::CollTrace span("all_to_all", target);
  detail::coll_all_to_all(detail::window_local("all_to_all", w), &w, detail::desc(target), detail::desc(signal),
                          core_num);
  return target;
}

/// Variable all-to-all. `input` and `target` are [P * MAX_RECV, SIZE] (MAX_RECV = rows per peer
/// block, from target.shape[0] / P); rank r sends rows [d * MAX_RECV, d * MAX_RECV + send_counts[d])
/// of its input to rank d, which receives them at rows [r * MAX_RECV, ...) of its target and finds
/// the count in recv_counts[r, 0]. send_counts is INT32 [P] or [P, 1] with every count in
/// [0, MAX_RECV]; recv_counts is an INT32 window [P, 1]. Rows past a count are left as they were.
template <class T>
const DistributedTensor<T>& all_to_all_v(const Tensor<T>& input, const DistributedTensor<T>& target,
                                         const DistributedTensor<std::int32_t>& signal,
                                         const Tensor<std::int32_t>& send_counts,
                                         const DistributedTensor<std::int32_t>& recv_counts) {
  detail::CollTrace span("all_to_all_v", target);
  detail::coll_all_to_all_v(detail::desc(input), nullptr, detail::desc(target), detail::desc(signal),
                            detail::desc(send_counts), detail::desc(recv_counts));
  return target;
}
template <class T>
const DistributedTensor<T>& all_to_all_v(const DistributedTensor<T>& input, const DistributedTensor<T>& target,
                                         const DistributedTensor<std::int32_t>& signal,
                                         const DistributedTensor<std::int32_t>& send_counts,
                                         const DistributedTensor<std::int32_t>& recv_counts) {
  const auto w = detail::desc(input);
  detail::CollTrace span("all_to_all_v", target);
  detail::coll_all_to_all_v(detail::window_local("all_to_all_v", w), &w, detail::desc(target), detail::desc(signal),
                            detail::window_local("all_to_all_v", detail::desc(send_counts)),
                            detail::desc(recv_counts));
  return target;
}

}  // namespace tensor
}  // namespace pld
