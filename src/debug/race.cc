// The race detector's rank side (race.h): this rank's vector clock, its sites, the hooks and the
// reports.
#include "debug/race.h"

#include "core/log.h"
#include "debug/symbols.h"
#include "rank/runtime.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <sched.h>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace pld::detail {

RaceMode g_race_mode = RaceMode::Off;

namespace {

/// The lock of a rank's state: held for a few hundred instructions, by the rank's threads only.
class RankLock {
 public:
  void lock() {
    while (held_.exchange(true, std::memory_order_acquire)) sched_yield();
  }
  void unlock() { held_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> held_{false};
};

/// A rank's vector clock. Every thread of the rank reads it (relaxed loads: a thread's accesses
/// are ordered by what that thread or an earlier one acquired); changes are made under the
/// rank's lock.
class RankClock {
 public:
  void reset(int n, int me) {
    n_ = n;
    c_ = std::make_unique<std::atomic<std::uint32_t>[]>(static_cast<std::size_t>(n));
    c_[me].store(1, std::memory_order_relaxed);
  }
  int size() const { return n_; }
  const std::atomic<std::uint32_t>* data() const { return c_.get(); }
  std::uint32_t at(int i) const { return c_[i].load(std::memory_order_relaxed); }
  void join(const std::uint32_t* from) {
    for (int i = 0; i < n_; ++i)
      if (from[i] > at(i)) c_[i].store(from[i], std::memory_order_relaxed);
  }
  void tick(int me) { c_[me].store(at(me) + 1, std::memory_order_relaxed); }
  void copy_to(std::uint32_t* to) const {
    for (int i = 0; i < n_; ++i) to[i] = at(i);
  }
  void join_into(std::uint32_t* to) const {
    for (int i = 0; i < n_; ++i) to[i] = std::max(to[i], at(i));
  }

