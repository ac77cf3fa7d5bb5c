// The per-rank task scheduler (include/pld/task.hpp). Tasks become ready when their last
// dependency completes; `threads` workers (the calling thread and pooled threads) take ready
// tasks in the order they became ready. A task that registered defer_wait conditions is
// "deferred" when its body returns: one worker at a time polls the deferred conditions (spin,
// then yield, then sleep with a growing backoff of at most 1 ms — a deferred wait never spins
// forever) and completes a waiter once all its conditions hold. The wait deadline applies from the
// moment a waiter is deferred; an abort of the job (another rank failed) ends the polling too.
#include "task/task_graph.h"

#include "backend/wait_cmp.h"
#include "core/pool.h"
#include "debug/race.h"
#include "rank/runtime.h"
#include "trace/trace.h"

#include <pld/error.hpp>
#include <pld/task.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define PLD_TASK_RELAX() _mm_pause()
#else
#define PLD_TASK_RELAX() asm volatile("" ::: "memory")
#endif

namespace pld {

using detail::TaskGraphImpl;

namespace {

using Clock = std::chrono::steady_clock;

struct Condition {
  const std::int32_t* cell;
  std::int32_t expected;
  WaitCmp cmp;
  std::string where;
  std::uint64_t offset;  // in the rank's heap (swimlanes)
  std::string buffer;
  // Ge compares unsigned (counters are monotonic and may wrap past INT32_MAX); the other
  // comparisons are signed, as in wait. A condition seen holding is an acquire of the cell (the
  // race detector).
  bool holds() const {
    const std::int32_t v = std::atomic_ref<const std::int32_t>(*cell).load(std::memory_order_acquire);
    const bool yes = cmp == WaitCmp::Ge ? static_cast<std::uint32_t>(v) >= static_cast<std::uint32_t>(expected)
                                        : detail::wait_cmp_holds(v, expected, cmp);
    if (yes && detail::race_on()) detail::race_acquire(cell, offset, v);
    return yes;
  }
};

enum class State { Waiting, Ready, Running, Deferred, Done, Skipped };

struct Task {
  std::string name;
  std::function<void()> body;
  std::vector<int> deps, dependants;
  int pending = 0;
  State state = State::Waiting;
  std::vector<Condition> conditions;
  std::int64_t ready = 0, start = 0, end = 0, finish = 0;
  Clock::time_point deadline{};
  int thread = 0;
};

struct Running {
  TaskGraphImpl* graph;
  int task;
};
thread_local Running* t_running = nullptr;

}  // namespace

struct detail::TaskGraphImpl {
  int threads;
  std::string name;
  std::vector<Task> tasks;
  bool ran = false;

  // Scheduler state (guarded by mutex during run()).
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<int> ready;
  std::vector<int> deferred;
  int running = 0, finished = 0;
  int idle = 0;  // workers asleep in cv.wait (wake them only when there is something for them)
  bool poller = false;
  std::exception_ptr error;
  int peak_ready = 0, peak_running = 0, peak_deferred = 0, peak_conditions = 0;

