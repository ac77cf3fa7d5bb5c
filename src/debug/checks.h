// Debug mode (PLD_DEBUG=1): cross-rank checks that cost a little per operation and are off by
// default. Off, every hook is one predictable branch on a process-wide flag.
//
//   * collective mismatch — every rank publishes a descriptor of its k-th collective on a comm
//     domain (kind, dtype, shape, op, root, mode, core_num, signal) and compares it with every
//     peer's k-th before it touches a signal or a window; a difference fails with each rank's call;
//   * ownership — a kernel notify on a signal that a collective uses in this call fails;
//   * reuse — a wait that is satisfied by a notify an earlier wait on the same cell already
//     consumed (same or smaller expected value, nothing reset the cell in between) fails;
//   * stale cells — a wait satisfied on entry by a value that a notify of an earlier call wrote
//     (a persistent window kept without reset) logs a warning naming the signal, cell and value;
//   * views — a window view whose shape does not fit its buffer (a DistributedTensor made inside a
//     kernel) fails before any remote access.
#pragma once

#include "backend/op_history.h"
#include "core/log.h"
#include "rank/runtime.h"

#include <pld/collectives.hpp>
#include <pld/detail/atomic.hpp>
#include <pld/kernel.hpp>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace pld::detail {

/// Set on the host before the rank processes are forked (group/group.cc group_options), so ranks inherit it.
extern bool g_debug_checks;
inline bool debug_checks() {
  return __builtin_expect(g_debug_checks, false);
}
/// PLD_LOG=info or debug with the coll subsystem (one line per collective call). Read once per
/// process.
inline bool collective_logging() {
  static const bool on = log_enabled(LogLevel::Info, LogSys::Coll);
  return on;
}

inline constexpr int kCollHistory = 8;   // descriptors kept per rank
inline constexpr int kRearmSlots = 256;  // cells per rank whose resets are counted

/// Shared memory of the debug-mode checks (one mapping, created only in debug mode).
struct DebugShared {
  std::atomic<std::uint32_t> epoch{0};  // the host's call counter
  double wait_timeout = 0;
  const std::atomic<std::uint32_t>* abort = nullptr;  // the control block's abort flag (same address everywhere)
  struct alignas(64) CollRing {
    std::atomic<std::uint64_t> head{0};
    struct Slot {
      std::atomic<std::uint64_t> w[8];
    } slots[kCollHistory];
  } colls[kMaxRanks];
  struct RearmTable {  // per rank: how often each cell was Set or decremented by a notify
    std::atomic<std::uint64_t> key[kRearmSlots];
    std::atomic<std::uint32_t> count[kRearmSlots];
  } rearm[kMaxRanks];
  struct NotifyCalls {  // per rank: the call (host epoch) of the last notify into each cell
    std::atomic<std::uint64_t> key[kRearmSlots];
    std::atomic<std::uint32_t> epoch[kRearmSlots];
  } notified[kMaxRanks];
};

/// Debug mode's shared block: one DebugShared in shared memory, mapped by the shm group before it
/// forks its ranks (they inherit the mapping) and handed to its backend (Backend::debug_shared);
/// unmapped on destruction. `abort` is the backend's abort flag, which ends the checks' waits.
class DebugBlock {
 public:
  DebugBlock(double wait_timeout, const std::atomic<std::uint32_t>* abort);
  ~DebugBlock();
  DebugBlock(const DebugBlock&) = delete;
  DebugBlock& operator=(const DebugBlock&) = delete;
  DebugShared* get() const { return shared_; }

 private:
  DebugShared* shared_;
};

/// One collective call as compared across ranks.
struct CollCall {
  CollKind kind = CollKind::None;
  DType dtype = DType::INT32;
  std::uint8_t op = 0;    // ReduceOp
  std::uint8_t mode = 0;  // AllreduceMode
  std::int32_t root = -1;
  std::int32_t core_num = 1;
  std::uint32_t signal = 0, target = UINT32_MAX, extra = UINT32_MAX;  // buffer ids in the domain
  Dims shape;                                                         // the target's (first four extents compared)
};

/// "allreduce(target 'x' fp32 [8], signal 's', op Sum, mode Auto, core_num 1)".
std::string describe_call(const CollCall& c, const DomainState& d);
/// What two descriptors differ in ("collective", "size", "root", ...); empty when they match.
std::vector<const char*> call_differences(const CollCall& a, const CollCall& b);

/// Logs a collective call (subsystem coll) and, in debug mode, checks it against every peer's
/// call (throws UsageError on a mismatch).
void collective_check(const DomainState& d, const CollCall& call);

void debug_check_notify(const WindowDesc& signal, int peer, const Dims& offsets, std::uint64_t off, std::int32_t value,
                        NotifyOp op);
/// Before an atomic on `cell` (debug mode): the view check, the ownership check of notify (a
/// cell of a collective's signal), and on 4-byte cells the bookkeeping of notify's reuse and
/// stale-cell checks.
void debug_check_atomic(const char* api, const WindowDesc& cell, int peer, const Dims& offsets, std::uint64_t off,
                        AmoOp op, std::uint64_t operand);
/// At the entry of a wait: warns (subsystem debug) when the local cell already satisfies the wait
/// with a non-zero value that a notify of an earlier call wrote — a stale signal of a persistent
/// window kept without reset, on which the wait passes without any notify of this call.
void debug_check_wait_entry(const WindowDesc& signal, const Dims& offsets, std::uint64_t off, std::int32_t expected,
                            WaitCmp cmp);
void debug_check_wait_done(const WindowDesc& signal, const Dims& offsets, std::uint64_t off, std::int32_t expected,
                           WaitCmp cmp, std::int32_t seen);
void debug_check_view(const char* api, const WindowDesc& w);

}  // namespace pld::detail