 private:
  int n_ = 0;
  std::unique_ptr<std::atomic<std::uint32_t>[]> c_;
};

/// This rank process's state. Threads of a rank (core_num lanes, tasks) share one clock; the
/// kernel, dispatch and call are set before a dispatch's threads start.
struct RaceRank {
  RankLock mutex;
  int me = -1;
  RankClock clock;
  struct Own {        // where this rank's own window memory lies: a comm domain's buffers
    std::byte* base;  // the address of heap offset 0
    std::uint64_t lo, hi;
  };
  std::vector<Own> own;        // set at dispatch begin, from the domains the dispatch may use
  std::uint32_t gen = 0;       // the call of the current dispatch
  std::uint32_t dispatch = 0;  // its number among this rank's dispatches of the call
  std::string kernel;
  std::atomic<std::uint64_t> context{0};  // changes with the dispatch and the kernel's name
  std::unordered_map<const void*, std::string> kernel_names;
  std::atomic<std::uint32_t> site_seq{0};
  RaceNoteFn note_source = nullptr;
  std::set<std::tuple<int, std::uint32_t, std::uint32_t>> warned;  // (rank, its site, this site)
  std::atomic<bool> saturation_noted{false};
};

/// The site a thread wrote last, reused while the api, the context and the note stay.
struct SiteCache {
  const char* api = nullptr;
  std::uint64_t context = UINT64_MAX;
  std::uint32_t seq = 0;
  std::string note, scratch;
};
// A pointer (trivial, initial-exec): read without a call into the TLS resolver. Each thread's
// cache lives as long as the rank process.
thread_local SiteCache* t_site_cache __attribute__((tls_model("initial-exec"))) = nullptr;
SiteCache& site_cache() {
  if (!t_site_cache) [[unlikely]]
    t_site_cache = new SiteCache();
  return *t_site_cache;
}

RaceRank g_state;

RaceRank& state() {
  return g_state;
}

const std::atomic<std::uint32_t>* abort_flag() {
  return g_race_block->abort();
}

void lock_or_abort(RaceLock& lock, const char* what) {
  if (!lock.lock(abort_flag()))
    throw AbortedError(
        fmt::format("race detector: released while waiting for the lock of {}: another rank failed", what));
}

// Whether the detector still runs (a full table stops it: a lost release could invent races).
bool running(RaceRank& s) {
  if (!g_race_block->header()->saturated.load(std::memory_order_acquire)) return true;
  if (!s.saturation_noted.exchange(true)) {
    log(LogLevel::Warn, LogSys::Debug,
        "race detector: its tables are full ({} signal cells, {} ranges per heap); it stops checking for the rest "
        "of the run",
        RaceBlock::kCells, RaceBlock::kSegments);
  }
  return false;
}

void copy_text(char* dst, std::size_t cap, const std::string& text) {
  const std::size_t n = std::min(cap - 1, text.size());
  std::memcpy(dst, text.data(), n);
  dst[n] = '\0';
}

// The site of `api` in the running dispatch (written to the ring the first time); its note is
// left in the thread's cache.
std::uint32_t site_of(RaceRank& s, const char* api) {
  SiteCache& c = site_cache();
  c.scratch.clear();
  if (s.note_source && !s.note_source(&c.scratch)) c.scratch.clear();
  const std::uint64_t context = s.context.load(std::memory_order_relaxed);
  if (api == c.api && context == c.context && c.scratch == c.note) return c.seq;
  const std::uint32_t seq = s.site_seq.fetch_add(1, std::memory_order_relaxed) + 1;
  RaceSite& site = g_race_block->site(s.me, seq);
  site.seq.store(0, std::memory_order_relaxed);
  site.dispatch = s.dispatch;
  site.gen = s.gen;
  copy_text(site.api, sizeof site.api, api);
  copy_text(site.kernel, sizeof site.kernel, s.kernel);
  copy_text(site.note, sizeof site.note, c.scratch);
  site.seq.store(seq, std::memory_order_release);
  c.api = api;
  c.context = context;
  c.seq = seq;
  std::swap(c.note, c.scratch);
  return seq;
}

struct SiteText {
  std::string api, where, note;
};

SiteText site_text(int rank, std::uint32_t seq) {
  const RaceSite& site = g_race_block->site(rank, seq);
  if (site.seq.load(std::memory_order_acquire) != seq)
    return {"operation", "(an earlier operation of its dispatch; the details were overwritten)", ""};
  return {site.api, fmt::format("kernel {}, dispatch #{}", site.kernel, site.dispatch), site.note};
}

// A note's lines, indented under the operation they belong to.
std::string indented(const std::string& note) {
  std::string out;
  std::size_t at = 0;
  while (at < note.size()) {
    const std::size_t end = std::min(note.find('\n', at), note.size());
    if (end > at) out += "\n      " + note.substr(at, end - at);
    at = end + 1;
  }
  return out;
}

// "window 'data'" and the bytes of the buffer, or the heap bytes when no buffer covers them.
std::string place(std::uint64_t lo, std::uint64_t hi) {
  if (RankRuntime* rt = RankRuntime::current())
    if (const auto found = rt->buffer_at(lo))
      return fmt::format("window '{}' bytes [{}, {})", found->name, lo - found->offset, hi - found->offset);
  return fmt::format("window heap bytes [{}, {})", lo, hi);
}

const char* verb(RaceKind k) {
  switch (k) {
    case RaceKind::Read: return "read";
    case RaceKind::Write: return "write";
    case RaceKind::Atomic: return "atomic update";
    default: return "access";
  }
}

std::string report(const RaceRank& s, const char* api, RaceKind kind, int target, const RaceConflict& c) {
  const int q = c.prior.rank;
  const SiteText other = site_text(q, c.prior.site);
  const SiteText mine{api, fmt::format("kernel {}, dispatch #{}", s.kernel, s.dispatch), site_cache().note};
  const std::string where = fmt::format("{} of rank {}", place(c.lo, c.hi), target);
  const bool read_after_write = kind == RaceKind::Read;
  const bool write_after_read = c.prior.kind == RaceKind::Read;
  std::string what, fix;
  if (read_after_write) {
    what = fmt::format("rank {}'s {} reads data that rank {}'s {} wrote, and is not ordered after it", s.me, mine.api,
                       q, other.api);
    fix = fmt::format("rank {} notifies after its {}; rank {} waits for that notify before its {}", q, other.api, s.me,
                      mine.api);
  } else if (write_after_read) {
    what = fmt::format("rank {}'s {} overwrites data that rank {}'s {} may still be reading", s.me, mine.api, q,
                       other.api);
    fix = fmt::format(
        "rank {} notifies when its {} is done (a credit); rank {} waits for that credit before its {} (or use "
        "another buffer)",
        q, other.api, s.me, mine.api);
  } else {
    what = fmt::format("rank {}'s {} ({}) and rank {}'s {} ({}) update the same bytes in no order", s.me, mine.api,
                       verb(kind), q, other.api, verb(c.prior.kind));
    fix = fmt::format(
        "order them with notify/wait, give each rank its own part of the window{}",
        kind == RaceKind::Atomic || c.prior.kind == RaceKind::Atomic ? ", or use atomics on both sides" : "");
  }
  return fmt::format(
      "data race on {}: {}: no wait of rank {} observed a notify that rank {} issued after its {} (and no "
      "collective ordered them).\n  rank {}: {} ({}){}\n  rank {}: {} ({}), earlier{}\n  fix: {}",
      where, what, s.me, q, other.api, s.me, mine.api, mine.where, indented(mine.note), q, other.api, other.where,
      indented(other.note), fix);
}

// A function's name without its parameter list: "ns::kernel" for "ns::kernel(float, int)".
std::string short_name(std::string name) {
  if (name.empty() || name.back() != ')') return name;
  int depth = 0;
  for (std::size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') ++depth;
    if (name[i] == '(' && --depth == 0) return name.substr(0, i);
  }
  return name;
}

}  // namespace

void race_dispatch_begin(RankRuntime& rt, void (*kernel)()) {
  if (!g_race_block) return;
  RaceRank& s = state();
  std::lock_guard<RankLock> lock(s.mutex);
  if (s.me < 0) {
    s.me = rt.world_rank();
    s.clock.reset(g_race_block->world(), s.me);
  }
  s.own.clear();
  rt.for_each_domain([&](const DomainState& d) {
    std::uint64_t lo = UINT64_MAX, hi = 0;
    for (const BufferInfo& b : d.buffers) {
      lo = std::min(lo, b.offset);
      hi = std::max(hi, b.offset + b.bytes);
    }
    if (lo < hi && d.rank >= 0) s.own.push_back({d.windows_in[static_cast<std::size_t>(d.rank)], lo, hi});
  });
  const std::uint32_t gen = g_race_block->gen();
  s.dispatch = gen == s.gen ? s.dispatch + 1 : 0;
  s.gen = gen;
  auto [it, made] = s.kernel_names.try_emplace(reinterpret_cast<const void*>(kernel));
  if (made) {
    it->second = short_name(function_name(reinterpret_cast<const void*>(kernel)));
    if (it->second.empty()) it->second = fmt::format("at {}", reinterpret_cast<const void*>(kernel));
  }
  s.kernel = it->second;
  s.context.fetch_add(1, std::memory_order_relaxed);
}

bool race_checking() {
  return race_on();
}

void race_kernel_name(const char* name) {
  if (!race_on()) return;
  RaceRank& s = state();
  std::lock_guard<RankLock> lock(s.mutex);
  s.kernel = name;
  s.context.fetch_add(1, std::memory_order_relaxed);
}

void race_note_source(RaceNoteFn fn) {
  RaceRank& s = state();
  std::lock_guard<RankLock> lock(s.mutex);
  s.note_source = fn;
}

void race_window(const char* api, RaceKind kind, int target, std::uint64_t offset, std::uint64_t bytes) {
  if (!race_tracked() || bytes == 0) return;
  RaceRank& s = state();
  if (s.me < 0 || !running(s)) return;
  // No lock of the rank's state: the clock is read with relaxed loads, the site is this thread's.
  const RaceStamp me{s.clock.at(s.me), site_of(s, api), s.gen, static_cast<std::uint16_t>(s.me), kind, 0};
  RaceBlock::Shadow& sh = g_race_block->shadow(target);
  lock_or_abort(sh.lock, "a window's shadow");
  RaceConflict c;
  const bool fits = shadow_apply(g_race_block->segments(target), sh.count, RaceBlock::kSegments, offset, offset + bytes,
                                 me, s.clock.data(), &c);
  sh.lock.unlock();
  if (!fits) g_race_block->header()->saturated.store(1, std::memory_order_release);
  if (c.prior.kind == RaceKind::None) [[likely]]
    return;
  std::string text;
  {
    std::lock_guard<RankLock> lock(s.mutex);
    if (g_race_mode == RaceMode::Warn && !s.warned.emplace(c.prior.rank, c.prior.site, me.site).second) return;
    text = report(s, api, kind, target, c);
  }
  if (g_race_mode == RaceMode::Warn) {
    log(LogLevel::Warn, LogSys::Debug, "{}", text);
    return;
  }
  throw UsageError(text);
}

void race_local(const char* api, RaceKind kind, const std::byte* data, std::uint64_t bytes) {
  if (!race_tracked()) return;
  const RaceRank& s = state();
  for (const RaceRank::Own& o : s.own)
    if (data >= o.base + o.lo && data < o.base + o.hi) {
      const auto offset = static_cast<std::uint64_t>(data - o.base);
      return race_window(api, kind, s.me, offset, std::min(bytes, o.hi - offset));
    }
}

RaceRelease::RaceRelease(int target, std::uint64_t offset, bool set, bool acquire) : set_(set) {
  if (!race_tracked() || state().me < 0) return;
  cell_ = g_race_block->cell(target, offset, true);
  if (!cell_) return;
  lock_or_abort(cell_->lock, "a signal cell");
  const std::uint32_t gen = g_race_block->gen();
  const int n = g_race_block->world();
  if (cell_->gen != gen) {
    std::fill(g_race_block->cell_clock(cell_), g_race_block->cell_clock(cell_) + 2 * n, 0u);
    cell_->gen = gen;
  }
  if (acquire) {
    RaceRank& s = state();
    std::lock_guard<RankLock> lock(s.mutex);
    s.clock.join(g_race_block->cell_clock(cell_));
  }
}

RaceRelease::~RaceRelease() {
  if (!cell_) return;
  RaceRank& s = state();
  {
    std::lock_guard<RankLock> lock(s.mutex);
    std::uint32_t* clock = g_race_block->cell_clock(cell_);
    if (set_)
      s.clock.copy_to(clock);
    else
      s.clock.join_into(clock);
    s.clock.join_into(g_race_block->cell_all(cell_));
    s.clock.tick(s.me);
  }
  cell_->lock.unlock();
}

namespace {

// The acquire of the cell at heap `offset` of world rank `target`: its clock, or — when `word`
// (the cell, for a wait that saw `seen`) now holds another value — every release into it this call.
void acquire_cell(int target, std::uint64_t offset, const std::int32_t* word, std::int32_t seen) {
  if (!race_tracked()) return;
  RaceRank& s = state();
  if (s.me < 0) return;
  RaceBlock::Cell* cell = g_race_block->cell(target, offset, false);
  if (!cell) return;
  lock_or_abort(cell->lock, "a signal cell");
  if (cell->gen == g_race_block->gen()) {
    const bool overwritten = word && std::atomic_ref<const std::int32_t>(*word).load(std::memory_order_acquire) != seen;
    std::lock_guard<RankLock> lock(s.mutex);
    s.clock.join(overwritten ? g_race_block->cell_all(cell) : g_race_block->cell_clock(cell));
  }
  cell->lock.unlock();
}

}  // namespace

void race_acquire(const std::int32_t* word, std::uint64_t offset, std::int32_t seen) {
  acquire_cell(state().me, offset, word, seen);
}

void race_acquire_at(int target, std::uint64_t offset) {
  acquire_cell(target, offset, nullptr, 0);
}

void RaceCollective::begin(const DomainState& d, int root) {
  if (!race_tracked() || state().me < 0) return;
  d_ = &d;
  root_ = root;
  RaceRank& s = state();
  {
    std::lock_guard<RankLock> lock(s.mutex);
    std::uint32_t* mine = g_race_block->entry_clock(s.me);
    for (int i = 0; i < s.clock.size(); ++i)
      std::atomic_ref<std::uint32_t>(mine[i]).store(s.clock.at(i), std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    s.clock.tick(s.me);
  }
  ++t_race_exempt;
}

void RaceCollective::end() {
  --t_race_exempt;
  RaceRank& s = state();
  std::atomic_thread_fence(std::memory_order_acquire);
  std::lock_guard<RankLock> lock(s.mutex);
  for (int i = 0; i < d_->nranks(); ++i) {
    if (root_ >= 0 && (i != root_ || i == d_->rank)) continue;  // an eager broadcast: the root's entry only
    const int m = d_->members[static_cast<std::size_t>(i)];
    const std::uint32_t* theirs = g_race_block->entry_clock(m);
    std::uint32_t now[kMaxRanks];
    for (int i = 0; i < s.clock.size(); ++i)
      now[i] = std::atomic_ref<const std::uint32_t>(theirs[i]).load(std::memory_order_relaxed);
    s.clock.join(now);
  }
}

}  // namespace pld::detail
