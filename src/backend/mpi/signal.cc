// Signals of the mpi backend. To a member on this node (shared memory) notify is what it is on
// shm: the cell's update (signal_update_local: a release store for Set, a read-modify-write for
// AtomicAdd), after a flush of any RMA still owed to other nodes; a wait on a cell that only such
// members write needs no MPI either (waits still nap rather than sleep on a futex: a member on
// another node may write the same cell through MPI). To every other member:
//   notify = release, then one MPI_Accumulate on the int32 cell (REPLACE for Set, SUM for
//            AtomicAdd — every update of a cell goes through the same accumulate family, so Set
//            and AtomicAdd are atomic with each other, also when a rank notifies itself), then
//            a flush so that the signal is out. Release = MPI_Win_sync of every window of the
//            call (my stores into my own windows) + a flush of every target written since the
//            last notify, in every window: data and signal may live in different domains.
//   wait   = poll the cell in my own window; drive MPI progress between polls (osc/ucx and
//            pt2pt deliver nothing otherwise); back off from spinning to yielding, then to short
//            sleeps (a remote accumulate cannot wake a futex) — but never to sleeps without
//            passive progress; then MPI_Win_sync of every window of the call (acquire).
//            A wait on several cells (wait_cells) is the same loop polling every cell.
#include "backend/amo.h"
#include "backend/mpi/backend.h"
#include "backend/wait_cmp.h"
#include "core/cpu_relax.h"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

