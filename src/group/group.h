// The control path's interface: a group of rank processes that executes recorded orchestrator
// calls. Two implementations, chosen at start-up from the backend kind (make_group):
//   shm/  ShmGroup: forks one process per rank on this machine and streams each rank its
//         dispatches over a socket (fork, channel, doorbell, the rank's message loop);
//   mpi/  MpiGroup: every MPI process is one rank and replays the same recorded call (SPMD),
//         running only its own dispatches (built only with MPI).
// pld::run and DistributedWorker talk to this interface only.
#pragma once

#include "rank/dispatch.h"

#include <pld/host.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pld::detail {

class HostSession;

struct GroupOptions {
  BackendKind backend = BackendKind::Shm;  // Shm or Mpi (resolved, never Auto)
  std::vector<int> device_ids;
  std::uint64_t heap_bytes = 0;
  bool huge_pages = true;  // PLD_HUGE_PAGES: madvise the shm heaps for transparent huge pages
  double wait_timeout = 0;
  double wait_note = 0;  // PLD_WAIT_NOTE: first "still waiting" note (s), 0 none
  std::int64_t wait_spin = 0;
  double startup_timeout = 30;
  bool swimlane = false;
  std::string dfx_dir;
  // Zero the windows as a call ends, each rank its own and in parallel, instead of on the host as
  // the next call begins (a worker without persistent windows: the next call wipes them anyway).
  bool wipe_after_call = false;
};

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;

  virtual int world_size() const = 0;
  /// Runs one recorded orchestrator call to completion (dispatches and host callbacks); throws
  /// RankError on a rank failure and the callback's exception when a host callback fails.
  virtual void execute(const HostSession& session) = 0;
  /// The slowest rank's time inside kernels during the last execute(), in seconds.
  virtual double last_kernel_seconds() const = 0;
  /// Applies one resident-tensor operation on rank `r` between calls and waits for it; throws the
  /// rank's error, or RankError if the rank died.
  virtual void device_op(int r, const DeviceOp& op) = 0;
  /// Ends the rank processes (idempotent).
  virtual void shutdown() noexcept = 0;
  /// Starts a new process for every rank that died (recovery); returns their ranks. Windows are
  /// cleared before the next call.
  virtual std::vector<int> replace_lost_ranks() = 0;
  virtual bool alive(int r) const = 0;
  bool all_alive() const;
};

/// The options of a group for `config`: validates it, resolves the backend (BackendKind::Auto:
/// mpi when an MPI launcher started the process, backend/launcher.h) and reads the settings.
/// Throws UsageError for a bad config or setting.
GroupOptions group_options(const DistributedConfig& config);

/// Starts the group `options.backend` names (for shm: forks the rank processes).
std::unique_ptr<ProcessGroup> make_group(const GroupOptions& options);

}  // namespace pld::detail
