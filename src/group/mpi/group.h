// MpiGroup: executes recorded orchestrator calls under the mpi backend (SPMD replay). Every MPI
// process recorded the same call; this one checks that they agree, sizes and zeroes its window
// heap, runs only its own rank's dispatches — in program order, on this thread — and at the end
// (and before each host callback) agrees with its peers on the first failure and merges the
// HostTensor bytes every rank wrote, so that every process ends the call with the same host data
// the shm backend would produce. docs/design/mpi-backend.md §1, §7, §8.
#pragma once

#include "host/session.h"
#include "group/shm/group.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace pld::detail {

class MpiBackend;
class MpiWindow;
class RankRuntime;

class MpiGroup {
 public:
  /// Initialises the mpi backend; throws UsageError unless the config's world size is the MPI
  /// world size.
  explicit MpiGroup(const GroupOptions& options);
  ~MpiGroup();

  int world_size() const;
  /// Runs one call; throws the same RankError on every process when a rank failed.
  void execute(const HostSession& session);
  double last_kernel_seconds() const { return last_kernel_s_; }
  /// A resident-tensor message (protocol.h DeviceAlloc..DeviceRead) for rank `r`: process r
  /// applies it; a read's bytes are then broadcast, so every process continues with the same host
  /// data. Collective; throws rank r's error on every process.
  void device_op(int r, const std::vector<std::byte>& message, int staging_fd);

 private:
  struct Failure {
    int rank = -1;
    bool released = false;  // a wait released by another rank's failure, not a failure of its own
    RankFailure cause = RankFailure::KernelError;
    std::int64_t dispatch = -1;
    std::string text;
  };
  void check_agreement(const HostSession& session) const;
  /// Collective: the call's first failure (a real one before a released wait) on every process.
  Failure agree(const Failure& mine) const;
  /// Collective: the window of every comm domain the call uses (by domain id; nullptr where this
  /// process is not a member), zeroed where the call needs it.
  std::vector<MpiWindow*> open_windows(const HostSession& session);
  /// Collective, after a wait deadline: every rank's ended wait and last operations, analysed as
  /// on shm (debug/hang.h): per-rank lines, expected writers, wait-for graph, verdict, DOT file.
  std::string wait_report(const HostSession& session) const;

  GroupOptions options_;
  MpiBackend* backend_;
  std::unique_ptr<RankRuntime> runtime_;  // this rank's runtime, installed during calls
  std::vector<std::uint64_t> sent_;       // per rank: dispatches of earlier calls (swimlane directories)
  std::uint64_t calls_ = 0;
  double last_kernel_s_ = 0;
  bool merge_ = true;        // PLD_MPI_HOST_SYNC
  std::uint64_t owner_ = 0;  // the persistent worker whose windows this group keeps, or 0
};

}  // namespace pld::detail
