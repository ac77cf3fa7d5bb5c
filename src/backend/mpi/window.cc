// Windows of the mpi backend. The heap window is sized to what the calls need (osc/rdma commits
// the whole window in /dev/shm at allocation: 1.2 s for 256 MiB x 4 ranks, design §3) and
// replaced by a bigger one when a call needs more; the old contents (persistent buffers) are
// carried over with a local copy on every process.
#include "backend/mpi/backend.h"
#include "core/log.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace pld::detail {

void MpiBackend::reserve_heap(std::uint64_t bytes) {
  std::unique_lock lock(mutex_);
  if (bytes == 0) {  // at exit: free both windows (collective)
    if (heap_ != MPI_WIN_NULL) {
      MPI_Win_unlock_all(heap_);
      MPI_Win_free(&heap_);
    }
    if (control_ != MPI_WIN_NULL) {
      MPI_Win_unlock_all(control_);
      MPI_Win_free(&control_);
    }
    base_ = nullptr;
    heap_bytes_ = 0;
    return;
  }
  if (bytes <= heap_bytes_) return;
  std::uint64_t size = 1u << 20;
  while (size < bytes) size *= 2;
  std::vector<std::byte> kept;
  if (heap_ != MPI_WIN_NULL) {
    MPI_Win_sync(heap_);
    kept.assign(base_, base_ + heap_bytes_);
    MPI_Win_unlock_all(heap_);
    MPI_Win_free(&heap_);
    base_ = nullptr;
    heap_bytes_ = 0;
  }
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "same_size", "true");
  MPI_Info_set(info, "same_disp_unit", "true");
  void* base = nullptr;
  const int rc = MPI_Win_allocate(static_cast<MPI_Aint>(size), 1, info, comm_, &base, &heap_);
  MPI_Info_free(&info);
  check(rc, "MPI_Win_allocate (window heap)");
  MPI_Win_set_errhandler(heap_, MPI_ERRORS_RETURN);
  base_ = static_cast<std::byte*>(base);
  heap_bytes_ = size;
  if (!kept.empty()) std::memcpy(base_, kept.data(), kept.size());
  check(MPI_Win_lock_all(MPI_MODE_NOCHECK, heap_), "MPI_Win_lock_all (window heap)");
  MPI_Win_sync(heap_);
  lock.unlock();
  barrier();
  log(LogLevel::Debug, LogSys::Init, "window heap: {} bytes", size);
}

void MpiBackend::sync_local() {
  std::lock_guard lock(mutex_);
  if (heap_ != MPI_WIN_NULL) MPI_Win_sync(heap_);
}

}  // namespace pld::detail
