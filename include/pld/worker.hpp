// pld — DistributedWorker: fork the ranks once, dispatch many times.
//
//   void step(pld::Host& h, pld::HostTensor<float>& x);   // an orchestrator ("program")
//   pld::DistributedWorker rt(config, step);               // forks the ranks, waits until ready
//   for (int i = 0; i < 1000; ++i) rt(x);                  // each call: record, check, execute
//   auto h = rt.submit(step, y);                           // asynchronous; two calls in flight
//   h.result();                                            // waits, rethrows the call's error
//   h.wait(1.0);                                           // false while running; rethrows too
//   rt.close();                                            // or let the destructor do it
//
// Resident tensors (device_tensor.hpp) live in one rank process across calls:
//   auto w = rt.alloc_tensor<float>({n}, /*worker_id=*/0, init);  rt.run(step2, w);  rt.free_tensor(w);
// Persistent windows (WorkerOptions::persistent) keep every window buffer at the same place for
// the worker's lifetime, zeroed before each reuse unless reset_persistent_windows is false.
//
// Each call runs its orchestrator on the calling thread (recording and checking it, exactly as
// pld::run does) and then executes it on the rank processes, which the worker keeps between calls.
// Calls execute one after another in submission order. When a rank dies during a call, that call
// fails with a RankError naming the rank and the cause, the other ranks are released, and — with
// recovery on (the default) — the worker forks a replacement so that the next call runs normally.
#pragma once

#include <pld/detail/worker.hpp>
#include <pld/device_tensor.hpp>
#include <pld/error.hpp>
#include <pld/export.hpp>
#include <pld/host.hpp>

#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace pld {

struct WorkerOptions {
  /// Seconds the rank processes get to start and report ready (positive, finite); 0 =
  /// PLD_STARTUP_TIMEOUT (default 30).
  double startup_timeout = 0;
  /// Replace a rank process that died so the next call succeeds. Off: every later call raises
  /// "the worker is broken".
  bool recovery = true;
  /// Keep window buffers for the worker's lifetime: each (program, comm domain, buffer name) gets
  /// the same window place in every call, and a later call may not change its size (the model's
  /// persistent=True). Off: every call's windows are fresh and zero-filled.
  bool persistent = false;
  /// Zero persistent buffers before each reuse. Unset = reset iff persistent; true requires
  /// persistent. false keeps the previous call's contents (safe only with self-clearing signals
  /// or epochs).
  std::optional<bool> reset_persistent_windows = std::nullopt;
};

/// Per-dispatch timing statistics of DistributedWorker::benchmark, in microseconds.
struct BenchmarkStats {
  struct Stat {
    double min = 0, median = 0, mean = 0, max = 0;
  };
  int rounds = 0;
  int warmup = 0;
  Stat total{};    ///< submit to completion, as the caller sees it
  Stat host{};     ///< recording and checking the orchestrator on the calling thread
  Stat ranks{};    ///< executing the recorded call on the rank processes (send to last reply)
  Stat kernels{};  ///< the slowest rank's time inside its kernels
};

/// A submitted call. Copies refer to the same call.
class RunHandle {
 public:
  /// True once the call has finished (successfully or not). Never blocks.
  bool done() const { return detail::call_done(*state_); }
  /// Waits up to `timeout` seconds (non-negative; infinity = forever). Returns true when the call
  /// has finished successfully and false when it is still running at the timeout; a call that
  /// failed rethrows its error (the same error `result()` throws), so a failure cannot be taken
  /// for success. Throws UsageError for a negative timeout.
  ///   if (!handle.wait(0.5)) { /* still running */ }
  bool wait(double timeout = std::numeric_limits<double>::infinity()) const {
    if (!detail::call_wait(*state_, timeout)) return false;
    detail::call_result(*state_, 0);
    return true;
  }
  /// Waits for the call and rethrows its error (the same error to every caller). Throws
  /// pld::Error if it does not finish within `timeout` seconds.
  void result(double timeout = std::numeric_limits<double>::infinity()) const { detail::call_result(*state_, timeout); }

 private:
  friend struct detail::Access;  // DistributedWorker::submit makes them
  explicit RunHandle(std::shared_ptr<detail::CallState> state) : state_(std::move(state)) {}
  std::shared_ptr<detail::CallState> state_;
};

