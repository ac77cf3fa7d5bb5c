// Atomics on one cell of memory this process can address (a shm heap, or a window the mpi backend
// shares with ranks on its node): one sequentially consistent CPU read-modify-write (lock xadd,
// xchg, lock cmpxchg, ... on x86), correct under contention from every rank at once.
#pragma once

#include <pld/detail/atomic.hpp>
#include <pld/types.hpp>

#include <cstddef>
#include <cstdint>

namespace pld::detail {

/// Applies `op` to the cell of `dtype` (int32, int64, uint32 or uint64; naturally aligned, both
/// validated by the caller) at `cell`: `operand` is the value added / stored / combined (the
/// desired value of CompareSwap), `compare` the expected value of CompareSwap. Returns the old
/// value, zero-extended from its width.
std::uint64_t atomic_local(std::byte* cell, AmoOp op, DType dtype, std::uint64_t operand, std::uint64_t compare);

/// The new value `op` leaves in a cell that held `old` (the width's arithmetic; Fetch leaves it).
std::uint64_t amo_result(AmoOp op, DType dtype, std::uint64_t old, std::uint64_t operand, std::uint64_t compare);

}  // namespace pld::detail
