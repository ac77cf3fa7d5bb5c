// Signals of the shm backend. notify changes the peer's cell — Set with a release store,
// AtomicAdd with a read-modify-write (backend/amo.h) — then wakes the peer with a futex only when
// a thread of it sleeps on that cell, or on another cell of the same bucket (RankSlot::sleeping):
// a notify, put_signal or atomic on a cell nobody sleeps on costs one load of a line that stays in
// the notifier's cache, whatever else the peer sleeps on. wait polls the local cell for
// PLD_WAIT_SPIN rounds (yielding now and then while the host is busy dispatching), yields a few
// times, then sleeps on the cell's futex in bounded slices so that an abort or the deadline is
// noticed (without a spin phase it keeps yielding for up to kYieldBudget first).
//
// The sleeper counts itself in the cell's bucket once, re-reads the cell and sleeps (a change
// between its read and its sleep fails the futex's own compare); the notifier changes the cell and
// then reads the bucket. A read-modify-write orders the two, so the notifier sees the count or the
// sleeper sees the value. A Set's store may still sit in the notifier's store buffer when its
// bucket load runs, so both can miss each other — only while the count itself is new, and the
// store reaches memory within nanoseconds. So the first slice is short (kFirstSlice): a missed
// wake-up costs at most that, never the wait, and the count stays in place for the later slices,
// where every notifier sees it. A full barrier in every Set would close the gap at ~3.5 ns per
// notify (performance.md, put_signal). A wait on several cells (wait_cells) polls them all the
// same way and sleeps on the rank's doorbell; it counts itself in the bucket of each of its cells
// (as kBellSleeper), and a notify that finds such a count rings the doorbell.
#include "backend/shm/backend.h"
#include "backend/wait_cmp.h"
#include "core/cpu_relax.h"
#include "core/futex.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

namespace pld::detail {

namespace {

bool satisfied(std::int32_t value, std::int32_t expected, WaitCmp cmp) {
  return wait_cmp_holds(value, expected, cmp);
}

// Every 64 polls (~1 us here) the spin phase yields its core while the host's dispatch loop is
// busy (ControlBlock::host_busy): the host is then one more runnable thread than there are ranks,
// and a pure spin kept the peer being waited for — queued on the spinner's core after its wake-up
// — from running: host builtin barriers at P=2 took 4 us or 40-85 us per call from run to run.
// Yielding always cured that but made every small collective 4-10x slower when a foreign process
// shares a core (each yield hands it a time slice); inside one long dispatch (a kernel loop) the
// host sleeps in poll() and the spin stays pure (measured with pld-bench at P=2).
constexpr std::int64_t kSpinCheckMask = 63;
constexpr int kYields = 16;
// With no spin phase (PLD_WAIT_SPIN=0, which pld sets when ranks outnumber cores) a waiter keeps
// yielding for this long before it sleeps: the awaited rank usually needs the core only briefly,
// and a futex wake-up costs a syscall plus a scheduler round trip (bench/README.md, item 3).
constexpr double kYieldBudget = 1e-3;  // seconds
constexpr double kFirstSlice = 2e-4;   // seconds: bounds a wake-up missed by a Set (see above)
constexpr double kSleepSlice = 0.1;    // seconds

}  // namespace

void ShmBackend::notify(int rank, std::uint64_t offset, std::int32_t value, NotifyOp op) {
  update_cell(rank, offset, value, op);
}

// Single-cell sleepers sleep on the cell itself, multi-cell sleepers on the rank's doorbell. The
// doorbell is a second futex word: a multi-cell sleeper counts itself, reads the bell, then reads
// its cells before it sleeps on the bell value it read, so a ring after its read fails the
// futex's compare.
void ShmBackend::wake_sleepers(RankSlot& slot, std::uint32_t sleeping, std::int32_t* cell) {
  if (sleeping & (kBellSleeper - 1)) futex_wake_all(cell);
  if (sleeping >= kBellSleeper) {
    slot.bell.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_all(&slot.bell);
  }
}

// Spin phase of a wait: polls `ready()` for PLD_WAIT_SPIN rounds.
template <class Ready>
bool ShmBackend::spin_until(Ready&& ready) {
  bool ok = ready();
  for (std::int64_t i = 0; !ok && i < wait_spin_; ++i) {
    cpu_relax();
    if ((i & kSpinCheckMask) == kSpinCheckMask && control_->host_busy.load(std::memory_order_relaxed)) sched_yield();
    ok = ready();
  }
  return ok;
}

// Publishes the wait in the rank's slot (deadline reports, abort wake-ups).
void ShmBackend::publish_wait(std::uint64_t offset, std::int32_t expected, WaitCmp cmp, const WaitSite& site) {
  RankSlot& slot = control_->slots[my_rank_];
  slot.wait_domain = site.domain;
  slot.wait_buffer = site.buffer;
  slot.wait_ndim = site.offsets ? site.offsets->size() : 0;
  for (int d = 0; d < slot.wait_ndim; ++d) slot.wait_offsets[d] = (*site.offsets)[d];
  slot.wait_cmp = static_cast<std::int32_t>(cmp);
  slot.wait_expected = expected;
  slot.wait_offset = offset;
  slot.wait_writer = site.writer;
  std::size_t w = 0;
  for (const char* c = site.what; c && *c && w + 1 < sizeof slot.wait_what; ++c) slot.wait_what[w++] = *c;
  slot.wait_what[w] = '\0';
  slot.wait_since_ns = std::chrono::steady_clock::now().time_since_epoch().count();
  slot.state.store(static_cast<std::uint32_t>(RankState::Waiting), std::memory_order_seq_cst);
}

// Slow phase of a wait, after publish_wait: yields, then sleeps in bounded slices with
// `sleep(seconds)` (which re-checks before it sleeps) until `ready()`, the abort or the deadline.
// `count(true)` before the first slice counts the waiter in its cells' buckets, `count(false)`
// at the end takes it out again. The first slice is kFirstSlice. `probe` (or nullptr) runs before
// every slice but the first.
template <class Ready, class Count, class Sleep>
WaitStatus ShmBackend::sleep_until(const WaitProbe* probe, Ready&& ready, Count&& count, Sleep&& sleep) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(wait_timeout_);
  RankSlot& slot = control_->slots[my_rank_];
  WaitStatus status = WaitStatus::Ok;
  double slice = kFirstSlice;
  bool counted = false;
  for (int round = 0;; ++round) {
    if (ready()) break;
    if (control_->abort.load(std::memory_order_acquire)) {
      status = WaitStatus::Aborted;
      break;
    }
    const double left = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (left <= 0) {
      status = WaitStatus::Timeout;
      break;
    }
    if (round < kYields || (wait_spin_ == 0 && wait_timeout_ - left < kYieldBudget)) {
      sched_yield();
      continue;
    }
    if (counted && probe && (*probe)()) {
      status = WaitStatus::Mismatch;
      break;
    }
    if (!counted) count(true);
    counted = true;
    sleep(std::min(left, slice));
    slice = kSleepSlice;
  }
  if (counted) count(false);
  if (status != WaitStatus::Timeout)  // a timed-out wait stays published for the host's report
    slot.state.store(static_cast<std::uint32_t>(RankState::Running), std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_acquire);
  return status;
}

