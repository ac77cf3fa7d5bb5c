// The comparisons of a wait (WaitCmp) in one place: what the backends' waits, the kernel API's
// test, the deferred task conditions, the debug checks and the reports evaluate and print.
// Comparisons are on signed int32 values.
#pragma once

#include <pld/types.hpp>

#include <cstddef>
#include <cstdint>

namespace pld::detail {

/// Whether `cmp` is one of the WaitCmp enumerators (a cast integer may not be).
constexpr bool wait_cmp_valid(WaitCmp cmp) {
  const int c = static_cast<int>(cmp);
  return c >= static_cast<int>(WaitCmp::Eq) && c <= static_cast<int>(WaitCmp::Le);
}

/// `value cmp expected`.
constexpr bool wait_cmp_holds(std::int32_t value, std::int32_t expected, WaitCmp cmp) {
  switch (cmp) {
    case WaitCmp::Eq: return value == expected;
    case WaitCmp::Ge: return value >= expected;
    case WaitCmp::Ne: return value != expected;
    case WaitCmp::Gt: return value > expected;
    case WaitCmp::Lt: return value < expected;
    case WaitCmp::Le: return value <= expected;
  }
  return false;
}

/// "==", ">=", "!=", ">", "<", "<=" (reports and error messages).
constexpr const char* wait_cmp_symbol(WaitCmp cmp) {
  switch (cmp) {
    case WaitCmp::Eq: return "==";
    case WaitCmp::Ge: return ">=";
    case WaitCmp::Ne: return "!=";
    case WaitCmp::Gt: return ">";
    case WaitCmp::Lt: return "<";
    case WaitCmp::Le: return "<=";
  }
  return "?";
}

/// A WaitCmp read back from an integer field (shared memory, records); invalid values read as Ge.
constexpr WaitCmp wait_cmp_from(int value) {
  const auto cmp = static_cast<WaitCmp>(value);
  return wait_cmp_valid(cmp) ? cmp : WaitCmp::Ge;
}

/// One poll of a multi-cell wait (Backend::wait_cells): reads every cell not yet done with
/// `load(offset)` and marks those that satisfy `cmp`. Returns whether the wait may end: every
/// cell done (WaitMode::All) or at least one (the other modes).
template <class Cell, class Load>
bool poll_cells(Cell* cells, std::size_t n, WaitCmp cmp, bool all, Load&& load) {
  std::size_t done = 0;
  for (std::size_t i = 0; i < n; ++i) {
    Cell& c = cells[i];
    if (!c.done) {
      c.value = load(c.offset);
      c.done = wait_cmp_holds(c.value, c.expected, cmp);
    }
    done += c.done;
  }
  return all ? done == n : done > 0;
}

}  // namespace pld::detail
