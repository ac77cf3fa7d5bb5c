// Atomics on addressable memory (amo.h).
#include "backend/amo.h"

#include <atomic>

namespace pld::detail {

namespace {

// Signed and unsigned cells of one width share the unsigned form: two's complement makes every
// operation the same bit pattern.
template <class U>
U apply(U* cell, AmoOp op, U operand, U compare) {
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

template <class U>
U result(AmoOp op, U old, U operand, U compare) {
  switch (op) {
    case AmoOp::Fetch: return old;
    case AmoOp::Set:
    case AmoOp::Swap: return operand;
    case AmoOp::CompareSwap: return old == compare ? operand : old;
    case AmoOp::Add: return static_cast<U>(old + operand);
    case AmoOp::And: return old & operand;
    case AmoOp::Or: return old | operand;
    case AmoOp::Xor: return old ^ operand;
  }
  return old;
}

}  // namespace

std::uint64_t atomic_local(std::byte* cell, AmoOp op, DType dtype, std::uint64_t operand, std::uint64_t compare) {
  if (amo_width(dtype) == 4)
    return apply(reinterpret_cast<std::uint32_t*>(cell), op, static_cast<std::uint32_t>(operand),
                 static_cast<std::uint32_t>(compare));
  return apply(reinterpret_cast<std::uint64_t*>(cell), op, operand, compare);
}

std::uint64_t amo_result(AmoOp op, DType dtype, std::uint64_t old, std::uint64_t operand, std::uint64_t compare) {
  if (amo_width(dtype) == 4)
    return result(op, static_cast<std::uint32_t>(old), static_cast<std::uint32_t>(operand),
                  static_cast<std::uint32_t>(compare));
  return result(op, old, operand, compare);
}

}  // namespace pld::detail
