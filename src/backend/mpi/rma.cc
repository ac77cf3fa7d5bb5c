// One-sided data movement of the mpi backend, through a comm domain's window. The calling rank's
// own window and those of members on its node (shared memory) are plain memory: copies, and
// atomic add as on shm (backend/atomic_add.h). Other members: put and get complete locally before
// they return (the kernel may reuse its buffer at once); a put is complete at its target after
// the putter's next notify (signal.cc flushes every target it has written since, in every
// window). Their non-blocking forms skip the local flush: the next notify, fence or quiet
// completes them. put_signal is MPI_Put followed by notify, whose flush of the written targets
// precedes the signal's accumulate (MPI orders neither a put before an accumulate nor two puts). Atomic add is
// MPI_Accumulate(MPI_SUM) for the types MPI has; fp16 and bf16 take the target's lock cell (32-bit compare-and-swap:
// the 64-bit one crashes Open MPI's osc/rdma) and read, add in fp32 and write back under it. In a window that also has
// members elsewhere every atomic add goes through MPI, so that adds from both kinds of member to one cell stay atomic.
#include "backend/atomic_add.h"
#include "backend/mpi/backend.h"
#include "core/copy.h"
#include "reduce/reduce.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstring>
#include <thread>
#include <vector>

namespace pld::detail {

namespace {

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::FP32: return MPI_FLOAT;
    case DType::INT32: return MPI_INT32_T;
    case DType::INT16: return MPI_INT16_T;
    case DType::INT8: return MPI_INT8_T;
    default: return MPI_DATATYPE_NULL;
  }
}

}  // namespace

void MpiWindow::mark_dirty(int t) {
  if (dirty_[static_cast<std::size_t>(t)]) return;
  dirty_[static_cast<std::size_t>(t)] = 1;
  if (dirty_count_++ == 0) {
    engine_.dirty_.push_back(this);
    engine_.dirty_windows_.store(static_cast<int>(engine_.dirty_.size()), std::memory_order_relaxed);
  }
}

void MpiWindow::rma_put(int t, std::uint64_t offset, const void* src, std::size_t bytes) {
  const MPI_Aint disp = static_cast<MPI_Aint>(offset - lo_);
  for_each_mpi_piece(bytes, [&](std::size_t at, int n) {
    engine_.check(MPI_Put(static_cast<const std::byte*>(src) + at, n, MPI_BYTE, t, disp + static_cast<MPI_Aint>(at), n,
                          MPI_BYTE, win_),
                  "MPI_Put");
  });
}

void MpiWindow::rma_get(void* dst, int t, std::uint64_t offset, std::size_t bytes) {
  const MPI_Aint disp = static_cast<MPI_Aint>(offset - lo_);
  for_each_mpi_piece(bytes, [&](std::size_t at, int n) {
    engine_.check(
        MPI_Get(static_cast<std::byte*>(dst) + at, n, MPI_BYTE, t, disp + static_cast<MPI_Aint>(at), n, MPI_BYTE, win_),
        "MPI_Get");
  });
}

void MpiWindow::put(int rank, std::uint64_t offset, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  const int t = target(rank, offset, bytes);
  if (std::byte* at = local_at(rank, offset)) return bulk_copy(at, static_cast<const std::byte*>(src), bytes);
  if (engine_.messages_) return engine_.message_put(rank, id_, offset, src, bytes);
  std::lock_guard lock(engine_.mutex_);
  rma_put(t, offset, src, bytes);
  engine_.check(MPI_Win_flush_local(t, win_), "MPI_Win_flush_local");
  mark_dirty(t);
}

void MpiWindow::put_nbi(int rank, std::uint64_t offset, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  const int t = target(rank, offset, bytes);
  if (std::byte* at = local_at(rank, offset)) return bulk_copy(at, static_cast<const std::byte*>(src), bytes);
  if (engine_.messages_) return engine_.message_put(rank, id_, offset, src, bytes, true);
  std::lock_guard lock(engine_.mutex_);
  rma_put(t, offset, src, bytes);
  mark_dirty(t);  // the next flush completes it, locally and at the target
}

void MpiWindow::put_signal(int rank, std::uint64_t offset, const void* src, std::size_t bytes,
                           std::uint64_t signal_offset, std::int32_t value, NotifyOp op, bool nbi) {
  const int t = target(rank, offset, bytes);
  if (std::byte* at = local_at(rank, offset)) {  // a copy, then the notify: as on shm
    bulk_copy(at, static_cast<const std::byte*>(src), bytes);
    return notify(rank, signal_offset, value, op);
  }
  if (engine_.messages_)
    return engine_.message_put_signal(rank, id_, offset, src, bytes, signal_offset, value, op, nbi);
  {
    std::lock_guard lock(engine_.mutex_);
    rma_put(t, offset, src, bytes);
    mark_dirty(t);
  }
  notify(rank, signal_offset, value, op);  // flushes the put to the target before the accumulate
}

void MpiWindow::get(void* dst, int rank, std::uint64_t offset, std::size_t bytes) {
  if (bytes == 0) return;
  const int t = target(rank, offset, bytes);
  if (const std::byte* at = local_at(rank, offset)) return bulk_copy(static_cast<std::byte*>(dst), at, bytes);
  if (engine_.messages_) return engine_.message_get(dst, rank, id_, offset, bytes);
  std::lock_guard lock(engine_.mutex_);
  rma_get(dst, t, offset, bytes);
  engine_.check(MPI_Win_flush_local(t, win_), "MPI_Win_flush_local");
}

