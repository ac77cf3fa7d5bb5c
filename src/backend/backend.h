// The backend interface: the few operations that differ between carrying windows in shared
// memory on one machine (shm/) and in MPI-3 RMA windows across machines (mpi/, issue #6).
// Everything above it (kernel API validation, collectives, worker) is backend-independent.
//
// Offsets are byte offsets into a rank's window heap (the symmetric heap that every comm
// domain's windows are carved from); ranks are world ranks.
#pragma once

#include <pld/types.hpp>

#include <cstddef>
#include <cstdint>

namespace pld::detail {

/// What a wait is waiting on, for the deadline report (published while the wait sleeps).
struct WaitSite {
  std::uint32_t domain = 0;
  std::uint32_t buffer = 0;
  const Dims* offsets = nullptr;
};

enum class WaitStatus { Ok, Timeout, Aborted };

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;
  virtual int world_size() const = 0;
  virtual std::uint64_t heap_bytes() const = 0;

  /// Local address through which this process reaches `rank`'s heap, or nullptr when heaps are
  /// not load/store addressable. The calling rank's own heap is always addressable.
  virtual std::byte* heap_base(int rank) const = 0;

  virtual void put(int rank, std::uint64_t offset, const void* src, std::size_t bytes) = 0;
  virtual void get(void* dst, int rank, std::uint64_t offset, std::size_t bytes) = 0;
  /// Element-wise atomic `heap[offset..] += src[0..count)` for fp32/fp16/bf16/int32/int16/int8.
  virtual void atomic_add(int rank, std::uint64_t offset, const void* src, std::size_t count, DType dtype) = 0;

  /// Release, then Set or AtomicAdd the int32 cell at `offset` of `rank`'s heap; wakes a sleeper.
  virtual void notify(int rank, std::uint64_t offset, std::int32_t value, NotifyOp op) = 0;
  /// Blocks until the calling rank's cell at `offset` satisfies `cmp expected`, then acquires.
  /// Returns Timeout at the deadline and Aborted when the job is being aborted; `seen` receives
  /// the last value read.
  virtual WaitStatus wait(std::uint64_t offset, std::int32_t expected, WaitCmp cmp, const WaitSite& site,
                          std::int32_t* seen) = 0;
};

}  // namespace pld::detail
