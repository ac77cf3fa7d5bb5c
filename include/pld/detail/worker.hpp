// pld — plumbing of DistributedWorker (internal; included by worker.hpp): the non-template core
// and the state of a submitted call.
#pragma once

#include <pld/device_tensor.hpp>
#include <pld/export.hpp>
#include <pld/types.hpp>

#include <functional>
#include <memory>
#include <type_traits>
#include <vector>

namespace pld {

class Host;
struct DistributedConfig;
struct WorkerOptions;
struct BenchmarkStats;

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
  /// Records and runs a call, waits for it and rethrows its error.
  void run(void (*program)(), const std::function<void(Host&)>& record);
  BenchmarkStats benchmark(void (*program)(), const std::function<void(Host&)>& record, int rounds, int warmup);
  void close();
  int world_size() const;

  // Resident tensors: executed by the rank processes in order with the calls submitted before.
  std::shared_ptr<DeviceAllocation> device_alloc(const char* api, int rank, std::uint64_t bytes, const void* init);
  void device_free(const char* api, const std::shared_ptr<DeviceAllocation>& a);
  void device_write(const char* api, const std::shared_ptr<DeviceAllocation>& a, std::uint64_t offset, const void* src,
                    std::uint64_t bytes);
  void device_read(const char* api, const std::shared_ptr<DeviceAllocation>& a, std::uint64_t offset, void* dst,
                   std::uint64_t bytes);
  /// Throws unless `a` is a live allocation of this worker.
  void check_owned(const char* api, const std::shared_ptr<DeviceAllocation>& a) const;
  [[noreturn]] static void size_mismatch(const char* api, std::uint64_t have, std::uint64_t need);
  /// Validates (or defaults to 0..B-1) the worker ids of a stacked tensor.
  std::vector<int> stacked_ids(const char* api, Index batch, std::vector<int> ids) const;

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
}  // namespace pld