namespace pld::detail {

namespace {

bool satisfied(std::int32_t value, std::int32_t expected, WaitCmp cmp) {
  return wait_cmp_holds(value, expected, cmp);
}

// Yield this long before sleeping: the awaited rank usually needs the core only briefly.
constexpr std::chrono::milliseconds kYieldBudget{2};
constexpr std::chrono::milliseconds kProbeInterval{20};  // between two runs of a wait's probe

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

// The "still waiting" note of a wait that has lasted `waited`: one line on stderr.
template <class Awaited>
void note_wait(const MpiBackend& e, const WaitSite& site, std::chrono::steady_clock::duration waited,
               Awaited&& awaited) {
  char what[256];
  const int n = awaited(what, sizeof what);
  std::fprintf(stderr,
               "pld: rank %d still waiting after %.0f s%s%s %.*s (the deadline is at %.0f s: PLD_WAIT_TIMEOUT)\n",
               e.rank(), std::chrono::duration<double>(waited).count(), site.what ? " in " : "",
               site.what ? site.what : "", std::max(0, std::min<int>(n, sizeof what - 1)), what, e.wait_timeout());
  std::fflush(stderr);
}

// What this rank is waiting on, formatted when a wait leaves its spin phase, for the line the
// SIGTERM handler writes when mpirun ends the job (a peer died or aborted): async-signal-safe
// write(2) of a preformatted buffer.
char g_wait_line[256] = {};
std::atomic<int> g_wait_len{0};

extern "C" void on_sigterm(int sig) {
  const int n = g_wait_len.load(std::memory_order_acquire);
  if (n > 0) {
    ssize_t ignored = write(STDERR_FILENO, g_wait_line, static_cast<std::size_t>(n));
    (void)ignored;
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

// The wait as the deadline report and the SIGUSR1 snapshot show it.
MpiWaitRecord wait_record(const WaitSite& site, WaitCmp cmp, std::int32_t expected, std::int32_t value,
                          std::uint64_t offset) {
  MpiWaitRecord w;
  w.valid = true;
  w.domain = site.domain;
  w.buffer = site.buffer;
  w.offsets = site.offsets ? *site.offsets : Dims{};
  w.cmp = cmp;
  w.expected = expected;
  w.value = value;
  w.offset = offset;
  w.writer = site.writer;
  if (site.what) std::snprintf(w.what, sizeof w.what, "%s", site.what);
  return w;
}

}  // namespace

void install_termination_report() {
  signal(SIGTERM, on_sigterm);
}

void MpiBackend::flush_dirty() {
  for (MpiWindow* w : dirty_) {
    if (w->dirty_count_ > static_cast<int>(w->dirty_.size()) / 2) {
      check(MPI_Win_flush_all(w->win_), "MPI_Win_flush_all");
    } else {
      for (std::size_t t = 0; t < w->dirty_.size(); ++t)
        if (w->dirty_[t]) check(MPI_Win_flush(static_cast<int>(t), w->win_), "MPI_Win_flush");
    }
    std::fill(w->dirty_.begin(), w->dirty_.end(), 0);
    w->dirty_count_ = 0;
  }
  dirty_.clear();
  dirty_windows_.store(0, std::memory_order_relaxed);
}

void MpiBackend::sync_active() {
  sync_windows();
  flush_dirty();
}

// With messages no window is accessed through MPI RMA (other nodes by messages, this node by
// loads and stores): a fence orders this rank's memory accesses.
void MpiBackend::sync_windows() {
  if (messages_) return std::atomic_thread_fence(std::memory_order_seq_cst);
  for (MpiWindow* w : active_) MPI_Win_sync(w->win_);
}

void MpiBackend::quiet() {
  std::lock_guard lock(mutex_);
  sync_active();
  // False: the call is failing anyway (another rank failed). After the fence every target has
  // taken its payloads, so the non-blocking sends are complete or about to be.
  if (messages_ && fence_locked(-1)) complete_nbi();
}

void MpiWindow::quiet() {
  engine_.quiet();
}

void MpiWindow::fence() {
  engine_.fence();
}

void MpiBackend::fence() {
  // Messages to one target arrive in order, copies to members on this node are done: only RMA
  // puts, which MPI does not order, need their flush.
  if (messages_ || dirty_windows_.load(std::memory_order_relaxed) == 0)
    return std::atomic_thread_fence(std::memory_order_seq_cst);
  std::lock_guard lock(mutex_);
  flush_dirty();
}

void MpiWindow::notify(int rank, std::uint64_t offset, std::int32_t value, NotifyOp op) {
  const int t = target(rank, offset, sizeof value);
  std::byte* at = shared_at(rank, offset);
  if (!at && engine_.messages_ && rank == engine_.rank_) at = heap_base(rank) + offset;
  if (at) {
    if (engine_.dirty_windows_.load(std::memory_order_relaxed) > 0 ||
        engine_.written_count_.load(std::memory_order_relaxed) > 0)
      engine_.quiet();
    return signal_update_local(at, value, op);
  }
  if (engine_.messages_) return engine_.message_notify(rank, id_, offset, value, op);
  std::lock_guard lock(engine_.mutex_);
  engine_.sync_active();
  engine_.check(MPI_Accumulate(&value, 1, MPI_INT32_T, t, static_cast<MPI_Aint>(offset - lo_), 1, MPI_INT32_T,
                               op == NotifyOp::Set ? MPI_REPLACE : MPI_SUM, win_),
                "MPI_Accumulate (notify)");
  engine_.check(MPI_Win_flush(t, win_), "MPI_Win_flush (notify)");
}

// The LL doorbell: notify(Set) of the value already in the cell, as on shm, where the cell is on
// this node and no RMA is owed to other nodes (notify's own path otherwise), without notify's
// general checks (the LL exchange computes its offsets inside the staging window).
void MpiWindow::ring(int rank, std::uint64_t offset, std::int32_t value) {
  std::byte* at = shared_at(rank, offset);
  if (!at || engine_.dirty_windows_.load(std::memory_order_relaxed) > 0 ||
      engine_.written_count_.load(std::memory_order_relaxed) > 0) [[unlikely]]
    return notify(rank, offset, value, NotifyOp::Set);
  signal_update_local(at, value, NotifyOp::Set);
}

void MpiBackend::progress() {
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return;  // a thread inside MPI is making progress anyway
  if (messages_) return serve();
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, MPI_STATUS_IGNORE);
}

// The poll loop of wait and wait_cells: `ready()` reads the cells, `record()` is the wait as a
// report shows it and `awaited(buf, size)` writes what it waits on into the line the SIGTERM
// handler prints.
template <class Ready, class Record, class Awaited>
WaitStatus MpiWindow::poll_until(Ready&& ready, Record&& record, const WaitSite& site, Awaited&& awaited) {
  const MpiBackend& e = engine_;
  using Clock = std::chrono::steady_clock;
  Clock::time_point start{}, deadline{}, next_probe{}, next_note{};
  auto nap = std::chrono::microseconds(10);
  WaitStatus status = WaitStatus::Ok;
  // A call whose windows are all shared needs no MPI progress to see a notify: its spin phase is
  // the shm backend's.
  const bool shared = e.active_shared_.load(std::memory_order_relaxed);
  for (std::int64_t round = 0; !ready(); ++round) {
    if (shared && round < e.wait_spin_)
      cpu_relax();
    else if (!e.passive_progress_ || round % 64 == 63)
      progress();
    if (round < e.wait_spin_) continue;
    // Past the spin phase: yield for up to kYieldBudget, then sleep in growing naps (a remote
    // accumulate cannot wake a futex). Checks of the clock, the deadline and the abort word
    // happen here only.
    const auto now = Clock::now();
    if (start == Clock::time_point{}) {
      start = now;
      g_wait_len.store(0, std::memory_order_release);
      int n =
          std::snprintf(g_wait_line, sizeof g_wait_line, "pld: rank %d was ended by the launcher while waiting%s%s ",
                        e.rank_, site.what ? " in " : "", site.what ? site.what : "");
      n = std::min<int>(n, sizeof g_wait_line - 2);
      n += awaited(g_wait_line + n, sizeof g_wait_line - 1 - static_cast<std::size_t>(n));
      n = std::min<int>(n, sizeof g_wait_line - 2);
      g_wait_line[n++] = '\n';
      g_wait_len.store(n, std::memory_order_release);
      deadline = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(e.wait_timeout_));
    }
    if (aborting()) {
      status = WaitStatus::Aborted;
      break;
    }
    if (e.usr1_) {  // SIGUSR1 (mpirun forwards it to every rank): print this wait, carry on
      const unsigned u = e.usr1_->load(std::memory_order_relaxed);
      if (engine_.usr1_seen_.exchange(u) != u && e.snapshot_) {
        try {
          e.snapshot_(record());
        } catch (...) {  // a diagnostic must not fail the wait
        }
      }
    }
    if (now >= deadline) {
      status = WaitStatus::Timeout;
      break;
    }
    if (e.wait_note_ > 0 && e.wait_note_ < e.wait_timeout_ && now >= next_note) {
      if (next_note != Clock::time_point{}) note_wait(e, site, now - start, awaited);
      next_note = (next_note == Clock::time_point{} ? start + seconds(e.wait_note_) : now + seconds(kWaitNoteEvery));
    }
    if (site.probe && now - start >= kYieldBudget && now >= next_probe) {
      if ((*site.probe)()) {
        status = WaitStatus::Mismatch;
        break;
      }
      next_probe = now + kProbeInterval;
    }
    // Without passive progress an incoming put or accumulate completes only while this rank
    // drives progress, so a napping waiter would stretch every peer's RMA to the nap (over
    // TCP: an 8-byte put 17 -> 210 us); it keeps yielding instead, as Open MPI's own waits do.
    if (!e.passive_progress_ || now - start < kYieldBudget) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(1000));
    }
  }
  if (start != Clock::time_point{} && status != WaitStatus::Timeout) g_wait_len.store(0, std::memory_order_release);
  if (status != WaitStatus::Ok) {  // the first wait the call's deadline or abort ends, for the report
    std::lock_guard lock(engine_.mutex_);
    if (!engine_.ended_wait_.valid) engine_.ended_wait_ = record();
  }
  if (shared)
    std::atomic_thread_fence(std::memory_order_acquire);  // no window of the call is written through MPI
  else
    engine_.sync_local();
  return status;
}

