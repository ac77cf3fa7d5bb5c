// pld::system signals: notify, wait and defer_wait on int32 cells of a signal window.
#include "kernel/signal.h"

#include "backend/wait_cmp.h"
#include "debug/checks.h"
#include "debug/race.h"
#include "kernel/region.h"
#include "rank/runtime.h"
#include "task/task_graph.h"
#include "trace/trace.h"

#include <pld/error.hpp>
#include <pld/kernel.hpp>
#include <pld/task.hpp>

#include <fmt/format.h>

#include <climits>

namespace pld::detail {

std::string signal_site(const char* api, const WindowDesc& s, const Dims& offsets) {
  const std::string& name = s.state ? s.state->buffer_name(s.ref.buffer) : std::string("?");
  return fmt::format("{}(signal '{}', offsets {})", api, name, offsets.str());
}

// Byte offset of the cell `offsets` of a signal window, after checking it exists.
std::uint64_t cell_offset(const std::string& op, const WindowDesc& s, const Dims& offsets) {
  if (s.dtype != DType::INT32)
    throw UsageError(
        fmt::format("{}: the signal is a {} view; signal cells are INT32 — allocate the signal with "
                    "alloc_window_buffer(shape, DType::INT32) (numpy: np.int32) and view it as int32",
                    op, dtype_name(s.dtype)));
  Dims one = offsets;
  for (int d = 0; d < one.size(); ++d) one[d] = 1;
  check_box(op, "signal", "cell", s.shape, offsets, one, "pick a cell inside the signal window");
  Index lin = 0;
  for (int d = 0; d < s.shape.size(); ++d) lin = lin * s.shape[d] + offsets[d];
  return s.ref.offset + static_cast<std::uint64_t>(lin) * sizeof(std::int32_t);
}

void check_wait_cmp(const std::string& site, WaitCmp cmp) {
  if (!wait_cmp_valid(cmp))
    throw UsageError(fmt::format("{}: cmp {} is not a WaitCmp; pass WaitCmp::Eq, Ne, Gt, Ge, Lt or Le", site,
                                 static_cast<int>(cmp)));
}

[[gnu::noinline]] std::uint64_t notify_cell_checked(const char* api, const WindowDesc& signal, int peer,
                                                    const Dims& offsets, NotifyOp op) {
  const std::string site = signal_site(api, signal, offsets);
  const DomainState& d = bound_state(site, signal);
  if (op != NotifyOp::AtomicAdd && op != NotifyOp::Set)
    throw UsageError(fmt::format("{}: op {} must be NotifyOp::AtomicAdd or NotifyOp::Set", site, static_cast<int>(op)));
  check_peer(site, d, peer);
  return cell_offset(site, signal, offsets);
}

void notify_trace(const WindowDesc& signal, const SignalCell& cell, std::int32_t value, NotifyOp op, std::int64_t t) {
  trace::record(trace::Event{trace::Kind::Notify,
                             t,
                             trace::now_ns(),
                             trace::thread_index(),
                             signal.state->buffer_name(signal.ref.buffer),
                             cell.target,
                             cell.offset,
                             value,
                             0,
                             static_cast<int>(op),
                             {}});
}

void notify(const WindowDesc& signal, int peer, const Dims& offsets, std::int32_t value, NotifyOp op) {
  const SignalCell cell = notify_cell("notify", signal, peer, offsets, op);
  const std::int64_t t = notify_begin(signal, peer, offsets, cell, value, op);
  if (race_on()) [[unlikely]] {
    const RaceRelease release(cell.target, cell.offset, op == NotifyOp::Set);
    signal.state->backend->notify(cell.target, cell.offset, value, op);
  } else {
    signal.state->backend->notify(cell.target, cell.offset, value, op);
  }
  notify_end(signal, cell, value, op, t);
}

void wait(const WindowDesc& signal, const Dims& offsets, std::int32_t expected, WaitCmp cmp) {
  const DomainState* d = signal.state;
  std::uint64_t off = 0;
  if (!d || !wait_cmp_valid(cmp) || !cell_fast(signal, offsets, &off)) {
    const std::string site = signal_site("wait", signal, offsets);
    bound_state(site, signal);
    check_wait_cmp(site, cmp);
    off = cell_offset(site, signal, offsets);
  }
  if (debug_checks()) debug_check_view("wait", signal);
  if (debug_checks()) debug_check_wait_entry(signal, offsets, off, expected, cmp);
  const WaitSite where{signal.ref.domain, signal.ref.buffer, &offsets};
  d->backend->record_op(OpKind::Wait, static_cast<std::uint8_t>(cmp), d->members[static_cast<std::size_t>(d->rank)],
                        expected, signal.ref.domain, signal.ref.buffer, off, &offsets);
  std::int32_t seen = 0;
  const std::int64_t t0 = trace::on() ? trace::now_ns() : 0;
  const WaitStatus status = d->backend->wait(off, expected, cmp, where, &seen);
  if (t0)
    trace::record(trace::Event{trace::Kind::Wait,
                               t0,
                               trace::now_ns(),
                               trace::thread_index(),
                               d->buffer_name(signal.ref.buffer),
                               -1,
                               off,
                               expected,
                               seen,
                               static_cast<int>(cmp),
                               {}});
  switch (status) {
    case WaitStatus::Ok:
      if (debug_checks()) debug_check_wait_done(signal, offsets, off, expected, cmp, seen);
      if (race_on()) race_acquire(own_cell(*d, off), off, seen);
      return;
    case WaitStatus::Timeout:
      throw WaitTimeoutError(fmt::format("{}: waited for value {} {} but the cell holds {} at the deadline",
                                         signal_site("wait", signal, offsets), wait_cmp_symbol(cmp), expected, seen));
    case WaitStatus::Aborted:
    case WaitStatus::Mismatch:  // only a collective's wait has a probe
      throw AbortedError(fmt::format("{}: released because another rank failed", signal_site("wait", signal, offsets)));
  }
}

void defer_wait(const WindowDesc& signal, const Dims& offsets, std::int32_t expected, WaitCmp cmp) {
  const std::string site = signal_site("defer_wait", signal, offsets);
  const DomainState& d = bound_state(site, signal);
  check_wait_cmp(site, cmp);
  if (cmp == WaitCmp::Ge && expected < 0)
    throw UsageError(
        fmt::format("{}: expected {} is negative; deferred conditions compare monotonic non-negative "
                    "counters, pass a value in [0, {}]",
                    site, expected, INT32_MAX));
  const std::uint64_t off = cell_offset(site, signal, offsets);
  const auto* cell = reinterpret_cast<const std::int32_t*>(d.windows_in[static_cast<std::size_t>(d.rank)] + off);
  task_defer(site, cell, expected, cmp,
             fmt::format("signal '{}' offsets {}", d.buffer_name(signal.ref.buffer), offsets.str()), off,
             d.buffer_name(signal.ref.buffer));
}

}  // namespace pld::detail
