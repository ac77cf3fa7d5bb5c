// pld::system atomics on window cells (pld/atomic.hpp): validation, op history, trace and debug
// checks as notify has them, then one Backend::atomic.
//
// The call is on the hot path of every lock, queue and slot reservation, so its common case costs
// a few dozen instructions before the read-modify-write itself: each operation at each width has
// its own entry (atomic_as<Op, Width>, which the templates call), so nothing branches on the
// operation or the width; the view travels by address (AmoCall); the cell is validated with one
// unsigned compare per dimension while its row-major index is formed; debug mode, tracing and a
// backend whose atomic is more than the CPU's (mpi) are one branch to a separate function; the
// read-modify-write is inline where the backend's atomic is nothing more (Backend::cpu_atomics:
// shm); and the history record follows the atomic. Every check still runs on every call; a failed
// one takes the slow path, which finds the first failure and names it. atomic() serves callers
// that know the operation only at run time (the Python binding) through the same entries.
#include "backend/amo.h"
#include "debug/checks.h"
#include "debug/race.h"
#include "kernel/region.h"
#include "rank/runtime.h"
#include "trace/trace.h"

#include <pld/atomic.hpp>
#include <pld/error.hpp>

#include <fmt/format.h>

#include <array>
#include <type_traits>
#include <utility>