WaitStatus MpiWindow::wait(std::uint64_t offset, std::int32_t expected, WaitCmp cmp, const WaitSite& site,
                           std::int32_t* seen) {
  target(engine_.rank_, offset, sizeof(std::int32_t));
  std::atomic_ref<std::int32_t> cell(*reinterpret_cast<std::int32_t*>(local_at(engine_.rank_, offset)));
  std::int32_t v = 0;
  auto ready = [&] {
    v = cell.load(std::memory_order_acquire);
    return satisfied(v, expected, cmp);
  };
  auto awaited = [&](char* out, std::size_t size) {
    return std::snprintf(out, size, "on the signal cell at heap offset %llu for %s %d (it held %d)",
                         static_cast<unsigned long long>(offset), wait_cmp_symbol(cmp), expected, v);
  };
  const WaitStatus status = poll_until(
      ready, [&] { return wait_record(site, cmp, expected, v, offset); }, site, awaited);
  *seen = v;
  return status;
}

WaitStatus MpiWindow::wait_cells(WaitCell* cells, std::size_t n, WaitCmp cmp, WaitMode mode, const WaitSite& site) {
  for (std::size_t i = 0; i < n; ++i) target(engine_.rank_, cells[i].offset, sizeof(std::int32_t));
  std::byte* heap = heap_base(engine_.rank_);
  auto load = [heap](std::uint64_t off) {
    return std::atomic_ref<std::int32_t>(*reinterpret_cast<std::int32_t*>(heap + off)).load(std::memory_order_acquire);
  };
  auto ready = [&] { return poll_cells(cells, n, cmp, mode == WaitMode::All, load); };
  auto record = [&] {
    MpiWaitRecord r = wait_record(site, cmp, cells[0].expected, cells[0].value, cells[0].offset);
    fill_cells_record(r.cells, site, cells, n, mode);
    return r;
  };
  auto awaited = [&](char* out, std::size_t size) {
    return std::snprintf(out, size, "on %zu signal cells (%s of them; the first at heap offset %llu for %s %d)", n,
                         mode == WaitMode::All ? "all" : "any", static_cast<unsigned long long>(cells[0].offset),
                         wait_cmp_symbol(cmp), cells[0].expected);
  };
  return poll_until(ready, record, site, awaited);
}

