// Atomics of the shm backend: a peer's window is ordinary shared memory, so an atomic is one CPU
// read-modify-write on the cell (backend/amo.h), a full barrier on x86 that also orders earlier
// non-temporal stores; a change of a 4-byte cell then wakes a sleeper, as notify does.
#include "backend/amo.h"
#include "backend/shm/backend.h"

namespace pld::detail {

std::uint64_t ShmBackend::atomic(int rank, std::uint64_t offset, AmoOp op, DType dtype, std::uint64_t operand,
                                 std::uint64_t compare) {
  std::byte* cell = heap_base(rank) + offset;
  const std::uint64_t old = atomic_local(cell, op, dtype, operand, compare);
  if (op != AmoOp::Fetch && amo_width(dtype) == sizeof(std::int32_t)) wake(rank, reinterpret_cast<std::int32_t*>(cell));
  return old;
}

}  // namespace pld::detail