namespace pld::detail {

namespace {

WindowDesc view_of(const AmoCall& c) {
  return WindowDesc{c.state, *c.ref, *c.shape, c.dtype};
}

std::string atomic_site(const AmoCall& c) {
  const std::string& name = c.state ? c.state->buffer_name(c.ref->buffer) : std::string("?");
  return fmt::format("{}(window '{}', offsets {})", c.api, name, c.offsets->str());
}

// Whether `dtype` is an atomic dtype `width` bytes wide.
constexpr bool amo_dtype_of_width(DType dtype, std::size_t width) {
  return width == sizeof(std::uint64_t) ? dtype == DType::INT64 || dtype == DType::UINT64
                                        : dtype == DType::INT32 || dtype == DType::UINT32;
}

// Heap byte offset of the cell, when everything about the call is valid for a cell `width` bytes
// wide (the fast path). One unsigned compare per dimension (a negative offset compares as a huge
// one) forms the row-major index as it checks; the domain's state and the peer come last, so that
// their loads overlap the loop.
inline bool atomic_fast(const AmoCall& c, std::size_t width, std::uint64_t* off) {
  const Dims& shape = *c.shape;
  const Dims& offsets = *c.offsets;
  const int n = shape.size();
  if (!amo_dtype_of_width(c.dtype, width) || offsets.size() != n) return false;
  std::uint64_t lin = 0;
  for (int i = 0; i < n; ++i) {
    const auto extent = static_cast<std::uint64_t>(shape[i]), at = static_cast<std::uint64_t>(offsets[i]);
    if (at >= extent) return false;
    lin = lin * extent + at;
  }
  *off = c.ref->offset + lin * width;
  const DomainState* d = c.state;
  return d && (*off & (width - 1)) == 0 && static_cast<unsigned>(c.peer) < static_cast<unsigned>(d->nranks());
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
  atomic_fast(c, size, &off);
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

// With debug mode, tracing or the race detector on: the debug checks, the record, the atomic (a
// release and acquire of the cell for the race detector) and its trace event. The
// record comes first, as notify's does: debug mode's checks of a waiter that sees the atomic's
// effect read it.
std::uint64_t atomic_observed(const AmoCall& c, int target, std::uint64_t off, std::uint64_t operand,
                              std::uint64_t compare) {
  const DomainState* d = c.state;
  if (debug_checks()) debug_check_atomic(c.api, view_of(c), c.peer, *c.offsets, off, c.op, operand);
  record(c, target, off, operand);
  const std::int64_t t = trace::on() ? trace::now_ns() : 0;
  std::uint64_t old = 0;
  if (race_on() && c.op == AmoOp::Fetch) {  // a read: an acquire of what was released into the cell
    old = d->backend->atomic(target, off, c.op, c.dtype, operand, compare);
    race_acquire_at(target, off);
  } else if (race_on()) {  // a read-modify-write: an acquire and a release
    const RaceRelease release(target, off, false, true);
    old = d->backend->atomic(target, off, c.op, c.dtype, operand, compare);
  } else {
    old = d->backend->atomic(target, off, c.op, c.dtype, operand, compare);
  }
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

// Every call that is not a CPU read-modify-write on addressable memory without observers: debug
// mode or tracing on (atomic_observed), or a backend whose atomic is more than that (mpi).
[[gnu::noinline]] std::uint64_t atomic_checked(const AmoCall& c, std::uint64_t off, std::uint64_t operand,
                                               std::uint64_t compare) {
  const int target = c.state->members[static_cast<std::size_t>(c.peer)];
  if (debug_checks() || trace::on() || race_on()) return atomic_observed(c, target, off, operand, compare);
  const std::uint64_t old = c.state->backend->atomic(target, off, c.op, c.dtype, operand, compare);
  record(c, target, off, operand);
  return old;
}

}  // namespace

template <AmoOp Op, std::size_t Width>
std::uint64_t atomic_as(const AmoCall& c, std::uint64_t operand, std::uint64_t compare) {
  using U = std::conditional_t<Width == sizeof(std::uint64_t), std::uint64_t, std::uint32_t>;
  std::uint64_t off = 0;
  if (!atomic_fast(c, Width, &off)) [[unlikely]]
    atomic_fail(c);
  const DomainState& d = *c.state;
  Backend& b = *d.backend;
  if (!b.cpu_atomics || debug_checks() || trace::on() || race_on()) [[unlikely]]
    return atomic_checked(c, off, operand, compare);
  // What b.atomic would do, without the call (Backend::cpu_atomics). Recorded after the atomic:
  // the record's stores stay off the path to the read-modify-write, and outside debug mode
  // nothing reads the history before the rank's call ends or a deadline passes (op_history.h:
  // diagnostic, never a synchronisation).
  const auto peer = static_cast<std::size_t>(c.peer);
  const U old =
      amo_apply(reinterpret_cast<U*>(d.windows_in[peer] + off), Op, static_cast<U>(operand), static_cast<U>(compare));
  if constexpr (Op != AmoOp::Fetch) {
    const int target = d.members[peer];
    if constexpr (Width == sizeof(std::int32_t)) b.atomic_changed(target, off);
    b.record_op(OpKind::Atomic, static_cast<std::uint8_t>(Op), target, static_cast<std::int32_t>(operand),
                c.ref->domain, c.ref->buffer, off, c.offsets);
  }
  return old;
}

namespace {

using AmoEntry = std::uint64_t (*)(const AmoCall&, std::uint64_t, std::uint64_t);

// atomic_as of every operation (indexed by AmoOp) at one width; taking their addresses also
// instantiates the entries the templates of pld/atomic.hpp call.
template <std::size_t Width, std::size_t... Op>
constexpr std::array<AmoEntry, sizeof...(Op)> amo_entries(std::index_sequence<Op...>) {
  return {&atomic_as<static_cast<AmoOp>(Op), Width>...};
}
constexpr std::size_t kAmoOps = static_cast<std::size_t>(AmoOp::Xor) + 1;
constexpr auto kEntries4 = amo_entries<4>(std::make_index_sequence<kAmoOps>());
constexpr auto kEntries8 = amo_entries<8>(std::make_index_sequence<kAmoOps>());

}  // namespace

std::uint64_t atomic(const AmoCall& c, std::uint64_t operand, std::uint64_t compare) {
  const auto op = static_cast<std::size_t>(c.op);
  if (op >= kAmoOps) [[unlikely]]
    throw UsageError(fmt::format("{}: operation code {} is not an AmoOp", c.api, op));
  return (amo_width(c.dtype) == 8 ? kEntries8 : kEntries4)[op](c, operand, compare);
}

}  // namespace pld::detail
