// The eager broadcast: a small broadcast's root writes its data into every peer's ring and returns,
// as MPI's and OpenSHMEM's roots do; a loop of broadcasts runs ahead on the root by up to the
// ring's capacity instead of meeting every peer on every call (coll/eager_broadcast.cc has the
// protocol).
#pragma once

#include "coll/domain_state.h"
#include "rank/runtime.h"

#include <cstdint>

namespace pld::detail {

/// Whether a broadcast of `bytes` runs eager on domain `d`: more than one rank, 0 < bytes <=
/// kLLMaxBytes, (P - 1) * bytes within PLD_BROADCAST_PUSH_MAX, a staging channel for the signal's
/// buffer, direct peers. Every member gets the same answer. Inline: every broadcast asks, and the
/// limits are the domain's, computed once (coll/domain_state.h).
inline bool eager_broadcast_fits(const DomainState& d, const WindowDesc& signal, std::uint64_t bytes) {
  const CollDomainState& s = coll_state(d);
  return bytes > 0 && bytes <= s.ll_broadcast_max && signal.ref.buffer < s.eager.size();
}

/// The eager broadcast of `target` (`bytes` long) from domain rank `root`, entered (coll_enter)
/// and checked; needs eager_broadcast_fits(). The root returns once its data is in every peer's
/// ring; every other rank once it has the root's data in its target.
void eager_broadcast(const char* api, const DomainState& d, const WindowDesc& target, std::size_t bytes,
                     const WindowDesc& signal, int root);

}  // namespace pld::detail
