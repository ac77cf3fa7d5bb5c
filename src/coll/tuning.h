// Every tuning value of the collectives in one place: the sizes that choose a path (LL, Mesh or
// TwoShot), the step sizes of the schedules, and the LL staging layout they imply. Values a user
// may change come from the settings registry (core/settings.def), read once per process by
// coll_tuning(); the constants below are fixed.
#pragma once

#include <pld/types.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace pld::detail {

// --- LL: the one-hop exchange through pld's staging window (coll/ll.cc) ---

/// Largest LL message (bytes per peer; allreduce: per rank). PLD_ALLREDUCE_LL_MAX and
/// PLD_COLL_LL_MAX are capped at it.
inline constexpr std::uint64_t kLLMaxBytes = 64;

/// Name of pld's small-message staging window, one per used comm domain (host/session.cc
/// reserves it); names starting with "pld." are reserved.
inline constexpr const char* kCollStagingName = "pld.coll_staging";

/// One staging channel holds the LL slots, 2 parities x P sources x kLLMaxBytes / 4 words of 8
/// bytes, then the LL barrier's flags, 2 parities x P sources, one cache line each.
inline constexpr std::uint64_t kLLSlotBytes = kLLMaxBytes * 2;
inline constexpr std::uint64_t kLLFlagBytes = 64;
inline constexpr std::uint64_t ll_flags_offset(std::uint64_t nranks) {
  return 2 * nranks * kLLSlotBytes;
}
inline constexpr std::uint64_t ll_channel_bytes(std::uint64_t nranks) {
  return ll_flags_offset(nranks) + 2 * nranks * kLLFlagBytes;
}

/// Staging per rank is capped (it is zeroed with the other windows on every call): channels go
/// to the first buffer ids only, at least one (P = 2: 256 channels, P = 64: 8).
inline constexpr std::uint64_t kCollStagingBudget = 192 * 1024;

// --- Schedules of the two-barrier collectives ---

/// TwoShot allreduce (direct peers): elements are reduced and pushed in steps of this many bytes,
/// so each step's result is still cached when it is copied to the peers.
inline constexpr std::size_t kTwoShotStepBytes = 32 * 1024;

/// Pushes of a whole block per peer (allgather, all_to_all, all_to_all_v) stream from 1 MiB: each
/// rank's push lands in another rank's window and is not read again by the pusher
/// (bench/README.md, finding 5).
inline constexpr std::size_t kPushStreamingBytes = 1u << 20;

/// One step of an RMA schedule moves at most this much per peer...
inline constexpr std::size_t kRmaChunkBytes = 256 * 1024;
/// ...and stages at most this much from all peers together (a lane's scratch stays bounded at
/// any rank count: 4 MiB / (P - 1) per peer above P = 17).
inline constexpr std::size_t kRmaScratchBytes = 4u << 20;

/// Elements of `esz` bytes per peer and step of an RMA schedule reading `sources` ranks (>= 1).
inline Index rma_chunk_elems(int sources, std::size_t esz) {
  const std::size_t per_peer = std::clamp<std::size_t>(
      kRmaScratchBytes / static_cast<std::size_t>(std::max(1, sources - 1)), 4096, kRmaChunkBytes);
  return static_cast<Index>(std::max<std::size_t>(1, per_peer / esz));
}

// --- From the settings registry ---

struct CollTuning {
  std::uint64_t allreduce_ll_max;  // PLD_ALLREDUCE_LL_MAX, at most kLLMaxBytes
  std::uint64_t coll_ll_max;       // PLD_COLL_LL_MAX, at most kLLMaxBytes
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
