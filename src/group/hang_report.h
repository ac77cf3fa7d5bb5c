// Hang diagnosis on the host: from a snapshot of every rank (its state, the wait it is blocked in,
// its last operations) it finds the ranks expected to write each awaited cell, the wait-for graph
// across ranks, and a verdict — the cycle (rank a waits for b waits for a) or the rank that never
// notified. Each process group takes the snapshots its own way (shm/report.cc reads the shared
// control block, mpi/report.cc gathers them); the report is appended to the RankError message
// of a wait deadline and printed on SIGUSR1.
#pragma once

#include "backend/op_history.h"

#include <pld/types.hpp>

#include <iterator>
#include <string>
#include <vector>

namespace pld::detail {

class HostSession;

struct RankSnapshot {
  enum class State { NotRunning, Idle, Running, Waiting } state = State::Idle;
  std::string who;  // "rank 1 (device 1)"
  // The wait in progress (state == Waiting).
  std::uint32_t domain = 0, buffer = 0;
  Dims offsets;
  WaitCmp cmp = WaitCmp::Ge;
  std::int32_t expected = 0, value = 0;
  std::uint64_t offset = 0;
  int writer = -1;                // the protocol's writer (collectives), or -1
  std::string what;               // the collective waiting, or empty
  std::vector<OpRecord> history;  // oldest first
  // A wait on several cells (wait_until_any / all / some): every cell the record names (the
  // first is the one above), and how many there are in all.
  struct Cell {
    Dims offsets;
    std::uint64_t offset = 0;
    std::int32_t expected = 0, value = 0;
  };
  std::vector<Cell> cells;
  std::int32_t cell_count = 0;
  std::int32_t cell_mode = 0;  // WaitMode
};

/// Fills `s.cells` from a published multi-cell wait; `value(i)` is cell i's current value.
template <class Record, class Value>
void snapshot_cells(RankSnapshot& s, const Record& r, Value&& value) {
  s.cell_count = r.count;
  s.cell_mode = static_cast<std::int32_t>(r.mode);
  for (int i = 0; i < r.count && i < static_cast<int>(std::size(r.offset)); ++i) {
    RankSnapshot::Cell c{{}, r.offset[i], r.expected[i], value(i)};
    // The cell's coordinates in the signal view: its element index, unravelled by the shape.
    Index lin = static_cast<Index>((r.offset[i] - r.base) / sizeof(std::int32_t));
    Dims coords;
    for (int d = 0; d < r.ndim; ++d) coords.push_back(0);
    for (int d = r.ndim - 1; d >= 0; --d) {
      coords[d] = r.shape[d] > 0 ? lin % r.shape[d] : 0;
      lin = r.shape[d] > 0 ? lin / r.shape[d] : 0;
    }
    c.offsets = coords;
    s.cells.push_back(c);
  }
  if (!s.cells.empty()) {
    s.offsets = s.cells[0].offsets;
    s.offset = s.cells[0].offset;
    s.expected = s.cells[0].expected;
    s.value = s.cells[0].value;
  }
}

struct HangReport {
  std::string text;  // per-rank lines, expected writers, last operations, wait-for graph, verdict
  std::string dot;   // the wait-for graph in Graphviz DOT
};

HangReport hang_analyse(const std::vector<RankSnapshot>& ranks, const HostSession& session);

/// Writes `dot` to a new file where the user asked for debugging outputs — PLD_DEBUG_DIR, else
/// `trace_dir` (the swimlane directory when swimlanes are on; empty otherwise) — and returns its
/// path; without either, writes nothing and says how to get the file. "(...)" when it cannot be
/// written.
std::string hang_write_dot(const std::string& dot, const std::string& trace_dir);

/// A waiting rank's wait: "waiting on signal 'sig' of domain world offsets [0, 0] for value >= 1;
/// the cell holds 0 (inside allreduce)".
std::string describe_wait(const RankSnapshot& s, const HostSession& session);
/// A rank's last operations, one indented line each (starts with a newline).
std::string describe_history(const RankSnapshot& s, const HostSession& session);

/// One operation record as text: "notify(rank 1, 'sig' [0, 0], AtomicAdd 1)".
std::string describe_op(const OpRecord& op, const HostSession& session);
/// A window buffer as the report names it: "'sig'", or "'sig' of domain evens" (describe.cc).
std::string buffer_name(const HostSession& s, std::uint32_t domain, std::uint32_t buffer);
/// A rank in the engine's own collective (the mpi backend's MPI_Iallreduce & co.): it waits on no
/// cell, only for every member of the domain to enter the same collective.
bool in_engine_collective(const RankSnapshot& s);

}  // namespace pld::detail