bool MpiBackend::complete(MPI_Request& request, double limit) {
  using Clock = std::chrono::steady_clock;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limit));
  auto nap = std::chrono::microseconds(5);
  for (int round = 0;; ++round) {
    int done = 0;
    {
      std::lock_guard lock(mutex_);
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (messages_) serve();  // a peer may be waiting on this rank's messages to get here
    }
    if (done) {
      if (messages_) {  // messages sent before a peer's part of the collective are here now too
        std::lock_guard lock(mutex_);
        serve();
      }
      return true;
    }
    if (limit > 0 && Clock::now() > deadline) return false;
    // The peers usually need the core only briefly; without passive progress their RMA to this
    // rank also needs this loop's MPI_Test, so it never naps then (see wait).
    if (round < 256 || !passive_progress_) {
      sched_yield();
    } else {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, std::chrono::microseconds(200));
    }
  }
}

void MpiBackend::clear_abort() {
  std::atomic_ref<std::int32_t>(control_base_[kControlAbort / 4]).store(0, std::memory_order_seq_cst);
  std::lock_guard lock(mutex_);
  if (control_ != MPI_WIN_NULL) MPI_Win_sync(control_);
  ended_wait_ = MpiWaitRecord{};
  history_.clear();  // each call's report shows that call's operations, as on shm
}

MpiWaitRecord MpiBackend::ended_wait() const {
  std::lock_guard lock(mutex_);
  return ended_wait_;
}

bool MpiBackend::aborting() const {
  return std::atomic_ref<std::int32_t>(control_base_[kControlAbort / 4]).load(std::memory_order_acquire) != 0;
}

}  // namespace pld::detail
