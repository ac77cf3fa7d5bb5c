// Atomics on one cell of memory this process can address (a shm heap, or a window the mpi backend
// shares with ranks on its node): one sequentially consistent CPU read-modify-write (lock xadd,
// xchg, lock cmpxchg, ... on x86), correct under contention from every rank at once. Inline, so
// that a backend's atomic is the instruction and a switch, without a call.
#pragma once

#include <pld/detail/atomic.hpp>
#include <pld/types.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace pld::detail {

/// `op` on the cell at `cell` of one width. Signed and unsigned cells of one width share the
/// unsigned form: two's complement makes every operation the same bit pattern.
template <class U>
[[gnu::always_inline]] inline U amo_apply(U* cell, AmoOp op, U operand, U compare) {
  std::atomic_ref<U> a(*cell);
  constexpr auto kOrder = std::memory_order_seq_cst;
  switch (op) {
    case AmoOp::Fetch: return a.load(kOrder);
    case AmoOp::Set:
    case AmoOp::Swap: return a.exchange(operand, kOrder);
    case AmoOp::CompareSwap: a.compare_exchange_strong(compare, operand, kOrder, kOrder); return compare;
    case AmoOp::Add: return a.fetch_add(operand, kOrder);
    case AmoOp::And: return a.fetch_and(operand, kOrder);
    case AmoOp::Or: return a.fetch_or(operand, kOrder);
    case AmoOp::Xor: return a.fetch_xor(operand, kOrder);
  }
  return a.load(kOrder);
}

/// Applies `op` to the cell of `dtype` (int32, int64, uint32 or uint64; naturally aligned, both
/// validated by the caller) at `cell`: `operand` is the value added / stored / combined (the
/// desired value of CompareSwap), `compare` the expected value of CompareSwap. Returns the old
/// value, zero-extended from its width.
inline std::uint64_t atomic_local(std::byte* cell, AmoOp op, DType dtype, std::uint64_t operand,
                                  std::uint64_t compare) {
  if (amo_width(dtype) == 4)
    return amo_apply(reinterpret_cast<std::uint32_t*>(cell), op, static_cast<std::uint32_t>(operand),
                     static_cast<std::uint32_t>(compare));
  return amo_apply(reinterpret_cast<std::uint64_t*>(cell), op, operand, compare);
}

/// A notify's update of the int32 signal cell at `cell`: Set is a release store (a plain `mov` on
/// x86), AtomicAdd one seq_cst read-modify-write (`lock xadd`). Either is a release of every
/// earlier store; earlier non-temporal stores are already fenced (every streaming copy ends with
/// an `sfence`, core/copy.cc). A Set does not wait for the store buffer to drain, so a load after
/// it may pass it: the shm backend's wake-up test tolerates that (backend/shm/signal.cc). The shm
/// backend's notify and put_signal, and the kernel API's put_signal where the backend's is nothing
/// more (Backend::cpu_put_signal).
[[gnu::always_inline]] inline void signal_update_local(std::byte* cell, std::int32_t value, NotifyOp op) {
  std::atomic_ref<std::int32_t> a(*reinterpret_cast<std::int32_t*>(cell));
  if (op == NotifyOp::Set)
    a.store(value, std::memory_order_release);
  else
    a.fetch_add(value, std::memory_order_seq_cst);
}

/// The new value `op` leaves in a cell that held `old` (the width's arithmetic; Fetch leaves it).
std::uint64_t amo_result(AmoOp op, DType dtype, std::uint64_t old, std::uint64_t operand, std::uint64_t compare);

}  // namespace pld::detail