void MpiWindow::get_nbi(void* dst, int rank, std::uint64_t offset, std::size_t bytes) {
  if (bytes == 0) return;
  const int t = target(rank, offset, bytes);
  if (const std::byte* at = local_at(rank, offset)) return bulk_copy(static_cast<std::byte*>(dst), at, bytes);
  if (engine_.messages_) return engine_.message_get(dst, rank, id_, offset, bytes, true);
  std::lock_guard lock(engine_.mutex_);
  rma_get(dst, t, offset, bytes);
  mark_dirty(t);  // the next flush completes it
}

void MpiWindow::atomic_add(int rank, std::uint64_t offset, const void* src, std::size_t count, DType dtype) {
  if (count == 0) return;
  if (all_shared_ || engine_.messages_) {  // every add to a cell is a CPU atomic (at its owner, for messages)
    target(rank, offset, count * dtype_size(dtype));
    if (std::byte* at = local_at(rank, offset)) return atomic_add_local(at, src, count, dtype);
    return engine_.message_add(rank, id_, offset, src, count, dtype);
  }
  const MPI_Datatype type = mpi_type(dtype);
  if (type == MPI_DATATYPE_NULL) return fp16_add(rank, offset, src, count, dtype);
  const std::size_t esz = dtype_size(dtype), per = kMpiPiece / esz;
  const int t = target(rank, offset, count * esz);
  const MPI_Aint disp = static_cast<MPI_Aint>(offset - lo_);
  std::lock_guard lock(engine_.mutex_);
  for (std::size_t at = 0; at < count; at += per) {
    const int n = static_cast<int>(std::min(per, count - at));
    engine_.check(MPI_Accumulate(static_cast<const std::byte*>(src) + at * esz, n, type, t,
                                 disp + static_cast<MPI_Aint>(at * esz), n, type, MPI_SUM, win_),
                  "MPI_Accumulate");
  }
  engine_.check(MPI_Win_flush_local(t, win_), "MPI_Win_flush_local");
  mark_dirty(t);
}

// The per-target lock in the control window (int32 compare-and-swap 0 -> my rank + 1 on the
// target's lock cell), held around a get-modify-put of the target's window: fp16 / bf16 adds and
// the 64-bit atomics of the RMA path (atomic.cc). It also covers updates of my own heap.
void MpiWindow::lock_target(int rank, const char* what) {
  MpiBackend& e = engine_;
  const std::int32_t mine = e.rank_ + 1, zero = 0;
  for (;;) {
    std::int32_t old = -1;
    {
      std::lock_guard lock(e.mutex_);
      e.check(
          MPI_Compare_and_swap(&mine, &zero, &old, MPI_INT32_T, rank, static_cast<MPI_Aint>(kControlLock), e.control_),
          "MPI_Compare_and_swap (target lock)");
      e.check(MPI_Win_flush(rank, e.control_), "MPI_Win_flush");
    }
    if (old == 0) return;
    if (e.aborting()) throw Error(std::string("pld: ") + what + " released because another rank failed");
    // Keep serving the peers' RMA while waiting (over TCP the holder's get/put to this rank
    // completes only when this rank drives progress).
    e.progress();
    std::this_thread::yield();
  }
}

// Under the MPI mutex.
void MpiWindow::unlock_target(int rank) {
  MpiBackend& e = engine_;
  const std::int32_t zero = 0;
  std::int32_t ignored = 0;
  e.check(MPI_Fetch_and_op(&zero, &ignored, MPI_INT32_T, rank, static_cast<MPI_Aint>(kControlLock), MPI_REPLACE,
                           e.control_),
          "MPI_Fetch_and_op (target unlock)");
  e.check(MPI_Win_flush(rank, e.control_), "MPI_Win_flush");
}

// fp16 / bf16: no MPI type, and a user-defined MPI_Op is not allowed in MPI_Accumulate. Lock the
// target, get, add, put, flush, unlock. Chunks of 64 Ki elements keep lock holds short.
void MpiWindow::fp16_add(int rank, std::uint64_t offset, const void* src, std::size_t count, DType dtype) {
  constexpr std::size_t kChunk = 64 * 1024;
  const std::size_t esz = dtype_size(dtype);
  const int t = target(rank, offset, count * esz);
  MpiBackend& e = engine_;
  std::vector<std::byte> cur(std::min(count, kChunk) * esz);
  for (std::size_t at = 0; at < count; at += kChunk) {
    const std::size_t n = std::min(kChunk, count - at), bytes = n * esz;
    lock_target(rank, "atomic add");
    std::lock_guard lock(e.mutex_);
    const MPI_Aint disp = static_cast<MPI_Aint>(offset - lo_ + at * esz);
    e.check(MPI_Get(cur.data(), static_cast<int>(bytes), MPI_BYTE, t, disp, static_cast<int>(bytes), MPI_BYTE, win_),
            "MPI_Get");
    e.check(MPI_Win_flush(t, win_), "MPI_Win_flush");
    const void* srcs[2] = {cur.data(), static_cast<const std::byte*>(src) + at * esz};
    reduce(cur.data(), srcs, 2, n, dtype, ReduceOp::Sum);
    e.check(MPI_Put(cur.data(), static_cast<int>(bytes), MPI_BYTE, t, disp, static_cast<int>(bytes), MPI_BYTE, win_),
            "MPI_Put");
    e.check(MPI_Win_flush(t, win_), "MPI_Win_flush");
    unlock_target(rank);
  }
}

}  // namespace pld::detail
