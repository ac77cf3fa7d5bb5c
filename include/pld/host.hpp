// pld — the host side: configuration, the orchestrator's Host handle, comm domains, pld::run.
//
// The orchestrator is an ordinary function `void orch(pld::Host& h, Args...)` run in the host
// process. It allocates window buffers and records dispatches; when it returns, pld checks the
// whole call (every member of a used domain got work, ...) and only then sends the dispatches to
// the ranks, which run them in program order per rank.
#pragma once

#include <pld/collectives.hpp>
#include <pld/comm_domain.hpp>
#include <pld/detail/builtins.hpp>
#include <pld/detail/dispatch.hpp>
#include <pld/detail/host.hpp>
#include <pld/error.hpp>
#include <pld/export.hpp>
#include <pld/tensor.hpp>
#include <pld/types.hpp>
#include <pld/window.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

namespace pld {

/// Which machinery carries windows and signals.
enum class BackendKind {
  Auto,  ///< mpi when started by an MPI launcher (mpirun) and pld was built with MPI, else shm
  Shm,   ///< ranks are forked processes on this machine; windows in shared memory
  Mpi,   ///< each MPI process is one rank; windows are MPI-3 RMA windows (docs/05-mpi.md)
};

/// The race detector (docs/04-debugging.md): Setting follows PLD_DEBUG (race, race:warn).
enum class RaceCheck {
  Setting,  ///< PLD_DEBUG decides
  Off,
  Fail,  ///< a race fails the call with both operations, the window and the missing edge
  Warn,  ///< a race is logged once per pair of operations and the call goes on
};

/// How a distributed program is laid out. Rank r runs "on" device `device_ids[r]`.
struct DistributedConfig {
  /// One rank per entry: non-empty, non-negative, distinct (at most kMaxRanks).
  std::vector<int> device_ids{};
  BackendKind backend = BackendKind::Auto;
  /// Size of every rank's symmetric window heap in bytes; 0 = PLD_HEAP_BYTES (default 256 MiB).
  /// The heap is reserved, not committed: only pages that are touched use memory.
  std::uint64_t heap_bytes = 0;
  /// Deadline of every wait in seconds; 0 = PLD_WAIT_TIMEOUT (default 300).
  double wait_timeout = 0;
  /// Record swimlanes (per rank and dispatch: tasks, dependencies, scope statistics, signal and
  /// collective events; one merged Chrome trace per call) — also PLD_SWIMLANE=1.
  bool swimlane = false;
  /// Where debugging outputs go; empty = PLD_DFX_DIR (default "dfx_outputs").
  std::string dfx_dir{};
  /// Check every window access for races with the other ranks' (shm backend).
  RaceCheck race_check = RaceCheck::Setting;

  /// Throws UsageError for an empty, negative or duplicate device list or a bad value.
  PLD_API void validate() const;
  /// Number of ranks (device_ids.size()).
  int world_size() const { return static_cast<int>(device_ids.size()); }
};

/// The number of processes an MPI launcher started (`mpirun -n P`), or 0 when the program was not
/// started by one. Under mpirun each process is one rank: size DistributedConfig from it.
PLD_API int launcher_world_size();
/// True in exactly one process: the program itself on shm, MPI rank 0 under mpirun. Every MPI
/// process ends a call with the same host data; print results where this is true.
PLD_API bool is_output_rank();

/// Under mpirun each process keeps its own copy of every HostTensor. By default pld merges what
/// every rank wrote into every process at the end of each call (PLD_MPI_HOST_SYNC=merge); with
/// PLD_MPI_HOST_SYNC=none a process holds only what its own rank wrote, and gather() collects
/// slice `t[r]` of every rank r (the leading dimension indexes the ranks, as in every tutorial)
/// from process r into process `root`, or into every process with root = -1. Collective: call it
/// on every process. Nothing to do on shm (the ranks wrote the host's memory).
template <class T>
void gather(HostTensor<T>& t, int root = -1) {
  detail::gather_slices(t.data(), static_cast<std::uint64_t>(t.numel()) * sizeof(T),
                        t.shape().size() ? t.shape()[0] : 0, root);
}

/// The two count operands of Host::all_to_all_v, by name:
/// `{.send_counts = sc, .recv_counts = rc}` (INT32 windows of the target's domain, [P] or [P, 1]
/// and [P, 1]; see tensor::all_to_all_v).
struct AllToAllVCounts {
  DistributedTensor<std::int32_t> send_counts{};
  DistributedTensor<std::int32_t> recv_counts{};
};

/// The orchestrator's handle: allocates windows of the world domain, creates sub-domains and
/// records dispatches.
class PLD_API Host {
 public:
  /// Number of ranks (len(device_ids)).
  int world_size() const;
  /// The world domain: every rank.
  CommDomain& world() { return world_; }

