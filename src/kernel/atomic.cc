// pld::system atomics on window cells (pld/atomic.hpp): validation, op history, trace and debug
// checks as notify has them, then one Backend::atomic.
#include "debug/checks.h"
#include "kernel/region.h"
#include "rank/runtime.h"
#include "trace/trace.h"

#include <pld/atomic.hpp>
#include <pld/error.hpp>

#include <fmt/format.h>

namespace pld::detail {

namespace {

std::string atomic_site(const char* api, const WindowDesc& w, const Dims& offsets) {
  const std::string& name = w.state ? w.state->buffer_name(w.ref.buffer) : std::string("?");
  return fmt::format("{}(window '{}', offsets {})", api, name, offsets.str());
}

// Heap byte offset of the cell, when everything about the call is valid (the fast path).
bool atomic_fast(const WindowDesc& w, int peer, const Dims& offsets, std::uint64_t* off) {
  if (!w.state || !amo_dtype(w.dtype) || peer < 0 || peer >= w.state->nranks() || offsets.size() != w.shape.size())
    return false;
  Index lin = 0;
  for (int d = 0; d < w.shape.size(); ++d) {
    if (offsets[d] < 0 || offsets[d] >= w.shape[d]) return false;
    lin = lin * w.shape[d] + offsets[d];
  }
  const std::size_t size = amo_width(w.dtype);
  *off = w.ref.offset + static_cast<std::uint64_t>(lin) * size;
  return (*off & (size - 1)) == 0;  // size is 4 or 8
}

// The slow path: the first failed check as a UsageError.
[[noreturn]] void atomic_fail(const char* api, const WindowDesc& w, int peer, const Dims& offsets) {
  const std::string site = atomic_site(api, w, offsets);
  const DomainState& d = bound_state(site, w);
  if (!amo_dtype(w.dtype))
    throw UsageError(
        fmt::format("{}: dtype {} has no atomics; atomics act on int32, int64, uint32 and uint64 cells "
                    "(allocate the window with one of those dtypes)",
                    site, dtype_name(w.dtype)));
  check_peer(site, d, peer);
  Dims one = offsets;
  for (int i = 0; i < one.size(); ++i) one[i] = 1;
  check_box(site, "window", "cell", w.shape, offsets, one, "pick a cell inside the window");
  const std::size_t size = dtype_size(w.dtype);
  std::uint64_t off = 0;
  atomic_fast(w, peer, offsets, &off);
  throw UsageError(
      fmt::format("{}: the cell lies at byte offset {} of the window heap, not a multiple of {} ({}); "
                  "atomics need naturally aligned cells: allocate the window buffer on its own "
                  "(alloc_window_buffer aligns it) and view it from its start",
                  site, off, size, dtype_name(w.dtype)));
}

}  // namespace

std::uint64_t atomic(const char* api, const WindowDesc& cell, int peer, const Dims& offsets, AmoOp op,
                     std::uint64_t operand, std::uint64_t compare) {
  std::uint64_t off = 0;
  if (!atomic_fast(cell, peer, offsets, &off)) atomic_fail(api, cell, peer, offsets);
  const DomainState* d = cell.state;
  const int target = d->members[static_cast<std::size_t>(peer)];
  if (debug_checks()) debug_check_atomic(api, cell, peer, offsets, off, op, operand);
  // Recorded before the atomic lands, as notify is: a waiter that sees its effect also sees the
  // record. A fetch only reads, like signal_fetch and test, and is not recorded (a polling loop
  // would fill the history and push out the writes a hang report needs).
  if (op != AmoOp::Fetch)
    d->backend->record_op(OpKind::Atomic, static_cast<std::uint8_t>(op), target, static_cast<std::int32_t>(operand),
                          cell.ref.domain, cell.ref.buffer, off, &offsets);
  const std::int64_t t = trace::on() ? trace::now_ns() : 0;
  const std::uint64_t old = d->backend->atomic(target, off, op, cell.dtype, operand, compare);
  if (t)
    trace::record(trace::Event{trace::Kind::Atomic,
                               t,
                               trace::now_ns(),
                               trace::thread_index(),
                               d->buffer_name(cell.ref.buffer),
                               target,
                               off,
                               static_cast<std::int64_t>(operand),
                               static_cast<std::int64_t>(old),
                               static_cast<int>(op),
                               {}});
  return old;
}

}  // namespace pld::detail
