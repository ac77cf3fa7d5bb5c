// pld — the host side: configuration, the orchestrator's Host handle, comm domains, pld::run.
//
// The orchestrator is an ordinary function `void orch(pld::Host& h, Args...)` run in the host
// process. It allocates window buffers and records dispatches; when it returns, pld checks the
// whole call (every member of a used domain got work, ...) and only then sends the dispatches to
// the ranks, which run them in program order per rank.
#pragma once

#include <pld/collectives.hpp>
#include <pld/detail/builtins.hpp>
#include <pld/detail/dispatch.hpp>
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

  /// Throws UsageError for an empty, negative or duplicate device list or a bad value.
  PLD_API void validate() const;
  int world_size() const { return static_cast<int>(device_ids.size()); }
};

/// The number of processes an MPI launcher started (`mpirun -n P`), or 0 when the program was not
/// started by one. Under mpirun each process is one rank: size DistributedConfig from it.
PLD_API int launcher_world_size();
/// True in exactly one process: the program itself on shm, MPI rank 0 under mpirun. Every MPI
/// process ends a call with the same host data; print results where this is true.
PLD_API bool is_output_rank();

namespace detail {
PLD_API void gather_slices(void* data, std::uint64_t bytes, Index rows, int root);
}

/// Under mpirun each process keeps its own copy of every HostTensor. By default pld merges what
/// every rank wrote into every process at the end of each call (PLD_MPI_HOST_SYNC=merge); with
/// PLD_MPI_HOST_SYNC=none a process holds only what its own rank wrote, and gather() collects
/// slice `t[r]` of every rank r (the leading dimension indexes the ranks, as in every tutorial)
/// from process r into process `root`, or into every process with root = -1. Collective: call it
/// on every process. Nothing to do on shm (the ranks wrote the host's memory).
template <class T>
void gather(HostTensor<T>& t, int root = -1) {
  detail::gather_slices(t.data(), static_cast<std::uint64_t>(t.numel()) * sizeof(T), t.shape().size() ? t.shape()[0] : 0,
                        root);
}

namespace detail {
class HostSession;
}

/// A comm domain: a subset of the world's ranks with its own windows and signal cells. Ranks
/// inside it are domain-local: rank(ctx) is the position in the sorted member list. The world
/// itself is a domain (`Host::world()`); a rank may belong to several overlapping domains.
class PLD_API CommDomain {
 public:
  CommDomain(detail::HostSession* session, std::uint32_t id) : session_(session), id_(id) {}

  /// Number of ranks in the domain.
  int size() const;
  /// World ranks of the members, ascending.
  const std::vector<int>& ranks() const;

  /// Reserves `bytes` at the same offset of every member's window, zero-filled.
  /// The size is in BYTES: `alloc_window_buffer(n * sizeof(float))`. Passing an element count
  /// (or a rank count) here is the classic bug; `window<T>` catches views that do not fit.
  WindowBuffer alloc_window_buffer(std::uint64_t bytes, const std::string& name = {});
  /// Convenience form: `shape` elements of `dtype`.
  WindowBuffer alloc_window_buffer(const Dims& shape, DType dtype, const std::string& name = {});

  /// A typed view of `buffer` with `shape`; the view must fit in the buffer.
  template <Element T>
  DistributedTensor<T> window(const WindowBuffer& buffer, const Dims& shape) const {
    return DistributedTensor<T>(window_ref(buffer, shape, dtype_of<T>), shape);
  }

  std::uint32_t id() const { return id_; }

 private:
  detail::WindowRef window_ref(const WindowBuffer& buffer, const Dims& shape, DType dtype) const;
  detail::HostSession* session_;
  std::uint32_t id_;
};

/// The orchestrator's handle: allocates windows of the world domain, creates sub-domains and
/// records dispatches.
class PLD_API Host {
 public:
  explicit Host(detail::HostSession* session);

  /// Number of ranks (len(device_ids)).
  int world_size() const;
  /// The world domain: every rank.
  CommDomain& world() { return world_; }

