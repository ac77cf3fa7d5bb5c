// pld — DistributedWorker: fork the ranks once, dispatch many times.
//
//   void step(pld::Host& h, pld::HostTensor<float>& x);   // an orchestrator ("program")
//   pld::DistributedWorker rt(config, step);               // forks the ranks, waits until ready
//   for (int i = 0; i < 1000; ++i) rt(x);                  // each call: record, check, execute
//   auto h = rt.submit(step, y);                           // asynchronous; two calls in flight
//   h.result();                                            // waits, rethrows the call's error
//   rt.close();                                            // or let the destructor do it
//
// Each call runs its orchestrator on the calling thread (recording and checking it, exactly as
// pld::run does) and then executes it on the rank processes, which the worker keeps between calls.
// Calls execute one after another in submission order. When a rank dies during a call, that call
// fails with a RankError naming the rank and the cause, the other ranks are released, and — with
// recovery on (the default) — the worker forks a replacement so that the next call runs normally.
#pragma once

#include <pld/error.hpp>
#include <pld/export.hpp>
#include <pld/host.hpp>

#include <functional>
#include <limits>
#include <memory>
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
};

namespace detail {

struct CallState;

/// The non-template part of DistributedWorker.
class PLD_API WorkerCore {
 public:
  WorkerCore(const DistributedConfig& config, const WorkerOptions& options, std::vector<void (*)()> programs);
  ~WorkerCore();
  WorkerCore(const WorkerCore&) = delete;
  WorkerCore& operator=(const WorkerCore&) = delete;

  /// Records `record` on this thread, then queues the call; blocks while two calls are in flight.
  std::shared_ptr<CallState> submit(void (*program)(), const std::function<void(Host&)>& record);
  void close();
  int world_size() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

PLD_API bool call_done(const CallState& state);
/// Waits up to `timeout` seconds (infinity = forever); true when the call has finished.
PLD_API bool call_wait(const CallState& state, double timeout);
/// Waits, then rethrows the call's error (if any) — to every caller that asks.
PLD_API void call_result(const CallState& state, double timeout);

template <class P>
concept Program = std::is_pointer_v<P> && std::is_function_v<std::remove_pointer_t<P>>;

}  // namespace detail

/// A submitted call. Copies refer to the same call.
class RunHandle {
 public:
  explicit RunHandle(std::shared_ptr<detail::CallState> state) : state_(std::move(state)) {}
  /// True once the call has finished (successfully or not). Never blocks.
  bool done() const { return detail::call_done(*state_); }
  /// Waits up to `timeout` seconds; true when the call has finished.
  bool wait(double timeout = std::numeric_limits<double>::infinity()) const {
    return detail::call_wait(*state_, timeout);
  }
  /// Waits for the call and rethrows its error (the same error to every caller). Throws
  /// pld::Error if it does not finish within `timeout` seconds.
  void result(double timeout = std::numeric_limits<double>::infinity()) const {
    detail::call_result(*state_, timeout);
  }

 private:
  std::shared_ptr<detail::CallState> state_;
};

/// A set of rank processes kept across calls of one or several orchestrator programs
/// (`void program(pld::Host&, Args...)`).
template <class... Programs>
  requires(sizeof...(Programs) >= 1 && (detail::Program<Programs> && ...))
class DistributedWorker {
 public:
  DistributedWorker(const DistributedConfig& config, const WorkerOptions& options, Programs... programs)
      : core_(config, options, {reinterpret_cast<void (*)()>(programs)...}), first_(std::get<0>(std::tuple(programs...))) {}
  explicit DistributedWorker(const DistributedConfig& config, Programs... programs)
      : DistributedWorker(config, WorkerOptions{}, programs...) {}

  /// The single-program shortcut: `rt(args...)` runs the worker's only program.
  template <class... A>
    requires(sizeof...(Programs) == 1)
  void operator()(A&&... args) {
    run(first_, std::forward<A>(args)...);
  }

  /// Runs `program` (registered with this worker) with `args` and waits for it.
  template <class R, class... P, class... A>
  void run(R (*program)(Host&, P...), A&&... args) {
    submit(program, std::forward<A>(args)...).result();
  }

  /// Starts `program` and returns at once (after recording it). At most two calls are in flight;
  /// a third submit waits for the oldest. Keep the arguments alive until the handle is done.
  template <class R, class... P, class... A>
  RunHandle submit(R (*program)(Host&, P...), A&&... args) {
    static_assert(std::is_void_v<R>, "pld::DistributedWorker: a program returns void");
    static_assert(sizeof...(P) == sizeof...(A), "pld::DistributedWorker: pass one argument per program parameter");
    return RunHandle(core_.submit(reinterpret_cast<void (*)()>(program), [&](Host& h) { program(h, args...); }));
  }

  /// Waits for every accepted call (in submission order), then ends the rank processes.
  /// Idempotent and thread-safe; every call after it raises.
  void close() { core_.close(); }
  int world_size() const { return core_.world_size(); }

 private:
  detail::WorkerCore core_;
  std::tuple_element_t<0, std::tuple<Programs...>> first_;  // for the single-program shortcut
};

}  // namespace pld
