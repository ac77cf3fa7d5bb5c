// The collectives' state of one comm domain, as this rank sees it. It lives in the domain's slot
// (DomainState::coll) and is made on the domain's first collective; a domain delivered again by
// the host starts afresh, like its (zero-filled) staging window.
#pragma once

#include "backend/op_history.h"
#include "coll/tuning.h"
#include "rank/runtime.h"

#include <pld/collectives.hpp>

#include <cstdint>
#include <vector>

namespace pld::detail {

/// A collective call as the match check sees it (coll/match.h): what every rank of the domain
/// must pass alike. `shape` points at the target's shape, which outlives the call.
struct CallKey {
  CollKind kind = CollKind::None;
  DType dtype = DType::INT32;
  ReduceOp op = ReduceOp::Sum;
  AllreduceMode mode = AllreduceMode::Auto;
  std::int32_t root = -1;
  std::int32_t core_num = 1;
  std::uint32_t target = UINT32_MAX, extra = UINT32_MAX;  // buffer ids in the domain
  Index count = 0;
  const Dims* shape = nullptr;
};

/// This rank's current call on one staging channel: its token (sequence << 32 | signature, the
/// word LL lines carry) and its key, published into the channel's call record on demand. The key
/// is the collective's own (a local of the call, alive until it returns, the only time a record is
/// published): copying it would read back the caller's just-written fields with wide loads.
struct CurrentCall {
  std::uint64_t token = 0;
  const CallKey* key = nullptr;
};

/// This rank's eager broadcasts on one staging channel (coll/eager_broadcast.cc). Every member
/// counts the same messages and ring positions (a message's lines follow from its size alone).
struct EagerChannel {
  std::uint32_t messages = 0;   // eager broadcasts so far
  std::uint32_t position = 0;   // ring lines read (the end of the last message)
  std::uint32_t published = 0;  // the position last published to every peer
  std::uint32_t acked = 0;      // every peer had published at least this at the last look
  std::uint32_t sent = 0;       // the end of the last message this rank sent as the root
  bool active = false;          // a broadcast since the end of the last kernel
  // Per message m, at m % kEagerHistory: the acknowledgement a peer publishes after m if its
  // messages so far are this rank's (a hash of every token up to m << 32 | the end of m).
  std::vector<std::uint64_t> acks;
};

struct CollDomainState {
  // Every member's heap is load/store addressable here and PLD_COLL_RMA does not force RMA: the
  // direct schedules run (coll/peer.h).
  bool direct = false;
  // The LL staging window (kCollStagingName): its buffer id or -1, and this rank's epochs per
  // channel (one channel per buffer id that may serve as a signal), one sequence for LL data
  // calls and one for LL barriers (coll/ll.cc). Each advances with every call of its kind, in the
  // same order on every member.
  std::int64_t ll_staging = -1;
  std::vector<std::uint32_t> ll_epochs;
  std::vector<std::uint32_t> ll_barrier_epochs;
  // The match check (coll/match.h): whether it runs (a staging window, direct peers, more than
  // one rank), and per channel this rank's current call.
  bool match = false;
  std::vector<CurrentCall> calls;
  // Per channel: the eager broadcasts (made with the staging window, direct peers, > 1 rank).
  std::vector<EagerChannel> eager;
  // The largest broadcast (bytes) the root pushes straight into the peers' windows between two LL
  // barriers (only where PLD_BROADCAST_PUSH_MAX was set or tuned, coll/tuning.h), and through
  // the LL staging slots (at most kLLMaxBytes): (P - 1) x the target within PLD_BROADCAST_PUSH_MAX
  // (coll/ll.cc). 0 without a staging window or direct peers, or with one rank. Computed once
  // here, so a broadcast's choice of path is a few compares.
  std::uint64_t push_broadcast_max = 0;
  std::uint64_t ll_broadcast_max = 0;
  // Per target buffer id: whether this rank's next push collective (allgather, all_to_all,
  // all_to_all_v) into it copies backward; it flips with every such call (coll/push.h).
  // Rank-local; one byte per buffer, so calls on different targets from different threads of
  // one kernel touch different bytes.
  std::vector<std::uint8_t> push_backward;
};

/// Makes the collectives' state of `d` on its first use (safe from several threads).
CollDomainState& coll_state_first_use(const DomainState& d);

/// The collectives' state of `d`. Inline: every collective reads it several times, and after the
/// first use it costs one load.
inline CollDomainState& coll_state(const DomainState& d) {
  if (void* p = d.coll.peek()) return *static_cast<CollDomainState*>(p);
  return coll_state_first_use(d);
}

/// Heap offset of the staging channel of signal buffer `buffer` (the same on every member; needs
/// a staging window and buffer < s.ll_epochs.size()).
inline std::uint64_t channel_of(const DomainState& d, const CollDomainState& s, std::uint32_t buffer) {
  return d.buffers[static_cast<std::size_t>(s.ll_staging)].offset +
         buffer * ll_channel_bytes(static_cast<std::uint64_t>(d.nranks()));
}

}  // namespace pld::detail
