// The LL ("low latency", after NCCL's protocol of that name) one-shot allreduce for payloads of
// at most kLLMaxBytes per rank: one hop instead of the two barriers of Mesh or TwoShot; and the
// LL barrier: one flag store per peer instead of a credit and its give-back.
#pragma once

#include "rank/runtime.h"

#include <pld/collectives.hpp>

#include <cstdint>

namespace pld::detail {

/// Whether an allreduce of `bytes` per rank with `signal` can run LL on domain `d`: the payload
/// fits PLD_ALLREDUCE_LL_MAX, the domain has a staging channel for the signal's buffer, and its
/// peers' windows are memory (direct_peers: LL stores into them). Every member gets the same
/// answer (same call, same windows, same backend and environment).
bool ll_fits(const DomainState& d, const WindowDesc& signal, std::uint64_t bytes);

/// The LL allreduce of `target` (count elements, count * esz <= kLLMaxBytes) in place, sources
/// combined in ascending rank order. Operands are already checked; needs ll_fits().
void ll_allreduce(const char* op, const DomainState& d, const WindowDesc& target, const WindowDesc& signal, Index count,
                  ReduceOp rop);

/// Whether a barrier with `signal` can run as an LL barrier on domain `d`: the domain has a
/// staging channel for the signal's buffer and its peers' windows are memory. Every member gets
/// the same answer.
bool ll_barrier_fits(const DomainState& d, const WindowDesc& signal);

/// The LL barrier: every rank raises its flag in every peer's channel to this call's epoch, then
/// waits for every peer's flag. The signal's own cells are not touched. Needs ll_barrier_fits().
void ll_barrier(const char* op, const DomainState& d, const WindowDesc& signal);

}  // namespace pld::detail
