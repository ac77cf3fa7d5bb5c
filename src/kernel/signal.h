// Internal helpers of the signal operations: the cell checks and the site text of every message
// (kernel/signal.cc, kernel/signal_cells.cc), and the parts of notify that put_signal shares
// (kernel/rma.cc): checking the signal cell before any data moves (put_signal's common case runs
// the same checks on the parts of the view: cell_fast, notify_op_valid), and the debug check,
// operation record and trace around the backend's call.
#pragma once

#include "debug/checks.h"
#include "rank/domain.h"
#include "trace/trace.h"

#include <pld/detail/kernel.hpp>
#include <pld/types.hpp>

#include <cstdint>
#include <string>

namespace pld::detail {

/// The calling rank's own signal cell at heap offset `off`.
inline const std::int32_t* own_cell(const DomainState& d, std::uint64_t off) {
  return reinterpret_cast<const std::int32_t*>(d.backend->heap_base(d.members[static_cast<std::size_t>(d.rank)]) + off);
}

/// "wait(signal 'sig', offsets [0, 1])".
std::string signal_site(const char* api, const WindowDesc& s, const Dims& offsets);
/// Byte offset of the cell `offsets` of a signal window, after checking that the view is INT32
/// and that the cell exists (UsageError).
std::uint64_t cell_offset(const std::string& op, const WindowDesc& s, const Dims& offsets);
/// Fast check of a signal cell: false when it is not a cell of `s` (cell_offset then explains).
/// Inline: every notify, wait and put_signal runs it.
/// The view's parts: its `shape` and the heap offset `base` of its first cell.
inline bool cell_fast(const Dims& shape, std::uint64_t base, const Dims& offsets, std::uint64_t* off) {
  if (offsets.size() != shape.size()) return false;
  Index lin = 0;
  for (int d = 0; d < shape.size(); ++d) {
    if (offsets[d] < 0 || offsets[d] >= shape[d]) return false;
    lin = lin * shape[d] + offsets[d];
  }
  *off = base + static_cast<std::uint64_t>(lin) * sizeof(std::int32_t);
  return true;
}
inline bool cell_fast(const WindowDesc& s, const Dims& offsets, std::uint64_t* off) {
  return s.dtype == DType::INT32 && cell_fast(s.shape, s.ref.offset, offsets, off);
}
/// Whether `op` is a NotifyOp enumerator.
inline bool notify_op_valid(NotifyOp op) {
  return op == NotifyOp::AtomicAdd || op == NotifyOp::Set;
}
/// UsageError unless `cmp` is a WaitCmp enumerator.
void check_wait_cmp(const std::string& site, WaitCmp cmp);

/// A checked signal cell: the world rank that holds it and its heap offset there.
struct SignalCell {
  int target;
  std::uint64_t offset;
};

/// notify_cell's slow path: the first failed check as a UsageError (out of line, so that a valid
/// call sets up no frame for the message); returns the cell's offset when every check passes.
std::uint64_t notify_cell_checked(const char* api, const WindowDesc& signal, int peer, const Dims& offsets,
                                  NotifyOp op);
/// Checks the operands of a notify (bound window, op, peer, cell) and returns the cell; messages
/// name `api`.
inline SignalCell notify_cell(const char* api, const WindowDesc& signal, int peer, const Dims& offsets, NotifyOp op) {
  const DomainState* d = signal.state;
  std::uint64_t off = 0;
  if (!d || !notify_op_valid(op) || peer < 0 || peer >= d->nranks() || !cell_fast(signal, offsets, &off)) [[unlikely]]
    off = notify_cell_checked(api, signal, peer, offsets, op);
  return SignalCell{d->members[static_cast<std::size_t>(peer)], off};
}
/// Before the backend updates the cell: debug-mode checks and the operation record. Returns the
/// trace start time (0 when tracing is off) for notify_end. Inline: notify and put_signal run it
/// on every call.
inline std::int64_t notify_begin(const WindowDesc& signal, int peer, const Dims& offsets, const SignalCell& cell,
                                 std::int32_t value, NotifyOp op) {
  const DomainState* d = signal.state;
  if (debug_checks()) debug_check_notify(signal, peer, offsets, cell.offset, value, op);
  // Recorded before the notify releases the cell: a waiter that sees the new value also sees the
  // record (debug mode's reuse check and the hang report name the last notify of a cell).
  d->backend->record_op(OpKind::Notify, static_cast<std::uint8_t>(op), cell.target, value, signal.ref.domain,
                        signal.ref.buffer, cell.offset, &offsets);
  return trace::on() ? trace::now_ns() : 0;
}
/// The trace event of a notify that started at `t` (notify_end).
void notify_trace(const WindowDesc& signal, const SignalCell& cell, std::int32_t value, NotifyOp op, std::int64_t t);
/// After the backend updated the cell: the trace event, when tracing.
inline void notify_end(const WindowDesc& signal, const SignalCell& cell, std::int32_t value, NotifyOp op,
                       std::int64_t t) {
  if (t) [[unlikely]]
    notify_trace(signal, cell, value, op, t);
}

}  // namespace pld::detail
