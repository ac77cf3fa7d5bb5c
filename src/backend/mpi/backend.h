// mpi backend: every MPI process is one rank. Its window heap is one MPI-3 RMA window on pld's
// own communicator (MPI_Win_allocate, passive target, locked once), holding the data and the
// signals of every comm domain at the same offsets as on shm; a small control window holds each
// rank's abort word and the lock of the fp16/bf16 atomic add. Peers are reached only through
// MPI_Put / MPI_Get / MPI_Accumulate: heap_base(peer) is nullptr, and the collectives take their
// RMA path. docs/design/mpi-backend.md explains every choice with the measurements behind it.
#pragma once

#include "backend/backend.h"

#include <mpi.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace pld::detail {

class MpiBackend final : public Backend {
 public:
  /// The process's backend. The first call initialises MPI (unless the program did), creates
  /// pld's communicator and control window, measures whether passive-target progress works and
  /// logs the MPI components in use. MPI is finalised at exit.
  static MpiBackend& instance();

  const char* name() const override { return "mpi"; }
  int world_size() const override { return size_; }
  std::uint64_t heap_bytes() const override { return heap_bytes_; }
  std::byte* heap_base(int rank) const override { return rank == rank_ ? base_ : nullptr; }

  void put(int rank, std::uint64_t offset, const void* src, std::size_t bytes) override;
  void get(void* dst, int rank, std::uint64_t offset, std::size_t bytes) override;
  void atomic_add(int rank, std::uint64_t offset, const void* src, std::size_t count, DType dtype) override;
  void notify(int rank, std::uint64_t offset, std::int32_t value, NotifyOp op) override;
  WaitStatus wait(std::uint64_t offset, std::int32_t expected, WaitCmp cmp, const WaitSite& site,
                  std::int32_t* seen) override;

  int rank() const { return rank_; }
  MPI_Comm comm() const { return comm_; }
  /// One line: library, ranks and nodes, osc component, thread level, progress.
  const std::string& description() const { return description_; }

  /// Collective: makes the heap window at least `bytes` long (every process passes the same
  /// value). A bigger window replaces the old one and takes over its contents (persistent
  /// windows keep their data). 0 frees both windows (at exit).
  void reserve_heap(std::uint64_t bytes);
  /// Every put and accumulate of this process is complete at its target.
  void quiet();
  /// Makes this process's stores into its own heap visible to RMA (and RMA updates to its loads).
  void sync_local();
  void set_wait_policy(double timeout, std::int64_t spin) {
    wait_timeout_ = timeout;
    wait_spin_ = spin;
  }
  double wait_timeout() const { return wait_timeout_; }
  /// Releases every wait of every rank (theirs return Aborted): sets each rank's abort word.
  void abort_all();
  /// Clears this rank's abort word (start of a call, before the call's first barrier).
  void clear_abort();
  bool aborting() const override;
  /// Drives MPI progress once if no other thread is inside MPI.
  void progress() override;
  void acquire() override { sync_local(); }
  /// Runs one nonblocking collective on pld's communicator to completion: `start(comm, &request)`
  /// (e.g. MPI_Ibcast) is called under the MPI mutex, then the request is tested with yields —
  /// Open MPI's blocking calls would busy-poll and starve the ranks they wait for when ranks
  /// outnumber cores. Returns false when `limit` seconds (if > 0) pass first.
  template <class Start>
  bool collective(Start&& start, double limit = 0) {
    MPI_Request request;
    {
      std::lock_guard lock(mutex_);
      start(comm_, &request);
    }
    return complete(request, limit);
  }
  void barrier() {
    collective([](MPI_Comm comm, MPI_Request* request) { MPI_Ibarrier(comm, request); });
  }
  /// Turns a failed MPI call into a pld::Error naming it.
  void check(int rc, const char* what) const;

  /// The process-wide lock around every MPI call (Open MPI's osc/ucx misbehaves with concurrent
  /// calls from several threads; design §5).
  std::mutex& mpi_mutex() { return mutex_; }

 private:
  MpiBackend();
  void probe_progress();
  bool complete(MPI_Request& request, double limit);
  void flush_dirty();
  void fp16_add(int rank, std::uint64_t offset, const void* src, std::size_t count, DType dtype);

  mutable std::mutex mutex_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  MPI_Win heap_ = MPI_WIN_NULL, control_ = MPI_WIN_NULL;
  std::byte* base_ = nullptr;
  std::int32_t* control_base_ = nullptr;
  std::uint64_t heap_bytes_ = 0;
  std::vector<char> dirty_;  // per rank: puts/accumulates not yet flushed to it
  int dirty_count_ = 0;
  bool passive_progress_ = false;
  double wait_timeout_ = 300;
  std::int64_t wait_spin_ = 0;
  std::string osc_;
  std::string description_;
};

/// Installs the SIGTERM handler that says what this rank was waiting on when mpirun ended the job.
void install_termination_report();

/// Control window layout (bytes): each rank's abort word, its fp16/bf16 lock, the progress probe.
inline constexpr std::uint64_t kControlAbort = 0;
inline constexpr std::uint64_t kControlLock = 64;
inline constexpr std::uint64_t kControlProbe = 128;
inline constexpr std::uint64_t kControlBytes = 192;

}  // namespace pld::detail
