// The parts of notify that put_signal shares (kernel/rma.cc): checking the signal cell before any
// data moves, and the debug check, operation record and trace around the backend's call.
#pragma once

#include "rank/domain.h"

#include <pld/detail/kernel.hpp>

#include <cstdint>

namespace pld::detail {

/// A checked signal cell: the world rank that holds it and its heap offset there.
struct SignalCell {
  int target;
  std::uint64_t offset;
};

/// Checks the operands of a notify (bound window, op, peer, cell) and returns the cell; messages
/// name `api`.
SignalCell notify_cell(const char* api, const WindowDesc& signal, int peer, const Dims& offsets, NotifyOp op);
/// Before the backend updates the cell: debug-mode checks and the operation record. Returns the
/// trace start time (0 when tracing is off) for notify_end.
std::int64_t notify_begin(const WindowDesc& signal, int peer, const Dims& offsets, const SignalCell& cell,
                          std::int32_t value, NotifyOp op);
/// After the backend updated the cell: the trace event.
void notify_end(const WindowDesc& signal, const SignalCell& cell, std::int32_t value, NotifyOp op, std::int64_t t);

}  // namespace pld::detail