/// A set of rank processes kept across calls of one or several orchestrator programs
/// (`void program(pld::Host&, Args...)`).
template <class... Programs>
requires(sizeof...(Programs) >= 1 && (detail::Program<Programs> && ...)) class DistributedWorker {
 public:
  DistributedWorker(const DistributedConfig& config, const WorkerOptions& options, Programs... programs)
      : core_(config, options, {reinterpret_cast<void (*)()>(programs)...}),
        first_(std::get<0>(std::tuple(programs...))) {}
  explicit DistributedWorker(const DistributedConfig& config, Programs... programs)
      : DistributedWorker(config, WorkerOptions{}, programs...) {}

  /// The single-program shortcut: `rt(args...)` runs the worker's only program.
  template <class... A>
  requires(sizeof...(Programs) == 1) void operator()(A&&... args) { run(first_, std::forward<A>(args)...); }

  /// Runs `program` (registered with this worker) with `args` and waits for it.
  template <class R, class... P, class... A>
  void run(R (*program)(Host&, P...), A&&... args) {
    static_assert(std::is_void_v<R>, "pld::DistributedWorker: a program returns void");
    static_assert(sizeof...(P) == sizeof...(A), "pld::DistributedWorker: pass one argument per program parameter");
    core_.run(reinterpret_cast<void (*)()>(program), [&](Host& h) { program(h, args...); });
  }

  /// Starts `program` and returns at once (after recording it). At most two calls are in flight;
  /// a third submit waits for the oldest. Keep the arguments alive until the handle is done.
  template <class R, class... P, class... A>
  RunHandle submit(R (*program)(Host&, P...), A&&... args) {
    static_assert(std::is_void_v<R>, "pld::DistributedWorker: a program returns void");
    static_assert(sizeof...(P) == sizeof...(A), "pld::DistributedWorker: pass one argument per program parameter");
    return detail::Access::make<RunHandle>(
        core_.submit(reinterpret_cast<void (*)()>(program), [&](Host& h) { program(h, args...); }));
  }

  /// Runs `program(args...)` `warmup` times, then `rounds` times one after another, and returns
  /// per-dispatch statistics (the model's benchmark()): total, host part, rank part, kernels.
  template <class R, class... P, class... A>
  BenchmarkStats benchmark(int rounds, int warmup, R (*program)(Host&, P...), A&&... args) {
    static_assert(std::is_void_v<R>, "pld::DistributedWorker: a program returns void");
    static_assert(sizeof...(P) == sizeof...(A), "pld::DistributedWorker: pass one argument per program parameter");
    return core_.benchmark(
        reinterpret_cast<void (*)()>(program), [&](Host& h) { program(h, args...); }, rounds, warmup);
  }

  // ----- Resident tensors (device_tensor.hpp) --------------------------------------------------

  /// A tensor of `shape` resident in world rank `worker_id`'s process, zero-filled or copied from
  /// `init` (numel(shape) elements of any host memory).
  template <Element T>
  DeviceTensor<T> alloc_tensor(const Dims& shape, int worker_id = 0, std::span<const T> init = {}) {
    detail::check_shape("DistributedWorker::alloc_tensor", shape, sizeof(T));
    const auto bytes = static_cast<std::uint64_t>(shape.numel()) * sizeof(T);
    if (!init.empty() && init.size() != static_cast<std::size_t>(shape.numel()))
      detail::WorkerCore::size_mismatch("DistributedWorker::alloc_tensor (init)", init.size_bytes(), bytes);
    return detail::Access::make<DeviceTensor<T>>(
        core_.device_alloc("DistributedWorker::alloc_tensor", worker_id, bytes, init.empty() ? nullptr : init.data()),
        shape);
  }
  template <Element T>
  DeviceTensor<T> alloc_tensor(const Dims& shape, int worker_id, const std::vector<T>& init) {
    return alloc_tensor<T>(shape, worker_id, std::span<const T>(init));
  }
  /// Releases the tensor's memory in its rank process; every handle copy becomes invalid.
  template <Element T>
  void free_tensor(const DeviceTensor<T>& t) {
    core_.device_free("DistributedWorker::free_tensor", t.allocation());
  }
  /// Host memory -> resident tensor (exactly numel() elements).
  template <Element T>
  void copy_to(const DeviceTensor<T>& dst, std::type_identity_t<std::span<const T>> src) {
    core_.check_owned("DistributedWorker::copy_to", dst.allocation());
    if (src.size() != static_cast<std::size_t>(dst.numel()))
      detail::WorkerCore::size_mismatch("DistributedWorker::copy_to", src.size_bytes(), dst.allocation()->bytes);
    core_.device_write("DistributedWorker::copy_to", dst.allocation(), 0, src.data(), src.size_bytes());
  }
  /// Resident tensor -> host memory (exactly numel() elements).
  template <Element T>
  void copy_from(std::type_identity_t<std::span<T>> dst, const DeviceTensor<T>& src) {
    core_.check_owned("DistributedWorker::copy_from", src.allocation());
    if (dst.size() != static_cast<std::size_t>(src.numel()))
      detail::WorkerCore::size_mismatch("DistributedWorker::copy_from", dst.size_bytes(), src.allocation()->bytes);
    core_.device_read("DistributedWorker::copy_from", src.allocation(), 0, dst.data(), dst.size_bytes());
  }
  template <Element T>
  std::vector<T> to_vector(const DeviceTensor<T>& src) {
    std::vector<T> out(static_cast<std::size_t>(src.numel()));
    copy_from(std::span<T>(out), src);
    return out;
  }

  /// Splits `host` ([B, shard...], row-major) into B resident shards, shard i on world rank
  /// `worker_ids[i]` (default 0..B-1). On any failure every shard already made is freed.
  template <Element T>
  StackedDeviceTensor<T> alloc_stacked_tensor(const Dims& full_shape, std::type_identity_t<std::span<const T>> host,
                                              std::vector<int> worker_ids = {}) {
    const char* api = "DistributedWorker::alloc_stacked_tensor";
    detail::check_shape(api, full_shape, sizeof(T));
    if (full_shape.size() < 1 || full_shape[0] < 1)
      detail::throw_usage(std::string(api) + ": shape " + full_shape.str() +
                          " needs a leading batch dimension B >= 1 (at least one shard)");
    const Index batch = full_shape[0];
    if (host.size() != static_cast<std::size_t>(full_shape.numel()))
      detail::WorkerCore::size_mismatch(api, host.size_bytes(),
                                        static_cast<std::uint64_t>(full_shape.numel()) * sizeof(T));
    worker_ids = stacked_ids(api, batch, std::move(worker_ids));
    const Dims shard = full_shape.drop_front();
    const auto n = static_cast<std::size_t>(shard.numel());
    std::vector<DeviceTensor<T>> shards;
    try {
      for (Index i = 0; i < batch; ++i)
        shards.push_back(alloc_tensor<T>(shard, worker_ids[static_cast<std::size_t>(i)],
                                         host.subspan(static_cast<std::size_t>(i) * n, n)));
    } catch (...) {
      for (auto& s : shards) try {
          free_tensor(s);
        } catch (...) {
        }
      throw;
    }
    return StackedDeviceTensor<T>(std::move(shards), full_shape, std::move(worker_ids));
  }
  /// All shards -> host memory laid out as full_shape().
  template <Element T>
  void copy_stacked_from(std::type_identity_t<std::span<T>> host, const StackedDeviceTensor<T>& src) {
    if (host.size() != static_cast<std::size_t>(src.full_shape().numel()))
      detail::WorkerCore::size_mismatch("DistributedWorker::copy_stacked_from", host.size_bytes(),
                                        static_cast<std::uint64_t>(src.full_shape().numel()) * sizeof(T));
    std::size_t at = 0;
    for (const auto& s : src.shards()) {
      copy_from(host.subspan(at, static_cast<std::size_t>(s.numel())), s);
      at += static_cast<std::size_t>(s.numel());
    }
  }
  /// Frees every shard.
  template <Element T>
  void free_stacked_tensor(const StackedDeviceTensor<T>& t) {
    for (const auto& s : t.shards()) free_tensor(s);
  }

  /// Waits for every accepted call (in submission order), then ends the rank processes.
  /// Idempotent and thread-safe; every call after it raises.
  void close() { core_.close(); }
  /// Number of ranks.
  int world_size() const { return core_.world_size(); }

 private:
  std::vector<int> stacked_ids(const char* api, Index batch, std::vector<int> ids) const {
    return core_.stacked_ids(api, batch, std::move(ids));
  }

  detail::WorkerCore core_;
  std::tuple_element_t<0, std::tuple<Programs...>> first_;  // for the single-program shortcut
};

}  // namespace pld
