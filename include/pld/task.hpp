// pld — the per-rank task model: inside a kernel, split work into named tasks with dependencies
// that the rank's scheduler runs on `threads` threads (the model's core_num), and let a dedicated
// waiter task complete only when signal conditions hold (deferred completion, defer_wait).
//
//   void kernel(pld::DistributedTensor<float> v, pld::DistributedTensor<int32_t> sig, ...) {
//     pld::TaskGraph g(2, "step");                                   // 2 threads
//     auto send = g.add("send", [&] { pld::tensor::put(v, peer, x); pld::system::notify(sig, peer, {me, 0}, 1,
//     pld::NotifyOp::AtomicAdd); }); auto recv = g.add("await", [&] { pld::system::defer_wait(sig, {peer, 0}, 1); });
//     // returns at once g.add("use", [&] { ... read v ... }, {recv});                  // starts only when sig[peer,
//     0] >= 1 g.run();                                                       // returns when every task completed
//   }
//
// A waiter task registers its conditions with defer_wait and returns; its TaskId completes only
// when every condition holds (the wait deadline, PLD_WAIT_TIMEOUT, applies from registration).
// Limits: kMaxDeferConditions conditions per waiter task, kMaxDeferredTasks waiter tasks deferred
// at once per graph. With swimlanes on (PLD_SWIMLANE=1) every task's timing and the dependency
// edges are recorded (docs/04-debugging.md).
#pragma once

#include <pld/export.hpp>
#include <pld/kernel.hpp>
#include <pld/types.hpp>
#include <pld/window.hpp>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace pld {

/// Conditions one waiter task may register (PyPTO: 64).
inline constexpr int kMaxDeferConditions = 64;
/// Waiter tasks that may be deferred at the same time in one graph (PyPTO: 64).
inline constexpr int kMaxDeferredTasks = 64;
/// Threads of one TaskGraph.
inline constexpr int kMaxTaskThreads = 64;

namespace detail {
struct TaskGraphImpl;  // the scheduler (src/task/task_graph.cc)
}

/// Identifies a task of a TaskGraph (its position, from 0).
struct TaskId {
  int value = -1;
  friend bool operator==(TaskId, TaskId) = default;
};

/// Named tasks with dependencies, executed by the calling rank on `threads` threads.
class PLD_API TaskGraph {
 public:
  /// `threads` in [1, kMaxTaskThreads]; `name` labels the scope in swimlanes.
  explicit TaskGraph(int threads = 1, std::string name = "tasks");
  ~TaskGraph();
  TaskGraph(const TaskGraph&) = delete;
  TaskGraph& operator=(const TaskGraph&) = delete;

  /// Adds a task that starts once every task in `deps` (added earlier) has completed.
  TaskId add(std::string name, std::function<void()> body, std::initializer_list<TaskId> deps = {});
  TaskId add(std::string name, std::function<void()> body, const std::vector<TaskId>& deps);

  /// Runs every task; returns when all completed. The first task that throws makes run() throw
  /// that error after the running tasks finish; tasks not started by then are skipped.
  void run();

  /// Number of tasks added so far.
  int size() const;

 private:
  std::unique_ptr<detail::TaskGraphImpl> impl_;
};

namespace system {
/// Inside a task of a running TaskGraph: registers "signal[offsets] cmp expected" (local cell)
/// and returns at once. The task's id completes — and its dependants start — only when every
/// condition it registered holds at one poll. WaitCmp::Ge (the default) treats the cell as a
/// monotonic counter: `expected` must be >= 0 and the comparison is unsigned; the other
/// comparisons are signed, as in wait. Do no communication in the waiter after registering.
inline void defer_wait(const DistributedTensor<std::int32_t>& signal, const Dims& offsets, std::int32_t expected,
                       WaitCmp cmp = WaitCmp::Ge) {
  detail::defer_wait(detail::desc(signal), offsets, expected, cmp);
}
}  // namespace system

}  // namespace pld
