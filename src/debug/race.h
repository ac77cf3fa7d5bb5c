// The race detector (PLD_DEBUG=race, DistributedConfig::race_check): a happens-before detector
// over every window access pld mediates and every signal operation, across the rank processes.
//
// Each rank keeps a vector clock. A notify (and put_signal's signal, and an atomic) is a release:
// under the cell's lock the backend updates the cell and the cell's clock takes the notifier's —
// replaced by a Set, joined by an AtomicAdd — then the rank's own entry ticks. A wait (test,
// wait_until_*, signal_fetch, a deferred task condition) is an acquire: it joins the cell's clock
// if the cell still holds the value the wait saw, else every release into the cell this call. A
// collective orders every member's entry before every member's return (entry clocks published,
// joined on return; an eager broadcast: the root's entry before every rank's return); its own
// window accesses are exempt. Every other window access — tile
// load/store/read/write of the rank's own window, remote_load/remote_store, put/get and their nbi
// forms — is checked against the heap's shadow (debug/race_shadow.h): a conflicting earlier access
// of another rank that the clock does not cover is a race, reported with both operations, the
// window, the bytes and the missing edge, as a UsageError (PLD_DEBUG=race) or a warning
// (PLD_DEBUG=race:warn).
//
// Off, every hook is one predictable branch on a process-wide flag.
#pragma once

#include "backend/backend.h"
#include "debug/race_shadow.h"
#include "rank/domain.h"
#include "rank/runtime.h"

#include <pld/detail/kernel.hpp>

#include <cstdint>
#include <exception>

namespace pld::detail {

enum class RaceMode : std::uint8_t { Off, Fail, Warn };

/// Decided on the host before the ranks fork (group/group.cc), inherited by them.
extern RaceMode g_race_mode;
inline bool race_on() {
  return __builtin_expect(g_race_mode != RaceMode::Off, false);
}

/// Collectives' own accesses and signals are exempt (RaceCollective); > 0 inside one.
// initial-exec: a thread-local of the library read without a call into the TLS resolver.
inline thread_local int t_race_exempt __attribute__((tls_model("initial-exec"))) = 0;
inline bool race_tracked() {
  return race_on() && t_race_exempt == 0 && g_race_block;
}

/// The rank side, before each dispatch (after its comm domains were delivered): which kernel runs,
/// its number in the call, and where the rank's own windows lie.
void race_dispatch_begin(RankRuntime& rt, void (*kernel)());

/// An access of `api` to heap bytes [offset, offset + bytes) of world rank `target`.
void race_window(const char* api, RaceKind kind, int target, std::uint64_t offset, std::uint64_t bytes);
/// An access of `api` to rank-local memory: checked when it lies in this rank's own window heap.
void race_local(const char* api, RaceKind kind, const std::byte* data, std::uint64_t bytes);

/// A release into the signal cell at heap `offset` of world rank `target`: construct it before
/// the backend updates the cell (it takes the cell's lock), destroy it after (it publishes this
/// rank's clock into the cell's and ticks). `set`: the update replaces the value (NotifyOp::Set).
/// `acquire` also joins the cell's clock first (an atomic read-modify-write).
class RaceRelease {
 public:
  RaceRelease(int target, std::uint64_t offset, bool set, bool acquire = false);
  ~RaceRelease();
  RaceRelease(const RaceRelease&) = delete;
  RaceRelease& operator=(const RaceRelease&) = delete;

 private:
  RaceBlock::Cell* cell_ = nullptr;
  bool set_ = false;
};

/// An acquire of this rank's signal cell `word` at heap `offset`, after a wait that saw `seen`.
void race_acquire(const std::int32_t* word, std::uint64_t offset, std::int32_t seen);
/// An acquire of a cell of world rank `target` (an atomic fetch on any rank's cell).
void race_acquire_at(int target, std::uint64_t offset);

/// One collective on domain `d`: its entry publishes this rank's clock, its return joins every
/// member's; the accesses and signals in between are exempt. A collective that fails joins too:
/// more order can hide a race, never invent one.
class RaceCollective {
 public:
  /// `root` >= 0: a broadcast that orders only the root's entry before every rank's return (the
  /// eager broadcast); -1: every member's entry before every member's return.
  explicit RaceCollective(const DomainState& d, int root = -1) {
    if (race_on()) [[unlikely]]
      begin(d, root);
  }
  ~RaceCollective() {
    if (d_) [[unlikely]]
      end();
  }
  RaceCollective(const RaceCollective&) = delete;
  RaceCollective& operator=(const RaceCollective&) = delete;

 private:
  void begin(const DomainState& d, int root);
  void end();
  const DomainState* d_ = nullptr;
  int root_ = -1;
};

}  // namespace pld::detail
