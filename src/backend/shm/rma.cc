// One-sided data movement of the shm backend: a peer's window is ordinary shared memory, so put
// and get are copies (streaming stores for large ones, followed by a store fence) and atomic add
// is a per-element atomic read-modify-write (backend/atomic_add.h). A non-blocking put or get is
// the same copy, complete when it returns, so quiet and fence have nothing left to wait for: they
// are full fences (which also order any streaming store a caller's own copy left unfenced).
// put_signal is the copy followed by notify's update of the cell, a release of the copy.
#include "backend/atomic_add.h"
#include "backend/shm/backend.h"
#include "core/copy.h"

#include <atomic>

namespace pld::detail {

void ShmBackend::put(int rank, std::uint64_t offset, const void* src, std::size_t bytes) {
  bulk_copy(heap_base(rank) + offset, static_cast<const std::byte*>(src), bytes);
}

void ShmBackend::get(void* dst, int rank, std::uint64_t offset, std::size_t bytes) {
  bulk_copy(static_cast<std::byte*>(dst), heap_base(rank) + offset, bytes);
}

void ShmBackend::put_signal(int rank, std::uint64_t offset, const void* src, std::size_t bytes,
                            std::uint64_t signal_offset, std::int32_t value, NotifyOp op, bool /*nbi*/) {
  bulk_copy(heap_base(rank) + offset, static_cast<const std::byte*>(src), bytes);
  update_cell(rank, signal_offset, value, op);
}

void ShmBackend::atomic_add(int rank, std::uint64_t offset, const void* src, std::size_t count, DType dtype) {
  atomic_add_local(heap_base(rank) + offset, src, count, dtype);
}

void ShmBackend::quiet() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

void ShmBackend::fence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

}  // namespace pld::detail