WaitStatus ShmBackend::wait(std::uint64_t offset, std::int32_t expected, WaitCmp cmp, const WaitSite& site,
                            std::int32_t* seen) {
  auto* cell = reinterpret_cast<std::int32_t*>(heap_base(my_rank_) + offset);
  std::atomic_ref<std::int32_t> a(*cell);
  std::int32_t v = 0;
  auto ready = [&] {
    v = a.load(std::memory_order_acquire);
    return satisfied(v, expected, cmp);
  };
  if (spin_until(ready)) {
    *seen = v;
    return WaitStatus::Ok;
  }
  publish_wait(offset, expected, cmp, site);
  control_->slots[my_rank_].wait_cells.count = 0;
  std::atomic<std::uint32_t>& bucket = control_->slots[my_rank_].sleeping[sleep_bucket(offset)];
  auto count = [&](bool in) {
    if (in)
      bucket.fetch_add(1, std::memory_order_seq_cst);
    else
      bucket.fetch_sub(1, std::memory_order_seq_cst);
  };
  const WaitStatus status = sleep_until(site.probe, ready, count, [&](double seconds) {
    const std::int32_t now = a.load(std::memory_order_seq_cst);
    if (!satisfied(now, expected, cmp) && !control_->abort.load(std::memory_order_seq_cst))
      futex_sleep(cell, static_cast<std::uint32_t>(now), seconds);
  });
  *seen = v;
  return status;
}

WaitStatus ShmBackend::wait_cells(WaitCell* cells, std::size_t n, WaitCmp cmp, WaitMode mode, const WaitSite& site) {
  std::byte* heap = heap_base(my_rank_);
  const bool all = mode == WaitMode::All;
  auto load = [heap](std::uint64_t off) {
    return std::atomic_ref<std::int32_t>(*reinterpret_cast<std::int32_t*>(heap + off)).load(std::memory_order_seq_cst);
  };
  auto ready = [&] { return poll_cells(cells, n, cmp, all, load); };
  if (spin_until(ready)) return WaitStatus::Ok;
  RankSlot& slot = control_->slots[my_rank_];
  publish_wait(cells[0].offset, cells[0].expected, cmp, site);
  fill_cells_record(slot.wait_cells, site, cells, n, mode);
  std::uint64_t buckets = 0;  // bit b: a cell of the wait falls in bucket b
  for (std::size_t i = 0; i < n; ++i) buckets |= std::uint64_t{1} << sleep_bucket(cells[i].offset);
  auto count = [&](bool in) {
    for (int b = 0; b < kSleepBuckets; ++b)
      if (buckets >> b & 1) {
        if (in)
          slot.sleeping[b].fetch_add(kBellSleeper, std::memory_order_seq_cst);
        else
          slot.sleeping[b].fetch_sub(kBellSleeper, std::memory_order_seq_cst);
      }
  };
  return sleep_until(site.probe, ready, count, [&](double seconds) {
    const std::uint32_t bell = slot.bell.load(std::memory_order_seq_cst);
    if (!ready() && !control_->abort.load(std::memory_order_seq_cst)) futex_sleep(&slot.bell, bell, seconds);
  });
}

void ShmBackend::abort_waits() {
  control_->abort.store(1, std::memory_order_seq_cst);
  for (int r = 0; r < world_size_; ++r) {
    RankSlot& slot = control_->slots[r];
    if (slot.state.load(std::memory_order_acquire) == static_cast<std::uint32_t>(RankState::Waiting))
      futex_wake_all(reinterpret_cast<std::int32_t*>(bases_[static_cast<std::size_t>(r)] + slot.wait_offset));
    slot.bell.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_all(&slot.bell);
  }
}

void ShmBackend::clear_abort() {
  control_->abort.store(0, std::memory_order_seq_cst);
}

}  // namespace pld::detail
