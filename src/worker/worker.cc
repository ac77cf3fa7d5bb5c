// DistributedWorker: lifecycle, calls and benchmark. Callers record their calls on their own
// thread; at most two calls are in flight; the executor thread (worker_core.h) runs them in order.
#include "core/log.h"
#include "core/settings.h"
#include "worker/worker_core.h"

#include <pld/error.hpp>
#include <pld/worker.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <future>
#include <limits>
#include <mutex>
#include <thread>

namespace pld::detail {

namespace {
constexpr int kMaxInFlight = 2;

void check_timeout(const char* api, double timeout) {
  if (std::isnan(timeout) || timeout < 0)
    throw UsageError(
        fmt::format("RunHandle::{}: timeout {} must be non-negative (infinity waits forever)", api, timeout));
}
}  // namespace

bool call_done(const CallState& s) {
  std::lock_guard lock(s.mutex);
  return s.finished;
}

bool call_wait(const CallState& s, double timeout) {
  check_timeout("wait", timeout);
  std::unique_lock lock(s.mutex);
  if (std::isinf(timeout)) {
    s.cv.wait(lock, [&] { return s.finished; });
    return true;
  }
  return s.cv.wait_for(lock, std::chrono::duration<double>(timeout), [&] { return s.finished; });
}

void call_result(const CallState& s, double timeout) {
  check_timeout("result", timeout);
  if (!call_wait(s, timeout))
    throw Error(
        fmt::format("RunHandle::result: the call did not finish within {} s; it keeps running — wait again "
                    "or close the worker",
                    timeout));
  std::lock_guard lock(s.mutex);
  if (s.error) std::rethrow_exception(s.error);
}

std::exception_ptr WorkerCore::Impl::run_item(ProcessGroup& g, Item& item) {
  std::exception_ptr error;
  const auto t0 = std::chrono::steady_clock::now();
  t_executing_item = true;
  try {
    if (item.session)
      g.execute(*item.session);
    else
      item.control(g);
  } catch (...) {
    error = std::current_exception();
  }
  t_executing_item = false;
  item.state->ranks_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (item.session) item.state->kernel_s = g.last_kernel_seconds();
  return error;
}

void WorkerCore::Impl::after_item(ProcessGroup& g, const std::exception_ptr& error) {
  if (g.all_alive()) return;
  std::vector<int> lost;
  for (int r = 0; r < g.world_size(); ++r)
    if (!g.alive(r)) lost.push_back(r);
  forget_devices(lost);
  if (options.recovery) {
    try {
      g.replace_lost_ranks();  // forks: only on the executor thread
    } catch (const std::exception& e) {
      std::lock_guard lock(mutex);
      broken = fmt::format("replacing a lost rank failed: {}", e.what());
    }
    return;
  }
  std::string why = "a rank process died";
  try {
    if (error) std::rethrow_exception(error);
  } catch (const std::exception& e) {
    why = e.what();
  }
  std::lock_guard lock(mutex);
  broken = fmt::format("{} (recovery is off)", why);
}

void WorkerCore::Impl::run_executor(std::promise<void>& started) {
  std::unique_ptr<ProcessGroup> owned;
  try {
    owned = make_group(group_options);
    group = owned.get();
    started.set_value();
  } catch (...) {
    started.set_exception(std::current_exception());
    return;
  }
  for (;;) {
    Item item;
    std::string why;
    {
      std::unique_lock lock(mutex);
      // Leave only once stopped and drained: nothing queued, running, or being recorded.
      cv.wait(lock, [&] { return !executing && (!queue.empty() || (stop && in_flight == 0)); });
      if (queue.empty()) {
        group = nullptr;
        break;
      }
      item = std::move(queue.front());
      queue.pop_front();
      executing = true;
      why = broken;
    }
    if (!why.empty()) {
      item.state->finish(std::make_exception_ptr(
          Error(fmt::format("DistributedWorker: the worker is broken: {}; create a new worker", why))));
    } else {
      const std::exception_ptr error = run_item(*group, item);
      after_item(*group, error);
      item.state->finish(error);
    }
    {
      std::lock_guard lock(mutex);
      executing = false;
      if (item.session) --in_flight;
    }
    cv.notify_all();
  }
  owned->shutdown();
}

WorkerCore::WorkerCore(const DistributedConfig& config, const WorkerOptions& options, std::vector<void (*)()> programs)
    : impl_(std::make_unique<Impl>()) {
  if (programs.empty()) throw UsageError("DistributedWorker: give at least one program");
  if (options.startup_timeout < 0 || !std::isfinite(options.startup_timeout))
    throw UsageError(
        fmt::format("DistributedWorker: startup_timeout {} must be positive and finite (0 = "
                    "PLD_STARTUP_TIMEOUT)",
                    options.startup_timeout));
  if (options.reset_persistent_windows.value_or(false) && !options.persistent)
    throw UsageError(
        "DistributedWorker: reset_persistent_windows = true requires persistent = true (only persistent "
        "windows outlive a call); set WorkerOptions::persistent or leave reset_persistent_windows unset");
  static std::atomic<std::uint64_t> next_uid{0};
  impl_->uid = ++next_uid;
  impl_->config = config;
  impl_->options = options;
  impl_->group_options = group_options(config);
  if (options.startup_timeout > 0) impl_->group_options.startup_timeout = options.startup_timeout;
  impl_->group_options.wipe_after_call = !options.persistent;
  impl_->programs = std::move(programs);
  if (options.persistent)
    impl_->layout =
        std::make_shared<PersistentLayout>(config.world_size(), options.reset_persistent_windows.value_or(true));
  std::promise<void> started;
  auto ready = started.get_future();
  impl_->executor = std::thread([this, &started] { impl_->run_executor(started); });
  try {
    ready.get();
  } catch (...) {
    impl_->executor.join();
    throw;
  }
}

WorkerCore::~WorkerCore() {
  try {
    close();
  } catch (...) {
  }
}

int WorkerCore::world_size() const {
  return impl_->config.world_size();
}

std::shared_ptr<CallState> WorkerCore::submit(void (*program)(), const std::function<void(Host&)>& record) {
  Impl::Item item = impl_->record_call(program, record);
  auto state = item.state;
  {
    std::lock_guard lock(impl_->mutex);
    impl_->queue.push_back(std::move(item));
  }
  impl_->cv.notify_all();
  return state;
}

std::shared_ptr<CallState> WorkerCore::Impl::run_now(void (*program)(), const std::function<void(Host&)>& record) {
  Item item = record_call(program, record);
  auto state = item.state;
  {
    std::unique_lock lock(mutex);
    if (!queue.empty() || executing || !broken.empty() || !group) {
      // Something runs or waits already: keep the order, let the executor take it.
      queue.push_back(std::move(item));
      lock.unlock();
      cv.notify_all();
      call_wait(*state, std::numeric_limits<double>::infinity());
      return state;
    }
    executing = true;  // the execution token: this thread runs the call itself (no hand-offs)
  }
  const std::exception_ptr error = run_item(*group, item);
  const bool lost = !group->all_alive();
  auto recovery = std::make_shared<CallState>();
  bool wake = false;
  {
    std::lock_guard lock(mutex);
    executing = false;
    --in_flight;
    // Recovery forks, which only the executor thread may do: it goes first in the queue.
    if (lost)
      queue.push_front(Item{nullptr,
                            [error](ProcessGroup&) {
                              if (error) std::rethrow_exception(error);
                            },
                            recovery});
    // Wake the executor or a recording thread only when one has something to do: an idle
    // executor woken for nothing costs a futex wake-up and a thread switch per call.
    wake = !queue.empty() || stop || recorders_waiting > 0;
  }
  if (wake) cv.notify_all();
  if (lost) call_wait(*recovery, std::numeric_limits<double>::infinity());
  state->finish(error);
  return state;
}

void WorkerCore::run(void (*program)(), const std::function<void(Host&)>& record) {
  auto state = impl_->run_now(program, record);
  call_result(*state, 0);
}

WorkerCore::Impl::Item WorkerCore::Impl::record_call(void (*program)(), const std::function<void(Host&)>& record) {
  Impl& m = *this;
  if (t_executing_item)
    throw UsageError(
        "DistributedWorker: run/submit called from a host callback; callbacks run between the "
        "dispatches of a call and cannot wait for another one — call it after the call returns");
  const auto t0 = std::chrono::steady_clock::now();
  const auto found = std::find(m.programs.begin(), m.programs.end(), program);
  if (found == m.programs.end())
    throw UsageError(
        "DistributedWorker::submit: this program was not registered when the worker was constructed; "
        "pass it to the DistributedWorker constructor");
  {
    std::unique_lock lock(m.mutex);
    if (m.closing) throw UsageError("DistributedWorker::submit() called after close()");
    if (!m.broken.empty())
      throw Error(fmt::format("DistributedWorker: the worker is broken: {}; create a new worker", m.broken));
    ++m.recorders_waiting;
    m.cv.wait(lock, [&] { return m.in_flight < kMaxInFlight || m.closing; });
    --m.recorders_waiting;
    if (m.closing) throw UsageError("DistributedWorker::submit() called after close()");
    ++m.in_flight;  // reserved while this thread records the call
  }
  auto session = std::make_unique<HostSession>(m.config.world_size(), m.group_options.heap_bytes);
  session->set_worker(m.uid);
  if (m.layout) session->set_persistent(m.layout.get(), static_cast<int>(found - m.programs.begin()));
  try {
    Host host = Access::make<Host>(session.get());
    record(host);
    session->finish();
  } catch (...) {
    {
      std::lock_guard lock(m.mutex);
      --m.in_flight;
    }
    m.cv.notify_all();
    throw;
  }
  auto state = std::make_shared<CallState>();
  state->host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return Item{std::move(session), {}, state};
}

void WorkerCore::close() {
  Impl& m = *impl_;
  std::call_once(m.close_once, [&] {
    {
      std::lock_guard lock(m.mutex);
      m.closing = true;
      m.stop = true;  // the executor drains the queue first
    }
    m.cv.notify_all();
    if (m.executor.joinable()) m.executor.join();
    std::lock_guard lock(m.mutex);
    for (auto& [id, a] : m.devices) a->state.store(DeviceAllocation::Closed);
    m.devices.clear();
  });
}

namespace {
BenchmarkStats::Stat stat_of(std::vector<double> v) {
  BenchmarkStats::Stat s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front() * 1e6;
  s.max = v.back() * 1e6;
  const std::size_t n = v.size();
  s.median = (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) * 1e6;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(n) * 1e6;
  return s;
}
}  // namespace

BenchmarkStats WorkerCore::benchmark(void (*program)(), const std::function<void(Host&)>& record, int rounds,
                                     int warmup) {
  if (rounds < 1 || warmup < 0)
    throw UsageError(
        fmt::format("DistributedWorker::benchmark: rounds {} must be >= 1 and warmup {} >= 0", rounds, warmup));
  for (int i = 0; i < warmup; ++i) run(program, record);
  std::vector<double> total, host, ranks, kernels;
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto state = impl_->run_now(program, record);
    call_result(*state, 0);
    total.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    host.push_back(state->host_s);
    ranks.push_back(state->ranks_s);
    kernels.push_back(state->kernel_s);
  }
  BenchmarkStats out;
  out.rounds = rounds;
  out.warmup = warmup;
  out.total = stat_of(total);
  out.host = stat_of(host);
  out.ranks = stat_of(ranks);
  out.kernels = stat_of(kernels);
  return out;
}

}  // namespace pld::detail
