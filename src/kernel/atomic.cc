// pld::system atomics on window cells (pld/atomic.hpp): validation, op history, trace and debug
// checks as notify has them, then one Backend::atomic.
//
// The call is on the hot path of every lock, queue and slot reservation, so its common case costs
// a few dozen instructions before the read-modify-write itself: the view travels by address
// (AmoCall), the cell is validated with one signed compare per dimension while its row-major index
// is formed, the debug checks and the trace, off unless asked for, are one branch that leads to a
// separate function, the read-modify-write is inline where the backend's atomic is nothing more
// (Backend::cpu_atomics: shm), and the history record follows the atomic. Every check still runs
// on every call; a failed one takes the slow path, which finds the first failure and names it.
#include "backend/amo.h"
#include "debug/checks.h"
#include "kernel/region.h"
#include "rank/runtime.h"
#include "trace/trace.h"

#include <pld/atomic.hpp>
#include <pld/error.hpp>

#include <fmt/format.h>

namespace pld::detail {

namespace {

WindowDesc view_of(const AmoCall& c) {
  return WindowDesc{c.state, *c.ref, *c.shape, c.dtype};
}

std::string atomic_site(const AmoCall& c) {
  const std::string& name = c.state ? c.state->buffer_name(c.ref->buffer) : std::string("?");
  return fmt::format("{}(window '{}', offsets {})", c.api, name, c.offsets->str());
}

// Heap byte offset of the cell, when everything about the call is valid (the fast path).
inline bool atomic_fast(const AmoCall& c, std::uint64_t* off) {
  const DomainState* d = c.state;
  const Dims& shape = *c.shape;
  const Dims& offsets = *c.offsets;
  if (!d || !amo_dtype(c.dtype) || c.peer < 0 || c.peer >= d->nranks() || offsets.size() != shape.size()) return false;
  Index lin = 0;
  for (int i = 0; i < shape.size(); ++i) {
    if (offsets[i] < 0 || offsets[i] >= shape[i]) return false;
    lin = lin * shape[i] + offsets[i];
  }
  const std::size_t size = amo_width(c.dtype);
  *off = c.ref->offset + static_cast<std::uint64_t>(lin) * size;
  return (*off & (size - 1)) == 0;  // size is 4 or 8
}

// The slow path: the first failed check as a UsageError.
[[noreturn]] void atomic_fail(const AmoCall& c) {
  const std::string site = atomic_site(c);
  const WindowDesc w = view_of(c);
  const DomainState& d = bound_state(site, w);
  if (!amo_dtype(c.dtype))
    throw UsageError(
        fmt::format("{}: dtype {} has no atomics; atomics act on int32, int64, uint32 and uint64 cells "
                    "(allocate the window with one of those dtypes)",
                    site, dtype_name(c.dtype)));
  check_peer(site, d, c.peer);
  Dims one = *c.offsets;
  for (int i = 0; i < one.size(); ++i) one[i] = 1;
  check_box(site, "window", "cell", w.shape, *c.offsets, one, "pick a cell inside the window");
  const std::size_t size = dtype_size(c.dtype);
  std::uint64_t off = 0;
  atomic_fast(c, &off);
  throw UsageError(
      fmt::format("{}: the cell lies at byte offset {} of the window heap, not a multiple of {} ({}); "
                  "atomics need naturally aligned cells: allocate the window buffer on its own "
                  "(alloc_window_buffer aligns it) and view it from its start",
                  site, off, size, dtype_name(c.dtype)));
}

// The operation history's record (a hang report's "last operations" and the writers of a cell).
// A fetch only reads, like signal_fetch and test, and is not recorded (a polling loop would fill
// the history and push out the writes a hang report needs).
inline void record(const AmoCall& c, int target, std::uint64_t off, std::uint64_t operand) {
  if (c.op != AmoOp::Fetch)
    c.state->backend->record_op(OpKind::Atomic, static_cast<std::uint8_t>(c.op), target,
                                static_cast<std::int32_t>(operand), c.ref->domain, c.ref->buffer, off, c.offsets);
}

// With debug mode or tracing on: the debug checks, the record, the atomic and its trace event. The
// record comes first, as notify's does: debug mode's checks of a waiter that sees the atomic's
// effect read it.
std::uint64_t atomic_observed(const AmoCall& c, int target, std::uint64_t off, std::uint64_t operand,
                              std::uint64_t compare) {
  const DomainState* d = c.state;
  if (debug_checks()) debug_check_atomic(c.api, view_of(c), c.peer, *c.offsets, off, c.op, operand);
  record(c, target, off, operand);
  const std::int64_t t = trace::on() ? trace::now_ns() : 0;
  const std::uint64_t old = d->backend->atomic(target, off, c.op, c.dtype, operand, compare);
  if (t)
    trace::record(trace::Event{trace::Kind::Atomic,
                               t,
                               trace::now_ns(),
                               trace::thread_index(),
                               d->buffer_name(c.ref->buffer),
                               target,
                               off,
                               static_cast<std::int64_t>(operand),
                               static_cast<std::int64_t>(old),
                               static_cast<int>(c.op),
                               {}});
  return old;
}

}  // namespace

std::uint64_t atomic(const AmoCall& c, std::uint64_t operand, std::uint64_t compare) {
  std::uint64_t off = 0;
  if (!atomic_fast(c, &off)) [[unlikely]]
    atomic_fail(c);
  const int target = c.state->members[static_cast<std::size_t>(c.peer)];
  if (debug_checks() || trace::on()) [[unlikely]]
    return atomic_observed(c, target, off, operand, compare);
  // Recorded after the atomic: the record's stores stay off the path to the read-modify-write,
  // and outside debug mode nothing reads the history before the rank's call ends or a deadline
  // passes (op_history.h: diagnostic, never a synchronisation).
  Backend& b = *c.state->backend;
  std::uint64_t old = 0;
  if (b.cpu_atomics) {  // what b.atomic would do, without the call (Backend::cpu_atomics)
    old = atomic_local(c.state->windows_in[static_cast<std::size_t>(c.peer)] + off, c.op, c.dtype, operand, compare);
    if (amo_width(c.dtype) == sizeof(std::int32_t) && c.op != AmoOp::Fetch) b.atomic_changed(target, off);
  } else {
    old = b.atomic(target, off, c.op, c.dtype, operand, compare);
  }
  record(c, target, off, operand);
  return old;
}

}  // namespace pld::detail
