// Shared by the DistributedWorker binding files (worker.cc: lifecycle and calls;
// worker_resident.cc: resident tensors) and by args.cc (a resident tensor as a dispatch argument):
// the worker object and the resident tensor handle.
#pragma once

#include "bindings.h"

#include <pld/worker.hpp>

#include <memory>
#include <utility>
#include <vector>

namespace pld::python {

/// pld.DeviceTensor: a tensor resident in one rank process of a worker.
struct DeviceTensor {
  std::shared_ptr<detail::DeviceAllocation> alloc;
  Dims shape;
  DType dtype = DType::FP32;
  std::uint64_t bytes() const { return static_cast<std::uint64_t>(shape.numel()) * dtype_size(dtype); }
};

/// pld._pld._Worker: a detail::WorkerCore whose programs are Python orchestrators. Every call
/// that may block or fork releases the GIL (the worker's executor thread forks replacement ranks
/// and runs host callbacks, both of which need it).
class Worker {
 public:
  Worker(const DistributedConfig& config, const py::list& programs, const WorkerOptions& options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  detail::WorkerCore& core();
  int world_size() const { return world_size_; }
  /// The program's position among the registered ones; UsageError naming `api` when absent.
  int program_index(const char* api, const py::handle& program) const;
  /// Drops the arguments of finished calls (kept alive while a call runs).
  void prune_finished();
  void keep_alive(std::shared_ptr<detail::CallState> state, py::object args);
  void close();

 private:
  std::vector<py::object> programs_;
  std::unique_ptr<detail::WorkerCore> core_;
  std::vector<std::pair<std::shared_ptr<detail::CallState>, py::object>> pending_;
  int world_size_ = 0;
};

void bind_worker_resident(py::module_& m, py::class_<Worker>& worker);

}  // namespace pld::python
