// The arithmetic of the atomics (amo.h): the value an operation leaves in a cell.
#include "backend/amo.h"

namespace pld::detail {

namespace {

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

std::uint64_t amo_result(AmoOp op, DType dtype, std::uint64_t old, std::uint64_t operand, std::uint64_t compare) {
  if (amo_width(dtype) == 4)
    return result(op, static_cast<std::uint32_t>(old), static_cast<std::uint32_t>(operand),
                  static_cast<std::uint32_t>(compare));
  return result(op, old, operand, compare);
}

}  // namespace pld::detail
