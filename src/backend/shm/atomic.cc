// Atomics of the shm backend: a peer's window is ordinary shared memory, so an atomic is one CPU
// read-modify-write on the cell (backend/amo.h), a full barrier on x86 that also orders earlier
// non-temporal stores; a change of a 4-byte cell then wakes a sleeper, as notify does.
#include "backend/amo.h"
#include "backend/shm/backend.h"

namespace pld::detail {

std::uint64_t ShmBackend::atomic(int rank, std::uint64_t offset, AmoOp op, DType dtype, std::uint64_t operand,
                                 std::uint64_t compare) {
  std::byte* cell = heap_base(rank) + offset;
  if (amo_width(dtype) == sizeof(std::uint64_t))
    return amo_apply(reinterpret_cast<std::uint64_t*>(cell), op, operand, compare);
  const std::uint32_t old = amo_apply(reinterpret_cast<std::uint32_t*>(cell), op, static_cast<std::uint32_t>(operand),
                                      static_cast<std::uint32_t>(compare));
  if (op != AmoOp::Fetch) wake(rank, reinterpret_cast<std::int32_t*>(cell));
  return old;
}

}  // namespace pld::detail
