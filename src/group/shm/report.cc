// ShmGroup's hang reports: every rank's state, wait and last operations read from the shared
// control block (the ranks publish them there), analysed by group/hang_report.h. At a wait
// deadline the report goes into the RankError; on SIGUSR1 it is printed and the call continues.
#include "group/shm/group.h"

#include "backend/wait_cmp.h"
#include "core/log.h"
#include "group/hang_report.h"
#include "group/report.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>

#include <unistd.h>

namespace pld::detail {

namespace {

/// Reads every rank's published state and history. `alive[r]` false: the process has ended.
std::vector<RankSnapshot> hang_snapshot(ShmBackend& backend, const std::vector<std::string>& who,
                                        const std::vector<bool>& alive) {
  ControlBlock& c = backend.control();
  std::vector<RankSnapshot> out(who.size());
  for (std::size_t r = 0; r < who.size(); ++r) {
    RankSnapshot& s = out[r];
    const RankSlot& slot = c.slots[r];
    s.who = who[r];
    const auto state = static_cast<RankState>(slot.state.load(std::memory_order_acquire));
    if (!alive[r])
      s.state = RankSnapshot::State::NotRunning;
    else if (state == RankState::Waiting)
      s.state = RankSnapshot::State::Waiting;
    else if (state == RankState::Running)
      s.state = RankSnapshot::State::Running;
    else
      s.state = RankSnapshot::State::Idle;
    if (s.state == RankSnapshot::State::Waiting) {
      s.domain = slot.wait_domain;
      s.buffer = slot.wait_buffer;
      for (int d = 0; d < slot.wait_ndim && d < kMaxDims; ++d) s.offsets.push_back(slot.wait_offsets[d]);
      s.cmp = wait_cmp_from(slot.wait_cmp);
      s.expected = slot.wait_expected;
      s.offset = slot.wait_offset;
      s.value = backend.peek(static_cast<int>(r), slot.wait_offset);
      s.writer = slot.wait_writer;
      s.what.assign(slot.wait_what, strnlen(slot.wait_what, sizeof slot.wait_what));
      if (slot.wait_cells.count > 0)
        snapshot_cells(s, slot.wait_cells,
                       [&](int i) { return backend.peek(static_cast<int>(r), slot.wait_cells.offset[i]); });
    }
    OpRecord recs[kOpHistory];
    const int n = c.history[r].read(recs);
    s.history.assign(recs, recs + n);
  }
  return out;
}

}  // namespace

std::string ShmGroup::hang_report(const HostSession& session, const std::string& title) const {
  std::vector<std::string> who_all;
  std::vector<bool> alive;
  for (int r = 0; r < world_size(); ++r) {
    who_all.push_back(who(r));
    alive.push_back(ranks_[static_cast<std::size_t>(r)].alive);
  }
  const HangReport rep = hang_analyse(hang_snapshot(*backend_, who_all, alive), session);
  return title + rep.text +
         "\nWait-for graph in DOT: " + hang_write_dot(rep.dot, options_.swimlane ? options_.dfx_dir : std::string());
}

std::string ShmGroup::wait_report(const HostSession& session) const {
  std::string out = hang_report(session, fmt::format("Waits at the deadline ({} s; PLD_WAIT_TIMEOUT or "
                                                     "DistributedConfig::wait_timeout changes it):",
                                                     options_.wait_timeout));
  out += "\n";
  out += kWaitTimeoutHint;
  return out;
}

void ShmGroup::report_if_asked(const HostSession& session, Call& call) const {
  const unsigned u = Usr1Handler::count();
  if (u == call.usr1_seen) return;
  call.usr1_seen = u;
  const std::string report = hang_report(session, "SIGUSR1 snapshot of the running call (the job continues):");
  std::fprintf(stderr, "pld: %s\n", report.c_str());
  std::fflush(stderr);
  log(LogLevel::Info, LogSys::Debug, "{}", report);
}

void ShmGroup::note_long_waits(const HostSession& session, Call& call) const {
  using Clock = std::chrono::steady_clock;
  const double first = options_.wait_note;
  if (first <= 0 || first >= options_.wait_timeout) return;
  const Clock::time_point now = Clock::now();
  if (now < call.next_wait_look) return;
  call.next_wait_look = now + std::chrono::milliseconds(200);
  call.noted.resize(ranks_.size(), {0, 0});
  const ControlBlock& c = backend_->control();
  std::vector<int> due;
  std::vector<double> waited;
  for (int r = 0; r < world_size(); ++r) {
    const RankSlot& slot = c.slots[r];
    if (static_cast<RankState>(slot.state.load(std::memory_order_acquire)) != RankState::Waiting) continue;
    const std::int64_t since = slot.wait_since_ns;
    const double s = std::chrono::duration<double>(now.time_since_epoch() - Clock::duration(since)).count();
    if (s < first) continue;
    auto& [noted_since, notes] = call.noted[static_cast<std::size_t>(r)];
    if (noted_since != since) noted_since = since, notes = 0;
    const int want = 1 + static_cast<int>((s - first) / kWaitNoteEvery);
    if (notes >= want) continue;
    notes = want;
    due.push_back(r);
    waited.push_back(s);
  }
  if (due.empty()) return;
  std::vector<std::string> who_all;
  std::vector<bool> alive;
  for (int r = 0; r < world_size(); ++r) {
    who_all.push_back(who(r));
    alive.push_back(ranks_[static_cast<std::size_t>(r)].alive);
  }
  const std::vector<RankSnapshot> snap = hang_snapshot(*backend_, who_all, alive);
  for (std::size_t i = 0; i < due.size(); ++i) {
    const RankSnapshot& s = snap[static_cast<std::size_t>(due[i])];
    if (s.state != RankSnapshot::State::Waiting) continue;
    const std::string line = fmt::format(
        "pld: {} still waiting after {:.0f} s: {} (the deadline is at {} s: PLD_WAIT_TIMEOUT; "
        "kill -USR1 {} prints every rank's state)",
        s.who, waited[i], describe_wait(s, session), options_.wait_timeout, getpid());
    std::fprintf(stderr, "%s\n", line.c_str());
    log(LogLevel::Info, LogSys::Debug, "{}", line);
  }
  std::fflush(stderr);
}

}  // namespace pld::detail