  void make_ready(int t) {
    tasks[static_cast<std::size_t>(t)].state = State::Ready;
    tasks[static_cast<std::size_t>(t)].ready = detail::trace::now_ns();
    ready.push_back(t);
    peak_ready = std::max(peak_ready, static_cast<int>(ready.size()));
  }
  void complete(int t) {
    Task& task = tasks[static_cast<std::size_t>(t)];
    task.state = State::Done;
    task.finish = detail::trace::now_ns();
    ++finished;
    for (int d : task.dependants)
      if (--tasks[static_cast<std::size_t>(d)].pending == 0 && !error) make_ready(d);
  }
  void fail(std::exception_ptr e) {
    if (!error) error = std::move(e);
    // Nothing else starts: every task not running is skipped.
    for (Task& task : tasks)
      if (task.state == State::Waiting || task.state == State::Ready || task.state == State::Deferred) {
        task.state = State::Skipped;
        ++finished;
      }
    ready.clear();
    deferred.clear();
  }
  void worker(int index);
  /// Polls the deferred conditions (mutex released) until a waiter completes, new tasks are ready,
  /// the deadline passes or the job aborts.
  void poll(std::unique_lock<std::mutex>& lock);
  std::exception_ptr overdue(const std::vector<int>& watch) const;
  void trace_conditions(const Task& task) const;
};

TaskGraph::TaskGraph(int threads, std::string name) : impl_(std::make_unique<TaskGraphImpl>()) {
  if (threads < 1 || threads > kMaxTaskThreads)
    throw UsageError(fmt::format("TaskGraph('{}'): threads {} must be in [1, {}] (the model's core_num)", name, threads,
                                 kMaxTaskThreads));
  impl_->threads = threads;
  impl_->name = std::move(name);
}

TaskGraph::~TaskGraph() = default;

int TaskGraph::size() const {
  return static_cast<int>(impl_->tasks.size());
}

TaskId TaskGraph::add(std::string name, std::function<void()> body, std::initializer_list<TaskId> deps) {
  return add(std::move(name), std::move(body), std::vector<TaskId>(deps));
}

TaskId TaskGraph::add(std::string name, std::function<void()> body, const std::vector<TaskId>& deps) {
  TaskGraphImpl& g = *impl_;
  if (g.ran)
    throw UsageError(fmt::format("TaskGraph('{}')::add('{}'): the graph already ran; build a new one", g.name, name));
  if (!body) throw UsageError(fmt::format("TaskGraph('{}')::add('{}'): the task has no body", g.name, name));
  const int id = static_cast<int>(g.tasks.size());
  Task t;
  for (TaskId d : deps) {
    if (d.value < 0 || d.value >= id)
      throw UsageError(
          fmt::format("TaskGraph('{}')::add('{}'): dependency {} is not a task added earlier to this "
                      "graph (ids 0..{}); add tasks after the ones they depend on",
                      g.name, name, d.value, id - 1));
    if (std::find(t.deps.begin(), t.deps.end(), d.value) == t.deps.end()) t.deps.push_back(d.value);
  }
  t.name = std::move(name);
  t.body = std::move(body);
  for (int d : t.deps) g.tasks[static_cast<std::size_t>(d)].dependants.push_back(id);
  g.tasks.push_back(std::move(t));
  return TaskId{id};
}

// The timeout of the first watched task past its deadline, naming every unmet condition; or none.
std::exception_ptr TaskGraphImpl::overdue(const std::vector<int>& watch) const {
  const auto now = Clock::now();
  for (int t : watch) {
    const Task& task = tasks[static_cast<std::size_t>(t)];
    if (now < task.deadline) continue;
    std::string what;
    for (const Condition& c : task.conditions)
      if (!c.holds())
        what += fmt::format("; {} {} {} (the cell holds {})", c.where, detail::wait_cmp_symbol(c.cmp), c.expected,
                            std::atomic_ref<const std::int32_t>(*c.cell).load());
    return std::make_exception_ptr(WaitTimeoutError(
        fmt::format("defer_wait in task '{}' of TaskGraph('{}'): conditions still unmet at the deadline{}", task.name,
                    name, what)));
  }
  return nullptr;
}

// Swimlanes: each condition of a completed deferred task as a wait, from deferral to completion.
void TaskGraphImpl::trace_conditions(const Task& task) const {
  for (const Condition& c : task.conditions)
    detail::trace::record(detail::trace::Event{detail::trace::Kind::Wait,
                                               task.end,
                                               task.finish,
                                               task.thread,
                                               c.buffer,
                                               -1,
                                               c.offset,
                                               c.expected,
                                               std::atomic_ref<const std::int32_t>(*c.cell).load(),
                                               static_cast<int>(c.cmp),
                                               {}});
}

void TaskGraphImpl::poll(std::unique_lock<std::mutex>& lock) {
  poller = true;
  std::vector<int> watch = deferred;
  const std::size_t ready_before = ready.size();
  lock.unlock();
  detail::RankRuntime* rt = detail::RankRuntime::current();
  const bool spin = rt && rt->may_spin();
  auto sleep = std::chrono::microseconds(20);
  std::vector<int> done;
  std::exception_ptr failure;
  for (int round = 0;; ++round) {
    for (int t : watch) {
      const Task& task = tasks[static_cast<std::size_t>(t)];
      if (std::all_of(task.conditions.begin(), task.conditions.end(), [](const Condition& c) { return c.holds(); }))
        done.push_back(t);
    }
    if (!done.empty()) {
      if (rt) rt->backend_process().acquire();
      break;
    }
    if (rt) rt->backend_process().progress();  // mpi: peers' notifies land only with progress (over TCP)
    if (rt && rt->aborting()) {
      failure = std::make_exception_ptr(
          AbortedError(fmt::format("defer_wait in TaskGraph('{}'): released because another rank failed", name)));
      break;
    }
    if ((failure = overdue(watch))) break;
    {
      std::lock_guard l(mutex);
      if (ready.size() > ready_before || error) break;  // other work to do, or the graph failed
      watch = deferred;                                 // waiters deferred meanwhile by other threads are polled too
    }
    if (spin && round < 2000) {
      PLD_TASK_RELAX();
    } else if (round < 2016) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, std::chrono::microseconds(1000));
    }
  }
  lock.lock();
  poller = false;
  if (failure) {
    fail(failure);
  } else {
    for (int t : done) {
      if (tasks[static_cast<std::size_t>(t)].state != State::Deferred) continue;
      deferred.erase(std::find(deferred.begin(), deferred.end(), t));
      complete(t);
      if (detail::trace::on()) trace_conditions(tasks[static_cast<std::size_t>(t)]);
    }
  }
  cv.notify_all();
}

