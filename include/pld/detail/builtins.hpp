// pld — the kernels behind the host builtin collectives (internal; included by host.hpp). Each is
// dispatched once per member rank of the operands' comm domain and calls the composite collective.
#pragma once

#include <pld/collectives.hpp>
#include <pld/window.hpp>

#include <cstdint>

namespace pld::detail {

inline void builtin_barrier(DistributedTensor<std::int32_t> signal) {
  tensor::barrier(signal);
}

template <class T>
void builtin_allreduce(DistributedTensor<T> target, DistributedTensor<std::int32_t> signal, AllreduceOptions options) {
  tensor::allreduce(target, signal, options);
}
template <class T>
void builtin_broadcast(DistributedTensor<T> target, DistributedTensor<std::int32_t> signal, BroadcastOptions options) {
  tensor::broadcast(target, signal, options);
}
template <class T>
void builtin_allgather(DistributedTensor<T> local, DistributedTensor<T> target, DistributedTensor<std::int32_t> signal,
                       AllgatherOptions options) {
  tensor::allgather(local, target, signal, options);
}
template <class T>
void builtin_reduce_scatter(DistributedTensor<T> target, DistributedTensor<std::int32_t> signal,
                            ReduceScatterOptions options) {
  tensor::reduce_scatter(target, signal, options);
}
template <class T>
void builtin_all_to_all(DistributedTensor<T> input, DistributedTensor<T> target, DistributedTensor<std::int32_t> signal,
                        AllToAllOptions options) {
  tensor::all_to_all(input, target, signal, options);
}
template <class T>
void builtin_all_to_all_v(DistributedTensor<T> input, DistributedTensor<T> target,
                          DistributedTensor<std::int32_t> signal, DistributedTensor<std::int32_t> send_counts,
                          DistributedTensor<std::int32_t> recv_counts, AllToAllVOptions options) {
  tensor::all_to_all_v(input, target, signal, send_counts, recv_counts, options);
}

enum class Builtin { Barrier, Allreduce, Broadcast, Allgather, ReduceScatter, AllToAll, AllToAllV };

/// The operands of one host builtin call, for the host-side checks. Only the operands of `kind`
/// are set: target and signal (signal only for Barrier), input (allgather's local, all_to_all's
/// and all_to_all_v's input), send_counts and recv_counts (all_to_all_v).
struct BuiltinCall {
  Builtin kind = Builtin::Barrier;
  WindowDesc target{};
  WindowDesc signal{};
  WindowDesc input{};
  WindowDesc send_counts{};
  WindowDesc recv_counts{};
  AllreduceOptions allreduce{};
  int root = 0;
  ReduceOp op = ReduceOp::Sum;
  int core_num = 1;
};

}  // namespace pld::detail
