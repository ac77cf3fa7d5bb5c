// DistributedWorker's engine state, shared by worker.cc (calls, lifecycle) and resident.cc
// (resident tensors). One executor thread owns the RankGroup: it forks the ranks (so the ranks'
// parent-death signal follows a thread that lives as long as the worker), executes queued items —
// recorded calls and resident-tensor operations — in submission order, and replaces lost ranks.
#pragma once

#include "host/session.h"
#include "worker/rank_group.h"

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

struct CallState {
  mutable std::mutex mutex;
  mutable std::condition_variable cv;
  bool finished = false;
  std::exception_ptr error;
  // Timing (seconds), for DistributedWorker::benchmark.
  double host_s = 0;    // recording + checks on the submitting thread
  double ranks_s = 0;   // RankGroup::execute
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
    std::function<void(RankGroup&)> control;
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
  int in_flight = 0;   // accepted calls not finished (recorded, queued or executing)
  bool closing = false;
  bool stop = false;
  std::string broken;  // why the worker cannot run calls any more ("" = fine)
  std::thread executor;
  std::once_flag close_once;

  // Resident allocations by id (executor thread and API callers; guarded by `mutex`).
  std::uint32_t next_device = 1;
  std::unordered_map<std::uint32_t, std::shared_ptr<DeviceAllocation>> devices;

  void run_executor(std::promise<void>& started);
  void execute(RankGroup& group, Item& item);
  /// Queues a control operation behind every accepted call and waits for it; rethrows its error.
  void control(const char* op, std::function<void(RankGroup&)> fn);
  /// Throws if the worker is closed or broken (`op` names the API).
  void check_usable(const char* op);
  /// Marks the resident tensors of `lost` ranks as lost (their process is gone).
  void forget_devices(const std::vector<int>& lost);
};

}  // namespace pld::detail
