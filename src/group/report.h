// Report helpers of the process groups: names (ranks, dispatches, kernels) and the SIGUSR1
// snapshot request.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace pld::detail {

class HostSession;

/// "rank 2 (device 5)".
std::string rank_label(const std::vector<int>& device_ids, int rank);
/// "its dispatch #1 (kernel reduce_step)": dispatch `index` of the call, numbered among its
/// rank's own dispatches.
std::string describe_dispatch(const HostSession& session, std::int64_t index);
/// The advice appended to every wait-timeout report.
inline constexpr const char* kWaitTimeoutHint =
    "Every wait needs matching notifies: check that each rank notifies before it waits, and that peers, offsets "
    "and expected values agree.";

/// Demangled name of a kernel function ("reduce_step"), or its address when the binary is
/// stripped (debug/symbols.h).
std::string kernel_name(void (*kernel)());

/// SIGUSR1 while a call executes asks for a snapshot of the hang report: the handler only counts,
/// and the code that executes the call (the shm host loop, an mpi rank's waits) prints when the
/// count changes and carries on. Installed for the lifetime of each object (nested or concurrent
/// calls share one installation); the previous disposition is restored after the last.
class Usr1Handler {
 public:
  Usr1Handler();
  ~Usr1Handler();
  Usr1Handler(const Usr1Handler&) = delete;
  Usr1Handler& operator=(const Usr1Handler&) = delete;
  /// In a process forked while a handler is installed: the disposition from before it.
  static void restore_in_child();
  /// SIGUSR1s received so far.
  static unsigned count();
  static const std::atomic<unsigned>& counter();
};

}  // namespace pld::detail