  /// Reserves `bytes` (BYTES, not elements) at the same offset of every rank's window,
  /// zero-filled; `name` labels it in errors, hang reports and traces. Throws UsageError when the
  /// heap is full (raise DistributedConfig::heap_bytes) or for a name starting with "pld.".
  ///   auto buf = h.alloc_window_buffer(256 * sizeof(float), "data");
  WindowBuffer alloc_window_buffer(std::uint64_t bytes, const std::string& name = {}) {
    return world_.alloc_window_buffer(bytes, name);
  }
  /// Convenience form: `shape` elements of `dtype`.
  ///   auto sig = h.alloc_window_buffer({h.world_size(), 1}, pld::DType::INT32, "sig");
  WindowBuffer alloc_window_buffer(const Dims& shape, DType dtype, const std::string& name = {}) {
    return world_.alloc_window_buffer(shape, dtype, name);
  }
  /// A typed view of `buffer` with `shape`, to pass to dispatch. Throws UsageError when the view
  /// does not fit in the buffer (the message names the bytes-versus-elements bug).
  ///   auto data = h.window<float>(buf, {1, 256});
  template <Element T>
  DistributedTensor<T> window(const WindowBuffer& buffer, const Dims& shape) const {
    return world_.window<T>(buffer, shape);
  }

  /// A comm domain over `ranks` (world ranks, distinct). Domain-local rank i is the i-th smallest.
  /// Throws UsageError for an empty list, a rank listed twice or a rank out of range.
  ///   auto pair = h.domain({2, 3});
  CommDomain domain(const std::vector<int>& ranks);

  // ----- Host builtin collectives --------------------------------------------------------------
  // The collectives of collectives.hpp with the same operands and options, called from the
  // orchestrator. Each records one builtin dispatch per member of the operands' comm domain, in
  // program order with that rank's other dispatches. Operands are checked here, before any rank
  // starts (UsageError naming the collective, the operand and the fix). Without a signal, pld uses
  // its own per-domain signal window (self-clearing, so loops are fine).

  /// Every member of the signal's (or the domain's) comm domain waits until all have arrived.
  ///   h.barrier();
  void barrier(const DistributedTensor<std::int32_t>& signal) {
    record_builtin({.kind = detail::Builtin::Barrier, .signal = detail::desc(signal)}, detail::builtin_barrier, signal);
  }
  /// Barrier of `domain`'s members (or of the world) on pld's own signal.
  void barrier(const CommDomain& domain) { barrier(builtin_signal(domain.id())); }
  void barrier() { barrier(world_); }

  /// tensor::allreduce on every member of target's domain.
  ///   h.allreduce(data, {.op = pld::ReduceOp::Max});
  template <Element T>
  void allreduce(const DistributedTensor<T>& target, const DistributedTensor<std::int32_t>& signal,
                 const AllreduceOptions& options = {}) {
    record_builtin({.kind = detail::Builtin::Allreduce,
                    .target = detail::desc(target),
                    .signal = detail::desc(signal),
                    .allreduce = options,
                    .op = options.op,
                    .core_num = options.core_num},
                   detail::builtin_allreduce<T>, target, signal, options);
  }
  template <Element T>
  void allreduce(const DistributedTensor<T>& target, const AllreduceOptions& options = {}) {
    allreduce(target, builtin_signal(target.ref().domain), options);
  }

