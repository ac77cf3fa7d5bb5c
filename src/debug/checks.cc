#include "debug/checks.h"

#include "backend/shm/backend.h"
#include "backend/wait_cmp.h"
#include "core/log.h"
#include "rank/runtime.h"

#include <pld/detail/checked.hpp>
#include <pld/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <new>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace pld::detail {

bool g_debug_checks = false;

DebugBlock::DebugBlock(double wait_timeout, const std::atomic<std::uint32_t>* abort)
    : shared_(new (map_memfd("pld-debug", sizeof(DebugShared))) DebugShared()) {
  shared_->wait_timeout = wait_timeout;
  shared_->abort = abort;
}

DebugBlock::~DebugBlock() {
  munmap(shared_, sizeof(DebugShared));
}

namespace {

constexpr double kMatchWaitMax = 1.0;  // seconds a rank waits for its peers' descriptors

std::uint64_t stamp_of(std::uint32_t epoch, std::uint32_t domain, std::uint32_t seq) {
  return ((static_cast<std::uint64_t>(epoch) & 0xffffff) << 40) |
         ((static_cast<std::uint64_t>(domain) & 0xfffff) << 20) | (static_cast<std::uint64_t>(seq) & 0xfffff);
}

void pack_call(const CollCall& c, std::uint64_t w[8]) {
  const int nd = std::min(c.shape.size(), 4);
  w[1] = static_cast<std::uint64_t>(c.kind) | (static_cast<std::uint64_t>(c.dtype) << 8) |
         (static_cast<std::uint64_t>(c.op) << 16) | (static_cast<std::uint64_t>(c.mode) << 24) |
         (static_cast<std::uint64_t>(nd) << 32) |
         (static_cast<std::uint64_t>(static_cast<std::uint16_t>(c.core_num)) << 40);
  w[2] = static_cast<std::uint32_t>(c.root) | (static_cast<std::uint64_t>(c.signal) << 32);
  w[3] = c.target | (static_cast<std::uint64_t>(c.extra) << 32);
  for (int i = 0; i < 4; ++i) w[4 + i] = i < nd ? static_cast<std::uint64_t>(c.shape[i]) : 0;
}

CollCall unpack_call(const std::uint64_t w[8]) {
  CollCall c;
  c.kind = static_cast<CollKind>(w[1] & 0xff);
  c.dtype = static_cast<DType>((w[1] >> 8) & 0xff);
  c.op = static_cast<std::uint8_t>((w[1] >> 16) & 0xff);
  c.mode = static_cast<std::uint8_t>((w[1] >> 24) & 0xff);
  const int nd = static_cast<int>((w[1] >> 32) & 0xff);
  c.core_num = static_cast<std::int16_t>((w[1] >> 40) & 0xffff);
  c.root = static_cast<std::int32_t>(static_cast<std::uint32_t>(w[2]));
  c.signal = static_cast<std::uint32_t>(w[2] >> 32);
  c.target = static_cast<std::uint32_t>(w[3]);
  c.extra = static_cast<std::uint32_t>(w[3] >> 32);
  for (int i = 0; i < nd; ++i) c.shape.push_back(static_cast<Index>(w[4 + i]));
  return c;
}

void publish(DebugShared::CollRing& ring, std::uint64_t stamp, const CollCall& c) {
  std::uint64_t w[8];
  pack_call(c, w);
  const std::uint64_t h = ring.head.load(std::memory_order_relaxed);
  auto& slot = ring.slots[h % kCollHistory];
  slot.w[0].store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (int i = 1; i < 8; ++i) slot.w[i].store(w[i], std::memory_order_relaxed);
  slot.w[0].store(stamp, std::memory_order_release);
  ring.head.store(h + 1, std::memory_order_release);
}

// Reads the descriptor with `stamp` from a rank's ring, or nothing.
std::optional<CollCall> find_call(const DebugShared::CollRing& ring, std::uint64_t stamp) {
  for (const auto& slot : ring.slots) {
    if (slot.w[0].load(std::memory_order_acquire) != stamp) continue;
    std::uint64_t w[8];
    for (int i = 1; i < 8; ++i) w[i] = slot.w[i].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (slot.w[0].load(std::memory_order_relaxed) != stamp) continue;
    return unpack_call(w);
  }
  return std::nullopt;
}

const char* reduce_name(std::uint8_t op) {
  switch (static_cast<ReduceOp>(op)) {
    case ReduceOp::Sum: return "Sum";
    case ReduceOp::Max: return "Max";
    case ReduceOp::Min: return "Min";
    case ReduceOp::Prod: return "Prod";
  }
  return "?";
}

}  // namespace

