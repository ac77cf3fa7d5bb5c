// One rank's wait and operation records as text, for the hang report (hang_report.cc) and the
// SIGUSR1 snapshots.
#include "group/hang_report.h"

#include "backend/wait_cmp.h"
#include "host/session.h"

#include <pld/detail/atomic.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace pld::detail {

std::string buffer_name(const HostSession& s, std::uint32_t domain, std::uint32_t buffer) {
  if (domain >= s.domains().size()) return fmt::format("buffer #{} of domain #{}", buffer, domain);
  const DomainRecord& d = s.domain(domain);
  const std::string name = buffer < d.buffers.size() ? "'" + d.buffers[buffer].name + "'" : fmt::format("#{}", buffer);
  return domain == 0 ? name : fmt::format("{} of domain {}", name, d.label);
}

bool in_engine_collective(const RankSnapshot& s) {
  return s.offsets.size() == 0 && !s.what.empty();
}

namespace {

std::string coords(const OpRecord& r) {
  std::string out = "[";
  for (int i = 0; i < r.ndim && i < 3; ++i) out += (i ? ", " : "") + std::to_string(r.coords[i]);
  if (r.ndim > 3) out += ", ...";
  return out + "]";
}

constexpr const char* kCellWaitNames[] = {"wait", "wait_until_any", "wait_until_all", "wait_until_some"};

// A multi-cell wait: "in wait_until_any on signal 'sig' for any of 3 cells: offsets [0, 1] for
// value >= 1, the cell holds 0; ...".
std::string describe_cells(const RankSnapshot& s, const HostSession& session) {
  const char* api = kCellWaitNames[std::clamp(s.cell_mode, 0, 3)];
  std::string t =
      fmt::format("in {} on signal {} for {} of {} cells:", api, session.describe_buffer(s.domain, s.buffer),
                  s.cell_mode == static_cast<std::int32_t>(WaitMode::All) ? "all" : "any", s.cell_count);
  for (const RankSnapshot::Cell& c : s.cells)
    t += fmt::format("\n      cell offsets {} for value {} {}; the cell holds {}{}", c.offsets.str(),
                     wait_cmp_symbol(s.cmp), c.expected, c.value,
                     wait_cmp_holds(c.value, c.expected, s.cmp) ? " (satisfied)" : "");
  if (s.cell_count > static_cast<std::int32_t>(s.cells.size()))
    t += fmt::format("\n      ... and {} more cells (a report names the first {})",
                     s.cell_count - static_cast<std::int32_t>(s.cells.size()), s.cells.size());
  return t;
}

}  // namespace

std::string describe_op(const OpRecord& op, const HostSession& session) {
  const std::string buf = buffer_name(session, op.domain, op.buffer);
  const bool atomic = op.flag == static_cast<std::uint8_t>(AtomicType::Add);
  switch (op.kind) {
    case OpKind::Notify:
      return fmt::format("notify(rank {}, {} {}, {} {})", op.peer, buf, coords(op),
                         op.flag == static_cast<std::uint8_t>(NotifyOp::Set) ? "Set" : "AtomicAdd", op.value);
    case OpKind::Wait:
      return fmt::format("wait({} {}, {} {})", buf, coords(op), wait_cmp_symbol(wait_cmp_from(op.flag)), op.value);
    case OpKind::Put:
      return fmt::format("put(rank {}, {} at {}, {} bytes{})", op.peer, buf, coords(op), op.value,
                         atomic ? ", atomic add" : "");
    case OpKind::Get: return fmt::format("get(rank {}, {} at {}, {} bytes)", op.peer, buf, coords(op), op.value);
    case OpKind::RemoteLoad:
      return fmt::format("remote_load(rank {}, {} at {}, {} bytes)", op.peer, buf, coords(op), op.value);
    case OpKind::RemoteStore:
      return fmt::format("remote_store(rank {}, {} at {}, {} bytes{})", op.peer, buf, coords(op), op.value,
                         atomic ? ", atomic add" : "");
    case OpKind::WaitCells:
      return fmt::format("{}({} {}{}, {} {})", kCellWaitNames[std::min(op.flag >> 4, 3)], buf, coords(op),
                         op.peer > 1 ? fmt::format(" and {} more cells", op.peer - 1) : std::string(),
                         wait_cmp_symbol(wait_cmp_from(op.flag & 0xf)), op.value);
    case OpKind::Collective:
      return fmt::format("{}(signal {}, {} elements)", coll_name(static_cast<CollKind>(op.flag)), buf, op.value);
    case OpKind::PutNbi:
      return fmt::format("put_nbi(rank {}, {} at {}, {} bytes{})", op.peer, buf, coords(op), op.value,
                         atomic ? ", atomic add" : "");
    case OpKind::GetNbi: return fmt::format("get_nbi(rank {}, {} at {}, {} bytes)", op.peer, buf, coords(op), op.value);
    case OpKind::PutSignal:
    case OpKind::PutSignalNbi:
      return fmt::format("{}(rank {}, {} bytes to {}, signal {} {}, {} {})",
                         op.kind == OpKind::PutSignal ? "put_signal" : "put_signal_nbi", op.peer, op.put_bytes,
                         buffer_name(session, op.domain, op.put_buffer), buf, coords(op),
                         op.flag == static_cast<std::uint8_t>(NotifyOp::Set) ? "Set" : "AtomicAdd", op.value);
    case OpKind::Atomic:
      return fmt::format("atomic_{}(rank {}, {} {}, {})", amo_name(static_cast<AmoOp>(op.flag)), op.peer, buf,
                         coords(op), op.value);
    case OpKind::None: break;
  }
  return "?";
}

std::string describe_wait(const RankSnapshot& s, const HostSession& session) {
  if (in_engine_collective(s))
    return fmt::format(
        "in {}, MPI's own collective on the domain of signal {} (which it does not use), waiting for "
        "every member to enter it",
        s.what, session.describe_buffer(s.domain, s.buffer));
  std::string t = s.cells.empty() ? fmt::format("waiting on signal {} offsets {} for value {} {}; the cell holds {}",
                                                session.describe_buffer(s.domain, s.buffer), s.offsets.str(),
                                                wait_cmp_symbol(s.cmp), s.expected, s.value)
                                  : describe_cells(s, session);
  if (!s.what.empty()) t += fmt::format(" (inside {})", s.what);
  return t;
}

std::string describe_history(const RankSnapshot& s, const HostSession& session) {
  if (s.history.empty()) return "\n      last operations: none recorded";
  std::string t = fmt::format("\n      last {} operations (oldest first):", s.history.size());
  for (const OpRecord& op : s.history) t += fmt::format("\n        #{} {}", op.seq, describe_op(op, session));
  return t;
}

}  // namespace pld::detail
