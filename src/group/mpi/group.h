// MpiGroup: executes recorded orchestrator calls under the mpi backend (SPMD replay). Every MPI
// process recorded the same call; this one checks that they agree, sizes and zeroes its window
// heap, runs only its own rank's dispatches — in program order, on this thread — and at the end
// (and before each host callback) agrees with its peers on the first failure and merges the
// HostTensor bytes every rank wrote, so that every process ends the call with the same host data
// the shm backend would produce. docs/design/mpi-backend.md §1, §7, §8.
//   group.cc      construction, resident-tensor operations
//   agreement.cc  the same call on every process, the first failure agreed on
//   execute.cc    one call: windows, this rank's runtime, dispatches, host callbacks
//   report.cc     hang reports gathered from every process
//   host_sync.*   HostTensor bytes merged across processes
#pragma once

#include "debug/race.h"
#include "group/group.h"

#include <pld/error.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pld::detail {

class HostSync;
class MpiBackend;
class MpiWindow;
class RankRuntime;
struct MpiWaitRecord;

class MpiGroup final : public ProcessGroup {
 public:
  /// Initialises the mpi backend; throws UsageError unless the config's world size is the MPI
  /// world size.
  explicit MpiGroup(const GroupOptions& options);
  ~MpiGroup() override;
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;

  int world_size() const override;
  /// Runs one call; throws the same RankError on every process when a rank failed.
  void execute(const HostSession& session) override;
  double last_kernel_seconds() const override { return last_kernel_s_; }
  /// Process r applies the operation; a read's bytes are then broadcast, so every process
  /// continues with the same host data. Collective; throws rank r's error on every process.
  void device_op(int r, const DeviceOp& op) override;
  /// Nothing to end: the MPI processes are the ranks (the windows go with the group).
  void shutdown() noexcept override {}
  /// No rank is ever lost here (a failed MPI process ends the job): returns no ranks.
  std::vector<int> replace_lost_ranks() override { return {}; }
  bool alive(int) const override { return true; }

 private:
  struct Failure {
    int rank = -1;
    bool released = false;  // a wait released by another rank's failure, not a failure of its own
    RankFailure cause = RankFailure::KernelError;
    std::int64_t dispatch = -1;
    std::string text;
  };
  /// This process's progress through one call's dispatches.
  struct Replay {
    Failure failure;
    std::uint64_t kernel_ns = 0;
    std::size_t next = 0;
    std::uint64_t mine = 0;    // dispatches of this rank in this call (swimlane directories d{k})
    HostSync* host = nullptr;  // PLD_MPI_HOST_SYNC=merge: what this rank's dispatches wrote
  };

  // agreement.cc
  void check_agreement(const HostSession& session) const;
  /// Collective: the call's first failure (a real one before a released wait) on every process.
  Failure agree(const Failure& mine) const;

  // execute.cc
  /// Collective: the window of every comm domain the call uses (by domain id; nullptr where this
  /// process is not a member), zeroed where the call needs it.
  std::vector<MpiWindow*> open_windows(const HostSession& session);
  /// Defines the blocks and comm domains of this rank's dispatches in its runtime.
  void define_domains(const HostSession& session, const std::vector<MpiWindow*>& windows);
  /// Runs this rank's dispatches before `end` (skipping them after a failure).
  void run_until(const HostSession& session, Replay& replay, std::size_t end);
  /// Runs the dispatches before `end`, then settles: every put complete, the failure agreed on,
  /// host tensors merged. Returns the agreed failure.
  Failure segment(const HostSession& session, Replay& replay, std::size_t end);
  /// Runs the segments between the host callbacks and the callbacks; returns the agreed failure.
  Failure run_segments(const HostSession& session, Replay& replay);
  /// Ends the call: swimlane merge; throws the agreed failure.
  void finish_call(const HostSession& session, const Failure& agreed);

  // report.cc
  /// Collective, after a wait deadline: every rank's ended wait and last operations, analysed as
  /// on shm (group/hang_report.h): per-rank lines, expected writers, wait-for graph, verdict, DOT file.
  std::string wait_report(const HostSession& session) const;
  /// Prints this rank's wait and history on SIGUSR1 (set as the backend's snapshot hook).
  void print_snapshot(const HostSession& session, const MpiWaitRecord& wait) const;

  GroupOptions options_;
  MpiBackend* backend_;
  std::unique_ptr<RankRuntime> runtime_;  // this rank's runtime, installed during calls
  std::unique_ptr<RaceBlock> race_;       // the race detector's block (PLD_DEBUG=race), else null
  std::vector<std::uint64_t> sent_;       // per rank: dispatches of earlier calls (swimlane directories)
  std::uint64_t calls_ = 0;
  double last_kernel_s_ = 0;
  bool merge_ = true;        // PLD_MPI_HOST_SYNC
  std::uint64_t owner_ = 0;  // the persistent worker whose windows this group keeps, or 0
};

}  // namespace pld::detail