std::string describe_call(const CollCall& c, const DomainState& d) {
  std::string args;
  if (c.target != UINT32_MAX)
    args = fmt::format("target '{}' {} {}, ", d.buffer_name(c.target), dtype_name(c.dtype), c.shape.str());
  args += fmt::format("signal '{}'", d.buffer_name(c.signal));
  switch (c.kind) {
    case CollKind::Allreduce:
      args += fmt::format(", op {}, mode {}, core_num {}", reduce_name(c.op),
                          to_string(static_cast<AllreduceMode>(c.mode)), c.core_num);
      break;
    case CollKind::ReduceScatter: args += fmt::format(", op {}, core_num {}", reduce_name(c.op), c.core_num); break;
    case CollKind::Broadcast: args += fmt::format(", root {}, core_num {}", c.root, c.core_num); break;
    case CollKind::Allgather:
    case CollKind::AllToAll: args += fmt::format(", core_num {}", c.core_num); break;
    case CollKind::AllToAllV: args += fmt::format(", recv_counts '{}'", d.buffer_name(c.extra)); break;
    default: break;
  }
  return fmt::format("{}({})", coll_name(c.kind), args);
}

std::vector<const char*> call_differences(const CollCall& a, const CollCall& b) {
  std::vector<const char*> out;
  if (a.kind != b.kind) out.push_back("collective");
  if (a.signal != b.signal) out.push_back("signal");
  if (a.target != b.target) out.push_back("target");
  if (a.dtype != b.dtype) out.push_back("dtype");
  if (!(a.shape == b.shape)) out.push_back("size");
  if (a.kind == b.kind) {
    if (a.op != b.op) out.push_back("op");
    if (a.root != b.root) out.push_back("root");
    if (a.mode != b.mode) out.push_back("mode");
    if (a.extra != b.extra) out.push_back("recv_counts");
  }
  if (a.core_num != b.core_num) out.push_back("core_num");
  return out;
}

namespace {

struct WaitMemo {
  std::uint32_t epoch = 0;
  std::int32_t expected = 0;
  WaitCmp cmp = WaitCmp::Ge;
  std::uint32_t rearms = 0;
};

// Rank-local state of the checks (the rank process's threads share it).
struct Local {
  std::mutex mutex;
  std::uint32_t epoch = UINT32_MAX;
  std::unordered_map<std::uint32_t, std::uint32_t> seq;  // collectives entered, by (domain, signal), this call
  std::unordered_map<std::uint64_t, WaitMemo> waits;     // last satisfied wait, by cell offset
  std::unordered_set<std::uint64_t> stale_warned;        // cells warned about as stale, this call
};
Local& local() {
  static Local* l = new Local();
  return *l;
}
void roll_epoch(Local& l, std::uint32_t epoch) {
  if (l.epoch == epoch) return;
  l.epoch = epoch;
  l.seq.clear();
  l.waits.clear();
  l.stale_warned.clear();
}

std::size_t rearm_hash(std::uint64_t off) {
  return static_cast<std::size_t>(((off >> 2) * 0x9E3779B97F4A7C15ull) >> 56);
}

void rearm_bump(DebugShared::RearmTable& t, std::uint64_t off) {
  const std::uint64_t key = off + 1;
  for (std::size_t i = 0, h = rearm_hash(off); i < kRearmSlots; ++i) {
    const std::size_t at = (h + i) % kRearmSlots;
    std::uint64_t k = t.key[at].load(std::memory_order_acquire);
    if (k == 0 && t.key[at].compare_exchange_strong(k, key, std::memory_order_acq_rel)) k = key;
    if (k == key) {
      t.count[at].fetch_add(1, std::memory_order_acq_rel);
      return;
    }
  }
}

std::uint32_t rearm_get(const DebugShared::RearmTable& t, std::uint64_t off) {
  const std::uint64_t key = off + 1;
  for (std::size_t i = 0, h = rearm_hash(off); i < kRearmSlots; ++i) {
    const std::size_t at = (h + i) % kRearmSlots;
    const std::uint64_t k = t.key[at].load(std::memory_order_acquire);
    if (k == 0) return 0;
    if (k == key) return t.count[at].load(std::memory_order_acquire);
  }
  return 0;
}

// The slot of cell `off` in a rank's NotifyCalls table (claimed when `claim`), or -1.
int notified_slot(DebugShared::NotifyCalls& t, std::uint64_t off, bool claim) {
  const std::uint64_t key = off + 1;
  for (std::size_t i = 0, h = rearm_hash(off); i < kRearmSlots; ++i) {
    const std::size_t at = (h + i) % kRearmSlots;
    std::uint64_t k = t.key[at].load(std::memory_order_acquire);
    if (k == 0 && claim && t.key[at].compare_exchange_strong(k, key, std::memory_order_acq_rel)) k = key;
    if (k == key) return static_cast<int>(at);
    if (k == 0) return -1;
  }
  return -1;
}

std::string signal_site(const char* api, const WindowDesc& s, const Dims& offsets) {
  return fmt::format("{}(signal '{}', offsets {})", api, s.state->buffer_name(s.ref.buffer), offsets.str());
}

}  // namespace

