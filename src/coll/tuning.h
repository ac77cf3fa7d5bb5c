// Every tuning value of the collectives in one place: the sizes that choose a path (LL, Mesh or
// TwoShot), the step sizes of the schedules, and the LL staging layout they imply. The sizes that
// depend on the machine come from core/thresholds.h (derived from the caches, or the environment);
// the choices a user may change come from the settings registry (core/settings.def), read once per
// process by coll_tuning(); the constants below are layout, fixed.
#pragma once

#include "core/thresholds.h"

#include <pld/types.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace pld::detail {

// --- LL: the one-hop exchange through pld's staging window (coll/ll.cc) ---

/// Largest LL message (bytes per peer; allreduce: per rank): the staging slot's capacity.
/// PLD_ALLREDUCE_LL_MAX and PLD_COLL_LL_MAX are capped at it.
inline constexpr std::uint64_t kLLMaxBytes = 512;

/// Name of pld's small-message staging window, one per used comm domain (host/session.cc
/// reserves it); names starting with "pld." are reserved.
inline constexpr const char* kCollStagingName = "pld.coll_staging";

/// An LL message is cut into lines of kLLLineBytes: kLLLineData bytes of data, then the call's
/// 8-byte token — its 4-byte signature (coll/match.h), then its 4-byte epoch — stored last
/// (coll/ll.cc). A line is the unit of the layout, not of correctness: on a machine with longer
/// cache lines two LL lines share one.
inline constexpr std::uint64_t kLLLineBytes = 64;
inline constexpr std::uint64_t kLLLineData = kLLLineBytes - 8;
/// Lines of a message of `bytes` (at least one: an empty message is its token alone).
inline constexpr std::uint64_t ll_lines(std::uint64_t bytes) {
  return bytes == 0 ? 1 : (bytes + kLLLineData - 1) / kLLLineData;
}

/// One staging channel holds the LL slots, 2 parities x P sources x the lines of a kLLMaxBytes
/// message, then the LL barrier's flags, 2 parities x P sources, one line each, then this rank's
/// call records (coll/match.h), one line per parity of the call number, then the eager
/// broadcast's ring, acknowledgements and history (below).
inline constexpr std::uint64_t kLLSlotBytes = ll_lines(kLLMaxBytes) * kLLLineBytes;
inline constexpr std::uint64_t kLLFlagBytes = kLLLineBytes;
inline constexpr std::uint64_t kCallRecordBytes = 2 * kLLLineBytes;
inline constexpr std::uint64_t ll_flags_offset(std::uint64_t nranks) {
  return 2 * nranks * kLLSlotBytes;
}
inline constexpr std::uint64_t call_record_offset(std::uint64_t nranks) {
  return ll_flags_offset(nranks) + 2 * nranks * kLLFlagBytes;
}

// --- The eager broadcast (coll/eager_broadcast.cc) ---

/// Lines of the ring every root writes its messages into (a message never wraps: it starts the
/// ring over where it would not fit), so a root runs up to this many lines ahead of its slowest
/// peer: deep enough that a loop of small broadcasts on more ranks than cores switches ranks
/// once per many calls, not every few.
inline constexpr std::uint32_t kEagerRingLines = 128;
/// A rank publishes how far it has read the ring once it is this many lines past its last
/// publication (and at the end of the kernel): the ring holds a whole message beyond that lag.
inline constexpr std::uint32_t kEagerAckLines = 8;
/// Largest eager broadcast (bytes): a message of up to ll_lines(kEagerMaxBytes) lines, so the
/// ring holds it beyond the acknowledgement lag, and a root runs a few messages ahead at the
/// largest size. The per-call cap is also the pushed broadcast's threshold over P - 1 peers
/// (coll/domain_state.cc): what a root writes per call stays under that threshold.
inline constexpr std::uint64_t kEagerMaxBytes = 2048;
static_assert(kEagerRingLines >= ll_lines(kEagerMaxBytes) + kEagerAckLines - 1);
/// This rank's last broadcasts as call records, one line each, indexed by message number. A root
/// also runs at most kEagerHistory - 2 messages ahead of its slowest peer, so a peer's probe finds
/// the call it is missing in the root's history.
inline constexpr std::uint32_t kEagerHistory = 128;
static_assert(kEagerHistory >= 2 * kEagerAckLines && (kEagerHistory & (kEagerHistory - 1)) == 0);
/// Every source's acknowledgement word is 8 bytes: the ring position it has read up to (the low
/// half, the cell a root waits on) and a hash of the tokens of every message up to it.
inline constexpr std::uint64_t kEagerAckBytes = 8;
inline constexpr std::uint64_t eager_ring_offset(std::uint64_t nranks) {
  return call_record_offset(nranks) + kCallRecordBytes;
}
inline constexpr std::uint64_t eager_acks_offset(std::uint64_t nranks) {
  return eager_ring_offset(nranks) + kEagerRingLines * kLLLineBytes;
}
inline constexpr std::uint64_t eager_history_offset(std::uint64_t nranks) {
  return eager_acks_offset(nranks) + (nranks * kEagerAckBytes + kLLLineBytes - 1) / kLLLineBytes * kLLLineBytes;
}
inline constexpr std::uint64_t ll_channel_bytes(std::uint64_t nranks) {
  return eager_history_offset(nranks) + kEagerHistory * kLLLineBytes;
}

