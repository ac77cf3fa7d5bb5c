// The LL ("low latency", after NCCL's protocol of that name) one-hop collectives for payloads of
// at most kLLMaxBytes per peer (coll/tuning.h): allreduce, allgather, reduce_scatter, all_to_all
// and all_to_all_v in one hop instead of two barriers around the copies; the LL barrier: one flag
// store per peer instead of a credit and its give-back; and the pushed broadcast on it.
#pragma once

#include "coll/domain_state.h"
#include "coll/tuning.h"
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
/// combined in ascending rank order: one hop to every peer, or from kDisseminationRanks ranks, while
/// P / 2 sources fit a slot, log2 P rounds of dissemination. Operands are already checked; needs
/// ll_fits().
void ll_allreduce(const char* api, const DomainState& d, const WindowDesc& target, const WindowDesc& signal,
                  Index count, ReduceOp op);

/// Whether allgather, reduce_scatter or all_to_all of `row_bytes` per [P, SIZE] row can run LL
/// on domain `d` (also all_to_all_v, with its message size): more than one rank,
/// 0 < row_bytes <= PLD_COLL_LL_MAX, a staging channel for the signal's buffer, direct peers.
/// Every member gets the same answer.
bool ll_rows_fit(const DomainState& d, const WindowDesc& signal, std::uint64_t row_bytes);

enum class LLRows { Allgather, ReduceScatter, AllToAll };

/// The LL form of the row collectives on the [P, SIZE] window `target`, operands already checked
/// and entered; needs ll_rows_fit(). `input`: allgather's local row, all_to_all's [P, SIZE] input
/// (unused by reduce_scatter, which works in place; `op` is its reduce op). Each rank writes only its
/// own target; reduce_scatter combines ranks in ascending order like its two-barrier form.
void ll_rows(const char* api, LLRows kind, const DomainState& d, const std::byte* input, const WindowDesc& target,
             const WindowDesc& signal, ReduceOp op = ReduceOp::Sum);

/// Whether a broadcast of `bytes` can run as the root's push between two LL barriers on domain
/// `d`: more than one rank, (P - 1) * bytes within PLD_BROADCAST_PUSH_MAX, a staging channel,
/// direct peers.
inline bool ll_push_broadcast_fits(const DomainState& d, const WindowDesc& signal, std::uint64_t bytes) {
  const CollDomainState& s = coll_state(d);
  return s.push_broadcast_max > 0 && bytes <= s.push_broadcast_max && signal.ref.buffer < s.ll_epochs.size();
}

/// The pushed broadcast of `target` from domain rank `root`: an LL barrier (every rank is in the
/// call, so every target is free), the root copies its target into every peer's, an LL barrier
/// (the root's flags publish the copies). Cheaper than the credit barriers around shared copies
/// for targets the root copies from its L1; every rank still returns only after every peer
/// entered the call. Needs ll_push_broadcast_fits().
void ll_push_broadcast(const char* api, const DomainState& d, const WindowDesc& target, const WindowDesc& signal,
                       int root);

/// Whether all_to_all_v with blocks of `block_bytes` (MAX_RECV * SIZE * sizeof(T)) can run LL on
/// domain `d`: more than one rank, the block at most PLD_COLL_LL_MAX, block and its 4-byte count
/// within the staging slot (kLLMaxBytes), a staging channel, direct peers. The count does not
/// count against PLD_COLL_LL_MAX: a 32-byte block is a 36-byte message, which the LL hop still
/// beats the pushes with (two cache lines of the slot, but the pushes' count stores cost more).
bool ll_all_to_all_v_fits(const DomainState& d, const WindowDesc& signal, std::uint64_t block_bytes);

/// The LL all_to_all_v: each message carries the row count, then the block (4 + MAX_RECV * SIZE
/// * sizeof(T) bytes; needs ll_all_to_all_v_fits()). Each rank writes its own recv_counts and
/// target. Counts are already checked.
void ll_all_to_all_v(const char* api, const DomainState& d, const std::byte* input, const std::int32_t* send_counts,
                     const WindowDesc& target, const WindowDesc& recv_counts, const WindowDesc& signal);

/// Whether a barrier with `signal` can run as an LL barrier on domain `d`: the domain has a
/// staging channel for the signal's buffer and its peers' windows are memory. Every member gets
/// the same answer.
bool ll_barrier_fits(const DomainState& d, const WindowDesc& signal);

/// The LL barrier: every rank raises its flag in every peer's channel to this call's epoch, then
/// waits for every peer's flag; from kDisseminationRanks ranks, log2 P rounds of one flag out and
/// one in (dissemination). The signal's own cells are not touched. Needs ll_barrier_fits().
/// `entry`: it is a credit collective's first barrier (what a wait for a flag reports).
void ll_barrier(const char* api, const DomainState& d, const WindowDesc& signal, bool entry = false);

}  // namespace pld::detail
