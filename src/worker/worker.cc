// DistributedWorker's engine. One executor thread owns the RankGroup: it forks the ranks (so the
// ranks' parent-death signal follows a thread that lives as long as the worker), executes queued
// calls in submission order, and replaces lost ranks. Callers record their calls on their own
// thread; at most two calls are in flight.
#include "core/log.h"
#include "host/session.h"
#include "worker/rank_group.h"

#include <pld/error.hpp>
#include <pld/worker.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <future>
#include <mutex>
#include <thread>

namespace pld::detail {

GroupOptions group_options(const DistributedConfig& config);

struct CallState {
  mutable std::mutex mutex;
  mutable std::condition_variable cv;
  bool finished = false;
  std::exception_ptr error;

  void finish(std::exception_ptr e) {
    {
      std::lock_guard lock(mutex);
      finished = true;
      error = std::move(e);
    }
    cv.notify_all();
  }
};

namespace {
constexpr int kMaxInFlight = 2;

void check_timeout(const char* op, double timeout) {
  if (std::isnan(timeout) || timeout < 0)
    throw UsageError(fmt::format("RunHandle::{}: timeout {} must be non-negative (infinity waits forever)", op, timeout));
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
    throw Error(fmt::format("RunHandle::result: the call did not finish within {} s; it keeps running — wait again "
                            "or close the worker",
                            timeout));
  std::lock_guard lock(s.mutex);
  if (s.error) std::rethrow_exception(s.error);
}

struct WorkerCore::Impl {
  struct Item {
    std::unique_ptr<HostSession> session;
    std::shared_ptr<CallState> state;
  };

  DistributedConfig config;
  WorkerOptions options;
  GroupOptions group_options;
  std::vector<void (*)()> programs;

  std::mutex mutex;
  std::condition_variable cv;
  std::deque<Item> queue;
  int in_flight = 0;   // accepted and not finished (recorded, queued or executing)
  bool closing = false;
  bool stop = false;
  std::string broken;  // why the worker cannot run calls any more ("" = fine)
  std::thread executor;
  std::once_flag close_once;

  void run_executor(std::promise<void>& started);
  void execute(RankGroup& group, Item& item);
};

void WorkerCore::Impl::execute(RankGroup& group, Item& item) {
  std::exception_ptr error;
  try {
    group.execute(*item.session);
  } catch (...) {
    error = std::current_exception();
  }
  if (!group.all_alive()) {
    if (options.recovery) {
      try {
        group.replace_lost_ranks();
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        broken = fmt::format("replacing a lost rank failed: {}", e.what());
      }
    } else {
      std::string why = "a rank process died";
      try {
        if (error) std::rethrow_exception(error);
      } catch (const std::exception& e) {
        why = e.what();
      }
      std::lock_guard lock(mutex);
      broken = fmt::format("{} (recovery is off)", why);
    }
  }
  item.state->finish(error);
}

void WorkerCore::Impl::run_executor(std::promise<void>& started) {
  std::unique_ptr<RankGroup> group;
  try {
    group = std::make_unique<RankGroup>(group_options);
    started.set_value();
  } catch (...) {
    started.set_exception(std::current_exception());
    return;
  }
  for (;;) {
    Item item;
    {
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty()) break;  // stop requested and drained
      item = std::move(queue.front());
      queue.pop_front();
    }
    std::string why;
    {
      std::lock_guard lock(mutex);
      why = broken;
    }
    if (!why.empty())
      item.state->finish(std::make_exception_ptr(
          Error(fmt::format("DistributedWorker: the worker is broken: {}; create a new worker", why))));
    else
      execute(*group, item);
    {
      std::lock_guard lock(mutex);
      --in_flight;
    }
    cv.notify_all();
  }
  group->shutdown();
}

WorkerCore::WorkerCore(const DistributedConfig& config, const WorkerOptions& options,
                       std::vector<void (*)()> programs)
    : impl_(std::make_unique<Impl>()) {
  if (programs.empty()) throw UsageError("DistributedWorker: give at least one program");
  if (options.startup_timeout < 0 || !std::isfinite(options.startup_timeout))
    throw UsageError(fmt::format("DistributedWorker: startup_timeout {} must be positive and finite (0 = "
                                 "PLD_STARTUP_TIMEOUT)",
                                 options.startup_timeout));
  impl_->config = config;
  impl_->options = options;
  impl_->group_options = group_options(config);
  if (options.startup_timeout > 0) impl_->group_options.startup_timeout = options.startup_timeout;
  impl_->programs = std::move(programs);
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

int WorkerCore::world_size() const { return impl_->config.world_size(); }

std::shared_ptr<CallState> WorkerCore::submit(void (*program)(), const std::function<void(Host&)>& record) {
  Impl& m = *impl_;
  if (std::find(m.programs.begin(), m.programs.end(), program) == m.programs.end())
    throw UsageError("DistributedWorker::submit: this program was not registered when the worker was constructed; "
                     "pass it to the DistributedWorker constructor");
  {
    std::unique_lock lock(m.mutex);
    if (m.closing) throw UsageError("DistributedWorker::submit() called after close()");
    if (!m.broken.empty())
      throw Error(fmt::format("DistributedWorker: the worker is broken: {}; create a new worker", m.broken));
    m.cv.wait(lock, [&] { return m.in_flight < kMaxInFlight || m.closing; });
    if (m.closing) throw UsageError("DistributedWorker::submit() called after close()");
    ++m.in_flight;  // reserved while this thread records the call
  }
  auto session = std::make_unique<HostSession>(m.config.world_size(), m.group_options.heap_bytes);
  try {
    Host host(session.get());
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
  {
    std::lock_guard lock(m.mutex);
    m.queue.push_back(Impl::Item{std::move(session), state});
  }
  m.cv.notify_all();
  return state;
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
  });
}

}  // namespace pld::detail