void TaskGraphImpl::worker(int index) {
  const int thread = detail::trace::thread_index();
  std::unique_lock lock(mutex);
  const int total = static_cast<int>(tasks.size());
  for (;;) {
    if (finished == total && running == 0) break;
    if (!ready.empty()) {
      const int t = ready.front();
      ready.pop_front();
      Task& task = tasks[static_cast<std::size_t>(t)];
      task.state = State::Running;
      task.thread = thread;
      ++running;
      peak_running = std::max(peak_running, running);
      lock.unlock();
      task.start = detail::trace::now_ns();
      Running here{this, t};
      t_running = &here;
      std::exception_ptr e;
      try {
        task.body();
      } catch (...) {
        e = std::current_exception();
      }
      t_running = nullptr;
      task.end = detail::trace::now_ns();
      lock.lock();
      --running;
      if (e || error) {  // it failed, or the graph failed while it ran: it does not complete
        if (e) fail(e);
        task.state = State::Skipped;
        ++finished;
      } else if (!task.conditions.empty()) {
        task.state = State::Deferred;
        task.deadline = Clock::now() +
                        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                            detail::RankRuntime::current() ? detail::RankRuntime::current()->wait_timeout() : 300.0));
        deferred.push_back(t);
        peak_deferred = std::max(peak_deferred, static_cast<int>(deferred.size()));
        if (static_cast<int>(deferred.size()) > kMaxDeferredTasks)
          fail(std::make_exception_ptr(UsageError(fmt::format(
              "TaskGraph('{}'): task '{}' makes {} waiter tasks deferred at once, more than kMaxDeferredTasks = {}; "
              "add dependencies between waiters or merge their conditions",
              name, task.name, deferred.size(), kMaxDeferredTasks))));
      } else {
        complete(t);
      }
      if (idle > 0 && (!ready.empty() || finished == total || (!deferred.empty() && !poller) || error)) cv.notify_all();
      continue;
    }
    if (!deferred.empty() && !poller) {
      poll(lock);
      continue;
    }
    ++idle;
    cv.wait(lock);
    --idle;
  }
  (void)index;
}

void TaskGraph::run() {
  TaskGraphImpl& g = *impl_;
  if (g.ran) throw UsageError(fmt::format("TaskGraph('{}')::run: the graph already ran; build a new one", g.name));
  if (t_running && t_running->graph == impl_.get())
    throw UsageError(fmt::format("TaskGraph('{}')::run: called from one of its own tasks", g.name));
  g.ran = true;
  for (std::size_t i = 0; i < g.tasks.size(); ++i) {
    g.tasks[i].pending = static_cast<int>(g.tasks[i].deps.size());
    if (g.tasks[i].pending == 0) g.make_ready(static_cast<int>(i));
  }
  if (!g.tasks.empty()) {
    const int n = std::min<int>(g.threads, static_cast<int>(g.tasks.size()));
    // Own pool (not the collectives' lanes): a task may run a collective with core_num > 1.
    static detail::ThreadPool* pool = new detail::ThreadPool();
    pool->run(n, [&](int i) { g.worker(i); });
  }
  if (detail::trace::on()) {
    detail::trace::ScopeRecord s;
    s.name = g.name;
    s.threads = g.threads;
    s.peak_ready = g.peak_ready;
    s.peak_running = g.peak_running;
    s.peak_deferred = g.peak_deferred;
    s.peak_conditions = g.peak_conditions;
    for (std::size_t i = 0; i < g.tasks.size(); ++i) {
      const Task& t = g.tasks[i];
      if (t.state != State::Done) continue;
      s.tasks.push_back(detail::trace::TaskRecord{static_cast<int>(i), t.name, g.name, t.thread, t.ready, t.start,
                                                  t.end, t.finish, t.deps});
    }
    detail::trace::record_scope(std::move(s));
  }
  if (g.error) std::rethrow_exception(g.error);
}

namespace detail {

void task_defer(const std::string& op, const std::int32_t* cell, std::int32_t expected, WaitCmp cmp, std::string where,
                std::uint64_t offset, std::string buffer) {
  if (!t_running)
    throw UsageError(
        fmt::format("{}: must be called inside a task of a running TaskGraph (a dedicated waiter task: "
                    "g.add(\"wait\", [&] {{ pld::system::defer_wait(...); }})); outside tasks use "
                    "pld::system::wait",
                    op));
  TaskGraphImpl& g = *t_running->graph;
  std::lock_guard lock(g.mutex);
  Task& task = g.tasks[static_cast<std::size_t>(t_running->task)];
  if (static_cast<int>(task.conditions.size()) >= kMaxDeferConditions)
    throw UsageError(
        fmt::format("{}: task '{}' already registered kMaxDeferConditions = {} conditions; split the "
                    "waiter into several tasks",
                    op, task.name, kMaxDeferConditions));
  task.conditions.push_back(Condition{cell, expected, cmp, std::move(where), offset, std::move(buffer)});
  g.peak_conditions = std::max(g.peak_conditions, static_cast<int>(task.conditions.size()));
}

}  // namespace detail
}  // namespace pld
