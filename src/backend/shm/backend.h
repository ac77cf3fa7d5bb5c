// shm backend: every rank's window heap is a memfd mapped by every process (the host and all
// rank processes), so a peer's window is plain memory at heap_base(peer) + offset. A small
// control block, also shared, holds each rank's state and current wait (for deadline reports
// and for waking sleepers when the job aborts).
#pragma once

#include "backend/amo.h"
#include "backend/backend.h"

#include <pld/window.hpp>

#include <atomic>
#include <cstdint>
#include <vector>

namespace pld::detail {

enum class RankState : std::uint32_t { Idle = 0, Running = 1, Waiting = 2, Exited = 3 };

/// Buckets of a rank's sleeper counts (RankSlot::sleeping): a cell's bucket is a hash of its heap
/// offset, so a notify of a cell nobody sleeps on usually finds its bucket zero and makes no
/// syscall; two cells that share a bucket only cost a wake-up nobody needed.
inline constexpr int kSleepBucketBits = 6;
inline constexpr int kSleepBuckets = 1 << kSleepBucketBits;  // a multi-cell wait's set is one 64-bit mask
/// A bucket counts single-cell sleepers in its low 16 bits and multi-cell sleepers (which sleep on
/// the rank's doorbell) in units of kBellSleeper.
inline constexpr std::uint32_t kBellSleeper = 1u << 16;

/// The bucket of the cell at heap offset `offset` (Fibonacci hashing of the int32 index).
constexpr int sleep_bucket(std::uint64_t offset) {
  return static_cast<int>(((offset >> 2) * 0x9E3779B97F4A7C15ull) >> (64 - kSleepBucketBits));
}

/// One rank's published state. Written by the rank, read by the host for reports.
struct alignas(64) RankSlot {
  std::atomic<std::uint32_t> state{0};
  std::atomic<std::uint64_t> dispatch{0};  // sequence number of the dispatch being run
  // The wait in progress (meaningful while state == Waiting).
  std::uint32_t wait_domain = 0;
  std::uint32_t wait_buffer = 0;
  std::int32_t wait_ndim = 0;
  std::int32_t wait_cmp = 0;
  std::int32_t wait_expected = 0;
  std::uint64_t wait_offset = 0;  // byte offset of the cell in the rank's own heap
  std::int64_t wait_offsets[kMaxDims] = {};
  std::int32_t wait_writer = -1;   // world rank that the protocol says writes the cell, or -1
  char wait_what[24] = {};         // the collective waiting, or "" for a kernel wait
  std::int64_t wait_since_ns = 0;  // when the wait left its spin phase (steady clock)
  // Waits on several cells (wait_cells) sleep on the doorbell, which a change of one of their
  // cells rings (their buckets count kBellSleeper).
  std::atomic<std::uint32_t> bell{0};
  WaitCellsRecord wait_cells;  // the multi-cell wait in progress (count 0: a single-cell wait)
  // Threads of the rank asleep on a futex, by the bucket of the cell they wait on (sleep_bucket).
  // Written only around a sleep, so the line stays in every notifier's cache.
  alignas(64) std::atomic<std::uint32_t> sleeping[kSleepBuckets] = {};
  // Wipe messages this rank has carried out (the host waits for its count before the next call).
  alignas(64) std::atomic<std::uint32_t> wiped{0};

  /// Forgets every sleeper (a rank process that died asleep leaves its counts behind).
  void forget_sleepers() {
    for (auto& s : sleeping) s.store(0, std::memory_order_relaxed);
  }
};

struct ControlBlock {
  std::atomic<std::uint32_t> abort{0};  // non-zero: every wait fails with AbortedError
  // Non-zero while the host's dispatch loop runs outside poll(): the host is then one more
  // runnable thread beside the ranks, and spinning waits yield now and then (signal.cc).
  alignas(64) std::atomic<std::uint32_t> host_busy{0};
  RankSlot slots[kMaxRanks];
  OpRing history[kMaxRanks];  // each rank's last operations (backend/op_history.h)
};

/// Creates a memfd of `bytes`, maps it shared and closes the descriptor (window.cc).
std::byte* map_memfd(const char* label, std::uint64_t bytes);

/// Asks for transparent huge pages on a mapping that has no page yet (madvise MADV_HUGEPAGE); the
/// kernel grants them or not by its shmem_enabled mode. Returns 0 or the errno of the refusal
/// (EINVAL: a kernel without THP).
int advise_huge_pages(std::byte* base, std::uint64_t bytes);

/// Shared-memory windows. Built by the host before it forks; the rank processes inherit the
/// object and every mapping, so the same instance works on both sides.
class ShmBackend final : public Backend {
 public:
  ShmBackend(int world_size, std::uint64_t heap_bytes, bool huge_pages, double wait_timeout, std::int64_t wait_spin);
  ~ShmBackend() override;
  ShmBackend(const ShmBackend&) = delete;
  ShmBackend& operator=(const ShmBackend&) = delete;

  /// Called in a freshly forked rank process.
  void become_rank(int rank) {
    my_rank_ = rank;
    op_history = &control_->history[rank];
    op_histories = control_->history;
  }
  int my_rank() const { return my_rank_; }

