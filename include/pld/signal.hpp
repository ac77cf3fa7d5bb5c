// pld — signal reads and waits beyond notify / wait (kernel side, pld::system):
//
//   signal_fetch     the local cell's value (an acquire)
//   test             does the local cell compare `cmp` against `expected`? never blocks
//   wait_until_any   blocks until one of several cells is satisfied; returns its index
//   wait_until_all   blocks until every cell has been satisfied
//   wait_until_some  blocks until at least one cell is satisfied; returns every satisfied index
//
// Cells are int32 elements of the calling rank's own copy of a signal window, addressed by their
// offsets as in wait. A list of cells is a std::vector<Dims> (or a std::span<const Dims>); the
// expected value is one int32 for every cell or one per cell (a std::vector<std::int32_t> or a
// std::span the size of the cell list). Comparisons (WaitCmp: Eq, Ne, Gt, Ge, Lt, Le) are on
// signed int32 values.
//
// Memory order (DESIGN §4): each call that returns a satisfied cell is an acquire, like wait:
// every write a rank made before its notify of that cell is visible afterwards. test is an
// acquire when it returns true; signal_fetch always is.
//
// The waits keep wait's contract: they spin briefly, then sleep; the deadline (PLD_WAIT_TIMEOUT /
// DistributedConfig::wait_timeout) ends them with a WaitTimeoutError whose report names every
// awaited cell and its expected writer, and the wait-for graph covers them.
//
// wait_until_any is fair: on the same signal and cell count, each call starts looking at the
// cell after the one it returned last, so a cell that stays satisfied does not starve the others.
// wait_until_all is satisfied once each cell has been seen satisfied at some poll (as in
// OpenSHMEM: a cell may change again afterwards). wait_until_some returns the indices, ascending,
// of every cell satisfied at the poll that ended the wait.
//
// Every function validates its arguments (a cmp that is not a WaitCmp, an empty cell list, a
// cell outside the window, an expected-value list of the wrong size, a call outside a kernel)
// and throws pld::UsageError naming the operation, the bad value and the fix.
#pragma once

#include <pld/detail/kernel.hpp>
#include <pld/export.hpp>
#include <pld/types.hpp>
#include <pld/window.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace pld {

namespace detail {

/// Which multi-cell wait (wait_until_any / all / some).
enum class CellWait : int { Any = 1, All = 2, Some = 3 };

PLD_API std::int32_t signal_fetch(const WindowDesc& signal, const Dims& offsets);
PLD_API bool signal_test(const WindowDesc& signal, const Dims& offsets, std::int32_t expected, WaitCmp cmp);
/// The multi-cell waits: `expected` holds one value for every cell (`per_cell` false) or one per
/// cell. Returns the index wait_until_any returns; fills `satisfied` (ascending) when not null.
PLD_API std::size_t wait_cells(CellWait which, const WindowDesc& signal, std::span<const Dims> cells,
                               std::span<const std::int32_t> expected, bool per_cell, WaitCmp cmp,
                               std::vector<std::size_t>* satisfied);

}  // namespace detail

namespace system {

/// The value of the calling rank's `signal[offsets]`, read with acquire semantics.
inline std::int32_t signal_fetch(const DistributedTensor<std::int32_t>& signal, const Dims& offsets) {
  return detail::signal_fetch(detail::desc(signal), offsets);
}

/// Whether the calling rank's `signal[offsets]` compares `cmp` against `expected` now. Never
/// blocks; an acquire when it returns true (like a wait that returned at once).
inline bool test(const DistributedTensor<std::int32_t>& signal, const Dims& offsets, std::int32_t expected,
                 WaitCmp cmp) {
  return detail::signal_test(detail::desc(signal), offsets, expected, cmp);
}

/// Blocks until one of `cells` of the calling rank's `signal` compares `cmp` against
/// `expected`; returns its index in `cells`. Fair: a repeated call starts after the index it
/// returned last.
inline std::size_t wait_until_any(const DistributedTensor<std::int32_t>& signal, std::span<const Dims> cells,
                                  std::int32_t expected, WaitCmp cmp) {
  return detail::wait_cells(detail::CellWait::Any, detail::desc(signal), cells, {&expected, 1}, false, cmp, nullptr);
}
/// Per-cell form: cell i compares against `expected[i]`.
inline std::size_t wait_until_any(const DistributedTensor<std::int32_t>& signal, std::span<const Dims> cells,
                                  std::span<const std::int32_t> expected, WaitCmp cmp) {
  return detail::wait_cells(detail::CellWait::Any, detail::desc(signal), cells, expected, true, cmp, nullptr);
}

/// Blocks until each of `cells` has compared `cmp` against `expected` at some poll.
inline void wait_until_all(const DistributedTensor<std::int32_t>& signal, std::span<const Dims> cells,
                           std::int32_t expected, WaitCmp cmp) {
  detail::wait_cells(detail::CellWait::All, detail::desc(signal), cells, {&expected, 1}, false, cmp, nullptr);
}
/// Per-cell form: cell i compares against `expected[i]`.
inline void wait_until_all(const DistributedTensor<std::int32_t>& signal, std::span<const Dims> cells,
                           std::span<const std::int32_t> expected, WaitCmp cmp) {
  detail::wait_cells(detail::CellWait::All, detail::desc(signal), cells, expected, true, cmp, nullptr);
}

/// Blocks until at least one of `cells` compares `cmp` against `expected`; returns the indices
/// (ascending) of every cell that did at the poll that ended the wait.
inline std::vector<std::size_t> wait_until_some(const DistributedTensor<std::int32_t>& signal,
                                                std::span<const Dims> cells, std::int32_t expected, WaitCmp cmp) {
  std::vector<std::size_t> out;
  detail::wait_cells(detail::CellWait::Some, detail::desc(signal), cells, {&expected, 1}, false, cmp, &out);
  return out;
}
/// Per-cell form: cell i compares against `expected[i]`.
inline std::vector<std::size_t> wait_until_some(const DistributedTensor<std::int32_t>& signal,
                                                std::span<const Dims> cells, std::span<const std::int32_t> expected,
                                                WaitCmp cmp) {
  std::vector<std::size_t> out;
  detail::wait_cells(detail::CellWait::Some, detail::desc(signal), cells, expected, true, cmp, &out);
  return out;
}

}  // namespace system

}  // namespace pld
