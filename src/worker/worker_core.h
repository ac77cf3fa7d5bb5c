// DistributedWorker's engine state, shared by worker.cc (calls, lifecycle) and resident.cc
// (resident tensors). One executor thread owns the process group (group/group.h): it starts the ranks (so the ranks'
// parent-death signal follows a thread that lives as long as the worker), executes queued items —
// recorded calls and resident-tensor operations — in submission order, and replaces lost ranks.
#pragma once

#include "group/group.h"
#include "host/session.h"

#include <pld/worker.hpp>

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace pld::detail {

/// True on a thread while it executes a worker item (host callbacks run there): such a thread
/// must not wait for the worker.
inline thread_local bool t_executing_item = false;

struct CallState {
  mutable std::mutex mutex;
  mutable std::condition_variable cv;
  bool finished = false;
  std::exception_ptr error;
  // Timing (seconds), for DistributedWorker::benchmark.
  double host_s = 0;    // recording + checks on the submitting thread
  double ranks_s = 0;   // ProcessGroup::execute
  double kernel_s = 0;  // slowest rank's time inside kernels

  void finish(std::exception_ptr e) {
    {
      std::lock_guard lock(mutex);
      finished = true;
      error = std::move(e);
    }
    cv.notify_all();
  }
};

struct WorkerCore::Impl {
  /// One unit of work for the executor: a recorded call, or a control operation.
  struct Item {
    std::unique_ptr<HostSession> session;
    std::function<void(ProcessGroup&)> control;
    std::shared_ptr<CallState> state;
  };

  std::uint64_t uid = 0;  // unique per worker in this process (resident tensors name it)
  DistributedConfig config;
  WorkerOptions options;
  GroupOptions group_options;
  std::vector<void (*)()> programs;
  std::shared_ptr<PersistentLayout> layout;  // persistent windows (nullptr when off)

  std::mutex mutex;
  std::condition_variable cv;
  std::deque<Item> queue;
  int in_flight = 0;          // accepted calls not finished (recorded, queued or executing)
  int recorders_waiting = 0;  // threads in record_call waiting for in_flight to drop
  bool closing = false;
  bool stop = false;
  std::string broken;  // why the worker cannot run calls any more ("" = fine)
  std::thread executor;
  std::once_flag close_once;
  ProcessGroup* group = nullptr;  // owned by the executor thread
  bool executing = false;         // the execution token: one item runs at a time, on whichever thread holds it

  // Resident allocations by id (executor thread and API callers; guarded by `mutex`).
  std::uint32_t next_device = 1;
  std::unordered_map<std::uint32_t, std::shared_ptr<DeviceAllocation>> devices;

  void run_executor(std::promise<void>& started);
  /// Records a call on this thread (counts it in flight; blocks while two are).
  Item record_call(void (*program)(), const std::function<void(Host&)>& record);
  /// Records and executes a call on this thread when nothing else is queued or running (no
  /// thread hand-off), else through the executor; returns the finished state.
  std::shared_ptr<CallState> run_now(void (*program)(), const std::function<void(Host&)>& record);
  /// Runs one item with the execution token held; returns its error.
  std::exception_ptr run_item(ProcessGroup& g, Item& item);
  /// After an item: marks lost resident tensors, replaces lost ranks or breaks the worker
  /// (executor thread only — it forks).
  void after_item(ProcessGroup& g, const std::exception_ptr& error);
  /// Queues a control operation behind every accepted call and waits for it; rethrows its error.
  void control(const char* api, std::function<void(ProcessGroup&)> fn);
  /// Throws if the worker is closed or broken (`op` names the API).
  void check_usable(const char* api);
  /// Marks the resident tensors of `lost` ranks as lost (their process is gone).
  void forget_devices(const std::vector<int>& lost);
};

}  // namespace pld::detail