/// From this many ranks the LL barrier is a dissemination barrier (log2 P rounds of one flag out,
/// one in) instead of the flat one (P - 1 flags out, P - 1 in): per-rank work grows as log P.
inline constexpr int kDisseminationRanks = 32;

/// Staging per rank is capped (it is zeroed with the other windows on every call): channels go
/// to the first buffer ids only, at least one (P = 2: 13 channels, P = 8: 9, P = 64: 2).
inline constexpr std::uint64_t kCollStagingBudget = 256 * 1024;

// --- Schedules of the two-barrier collectives ---

// The sizes below come from the machine's caches unless the environment sets them
// (core/thresholds.h: the rules, the variables, pld-info's listing).

/// TwoShot allreduce (direct peers): elements are reduced and pushed in steps of this many bytes,
/// so each step's result is still cached when it is copied to the peers.
inline std::size_t twoshot_step_bytes() {
  return thresholds()[Threshold::TwoShotStep];
}

/// Pushes of a whole block per peer (allgather, all_to_all, all_to_all_v) stream from this size at
/// P = 2 (push_block_streaming_bytes() scales it to the domain): each rank's push lands in another
/// rank's window and is not read again by the pusher, so once the call's working set (4 blocks per
/// CPU at P = 2) outgrows the cache a CPU can count on, skipping the read-for-ownership of the
/// destination wins (docs/performance-thresholds.md, "Thresholds from the machine").
inline std::size_t push_streaming_bytes() {
  return thresholds()[Threshold::PushStreaming];
}

/// broadcast is pushed by the root while (P - 1) x its target is at most this (coll/ll.cc): through
/// the LL staging slots while the target fits one (kLLMaxBytes), one hop instead of two credit
/// barriers. Above a slot the root's push between two LL barriers runs only where the value was
/// chosen for this machine (the environment or a tuning file, `pld-bench --tune`): against the
/// ranks' shared copies it wins on some CPUs and loses by half on others
/// (docs/performance-thresholds.md).
struct BroadcastPushMax {
  std::uint64_t bytes;  ///< PLD_BROADCAST_PUSH_MAX
  bool chosen;          ///< set or tuned, not derived: push above an LL slot too
};
inline BroadcastPushMax broadcast_push_max() {
  const ThresholdValue& v = thresholds().value(Threshold::BroadcastPushMax);
  return {v.bytes, v.source == Source::Env || v.source == Source::TuningFile};
}

/// Elements of `esz` bytes per peer and step of an RMA schedule reading `sources` ranks (>= 1):
/// one step moves at most the RMA chunk per peer and stages at most the RMA scratch from all peers
/// together (a lane's scratch stays bounded at any rank count).
inline Index rma_chunk_elems(int sources, std::size_t esz) {
  const Thresholds& t = thresholds();
  const std::size_t chunk = t[Threshold::RmaChunk];
  const std::size_t per_peer =
      std::clamp<std::size_t>(t[Threshold::RmaScratch] / static_cast<std::size_t>(std::max(1, sources - 1)),
                              std::min<std::size_t>(4096, chunk), chunk);
  return static_cast<Index>(std::max<std::size_t>(1, per_peer / esz));
}

// --- From the settings registry ---

struct CollTuning {
  std::uint64_t allreduce_ll_max;  // PLD_ALLREDUCE_LL_MAX (auto: 4 cache lines), at most kLLMaxBytes
  std::uint64_t coll_ll_max;       // PLD_COLL_LL_MAX (auto: 4 cache lines), at most kLLMaxBytes
  std::uint64_t mesh_max_bytes;    // PLD_ALLREDUCE_MESH_MAX
  bool reproducible;               // PLD_REPRODUCIBLE
};

/// The settings above, read from the registry (coll_tuning() caches them once per process).
CollTuning read_coll_tuning();
/// The settings above, read once per process (by its first collective that needs one). Inline:
/// every small collective reads it.
inline const CollTuning& coll_tuning() {
  static const CollTuning tuning = read_coll_tuning();
  return tuning;
}

/// PLD_COLL_RMA != 0: run the RMA schedules even where peers' windows are memory. Read once per
/// process, by its first collective.
bool coll_rma_forced();

}  // namespace pld::detail
