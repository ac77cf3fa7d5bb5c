// Atomics of the shm backend: a peer's window is ordinary shared memory, so an atomic is one CPU
// read-modify-write on the cell (backend/amo.h), a full barrier on x86 that also orders earlier
// non-temporal stores; a change of a 4-byte cell then wakes a sleeper, as notify does. That is
// all it is (Backend::cpu_atomics), so the kernel API applies it inline (kernel/atomic.cc) and
// calls atomic() only with debug mode or tracing on.
#include "backend/amo.h"
#include "backend/shm/backend.h"

namespace pld::detail {

std::uint64_t ShmBackend::atomic(int rank, std::uint64_t offset, AmoOp op, DType dtype, std::uint64_t operand,
                                 std::uint64_t compare) {
  const std::uint64_t old = atomic_local(heap_base(rank) + offset, op, dtype, operand, compare);
  if (amo_width(dtype) == sizeof(std::int32_t) && op != AmoOp::Fetch) atomic_changed(rank, offset);
  return old;
}

}  // namespace pld::detail