  const char* name() const override { return "shm"; }
  int world_size() const override { return world_size_; }
  std::uint64_t heap_bytes() const override { return heap_bytes_; }
  std::byte* heap_base(int rank) const override { return bases_[static_cast<std::size_t>(rank)]; }

  void put(int rank, std::uint64_t offset, const void* src, std::size_t bytes) override;
  void get(void* dst, int rank, std::uint64_t offset, std::size_t bytes) override;
  void atomic_add(int rank, std::uint64_t offset, const void* src, std::size_t count, DType dtype) override;
  void notify(int rank, std::uint64_t offset, std::int32_t value, NotifyOp op) override;
  /// The LL doorbell: the value is already in the cell from a release store — what notify(Set)
  /// does — so only its wake-up test remains, no second store to a line the reader spins on.
  void ring(int rank, std::uint64_t offset, std::int32_t /*value*/) override {
    wake(rank, offset, reinterpret_cast<std::int32_t*>(heap_base(rank) + offset));
  }
  // Non-blocking transfers complete when they return (copies): put_nbi and get_nbi keep
  // Backend's defaults; quiet and fence are fences (rma.cc).
  /// The copy, then notify's update of the signal cell (a release: the copy's streaming stores
  /// are fenced when it ends): one call, no virtual call in between. That is all it is
  /// (Backend::cpu_put_signal), so the kernel API does it inline (kernel/rma.cc) and calls it
  /// only in debug mode, with tracing on, or for a region's last run.
  void put_signal(int rank, std::uint64_t offset, const void* src, std::size_t bytes, std::uint64_t signal_offset,
                  std::int32_t value, NotifyOp op, bool nbi) override;
  void quiet() override;
  void fence() override;
  WaitStatus wait(std::uint64_t offset, std::int32_t expected, WaitCmp cmp, const WaitSite& site,
                  std::int32_t* seen) override;
  std::uint64_t atomic(int rank, std::uint64_t offset, AmoOp op, DType dtype, std::uint64_t operand,
                       std::uint64_t compare) override;
  void atomic_changed(int rank, std::uint64_t offset) override {
    wake(rank, offset, reinterpret_cast<std::int32_t*>(heap_base(rank) + offset));
  }
  WaitStatus wait_cells(WaitCell* cells, std::size_t n, WaitCmp cmp, WaitMode mode, const WaitSite& site) override;

  // Host side.
  ControlBlock& control() { return *control_; }
  /// Zero `bytes` at `offset` of `rank`'s heap (window allocation).
  void zero(int rank, std::uint64_t offset, std::size_t bytes);
  /// Makes every current and future wait fail with AbortedError and wakes the sleepers.
  void abort_waits();
  /// Clears the abort flag (before the next call on a reused rank group).
  void clear_abort();
  /// Current value of `rank`'s cell at `offset`.
  std::int32_t peek(int rank, std::uint64_t offset) const;
  double wait_timeout() const { return wait_timeout_; }
  /// Spinning is allowed (PLD_WAIT_SPIN > 0 and no more ranks than cores).
  bool may_spin() const { return wait_spin_ > 0; }

 private:
  /// Set or AtomicAdd `value` on the int32 cell at `offset` of `rank`'s heap (signal_update_local),
  /// then wake its sleepers: notify, and put_signal's signal.
  void update_cell(int rank, std::uint64_t offset, std::int32_t value, NotifyOp op) {
    std::byte* cell = heap_base(rank) + offset;
    signal_update_local(cell, value, op);
    wake(rank, offset, reinterpret_cast<std::int32_t*>(cell));
  }
  /// Wakes the threads of `rank` asleep on the cell at `offset` (`cell` in this process), or on
  /// its doorbell for it, after a change of the cell: one load of the cell's sleeper bucket, and
  /// the wake-up (wake_sleepers) only when the bucket counts a sleeper.
  void wake(int rank, std::uint64_t offset, std::int32_t* cell) {
    RankSlot& slot = control_->slots[rank];
    const std::uint32_t sleeping = slot.sleeping[sleep_bucket(offset)].load(std::memory_order_seq_cst);
    if (sleeping != 0) [[unlikely]]
      wake_sleepers(slot, sleeping, cell);
  }
  /// Out of line: a notify that wakes nobody then saves no registers (inline, its syscalls need them).
  [[gnu::noinline]] void wake_sleepers(RankSlot& slot, std::uint32_t sleeping, std::int32_t* cell);
  /// Unmaps what the constructor mapped (idempotent).
  void release();
  // The phases of wait and wait_cells (signal.cc).
  template <class Ready>
  bool spin_until(Ready&& ready);
  void publish_wait(std::uint64_t offset, std::int32_t expected, WaitCmp cmp, const WaitSite& site);
  template <class Ready, class Count, class Sleep>
  WaitStatus sleep_until(const WaitProbe* probe, Ready&& ready, Count&& count, Sleep&& sleep);

  int world_size_;
  std::uint64_t heap_bytes_;
  double wait_timeout_;
  std::int64_t wait_spin_;
  int my_rank_ = -1;
  std::vector<std::byte*> bases_;
  ControlBlock* control_ = nullptr;
};

}  // namespace pld::detail
