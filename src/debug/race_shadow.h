// The race detector's shared memory (PLD_DEBUG=race): what every rank process must see of every
// other's accesses and synchronisation, in one mapping the shm group creates before it forks.
//
//   * a shadow of every rank's window heap: sorted, non-overlapping byte ranges, each with the
//     last write (or atomic update) and up to kReaders reads since, as stamps (rank, clock, site);
//     adjacent ranges with equal stamps are merged, so the cost is per access, not per byte;
//   * a vector clock per signal cell (a hash table keyed by rank and heap offset): what a wait
//     that observes the cell's value acquires — the notifier's clock after a Set, the join of the
//     notifiers' clocks along a chain of AtomicAdds;
//   * a vector clock per rank published at each collective's entry (a collective orders every
//     member's entry before every member's return);
//   * a ring of sites per rank (API call, kernel, dispatch), so that a report names the other
//     rank's operation.
// Stamps and clocks of an earlier call (gen) count as ordered: a call ends on every rank before
// the next begins. Everything here is guarded by spin locks held for a few hundred instructions.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace pld::detail {

/// The two operations' kinds: reads conflict with writes and atomics, atomics only with plain
/// accesses, writes with everything.
enum class RaceKind : std::uint8_t { None = 0, Read, Write, Atomic };

/// One access: who (rank), when (the rank's clock), where in its site ring, in which call.
struct RaceStamp {
  std::uint32_t clock = 0;
  std::uint32_t site = 0;  // sequence number in the rank's site ring
  std::uint32_t gen = 0;   // the host's call counter; 0 = empty
  std::uint16_t rank = 0;
  RaceKind kind = RaceKind::None;
  std::uint8_t pad = 0;
};
static_assert(sizeof(RaceStamp) == 16);

inline constexpr int kRaceReaders = 6;
struct RaceSegment {
  std::uint64_t lo = 0, hi = 0;  // heap bytes [lo, hi)
  RaceStamp write;
  RaceStamp reads[kRaceReaders];
};
static_assert(sizeof(RaceSegment) == 128);

/// What one rank did at a site: the API call, its kernel and dispatch.
struct RaceSite {
  std::atomic<std::uint32_t> seq{0};
  std::uint32_t dispatch = 0;
  std::uint32_t gen = 0;
  char api[44] = {};
  char kernel[140] = {};
  char note[320] = {};  // a binding's frames (the Python traceback), or empty
};

/// A spin lock in shared memory; gives up (returns false) when `abort` becomes non-zero.
struct RaceLock {
  std::atomic<std::uint32_t> word{0};
  bool lock(const std::atomic<std::uint32_t>* abort);
  void unlock() { word.store(0, std::memory_order_release); }
};

/// The mapping's fixed part; the tables follow at offsets computed from the world size.
struct RaceHeader {
  std::atomic<std::uint32_t> gen{1};
  std::atomic<std::uint32_t> saturated{0};  // a table overflowed: the detector stopped
  std::uint32_t world = 0;
};

/// The race detector's shared block, sized for `world` ranks. On shm the host creates it before
/// the ranks fork (they inherit the mapping and this object) and counts the calls in it; under
/// mpirun every process of the node maps memory the backend shares (all zero at first) and
/// counts its own calls, which are the same in every process.
class RaceBlock {
 public:
  static constexpr std::uint32_t kSites = 2048;     // per rank
  static constexpr std::uint32_t kSegments = 8192;  // per rank's heap
  static constexpr std::uint32_t kCells = 8192;     // signal cells in all

  /// shm: a mapping of its own. `abort` ends the waits for a lock held by a rank that died.
  RaceBlock(int world, const std::atomic<std::uint32_t>* abort);
  /// mpi: `memory` (bytes_for(world) bytes, zero-filled) that every process maps; `first` is the
  /// one process that lays out the header before the others use it.
  RaceBlock(int world, std::byte* memory, bool first);
  ~RaceBlock();
  RaceBlock(const RaceBlock&) = delete;
  RaceBlock& operator=(const RaceBlock&) = delete;
  static std::size_t bytes_for(int world);

  /// Before each call's first dispatch (the shm host, or every mpi process): stamps of earlier
  /// calls become ordered.
  void next_call() {
    if (owned_)
      header()->gen.fetch_add(1, std::memory_order_acq_rel);
    else
      ++local_gen_;
  }

