// The collectives' always-on match check: ranks of a comm domain that are in different
// collectives, or in the same one with different arguments, fail with a UsageError that names
// both ranks and both calls — without debug mode, at a cost of a few stores per call.
//
// Every rank numbers its collectives per staging channel (the channel of the signal's buffer,
// coll/ll.cc): call k = 1, 2, ..., whatever its kind, the same sequence on every member. On entry
// it publishes its call record in its own channel: one line, the descriptor in words 1-7 (packed
// as debug mode packs it) and in word 0 the token k << 32 | signature, a 32-bit hash of the
// descriptor, stored last with release (a sequence lock: readers re-read word 0). It is read in
// three places:
//   * the LL data calls carry the signature in every line's token next to the epoch (coll/ll.cc):
//     a line with this call's epoch and another signature comes from a peer in another call;
//   * the two-credit collectives and the pushed broadcast compare the next rank's token after
//     their first barrier, when it is that rank's token of this call (it cannot leave the call
//     before this rank arrives at the second barrier);
//   * every collective wait probes every peer's token once it sleeps (WaitProbe): a peer whose
//     call k has another signature is in another collective — calls whose protocols differ stall
//     each other instead of completing.
// The check runs where the domain has a staging channel for the signal and its peers' windows
// are memory (the shm backend, mpi on one node). Debug mode (PLD_DEBUG=1) compares every call on
// every rank before it starts, on every backend.
#pragma once

#include "backend/backend.h"
#include "coll/domain_state.h"
#include "debug/checks.h"

#include <atomic>
#include <cstdint>

namespace pld::detail {

/// Publishes `call` as this rank's next call record on the signal's channel (needs s.match and a
/// channel for the buffer).
void publish_call(const DomainState& d, CollDomainState& s, std::uint32_t buffer, const CollCall& call);

/// Entry of every collective: one op-history record, the call record where the match check runs,
/// and debug mode's check and the coll log line where they are on. `make()` builds the descriptor.
template <class MakeCall>
void coll_enter(const DomainState& d, const WindowDesc& signal, CollKind kind, Index count, MakeCall&& make) {
  d.backend->record_op(OpKind::Collective, static_cast<std::uint8_t>(kind), -1, saturate(count), signal.ref.domain,
                       signal.ref.buffer, signal.ref.offset, nullptr);
  CollDomainState& s = coll_state(d);
  const bool record = s.match && signal.ref.buffer < s.calls.size();
  const bool checked = debug_checks() || collective_logging();
  if (!record && !checked) return;
  const CollCall call = make();
  if (record) publish_call(d, s, signal.ref.buffer, call);
  if (checked) collective_check(d, call);
}

/// This rank's current call token on the signal's channel (0 where the match check does not run).
inline std::uint64_t call_token(const DomainState& d, const WindowDesc& signal) {
  const CollDomainState& s = coll_state(d);
  return s.match && signal.ref.buffer < s.calls.size() ? s.calls[signal.ref.buffer] : 0;
}

/// Throws the mismatch UsageError: this rank's call and domain rank `peer`'s, and what differs.
[[noreturn]] void call_mismatch_failed(const char* api, const DomainState& d, const WindowDesc& signal, int peer);

/// The word-0 token of domain rank `rank`'s call record on `buffer`'s channel (acquire).
inline std::uint64_t peer_token(const DomainState& d, const CollDomainState& s, std::uint32_t buffer, int rank) {
  const std::byte* heap = d.windows_in[static_cast<std::size_t>(rank)];
  const auto* word = reinterpret_cast<const std::uint64_t*>(heap + channel_of(d, s, buffer) +
                                                            call_record_offset(static_cast<std::uint64_t>(d.nranks())));
  return std::atomic_ref<const std::uint64_t>(*word).load(std::memory_order_acquire);
}

/// After a collective's first barrier: throws when the next rank's call of the same number is
/// another one. One load of a line the next rank wrote on entry.
inline void check_next_call(const char* api, const DomainState& d, const WindowDesc& signal) {
  const std::uint64_t mine = call_token(d, signal);
  if (mine == 0) return;
  const int next = d.rank + 1 == d.nranks() ? 0 : d.rank + 1;
  const std::uint64_t theirs = peer_token(d, coll_state(d), signal.ref.buffer, next);
  if ((theirs >> 32) == (mine >> 32) && theirs != mine) [[unlikely]]
    call_mismatch_failed(api, d, signal, next);
}

/// The probe of a collective's waits on `signal`: true once some peer's call of this rank's
/// number has another signature (that peer in peer()). get() is nullptr where the check does not
/// run.
class MatchProbe {
 public:
  MatchProbe(const DomainState& d, const WindowDesc& signal);
  MatchProbe(const MatchProbe&) = delete;
  MatchProbe& operator=(const MatchProbe&) = delete;
  const WaitProbe* get() const { return mine_ ? &probe_ : nullptr; }
  int peer() const { return peer_; }

 private:
  static bool check(void* self);
  const DomainState& d_;
  std::uint32_t buffer_;
  std::uint64_t mine_;
  int peer_ = -1;
  WaitProbe probe_;
};

}  // namespace pld::detail