  WindowBuffer alloc_window_buffer(std::uint64_t bytes, const std::string& name = {}) {
    return world_.alloc_window_buffer(bytes, name);
  }
  WindowBuffer alloc_window_buffer(const Dims& shape, DType dtype, const std::string& name = {}) {
    return world_.alloc_window_buffer(shape, dtype, name);
  }
  template <Element T>
  DistributedTensor<T> window(const WindowBuffer& buffer, const Dims& shape) const {
    return world_.window<T>(buffer, shape);
  }

  /// A comm domain over `ranks` (world ranks, distinct). Domain-local rank i is the i-th smallest.
  CommDomain domain(const std::vector<int>& ranks);

  // ----- Host builtin collectives --------------------------------------------------------------
  // Each records one builtin dispatch per member of the operands' comm domain, in program order
  // with that rank's other dispatches. Operands are checked here, before any rank starts. Without
  // a signal, pld uses its own per-domain signal window (self-clearing, so loops are fine).

  void barrier(const DistributedTensor<std::int32_t>& signal) {
    detail::BuiltinCall c;
    c.kind = detail::Builtin::Barrier;
    c.b = detail::desc(signal);
    for (int r : builtin_ranks(c)) dispatch(r, detail::builtin_barrier, signal);
  }
  void barrier(const CommDomain& domain) { barrier(builtin_signal(domain.id())); }
  void barrier() { barrier(world_); }

  template <Element T>
  void allreduce(const DistributedTensor<T>& target, const DistributedTensor<std::int32_t>& signal,
                 const AllreduceOptions& options = {}) {
    detail::BuiltinCall c;
    c.kind = detail::Builtin::Allreduce;
    c.a = detail::desc(target);
    c.b = detail::desc(signal);
    c.allreduce = options;
    for (int r : builtin_ranks(c)) dispatch(r, detail::builtin_allreduce<T>, target, signal, options);
  }
  template <Element T>
  void allreduce(const DistributedTensor<T>& target, const AllreduceOptions& options = {}) {
    allreduce(target, builtin_signal(target.ref().domain), options);
  }

  template <Element T>
  void broadcast(const DistributedTensor<T>& target, const DistributedTensor<std::int32_t>& signal, int root,
                 int core_num = 1) {
    detail::BuiltinCall c;
    c.kind = detail::Builtin::Broadcast;
    c.a = detail::desc(target);
    c.b = detail::desc(signal);
    c.root = root;
    c.core_num = core_num;
    for (int r : builtin_ranks(c)) dispatch(r, detail::builtin_broadcast<T>, target, signal, root, core_num);
  }
  template <Element T>
  void broadcast(const DistributedTensor<T>& target, int root, int core_num = 1) {
    broadcast(target, builtin_signal(target.ref().domain), root, core_num);
  }

  template <Element T>
  void allgather(const DistributedTensor<T>& local, const DistributedTensor<T>& target,
                 const DistributedTensor<std::int32_t>& signal, int core_num = 1) {
    detail::BuiltinCall c;
    c.kind = detail::Builtin::Allgather;
    c.a = detail::desc(target);
    c.b = detail::desc(signal);
    c.c = detail::desc(local);
    c.core_num = core_num;
    for (int r : builtin_ranks(c)) dispatch(r, detail::builtin_allgather<T>, local, target, signal, core_num);
  }
  template <Element T>
  void allgather(const DistributedTensor<T>& local, const DistributedTensor<T>& target, int core_num = 1) {
    allgather(local, target, builtin_signal(target.ref().domain), core_num);
  }

  template <Element T>
  void reduce_scatter(const DistributedTensor<T>& target, const DistributedTensor<std::int32_t>& signal,
                      ReduceOp op = ReduceOp::Sum, int core_num = 1) {
    detail::BuiltinCall c;
    c.kind = detail::Builtin::ReduceScatter;
    c.a = detail::desc(target);
    c.b = detail::desc(signal);
    c.op = op;
    c.core_num = core_num;
    for (int r : builtin_ranks(c)) dispatch(r, detail::builtin_reduce_scatter<T>, target, signal, op, core_num);
  }
  template <Element T>
  void reduce_scatter(const DistributedTensor<T>& target, ReduceOp op = ReduceOp::Sum, int core_num = 1) {
    reduce_scatter(target, builtin_signal(target.ref().domain), op, core_num);
  }

