// Every size threshold of pld that depends on the machine, in one place: derived at start-up from
// the caches the machine reports (core/machine.h), each overridable by its environment variable
// (core/settings.def), each printed by `pld-info` with where its value came from. The rules, as
// thresholds.cc derives them (C = the cache one CPU can count on = L2 + L3 / CPUs sharing the L3,
// the share glibc sizes its non-temporal threshold from; a copy streams once the working set it
// puts on one CPU outgrows C):
//
//   PLD_STREAMING_BYTES        C / 2        a single copy (put, get, own block) streams from here:
//                                           its source and destination together outgrow C
//   PLD_PUSH_STREAMING_BYTES   C / 4        a push collective's block per peer streams from here
//                                           at P = 2, where a CPU reads 2 blocks and writes 2
//                                           (at P ranks from 2 / P of it: coll/push.h)
//   PLD_COPY_BLOCK_BYTES       L2 / 32      block of a cached copy (pow2, 16 KiB..256 KiB)
//   PLD_TWOSHOT_STEP_BYTES     L1d          TwoShot allreduce step (pow2 <= L1d, 4..256 KiB)
//   PLD_RMA_CHUNK_BYTES        L2 / 8       RMA schedule step per peer (pow2, 16 KiB..4 MiB)
//   PLD_RMA_SCRATCH_BYTES      2 L2         RMA schedule scratch over all peers (pow2, >= chunk)
//   PLD_ALLREDUCE_LL_MAX       4 lines      LL allreduce up to 4 cache lines (at most 256 B)
//   PLD_COLL_LL_MAX            4 lines      LL exchange of the row collectives (at most 256 B)
//   PLD_BROADCAST_PUSH_MAX     L1d / 8      broadcast pushed by the root through the LL slots, up
//                                           to this many bytes over all peers (pow2, 1..64 KiB);
//                                           above a slot only when set or tuned (coll/tuning.h)
//
// A tuning file measured on this machine (PLD_TUNING_FILE, written by `pld-bench --tune`) replaces
// the derivation of the thresholds it sets; an environment variable still wins over it.
// Without cache information every threshold takes its default (the constants pld used before it
// read the caches). docs/performance-thresholds.md explains each rule and the measurements behind
// it.
#pragma once

#include "core/machine.h"
#include "core/settings.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace pld::detail {

enum class Threshold {
  Streaming,
  PushStreaming,
  CopyBlock,
  TwoShotStep,
  RmaChunk,
  RmaScratch,
  AllreduceLLMax,
  CollLLMax,
  BroadcastPushMax
};
inline constexpr int kThresholdCount = 9;

struct ThresholdSpec {
  Threshold id;
  Setting setting;         ///< the environment variable that overrides it ("auto": derive)
  const char* rule;        ///< the derivation, as pld-info prints it
  std::uint64_t fallback;  ///< without cache information
  std::uint64_t min, max;  ///< the values an override may take
};

std::span<const ThresholdSpec> threshold_specs();
const ThresholdSpec& threshold_spec(Threshold t);

struct ThresholdValue {
  std::uint64_t bytes = 0;
  Source source = Source::Default;
};

struct Thresholds {
  ThresholdValue values[kThresholdCount];
  std::uint64_t operator[](Threshold t) const { return values[static_cast<int>(t)].bytes; }
  const ThresholdValue& value(Threshold t) const { return values[static_cast<int>(t)]; }
};

/// The value `t` takes from `caches` alone (no environment): its rule, or its fallback when the
/// caches it needs are unknown.
ThresholdValue derive_threshold(Threshold t, const Caches& caches);

/// Every threshold: its environment variable when set to something other than "auto" (validated
/// against [min, max]; a bad value throws UsageError naming the variable, the value and the
/// range), else the value of the tuning file in force for a machine with `cpu_model` and `caches`
/// (PLD_TUNING_FILE, core/tuning_file.h; a bad file throws UsageError), else derive_threshold().
Thresholds derive_thresholds(const Caches& caches, const std::string& cpu_model = machine().cpu_model);

/// derive_thresholds(machine().caches), once per process.
const Thresholds& thresholds();

/// Size from which a single copy streams (PLD_STREAMING_BYTES).
inline std::size_t streaming_bytes() {
  return thresholds()[Threshold::Streaming];
}

}  // namespace pld::detail
