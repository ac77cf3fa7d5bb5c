// pld::system signal reads and multi-cell waits (include/pld/signal.hpp): signal_fetch, test,
// wait_until_any / all / some. The waits run on Backend::wait_cells, which polls every cell and
// publishes them all for the deadline report.
#include "backend/wait_cmp.h"
#include "debug/checks.h"
#include "debug/race.h"
#include "kernel/region.h"
#include "kernel/signal.h"
#include "rank/runtime.h"
#include "trace/trace.h"

#include <pld/error.hpp>
#include <pld/kernel.hpp>
#include <pld/signal.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <tuple>

namespace pld::detail {

namespace {

const char* cell_wait_name(CellWait which) {
  switch (which) {
    case CellWait::Any: return "wait_until_any";
    case CellWait::All: return "wait_until_all";
    case CellWait::Some: return "wait_until_some";
  }
  return "wait_until_?";
}

std::string cells_site(const char* api, const WindowDesc& s, std::size_t n) {
  const std::string& name = s.state ? s.state->buffer_name(s.ref.buffer) : std::string("?");
  return fmt::format("{}(signal '{}', {} cell{})", api, name, n, n == 1 ? "" : "s");
}

// The local cell `offsets` of `signal`, checked: the heap offset, or a UsageError.
std::uint64_t local_cell(const char* api, const WindowDesc& signal, const Dims& offsets, WaitCmp cmp) {
  std::uint64_t off = 0;
  if (!signal.state || !wait_cmp_valid(cmp) || !cell_fast(signal, offsets, &off)) {
    const std::string site = signal_site(api, signal, offsets);
    bound_state(site, signal);
    check_wait_cmp(site, cmp);
    off = cell_offset(site, signal, offsets);
  }
  return off;
}

// Reads a cell of the calling rank, after one round of communication progress (the mpi backend
// delivers remote notifies only while a rank drives it).
std::int32_t read_cell(const DomainState& d, std::uint64_t off) {
  d.backend->progress();
  return std::atomic_ref<const std::int32_t>(*own_cell(d, off)).load(std::memory_order_acquire);
}

// The heap offsets of `cells` and their expected values, after every check.
std::vector<WaitCell> checked_cells(const char* api, const WindowDesc& signal, std::span<const Dims> cells,
                                    std::span<const std::int32_t> expected, bool per_cell, WaitCmp cmp) {
  const std::string site = cells_site(api, signal, cells.size());
  bound_state(site, signal);
  check_wait_cmp(site, cmp);
  if (cells.empty())
    throw UsageError(fmt::format("{}: the cell list is empty; pass the offsets of at least one cell", site));
  if (per_cell && expected.size() != cells.size())
    throw UsageError(
        fmt::format("{}: {} expected values for {} cells; pass one expected value per cell (or a "
                    "single value for all of them)",
                    site, expected.size(), cells.size()));
  if (!per_cell && expected.size() != 1)
    throw UsageError(fmt::format("{}: {} expected values; pass one", site, expected.size()));
  std::vector<WaitCell> out(cells.size());
  for (std::size_t i = 0; i < cells.size(); ++i) {
    if (!cell_fast(signal, cells[i], &out[i].offset))
      out[i].offset = cell_offset(fmt::format("{}: cell #{} (offsets {})", site, i, cells[i].str()), signal, cells[i]);
    out[i].expected = per_cell ? expected[i] : expected[0];
  }
  return out;
}

// Where wait_until_any starts looking: after the index it returned last on the same signal view
// and cell count (per thread), so that a cell that stays satisfied does not starve the others.
std::size_t& any_cursor(const WindowDesc& signal, std::size_t n) {
  thread_local std::map<std::tuple<const DomainState*, std::uint32_t, std::uint64_t, std::size_t>, std::size_t> last;
  return last[{signal.state, signal.ref.buffer, signal.ref.offset, n}];
}

void trace_cells(const DomainState& d, const WindowDesc& signal, const std::vector<WaitCell>& cells, CellWait which,
                 std::size_t first, WaitCmp cmp, std::int64_t t0) {
  std::string done;
  for (std::size_t i = 0; i < cells.size(); ++i)
    if (cells[i].done) done += fmt::format("{}{}", done.empty() ? "" : ", ", i);
  trace::record(trace::Event{
      trace::Kind::Wait, t0, trace::now_ns(), trace::thread_index(), d.buffer_name(signal.ref.buffer), -1,
      cells[first].offset, cells[first].expected, cells[first].value, static_cast<int>(cmp),
      fmt::format(R"({{"op": "{}", "cells": {}, "satisfied": [{}]}})", cell_wait_name(which), cells.size(), done)});
}

}  // namespace

std::int32_t signal_fetch(const WindowDesc& signal, const Dims& offsets) {
  const std::uint64_t off = local_cell("signal_fetch", signal, offsets, WaitCmp::Eq);
  const std::int32_t v = read_cell(*signal.state, off);
  signal.state->backend->acquire();
  if (race_on()) race_acquire(own_cell(*signal.state, off), off, v);
  return v;
}

bool signal_test(const WindowDesc& signal, const Dims& offsets, std::int32_t expected, WaitCmp cmp) {
  const std::uint64_t off = local_cell("test", signal, offsets, cmp);
  const std::int32_t v = read_cell(*signal.state, off);
  if (!wait_cmp_holds(v, expected, cmp)) return false;
  signal.state->backend->acquire();
  if (race_on()) race_acquire(own_cell(*signal.state, off), off, v);
  return true;
}

std::size_t wait_cells(CellWait which, const WindowDesc& signal, std::span<const Dims> cells,
                       std::span<const std::int32_t> expected, bool per_cell, WaitCmp cmp,
                       std::vector<std::size_t>* satisfied) {
  const char* api = cell_wait_name(which);
  std::vector<WaitCell> cs = checked_cells(api, signal, cells, expected, per_cell, cmp);
  const DomainState& d = *signal.state;
  if (debug_checks()) {
    // The stale-signal warning of wait, for each cell (the reuse check of wait does not apply:
    // waiting again on a cell that stays satisfied is how these waits are used).
    debug_check_view(api, signal);
    for (std::size_t i = 0; i < cs.size(); ++i)
      debug_check_wait_entry(signal, cells[i], cs[i].offset, cs[i].expected, cmp);
  }
  const auto mode = static_cast<WaitMode>(which);
  d.backend->record_op(OpKind::WaitCells,
                       static_cast<std::uint8_t>(static_cast<int>(cmp) | (static_cast<int>(mode) << 4)),
                       static_cast<int>(std::min<std::size_t>(cs.size(), INT16_MAX)), cs[0].expected, signal.ref.domain,
                       signal.ref.buffer, cs[0].offset, &cells[0]);
  WaitSite where{signal.ref.domain, signal.ref.buffer, &cells[0]};
  where.shape = &signal.shape;
  where.base = signal.ref.offset;
  const std::int64_t t0 = trace::on() ? trace::now_ns() : 0;
  const WaitStatus status = d.backend->wait_cells(cs.data(), cs.size(), cmp, mode, where);
  if (status == WaitStatus::Aborted)
    throw AbortedError(fmt::format("{}: released because another rank failed", cells_site(api, signal, cs.size())));
  if (status == WaitStatus::Timeout) {
    std::string open;
    for (std::size_t i = 0; i < cs.size(); ++i)
      if (!cs[i].done)
        open += fmt::format("{}cell #{} {} for {} {} holds {}", open.empty() ? "" : "; ", i, cells[i].str(),
                            wait_cmp_symbol(cmp), cs[i].expected, cs[i].value);
    throw WaitTimeoutError(
        fmt::format("{}: unsatisfied at the deadline: {}", cells_site(api, signal, cs.size()), open));
  }
  // The satisfied cell wait_until_any returns: the first done at or after the cursor.
  std::size_t first = 0;
  std::size_t& cursor = any_cursor(signal, cs.size());
  for (std::size_t k = 0; k < cs.size(); ++k) {
    const std::size_t i = (cursor + k) % cs.size();
    if (cs[i].done) {
      first = i;
      break;
    }
  }
  if (which == CellWait::Any) cursor = (first + 1) % cs.size();
  if (satisfied)
    for (std::size_t i = 0; i < cs.size(); ++i)
      if (cs[i].done) satisfied->push_back(i);
  if (race_on())
    for (const WaitCell& c : cs)
      if (c.done) race_acquire(own_cell(d, c.offset), c.offset, c.value);
  if (t0) trace_cells(d, signal, cs, which, first, cmp, t0);
  return first;
}

}  // namespace pld::detail
