// The race detector's shared block (race_shadow.h): its layout, the cell table and the segment
// update of one access.
#include "debug/race_shadow.h"

#include "backend/shm/backend.h"

#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

namespace pld::detail {

RaceBlock* g_race_block = nullptr;

bool RaceLock::lock(const std::atomic<std::uint32_t>* abort) {
  for (std::uint32_t spins = 0;; ++spins) {
    std::uint32_t free = 0;
    if (word.load(std::memory_order_relaxed) == 0 &&
        word.compare_exchange_weak(free, 1, std::memory_order_acquire, std::memory_order_relaxed))
      return true;
    if (spins % 64 == 63) {  // the holder may be waiting for a core
      if (abort && abort->load(std::memory_order_acquire)) return false;
      sched_yield();
    }
  }
}

namespace {

std::size_t align64(std::size_t n) {
  return (n + 63) / 64 * 64;
}

}  // namespace

void RaceBlock::lay_out(int world) {
  const auto w = static_cast<std::size_t>(world);
  std::size_t at = align64(sizeof(RaceHeader));
  clocks_ = at;
  at += align64(w * w * sizeof(std::uint32_t));
  sites_ = at;
  at += w * kSites * sizeof(RaceSite);
  shadows_ = at;
  at += align64(w * sizeof(Shadow));
  segs_ = at;
  at += w * kSegments * sizeof(RaceSegment);
  cells_ = at;
  cell_stride_ = align64(sizeof(Cell) + 2 * w * sizeof(std::uint32_t));
  at += kCells * cell_stride_;
  bytes_ = at;
}

std::size_t RaceBlock::bytes_for(int world) {
  RaceBlock probe;  // the layout only
  probe.lay_out(world);
  return probe.bytes_;
}

RaceBlock::RaceBlock(int world, const std::atomic<std::uint32_t>* abort) : owned_(true), abort_(abort) {
  lay_out(world);
  base_ = map_memfd("pld-race", bytes_);  // sparse: pages are committed when first touched
  new (base_) RaceHeader();
  header()->world = static_cast<std::uint32_t>(world);
}

RaceBlock::RaceBlock(int world, std::byte* memory, bool first) : base_(memory) {
  lay_out(world);
  if (first) {  // everything but the segments, which no count covers yet (the memory may be reused)
    std::memset(base_, 0, segs_);
    std::memset(base_ + cells_, 0, bytes_ - cells_);
    new (base_) RaceHeader();
    header()->world = static_cast<std::uint32_t>(world);
  }
}

RaceBlock::~RaceBlock() {
  if (owned_) munmap(base_, bytes_);
}

std::uint32_t* RaceBlock::entry_clock(int r) const {
  return reinterpret_cast<std::uint32_t*>(base_ + clocks_) + static_cast<std::size_t>(r) * header()->world;
}

RaceSite& RaceBlock::site(int r, std::uint32_t seq) const {
  auto* ring = reinterpret_cast<RaceSite*>(base_ + sites_) + static_cast<std::size_t>(r) * kSites;
  return ring[seq % kSites];
}

RaceBlock::Shadow& RaceBlock::shadow(int r) const {
  return reinterpret_cast<Shadow*>(base_ + shadows_)[r];
}

RaceSegment* RaceBlock::segments(int r) const {
  return reinterpret_cast<RaceSegment*>(base_ + segs_) + static_cast<std::size_t>(r) * kSegments;
}

RaceBlock::Cell* RaceBlock::cell(int rank, std::uint64_t offset, bool make) const {
  const std::uint64_t key = (static_cast<std::uint64_t>(rank) + 1) << 48 | offset;
  std::uint64_t h = key * 0x9e3779b97f4a7c15ull;
  for (std::uint32_t probe = 0; probe < kCells; ++probe) {
    auto* c = reinterpret_cast<Cell*>(base_ + cells_ + ((h >> 40) + probe) % kCells * cell_stride_);
    std::uint64_t k = c->key.load(std::memory_order_acquire);
    if (k == key) return c;
    if (k == 0) {
      if (!make) return nullptr;
      if (c->key.compare_exchange_strong(k, key, std::memory_order_acq_rel)) return c;
      if (k == key) return c;
    }
  }
  if (make) header()->saturated.store(1, std::memory_order_release);
  return nullptr;
}

namespace {

bool same_stamps(const RaceSegment& a, const RaceSegment& b) {
  return std::memcmp(&a.write, &b.write, sizeof(RaceStamp) * (1 + kRaceReaders)) == 0;
}

// The stamps of a range after access `me` (stamps of earlier calls are dropped first, so that
// equal ranges merge).
void update(RaceSegment& s, const RaceStamp& me, const std::atomic<std::uint32_t>* clock) {
  if (s.write.gen != me.gen) s.write = RaceStamp{};
  for (RaceStamp& r : s.reads)
    if (r.gen != me.gen) r = RaceStamp{};
  if (me.kind != RaceKind::Read) {
    s.write = me;
    for (RaceStamp& r : s.reads) r = RaceStamp{};
    return;
  }
  RaceStamp* slot = nullptr;
  for (RaceStamp& r : s.reads)
    if (r.kind != RaceKind::None && r.rank == me.rank) slot = &r;
  for (RaceStamp& r : s.reads)
    if (!slot && (r.kind == RaceKind::None || race_ordered(r, me, clock))) slot = &r;
  if (!slot) {  // every reader concurrent: the oldest goes (a race with it may be missed, never invented)
    slot = &s.reads[0];
    for (RaceStamp& r : s.reads)
      if (r.clock < slot->clock) slot = &r;
  }
  *slot = me;
}

void check(const RaceSegment& s, std::uint64_t lo, std::uint64_t hi, const RaceStamp& me,
           const std::atomic<std::uint32_t>* clock, RaceConflict* conflict) {
  if (conflict->prior.kind != RaceKind::None) return;
  auto found = [&](const RaceStamp& p) {
    if (!race_conflicts(p.kind, me.kind) || race_ordered(p, me, clock)) return false;
    *conflict = RaceConflict{p, std::max(lo, s.lo), std::min(hi, s.hi)};
    return true;
  };
  if (found(s.write)) return;
  for (const RaceStamp& r : s.reads)
    if (found(r)) return;
}

}  // namespace

bool shadow_apply(RaceSegment* segs, std::uint32_t& count, std::uint32_t capacity, std::uint64_t lo, std::uint64_t hi,
                  const RaceStamp& me, const std::atomic<std::uint32_t>* clock, RaceConflict* conflict) {
  if (lo >= hi) return true;
  // [i0, i1): the segments that overlap [lo, hi); i0 - 1 and i1 may touch it and merge.
  const auto first = std::partition_point(segs, segs + count, [&](const RaceSegment& s) { return s.hi <= lo; });
  const auto i0 = static_cast<std::uint32_t>(first - segs);
  if (i0 < count && segs[i0].lo == lo && segs[i0].hi == hi) {  // the range of an earlier access: in place
    check(segs[i0], lo, hi, me, clock, conflict);
    update(segs[i0], me, clock);
    return true;
  }
  std::uint32_t i1 = i0;
  while (i1 < count && segs[i1].lo < hi) ++i1;
  thread_local std::vector<RaceSegment> out;
  out.clear();
  auto emit = [&](RaceSegment s) {
    if (!out.empty() && out.back().hi == s.lo && same_stamps(out.back(), s))
      out.back().hi = s.hi;
    else
      out.push_back(s);
  };
  std::uint32_t from = i0;
  if (i0 > 0 && segs[i0 - 1].hi == lo) out.push_back(segs[--from]);  // a left neighbour that may merge
  std::uint64_t at = lo;
  for (std::uint32_t i = i0; i < i1; ++i) {
    RaceSegment s = segs[i];
    if (s.lo < lo) {
      RaceSegment left = s;
      left.hi = lo;
      emit(left);
      s.lo = lo;
    }
    if (at < s.lo) {  // a gap nobody touched yet
      RaceSegment gap{};
      gap.lo = at;
      gap.hi = s.lo;
      update(gap, me, clock);
      emit(gap);
    }
    const std::uint64_t end = std::min(s.hi, hi);
    check(s, lo, hi, me, clock, conflict);
    RaceSegment mid = s;
    mid.hi = end;
    update(mid, me, clock);
    emit(mid);
    if (s.hi > hi) {
      RaceSegment right = s;
      right.lo = hi;
      emit(right);
    }
    at = end;
  }
  if (at < hi) {
    RaceSegment gap{};
    gap.lo = at;
    gap.hi = hi;
    update(gap, me, clock);
    emit(gap);
  }
  std::uint32_t to = i1;
  if (i1 < count && segs[i1].lo == out.back().hi) emit(segs[to++]);  // a right neighbour that may merge
  const std::uint32_t replaced = to - from;
  const auto n = static_cast<std::uint32_t>(out.size());
  if (count - replaced + n > capacity) return false;
  std::memmove(segs + from + n, segs + to, (count - to) * sizeof(RaceSegment));
  std::memcpy(segs + from, out.data(), n * sizeof(RaceSegment));
  count = count - replaced + n;
  return true;
}

}  // namespace pld::detail