  template <Element T>
  void all_to_all(const DistributedTensor<T>& input, const DistributedTensor<T>& target,
                  const DistributedTensor<std::int32_t>& signal, int core_num = 1) {
    detail::BuiltinCall c;
    c.kind = detail::Builtin::AllToAll;
    c.a = detail::desc(target);
    c.b = detail::desc(signal);
    c.c = detail::desc(input);
    c.core_num = core_num;
    for (int r : builtin_ranks(c)) dispatch(r, detail::builtin_all_to_all<T>, input, target, signal, core_num);
  }
  template <Element T>
  void all_to_all(const DistributedTensor<T>& input, const DistributedTensor<T>& target, int core_num = 1) {
    all_to_all(input, target, builtin_signal(target.ref().domain), core_num);
  }

  template <Element T>
  void all_to_all_v(const DistributedTensor<T>& input, const DistributedTensor<T>& target,
                    const DistributedTensor<std::int32_t>& signal, const DistributedTensor<std::int32_t>& send_counts,
                    const DistributedTensor<std::int32_t>& recv_counts) {
    detail::BuiltinCall c;
    c.kind = detail::Builtin::AllToAllV;
    c.a = detail::desc(target);
    c.b = detail::desc(signal);
    c.c = detail::desc(input);
    c.d = detail::desc(send_counts);
    c.e = detail::desc(recv_counts);
    for (int r : builtin_ranks(c))
      dispatch(r, detail::builtin_all_to_all_v<T>, input, target, signal, send_counts, recv_counts);
  }
  template <Element T>
  void all_to_all_v(const DistributedTensor<T>& input, const DistributedTensor<T>& target,
                    const DistributedTensor<std::int32_t>& send_counts,
                    const DistributedTensor<std::int32_t>& recv_counts) {
    all_to_all_v(input, target, builtin_signal(target.ref().domain), send_counts, recv_counts);
  }

  /// Runs `kernel(args...)` on world rank `rank` (the model's `device=r`). `kernel` is a function
  /// or capture-less lambda returning void; arguments are converted to its parameter types and
  /// travel address-free (HostTensor views, window views, values). Dispatches to one rank run in
  /// program order.
  template <class F, class... A>
  void dispatch(int rank, F&& kernel, A&&... args) {
    dispatch_fn(rank, +kernel, std::forward<A>(args)...);
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
  template <class R, class... P, class... A>
  void dispatch_fn(int rank, R (*kernel)(P...), A&&... args) {
    static_assert(std::is_void_v<R>, "pld::Host::dispatch: a kernel returns void; write results into tensors");
    static_assert(sizeof...(P) == sizeof...(A),
                  "pld::Host::dispatch: pass exactly one argument per kernel parameter");
    check_rank("dispatch", rank);
    detail::ArgWriter writer;
    detail::encode_args<P...>(writer, std::index_sequence_for<P...>{}, std::forward<A>(args)...);
    record_dispatch(rank, &detail::trampoline<P...>, reinterpret_cast<void (*)()>(kernel), writer);
  }
  void check_rank(const char* op, int rank) const;
  /// Checks a builtin call's operands on the host and returns the member ranks to dispatch to.
  const std::vector<int>& builtin_ranks(detail::BuiltinCall& call);
  /// pld's own signal window for host builtins on `domain` (one per domain and call).
  DistributedTensor<std::int32_t> builtin_signal(std::uint32_t domain);
  void record_dispatch(int rank, detail::Trampoline trampoline, void (*kernel)(), detail::ArgWriter& writer);
  void add_callback(std::function<void()> fn);

  detail::HostSession* session_;
  CommDomain world_;
};

namespace detail {
PLD_API void run(const DistributedConfig& config, const std::function<void(Host&)>& orchestrator);
}

/// One-shot execution: forks one rank process per device id, runs `orchestrator(host, args...)`
/// on the host, executes its dispatches, and returns when every rank has finished. Throws
/// UsageError for bad input found on the host and RankError (naming the rank and the cause) for a
/// failure on a rank; either way no rank process and no shared memory is left behind.
template <class Orchestrator, class... Args>
void run(const DistributedConfig& config, Orchestrator&& orchestrator, Args&&... args) {
  detail::run(config, [&](Host& host) { std::invoke(orchestrator, host, args...); });
}

}  // namespace pld
