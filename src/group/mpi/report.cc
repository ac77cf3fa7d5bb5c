// MpiGroup's hang reports: each process knows only its own rank's wait and history, so a report
// gathers them from every process (collective) and analyses them as the shm group does
// (group/hang_report.h). On SIGUSR1 each waiting rank prints its own part.
#include "group/mpi/group.h"

#include "backend/mpi/backend.h"
#include "group/hang_report.h"
#include "group/report.h"
#include "host/session.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <type_traits>

namespace pld::detail {

namespace {

// One rank's wait and history as the hang analysis sees it (group/hang_report.h).
RankSnapshot snapshot_of(std::string who, const MpiWaitRecord& wait, const OpRecord* records, int count) {
  RankSnapshot s;
  s.who = std::move(who);
  s.history.assign(records, records + std::clamp(count, 0, kOpHistory));
  if (!wait.valid) return s;  // finished its dispatches, or failed outside a wait: idle now
  s.state = RankSnapshot::State::Waiting;
  s.domain = wait.domain;
  s.buffer = wait.buffer;
  s.offsets = wait.offsets;
  s.cmp = wait.cmp;
  s.expected = wait.expected;
  s.value = wait.value;
  s.offset = wait.offset;
  s.writer = wait.writer;
  s.what.assign(wait.what, strnlen(wait.what, sizeof wait.what));
  if (wait.cells.count > 0) snapshot_cells(s, wait.cells, [&](int i) { return wait.cells.value[i]; });
  return s;
}

}  // namespace

std::string MpiGroup::wait_report(const HostSession& session) const {
  MpiBackend& be = *backend_;
  struct Wire {
    MpiWaitRecord wait;
    std::int32_t history = 0;
    OpRecord records[kOpHistory];
  };
  static_assert(std::is_trivially_copyable_v<Wire>);
  Wire mine;
  mine.wait = be.ended_wait();
  mine.history = be.history().read(mine.records);
  const int n = be.world_size();
  std::vector<Wire> all(static_cast<std::size_t>(n));
  be.collective([&](MPI_Comm comm, MPI_Request* req) {
    MPI_Iallgather(&mine, sizeof(Wire), MPI_BYTE, all.data(), sizeof(Wire), MPI_BYTE, comm, req);
  });
  std::vector<RankSnapshot> ranks;
  for (int r = 0; r < n; ++r) {
    const Wire& w = all[static_cast<std::size_t>(r)];
    ranks.push_back(snapshot_of(rank_label(options_.device_ids, r), w.wait, w.records, w.history));
  }
  const HangReport rep = hang_analyse(ranks, session);
  // Process 0 writes the DOT file; every process names it.
  std::string path =
      be.rank() == 0 ? hang_write_dot(rep.dot, options_.swimlane ? options_.dfx_dir : std::string()) : std::string();
  be.broadcast(path, 0);
  return fmt::format(
             "Waits at the deadline ({} s; PLD_WAIT_TIMEOUT or DistributedConfig::wait_timeout changes it; "
             "under mpi, the wait the deadline or the abort ended on each rank):",
             options_.wait_timeout) +
         rep.text + "\nWait-for graph in DOT: " + path;
}

void MpiGroup::print_snapshot(const HostSession& session, const MpiWaitRecord& wait) const {
  OpRecord records[kOpHistory];
  const int count = backend_->history().read(records);
  const RankSnapshot s = snapshot_of(rank_label(options_.device_ids, backend_->rank()), wait, records, count);
  const std::string text = fmt::format("pld: SIGUSR1 snapshot of the running call (the job continues): {}: {}{}\n",
                                       s.who, describe_wait(s, session), describe_history(s, session));
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace pld::detail