  /// tensor::broadcast on every member of target's domain.
  ///   h.broadcast(data, {.root = 1});
  template <Element T>
  void broadcast(const DistributedTensor<T>& target, const DistributedTensor<std::int32_t>& signal,
                 const BroadcastOptions& options = {}) {
    record_builtin({.kind = detail::Builtin::Broadcast,
                    .target = detail::desc(target),
                    .signal = detail::desc(signal),
                    .root = options.root,
                    .core_num = options.core_num},
                   detail::builtin_broadcast<T>, target, signal, options);
  }
  template <Element T>
  void broadcast(const DistributedTensor<T>& target, const BroadcastOptions& options = {}) {
    broadcast(target, builtin_signal(target.ref().domain), options);
  }

  /// tensor::allgather on every member of target's domain (`local` is a window view here).
  ///   h.allgather(mine, all);
  template <Element T>
  void allgather(const DistributedTensor<T>& local, const DistributedTensor<T>& target,
                 const DistributedTensor<std::int32_t>& signal, const AllgatherOptions& options = {}) {
    record_builtin({.kind = detail::Builtin::Allgather,
                    .target = detail::desc(target),
                    .signal = detail::desc(signal),
                    .input = detail::desc(local),
                    .core_num = options.core_num},
                   detail::builtin_allgather<T>, local, target, signal, options);
  }
  template <Element T>
  void allgather(const DistributedTensor<T>& local, const DistributedTensor<T>& target,
                 const AllgatherOptions& options = {}) {
    allgather(local, target, builtin_signal(target.ref().domain), options);
  }

  /// tensor::reduce_scatter on every member of target's domain.
  ///   h.reduce_scatter(data, {.op = pld::ReduceOp::Max, .core_num = 2});
  template <Element T>
  void reduce_scatter(const DistributedTensor<T>& target, const DistributedTensor<std::int32_t>& signal,
                      const ReduceScatterOptions& options = {}) {
    record_builtin({.kind = detail::Builtin::ReduceScatter,
                    .target = detail::desc(target),
                    .signal = detail::desc(signal),
                    .op = options.op,
                    .core_num = options.core_num},
                   detail::builtin_reduce_scatter<T>, target, signal, options);
  }
  template <Element T>
  void reduce_scatter(const DistributedTensor<T>& target, const ReduceScatterOptions& options = {}) {
    reduce_scatter(target, builtin_signal(target.ref().domain), options);
  }

  /// tensor::all_to_all on every member of target's domain (`input` is a window view here).
  ///   h.all_to_all(send, recv);
  template <Element T>
  void all_to_all(const DistributedTensor<T>& input, const DistributedTensor<T>& target,
                  const DistributedTensor<std::int32_t>& signal, const AllToAllOptions& options = {}) {
    record_builtin({.kind = detail::Builtin::AllToAll,
                    .target = detail::desc(target),
                    .signal = detail::desc(signal),
                    .input = detail::desc(input),
                    .core_num = options.core_num},
                   detail::builtin_all_to_all<T>, input, target, signal, options);
  }
  template <Element T>
  void all_to_all(const DistributedTensor<T>& input, const DistributedTensor<T>& target,
                  const AllToAllOptions& options = {}) {
    all_to_all(input, target, builtin_signal(target.ref().domain), options);
  }

  /// tensor::all_to_all_v on every member of target's domain. The counts are named, so that a
  /// call with one of them forgotten (or the signal taken for a count) does not compile:
  ///   h.all_to_all_v(send, recv, sig, {.send_counts = sc, .recv_counts = rc});
  ///   h.all_to_all_v(send, recv, {.send_counts = sc, .recv_counts = rc});
  template <Element T>
  void all_to_all_v(const DistributedTensor<T>& input, const DistributedTensor<T>& target,
                    const DistributedTensor<std::int32_t>& signal, const AllToAllVCounts& counts,
                    const AllToAllVOptions& options = {}) {
    record_builtin({.kind = detail::Builtin::AllToAllV,
                    .target = detail::desc(target),
                    .signal = detail::desc(signal),
                    .input = detail::desc(input),
                    .send_counts = detail::desc(counts.send_counts),
                    .recv_counts = detail::desc(counts.recv_counts),
                    .core_num = options.core_num},
                   detail::builtin_all_to_all_v<T>, input, target, signal, counts.send_counts, counts.recv_counts,
                   options);
  }
  template <Element T>
  void all_to_all_v(const DistributedTensor<T>& input, const DistributedTensor<T>& target,
                    const AllToAllVCounts& counts, const AllToAllVOptions& options = {}) {
    all_to_all_v(input, target, builtin_signal(target.ref().domain), counts, options);
  }