void collective_check(const DomainState& d, const CollCall& call) {
  if (log_enabled(LogLevel::Info, LogSys::Coll))
    log(LogLevel::Info, LogSys::Coll, "{} on comm domain {} (domain rank {} of {})", describe_call(call, d), d.label,
        d.rank, d.nranks());
  DebugShared* sh = d.backend->debug_shared;
  if (!debug_checks() || !sh || d.nranks() == 1) return;
  const std::uint32_t epoch = sh->epoch.load(std::memory_order_acquire);
  // Calls are matched per (domain, signal buffer): collectives on separate signals may run
  // concurrently (from several threads of a rank), so only each signal's sequence is ordered.
  const std::uint32_t key = ((d.id & 0x3ffu) << 10) | (call.signal & 0x3ffu);
  std::uint32_t seq;
  {
    Local& l = local();
    std::lock_guard lock(l.mutex);
    roll_epoch(l, epoch);
    seq = l.seq[key]++;
  }
  const std::uint64_t stamp = stamp_of(epoch, key, seq);
  const int me = d.members[static_cast<std::size_t>(d.rank)];
  publish(sh->colls[me], stamp, call);

  // Gather every peer's call number `seq` on this domain, for at most kMatchWaitMax seconds: a peer
  // that does not get there in time is not compared (if it never comes, the collective's own wait
  // reaches its deadline and the hang report shows every rank's last operations).
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(std::min(kMatchWaitMax, sh->wait_timeout * 0.5));
  std::vector<std::optional<CollCall>> calls(static_cast<std::size_t>(d.nranks()));
  calls[static_cast<std::size_t>(d.rank)] = call;
  for (int p = 0; p < d.nranks(); ++p) {
    if (p == d.rank) continue;
    auto& ring = sh->colls[d.members[static_cast<std::size_t>(p)]];
    for (int round = 0;; ++round) {
      calls[static_cast<std::size_t>(p)] = find_call(ring, stamp);
      if (calls[static_cast<std::size_t>(p)]) break;
      if (sh->abort->load(std::memory_order_acquire))
        throw AbortedError(fmt::format("{}: released because another rank failed", coll_name(call.kind)));
      if (Clock::now() > deadline) break;
      if (round < 64)
        sched_yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  const int ref = calls[0] ? 0 : d.rank;
  const CollCall& reference = *calls[static_cast<std::size_t>(ref)];
  int first = -1;
  for (int p = 0; p < d.nranks() && first < 0; ++p)
    if (calls[static_cast<std::size_t>(p)] && !call_differences(*calls[static_cast<std::size_t>(p)], reference).empty())
      first = p;
  if (first < 0) return;
  const CollCall& odd = *calls[static_cast<std::size_t>(first)];
  std::string msg = fmt::format(
      "{}: collective mismatch on comm domain {} (collective #{} of this call on signal '{}'): rank {} called {} but "
      "rank {} called {} (they differ in {}). The ranks' calls:",
      coll_name(call.kind), d.label, seq, d.buffer_name(call.signal), first, coll_name(odd.kind), ref,
      coll_name(reference.kind), fmt::join(call_differences(odd, reference), ", "));
  for (int p = 0; p < d.nranks(); ++p) {
    const auto& c = calls[static_cast<std::size_t>(p)];
    msg += fmt::format("\n  rank {}: ", p);
    if (!c) {
      msg += fmt::format("did not reach its collective #{} on this signal within {} s", seq,
                         std::min(kMatchWaitMax, sh->wait_timeout * 0.5));
      continue;
    }
    msg += describe_call(*c, d);
    const auto diff = call_differences(*c, reference);
    if (!diff.empty()) msg += fmt::format("   <- differs from rank {} in {}", ref, fmt::join(diff, ", "));
  }
  msg +=
      "\nEvery rank of a comm domain must make the same collective calls, with the same arguments, in the same "
      "order: look for a rank-dependent branch or argument.";
  throw UsageError(msg);
}

namespace {

// Ownership: fails when `signal` is a collective's signal in this call, on any member. `what`
// names the operation ("this notify").
void check_not_collective_signal(const DebugShared& sh, const WindowDesc& signal, const std::string& site, int peer,
                                 const char* what) {
  const DomainState& d = *signal.state;
  const std::uint32_t epoch = sh.epoch.load(std::memory_order_acquire) & 0xffffff;
  for (int m = 0; m < d.nranks(); ++m) {
    const auto& ring = sh.colls[d.members[static_cast<std::size_t>(m)]];
    for (const auto& slot : ring.slots) {
      const std::uint64_t stamp = slot.w[0].load(std::memory_order_acquire);
      if (stamp == 0 || (stamp >> 40) != epoch || ((stamp >> 30) & 0x3ffu) != (signal.ref.domain & 0x3ffu)) continue;
      const auto c = find_call(ring, stamp);
      if (!c || c->signal != signal.ref.buffer) continue;
      throw UsageError(fmt::format(
          "{} to rank {}: signal '{}' is the signal of {} — collective #{} on it of comm domain {} in this call, "
          "entered by "
          "rank {}. A collective owns every cell of its signal for the whole call (its credits must balance to zero), "
          "so {} would corrupt it: give your own notify/wait a separate signal window",
          site, peer, d.buffer_name(signal.ref.buffer), describe_call(*c, d), stamp & 0xfffff, d.label, m, what));
    }
  }
}

// A change of cell `off` of world rank `target` in this call: counted as a reset when it may
// lower the value (`rearms`), and stamped with the call that wrote it.
void note_cell_write(DebugShared& sh, int target, std::uint64_t off, bool rearms) {
  if (rearms) rearm_bump(sh.rearm[target], off);
  // Recorded before the write lands: a waiter that sees the value also sees which call wrote it.
  if (const int at = notified_slot(sh.notified[target], off, true); at >= 0)
    sh.notified[target].epoch[at].store(sh.epoch.load(std::memory_order_acquire), std::memory_order_release);
}

}  // namespace

void debug_check_notify(const WindowDesc& signal, int peer, const Dims& offsets, std::uint64_t off, std::int32_t value,
                        NotifyOp op) {
  const DomainState& d = *signal.state;
  DebugShared* sh = d.backend->debug_shared;
  if (!sh) return;
  debug_check_view("notify", signal);
  check_not_collective_signal(*sh, signal, signal_site("notify", signal, offsets), peer, "this notify");
  note_cell_write(*sh, d.members[static_cast<std::size_t>(peer)], off, op == NotifyOp::Set || value < 0);
}

void debug_check_atomic(const char* api, const WindowDesc& cell, int peer, const Dims& offsets, std::uint64_t off,
                        AmoOp op, std::uint64_t operand) {
  const DomainState& d = *cell.state;
  DebugShared* sh = d.backend->debug_shared;
  if (!sh) return;
  debug_check_view(api, cell);
  if (op == AmoOp::Fetch) return;
  check_not_collective_signal(
      *sh, cell, fmt::format("{}(window '{}', offsets {})", api, d.buffer_name(cell.ref.buffer), offsets.str()), peer,
      "this atomic");
  // Only an add of a non-negative int32 only raises a signal cell; anything else may reset it.
  const bool raises = op == AmoOp::Add && cell.dtype == DType::INT32 && static_cast<std::int32_t>(operand) >= 0;
  if (dtype_size(cell.dtype) == sizeof(std::int32_t))
    note_cell_write(*sh, d.members[static_cast<std::size_t>(peer)], off, !raises);
}

void debug_check_wait_entry(const WindowDesc& signal, const Dims& offsets, std::uint64_t off, std::int32_t expected,
                            WaitCmp cmp) {
  const DomainState& d = *signal.state;
  DebugShared* sh = d.backend->debug_shared;
  std::byte* base = d.windows_in.empty() ? nullptr : d.windows_in[static_cast<std::size_t>(d.rank)];
  if (!sh || !base) return;
  const std::int32_t value =
      std::atomic_ref<std::int32_t>(*reinterpret_cast<std::int32_t*>(base + off)).load(std::memory_order_acquire);
  if (value == 0 || !wait_cmp_holds(value, expected, cmp)) return;
  const int me = d.members[static_cast<std::size_t>(d.rank)];
  const int at = notified_slot(sh->notified[me], off, false);
  if (at < 0) return;
  const std::uint32_t written = sh->notified[me].epoch[at].load(std::memory_order_acquire);
  const std::uint32_t epoch = sh->epoch.load(std::memory_order_acquire);
  if (written == epoch) return;
  {
    Local& l = local();
    std::lock_guard lock(l.mutex);
    roll_epoch(l, epoch);
    if (!l.stale_warned.insert(off).second) return;
  }
  log(LogLevel::Warn, LogSys::Debug,
      "{} on rank {}: stale signal — the cell already holds {} (wait for {} {}) from a notify of an earlier call, so "
      "this wait passes without any notify of this call. A persistent window without reset keeps its signal "
      "values: reset it (WorkerOptions::reset_persistent_windows) or use a fresh signal (or wait for the next "
      "generation, >= {})",
      signal_site("wait", signal, offsets), d.rank, value, wait_cmp_symbol(cmp), expected, value + 1);
}

void debug_check_wait_done(const WindowDesc& signal, const Dims& offsets, std::uint64_t off, std::int32_t expected,
                           WaitCmp cmp, std::int32_t seen) {
  const DomainState& d = *signal.state;
  DebugShared* sh = d.backend->debug_shared;
  if (!sh) return;
  const int me = d.members[static_cast<std::size_t>(d.rank)];
  const std::uint32_t epoch = sh->epoch.load(std::memory_order_acquire);
  const std::uint32_t rearms = rearm_get(sh->rearm[me], off);
  WaitMemo prev;
  bool had = false;
  {
    Local& l = local();
    std::lock_guard lock(l.mutex);
    roll_epoch(l, epoch);
    auto it = l.waits.find(off);
    if (it != l.waits.end()) {
      prev = it->second;
      had = true;
    }
    l.waits[off] = WaitMemo{epoch, expected, cmp, rearms};
  }
  if (!had || prev.rearms != rearms) return;
  const bool stale = (cmp == WaitCmp::Ge && prev.cmp == WaitCmp::Ge && expected <= prev.expected) ||
                     (cmp == WaitCmp::Eq && prev.cmp == WaitCmp::Eq && expected == prev.expected);
  if (!stale) return;
  // The other side: the last notify of this cell by every rank, from the op histories.
  std::string writers;
  if (d.backend->op_histories)
    for (int m = 0; m < d.nranks(); ++m) {
      const int w = d.members[static_cast<std::size_t>(m)];
      OpRecord recs[kOpHistory];
      const int n = d.backend->op_histories[w].read(recs);
      for (int i = n - 1; i >= 0; --i)
        if (notifies(recs[i].kind) && recs[i].peer == me && recs[i].offset == off) {
          writers += fmt::format("{}rank {} notify({} {}, its operation #{})", writers.empty() ? "" : "; ", m,
                                 recs[i].flag == static_cast<std::uint8_t>(NotifyOp::Set) ? "Set" : "AtomicAdd",
                                 recs[i].value, recs[i].seq);
          break;
        }
    }
  throw UsageError(fmt::format(
      "{} on rank {}: signal reused while still in use — an earlier wait on this cell in this call already waited "
      "for {} {} and nothing has reset the cell since (no Set, no negative AtomicAdd), so this wait for {} {} passed "
      "on notifies the earlier one consumed (the cell holds {}). Last notify of this cell: {}. Signal counters are "
      "monotonic: wait for the next generation (>= {}), or give the consumed credits back before reusing the cell",
      signal_site("wait", signal, offsets), d.rank, wait_cmp_symbol(prev.cmp), prev.expected, wait_cmp_symbol(cmp),
      expected, seen, writers.empty() ? std::string("none recorded") : writers, prev.expected + 1));
}

void debug_check_view(const char* api, const WindowDesc& w) {
  const DomainState* d = w.state;
  if (!d) return;
  if (w.ref.buffer >= d->buffers.size() || d->buffers[w.ref.buffer].offset != w.ref.offset)
    throw UsageError(
        fmt::format("{}: the window view (buffer #{}, offset {}) matches no window buffer of comm domain "
                    "{}; make views with Host::window<T>() and pass them through Host::dispatch",
                    api, w.ref.buffer, w.ref.offset, d->label));
  const BufferInfo& b = d->buffers[w.ref.buffer];
  const std::optional<Index> need = try_bytes(w.shape, dtype_size(w.dtype));
  if (!need || static_cast<std::uint64_t>(*need) > b.bytes)
    throw UsageError(
        fmt::format("{}: the view of window '{}' has shape {} ({}, {}) but the buffer has {} bytes; "
                    "accesses through it would leave the window (a DistributedTensor built in the kernel "
                    "must fit its buffer)",
                    api, b.name, w.shape.str(), dtype_name(w.dtype),
                    need ? fmt::format("{} bytes", *need) : std::string("more bytes than int64 can count"), b.bytes));
}

}  // namespace pld::detail