  RaceHeader* header() const { return reinterpret_cast<RaceHeader*>(base_); }
  int world() const { return static_cast<int>(header()->world); }
  std::uint32_t gen() const { return owned_ ? header()->gen.load(std::memory_order_acquire) : local_gen_; }
  const std::atomic<std::uint32_t>* abort() const { return abort_; }

  /// Rank `r`'s clock as published at its last collective entry (world() entries).
  std::uint32_t* entry_clock(int r) const;
  RaceSite& site(int r, std::uint32_t seq) const;

  /// The shadow of rank `r`'s heap: its lock, segment count and segments.
  struct alignas(64) Shadow {  // a line of its own: every rank's accesses to this heap take it
    RaceLock lock;
    std::uint32_t count = 0;
  };
  Shadow& shadow(int r) const;
  RaceSegment* segments(int r) const;

  /// A signal cell's clocks: `clock` is what a wait that sees the current value acquires, `all`
  /// the join of every release into the cell this call (what a wait acquires whose value has
  /// been overwritten since).
  struct Cell {
    std::atomic<std::uint64_t> key{0};
    RaceLock lock;
    std::uint32_t gen = 0;
  };
  /// The cell of (rank, heap offset), made on first use when `make`; nullptr when the table is
  /// full (then saturated is set) or, without `make`, when no release reached the cell.
  Cell* cell(int rank, std::uint64_t offset, bool make) const;
  std::uint32_t* cell_clock(Cell* c) const { return reinterpret_cast<std::uint32_t*>(c + 1); }
  std::uint32_t* cell_all(Cell* c) const { return cell_clock(c) + header()->world; }

 private:
  RaceBlock() = default;  // bytes_for's layout probe
  void lay_out(int world);
  std::byte* base_ = nullptr;
  std::size_t bytes_ = 0;
  bool owned_ = false;  // base_ is this block's memfd mapping (shm)
  std::uint32_t local_gen_ = 1;
  const std::atomic<std::uint32_t>* abort_ = nullptr;
  std::size_t clocks_ = 0, sites_ = 0, shadows_ = 0, segs_ = 0, cells_ = 0, cell_stride_ = 0;
};

/// The block of this process (set before the ranks fork; nullptr when the detector is off).
extern RaceBlock* g_race_block;

/// Whether `prior` is ordered before access `me` of a rank whose vector clock is `clock`: an
/// empty stamp, one of an earlier call, of the same rank, or covered by the clock.
inline bool race_ordered(const RaceStamp& prior, const RaceStamp& me, const std::atomic<std::uint32_t>* clock) {
  return prior.kind == RaceKind::None || prior.gen != me.gen || prior.rank == me.rank ||
         prior.clock <= clock[prior.rank].load(std::memory_order_relaxed);
}
/// Whether two accesses conflict: not both reads, not both atomics.
inline bool race_conflicts(RaceKind a, RaceKind b) {
  return a != RaceKind::None && b != RaceKind::None && !(a == RaceKind::Read && b == RaceKind::Read) &&
         !(a == RaceKind::Atomic && b == RaceKind::Atomic);
}

/// The first unordered conflicting stamp an access met, and the bytes they share.
struct RaceConflict {
  RaceStamp prior;  // kind None: no conflict
  std::uint64_t lo = 0, hi = 0;
};

/// Applies access `me` of heap bytes [lo, hi), by a rank whose vector clock is `clock` (read with
/// relaxed loads: the rank's other threads may advance it meanwhile), to a
/// shadow's `count` sorted segments (the caller holds the shadow's lock): finds the first stamp
/// it conflicts with that is not ordered before it (`conflict`), then updates the range — a
/// write or atomic replaces its stamps, a read joins its readers (in place of this rank's earlier
/// read, or of one ordered before it, else of the oldest) — and merges equal neighbours. Returns
/// false, having changed nothing, when the result would not fit in `capacity` segments.
bool shadow_apply(RaceSegment* segs, std::uint32_t& count, std::uint32_t capacity, std::uint64_t lo, std::uint64_t hi,
                  const RaceStamp& me, const std::atomic<std::uint32_t>* clock, RaceConflict* conflict);

}  // namespace pld::detail
