// RankGroup: the rank processes of one job on the shm backend. It forks them (once), executes
// recorded orchestrator calls on them — streaming each rank's dispatches in program order over
// its socket, collecting replies, watching for deaths — and, on the first failure, releases every
// other rank's waits and turns the failure into a RankError that names the rank and the cause.
#pragma once

#include "backend/shm/backend.h"
#include "host/session.h"

#include <pld/error.hpp>

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace pld::detail {

struct GroupOptions {
  BackendKind backend = BackendKind::Shm;
  std::vector<int> device_ids;
  std::uint64_t heap_bytes = 0;
  bool huge_pages = true;  // PLD_HUGE_PAGES: madvise the shm heaps for transparent huge pages
  double wait_timeout = 0;
  std::int64_t wait_spin = 0;
  double startup_timeout = 30;
  bool swimlane = false;
  std::string dfx_dir;
};

class MpiGroup;

/// Under the mpi backend (GroupOptions::backend == Mpi) there is nothing to fork: the group
/// delegates execute() to an MpiGroup (worker/mpi_group.h) and its ranks are always alive.
class RankGroup {
 public:
  explicit RankGroup(const GroupOptions& options);
  ~RankGroup();
  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;

  int world_size() const { return static_cast<int>(ranks_.size()); }
  ShmBackend& backend() { return *backend_; }

  /// Runs one recorded orchestrator call to completion (dispatches and host callbacks); throws
  /// RankError on a rank failure and the callback's exception when a host callback fails.
  void execute(const HostSession& session);
  /// The slowest rank's time inside kernels during the last execute(), in seconds.
  double last_kernel_seconds() const { return last_kernel_s_; }

  /// Sends one resident-tensor message (protocol.h DeviceAlloc..DeviceRead) to rank `r` between
  /// calls and waits for its answer; throws the rank's error, or RankError if it died.
  void device_op(int r, std::vector<std::byte> message, int pass_fd);
  /// Asks every rank to exit, then reaps them (SIGKILL after a grace period). Idempotent.
  void shutdown() noexcept;
  /// Forks a new process for every rank that died (recovery); returns their ranks. Windows are
  /// cleared before the next call.
  std::vector<int> replace_lost_ranks();
  bool all_alive() const;
  bool alive(int r) const { return ranks_[static_cast<std::size_t>(r)].alive; }

 private:
  struct Outgoing {
    std::vector<std::byte> bytes;
    int fd = -1;                 // descriptor to pass (Attach)
    std::uint32_t block = 0;     // Attach: the block id
    std::int64_t dispatch = -1;  // index into the call's dispatch list
  };
  /// Index of the first dispatch that must wait for the next host callback (or none).
  std::int64_t gate_ = -1;
  struct Rank {
    pid_t pid = -1;
    int fd = -1;
    bool alive = false;
    std::unordered_set<std::uint32_t> blocks;  // shared blocks this process has mapped
    std::deque<Outgoing> queue;
    std::uint64_t sent = 0, done = 0;
    std::uint64_t packets = 0;           // replies received (compared with Doorbell::replied)
    std::deque<std::int64_t> in_flight;  // dispatch indices sent and not yet answered, oldest first
  };
  struct Failure {
    int rank = -1;
    RankFailure cause = RankFailure::KernelError;
    std::int64_t dispatch = -1;
    std::string text;
    std::string report;
  };

  void fork_ranks();
  void fork_rank(int r);
  /// Waits for every rank in `starting` to say it is ready, up to the startup timeout.
  void await_ready(const std::vector<int>& starting);
  void build_queues(const HostSession& session);
  void pump_sends(int r);
  /// Reads rank r's replies: until the socket is empty, or (counted) as many as its doorbell says.
  void read_replies(int r, const HostSession& session, bool counted = false);
  void on_death(int r);
  /// Marks rank `r` dead, closes its socket and reaps it; returns how it ended.
  std::string mark_dead(int r);
  void fail(Failure failure);
  void drop_dispatches(Rank& rank);
  std::string wait_report(const HostSession& session) const;
  /// Every rank's state, wait, expected writers and last operations, the wait-for graph and its
  /// verdict (debug/hang.h), after `title`; writes the graph as DOT and names the file.
  std::string hang_report(const HostSession& session, const std::string& title) const;
  std::string reap_status(int r);
  std::string who(int r) const;

  GroupOptions options_;
  std::unique_ptr<ShmBackend> backend_;
  std::unique_ptr<MpiGroup> mpi_;
  std::vector<Rank> ranks_;
  std::vector<std::uint64_t> dirty_;  // per rank: heap bytes that may be non-zero
  bool wipe_ = false;                 // zero every dirty byte before the next call (after a loss)
  double last_kernel_s_ = 0;
  std::uint64_t calls_ = 0;               // calls executed (swimlane trace file names)
  std::vector<std::uint64_t> kernel_ns_;  // per rank, during the current call
  std::uint64_t call_base_ = 0;           // sequence number of the current call's first dispatch
  bool aborting_ = false;
  Failure failure_;
  bool shut_down_ = false;
  std::vector<std::byte> recv_buf_;  // reused: a message buffer is kMaxMessage bytes
};

}  // namespace pld::detail