  /// Runs `kernel(args...)` on world rank `rank` (the model's `device=r`). `kernel` is a function
  /// or capture-less lambda returning void; arguments are converted to its parameter types and
  /// travel address-free (HostTensor views, window views, values). Dispatches to one rank run in
  /// program order.
  template <class F, class... A>
  void dispatch(int rank, F&& kernel, A&&... args) {
    if constexpr (requires(std::remove_reference_t<F> & f) { +f; })
      dispatch_fn(rank, +kernel, std::forward<A>(args)...);
    else
      static_assert(sizeof(F) == 0,
                    "pld::Host::dispatch: the kernel must be a function or a lambda without captures (a rank runs "
                    "it in another process, where the host's captured variables do not exist); pass what the "
                    "lambda captures as dispatch arguments instead");
  }

  /// Runs `fn(args...)` on the host (the model's sub-worker) between rank dispatches: after every
  /// dispatch recorded before this call has finished, before any dispatch recorded after it
  /// starts. Callbacks run in program order on one host thread; the arguments are copied when
  /// recorded (views of HostTensors see what the ranks wrote). An exception fails the call and
  /// skips the dispatches after it.
  template <class F, class... A>
  void callback(F&& fn, A&&... args) {
    static_assert(std::is_invocable_v<std::decay_t<F>&, std::decay_t<A>&...>,
                  "pld::Host::callback: fn must be callable with the given arguments");
    add_callback([fn = std::forward<F>(fn), ... a = std::forward<A>(args)]() mutable { std::invoke(fn, a...); });
  }

 private:
  // Made by pld for each orchestrator call (pld::run, DistributedWorker), through detail::Access.
  friend struct detail::Access;
  friend void detail::record_encoded_dispatch(Host&, int, detail::Trampoline, void (*)(), detail::ArgWriter&);
  explicit Host(detail::HostSession* session);

  template <class R, class... P, class... A>
  void dispatch_fn(int rank, R (*kernel)(P...), A&&... args) {
    static_assert(std::is_void_v<R>, "pld::Host::dispatch: a kernel returns void; write results into tensors");
    static_assert(sizeof...(P) == sizeof...(A), "pld::Host::dispatch: pass exactly one argument per kernel parameter");
    check_rank("dispatch", rank);
    detail::ArgWriter writer;
    detail::encode_args<P...>(writer, std::index_sequence_for<P...>{}, std::forward<A>(args)...);
    record_dispatch(rank, &detail::trampoline<P...>, reinterpret_cast<void (*)()>(kernel), writer);
  }
  void check_rank(const char* api, int rank) const;
  /// Checks a builtin call's operands on the host, then dispatches `kernel(args...)` to every
  /// member rank of the operands' comm domain.
  template <class... P, class... A>
  void record_builtin(detail::BuiltinCall call, void (*kernel)(P...), const A&... args) {
    for (int r : builtin_ranks(call)) dispatch_fn(r, kernel, args...);
  }
  /// Checks a builtin call's operands on the host and returns the member ranks to dispatch to.
  const std::vector<int>& builtin_ranks(detail::BuiltinCall& call);
  /// pld's own signal window for host builtins on `domain` (one per domain and call).
  DistributedTensor<std::int32_t> builtin_signal(std::uint32_t domain);
  void record_dispatch(int rank, detail::Trampoline trampoline, void (*kernel)(), detail::ArgWriter& writer);
  void add_callback(std::function<void()> fn);

  detail::HostSession* session_;
  CommDomain world_;
};

/// One-shot execution: forks one rank process per device id, runs `orchestrator(host, args...)`
/// on the host, executes its dispatches, and returns when every rank has finished. Throws
/// UsageError for bad input found on the host and RankError (naming the rank and the cause) for a
/// failure on a rank; either way no rank process and no shared memory is left behind.
template <class Orchestrator, class... Args>
void run(const DistributedConfig& config, Orchestrator&& orchestrator, Args&&... args) {
  detail::run(config, [&](Host& host) { std::invoke(orchestrator, host, args...); });
}

}  // namespace pld
