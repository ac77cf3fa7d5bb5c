// The collectives' always-on match check: ranks of a comm domain that are in different
// collectives, or in the same one with different arguments, fail with a UsageError that names
// both ranks and both calls — without debug mode, at the cost of a hash per call.
//
// Every rank numbers its collectives per staging channel (the channel of the signal's buffer,
// coll/ll.cc): call k = 1, 2, ..., whatever its kind, the same sequence on every member. On entry
// it computes the call's token, k << 32 | a 32-bit signature of its key (kind, dtype, size, op,
// mode, root, core_num, buffers), and keeps it with the key in rank-local memory. Where peers
// must read it, it is published as the rank's call record in its own channel: one line, the key
// in words 1-7 and the token in word 0, stored last with release (a sequence lock: readers
// re-read word 0), in the line of the call number's parity: call k's record stays until the
// rank publishes call k + 2, which it cannot reach before every peer has left call k. Three
// places compare calls:
//   * the LL data calls carry the token in every line, the LL barrier (and the pushed broadcast
//     on it) the signature in every flag (coll/ll.cc): a line or flag with this call's epoch and
//     another signature comes from a peer in another call — no record is needed to see it;
//   * the credit collectives run their first barrier as the LL barrier where the call is one lane
//     (coll/credit.h), so its flags carry the signature too; split over lanes (core_num > 1), lane
//     0 publishes the record before its first barrier (every peer's arrival there then follows
//     it), prefetches the next rank's after it, and compares once its second barrier is passed;
//   * every collective wait, once it sleeps, publishes this rank's record and probes every peer's
//     (WaitProbe): calls whose protocols differ stall each other instead of completing, and each
//     side finds the other's record of the same number with another signature;
//   * an eager broadcast's root does not wait for its peers (coll/eager_broadcast.cc): every rank
//     keeps its last broadcasts as records in a history line per message, which the probes (a
//     peer made a broadcast this rank did not) and the root's checks of its messages read. Its
//     number is mixed into a call's signature, so a rank one call ahead of a peer in an LL call
//     of the same kind carries another token.
// The check runs where the domain has a staging channel for the signal and its peers' windows
// are memory (the shm backend, mpi on one node). Debug mode (PLD_DEBUG=1) compares every call on
// every rank before it starts, on every backend.
#pragma once

#include "backend/backend.h"
#include "coll/domain_state.h"
#include "debug/checks.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <utility>

namespace pld::detail {

/// The key of a collective on `target`.
inline CallKey call_key(CollKind kind, const WindowDesc& target, int core_num, ReduceOp op = ReduceOp::Sum,
                        AllreduceMode mode = AllreduceMode::Auto) {
  CallKey k;
  k.kind = kind;
  k.dtype = target.dtype;
  k.op = op;
  k.mode = mode;
  k.core_num = core_num;
  k.target = target.ref.buffer;
  k.count = target.shape.numel();
  k.shape = &target.shape;
  return k;
}

/// The key's 32-bit signature: every field multiplied on its own, then mixed into every bit. No
/// load spans two fields: a wide load of fields the caller has just stored one by one cannot be
/// forwarded from the store buffer and waits until every older store (a root's lines into its
/// peers' windows among them) has reached the cache.
constexpr std::uint32_t call_signature(const CallKey& k) {
  std::uint64_t h = static_cast<std::uint64_t>(k.kind) * 0x9e3779b97f4a7c15ull ^
                    static_cast<std::uint64_t>(k.dtype) * 0xc2b2ae3d27d4eb4full ^
                    static_cast<std::uint64_t>(k.op) * 0x165667b19e3779f9ull ^
                    static_cast<std::uint64_t>(k.mode) * 0xd6e8feb86659fd93ull ^
                    static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.core_num)) * 0xa0761d6478bd642full ^
                    static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.root)) * 0xe7037ed1a0b428dbull ^
                    static_cast<std::uint64_t>(k.target) * 0x8ebc6af09c88c6e3ull ^
                    static_cast<std::uint64_t>(k.extra) * 0x589965cc75374cc3ull ^
                    static_cast<std::uint64_t>(k.count) * 0x1d8e4e27c47d124full;
  h ^= h >> 31;
  h *= 0xff51afd7ed558ccdull;
  return static_cast<std::uint32_t>(h >> 32);
}

/// The descriptor of a key (debug mode's check and the coll log line).
CollCall coll_call(const CallKey& key, const WindowDesc& signal);

/// Entry of every collective: one op-history record, this rank's current call where the match
/// check runs (a hash and two rank-local stores), and debug mode's check and the coll log line
/// where they are on.
/// `signature` is call_signature(key), passed by a caller whose key is a constant (the barrier) so
/// that no hash sits between its entry and the flag its peers wait for.
inline void coll_enter(const DomainState& d, const WindowDesc& signal, const CallKey& key, std::uint32_t signature) {
  d.backend->record_op(OpKind::Collective, static_cast<std::uint8_t>(key.kind), -1, saturate(key.count),
                       signal.ref.domain, signal.ref.buffer, signal.ref.offset, nullptr);
  CollDomainState& s = coll_state(d);
  if (s.match && signal.ref.buffer < s.calls.size()) {
    CurrentCall& c = s.calls[signal.ref.buffer];
    // The number mixed into the signature: ranks whose calls are a number apart (one rank called an
    // eager broadcast the others did not) carry different tokens into the same LL epoch.
    const std::uint64_t number = (c.token >> 32) + 1;
    c.token = number << 32 | (signature ^ static_cast<std::uint32_t>(number * 0x9e3779b9u));
    c.key = &key;
  }
  if (debug_checks() || collective_logging()) [[unlikely]]
    collective_check(d, coll_call(key, signal));
}
inline void coll_enter(const DomainState& d, const WindowDesc& signal, const CallKey& key) {
  coll_enter(d, signal, key, call_signature(key));
}
/// The key must outlive the call (CurrentCall keeps its address): a named local of the collective.
void coll_enter(const DomainState& d, const WindowDesc& signal, CallKey&& key) = delete;
void coll_enter(const DomainState& d, const WindowDesc& signal, CallKey&& key, std::uint32_t signature) = delete;

/// This rank's current call token on the signal's channel (0 where the match check does not run).
inline std::uint64_t call_token(const DomainState& d, const WindowDesc& signal) {
  const CollDomainState& s = coll_state(d);
  return s.match && signal.ref.buffer < s.calls.size() ? s.calls[signal.ref.buffer].token : 0;
}

/// Publishes this rank's current call on the signal's channel as its call record (no-op where
/// the check does not run).
void publish_call(const DomainState& d, const WindowDesc& signal);

/// Throws the mismatch UsageError: this rank's call and domain rank `peer`'s, and what differs
/// (after publishing this rank's record and waiting briefly for the peer's record or eager
/// broadcast of the same number).
[[noreturn]] void call_mismatch_failed(const char* api, const DomainState& d, const WindowDesc& signal, int peer);

/// The mismatch UsageError for two calls of number `number` (this rank's `mine`, `peer`'s `theirs`).
[[noreturn]] void calls_differ(const char* api, const DomainState& d, std::uint32_t buffer, std::uint64_t number,
                               const CollCall& mine, int peer, const CollCall* theirs);

/// An eager broadcast as the history keeps it (coll/eager_broadcast.cc): its call token, its
/// message number and the call.
struct HistoryEntry {
  std::uint64_t token = 0;
  std::uint32_t message = 0;
  CollCall call;
};

/// Writes this rank's current call on the signal's channel into its history line of eager
/// broadcast `message` (a sequence lock, as the record).
void publish_history(const DomainState& d, const WindowDesc& signal, std::uint32_t message);

/// Domain rank `rank`'s eager broadcast of call number `number`, if its history still holds it.
std::optional<std::pair<std::uint64_t, CollCall>> history_call(const DomainState& d, std::uint32_t buffer, int rank,
                                                               std::uint64_t number);

/// Domain rank `rank`'s call of number `number` (token and call) from its record or its history.
std::optional<std::pair<std::uint64_t, CollCall>> peer_call(const DomainState& d, std::uint32_t buffer, int rank,
                                                            std::uint64_t number);

/// Domain rank `rank`'s history line of `message`'s slot: whatever message it holds now (nothing
/// while it is never written or keeps changing).
std::optional<HistoryEntry> read_history(const DomainState& d, std::uint32_t buffer, int rank, std::uint32_t message);

/// Heap offset of the record of the call with token `token` on `buffer`'s channel (the same in
/// every member's heap): the line of its number's parity.
inline std::uint64_t record_at(const DomainState& d, const CollDomainState& s, std::uint32_t buffer,
                               std::uint64_t token) {
  return channel_of(d, s, buffer) + call_record_offset(static_cast<std::uint64_t>(d.nranks())) +
         (token >> 32 & 1) * kLLLineBytes;
}

/// The word-0 token of domain rank `rank`'s record in the line of `token`'s parity (acquire).
inline std::uint64_t peer_token(const DomainState& d, const CollDomainState& s, std::uint32_t buffer, int rank,
                                std::uint64_t token) {
  const auto* word = reinterpret_cast<const std::uint64_t*>(d.windows_in[static_cast<std::size_t>(rank)] +
                                                            record_at(d, s, buffer, token));
  return std::atomic_ref<const std::uint64_t>(*word).load(std::memory_order_acquire);
}

/// The next domain rank (the one the two-credit collectives compare with).
inline int next_rank(const DomainState& d) {
  return d.rank + 1 == d.nranks() ? 0 : d.rank + 1;
}

/// After a collective's first barrier: starts bringing the next rank's call record in.
inline void prefetch_next_call(const DomainState& d, const WindowDesc& signal) {
  const CollDomainState& s = coll_state(d);
  if (s.match && signal.ref.buffer < s.calls.size())
    __builtin_prefetch(d.windows_in[static_cast<std::size_t>(next_rank(d))] +
                       record_at(d, s, signal.ref.buffer, s.calls[signal.ref.buffer].token));
}

/// After a collective's second barrier, before it returns: throws when the next rank's call of the
/// same number (published before the first) is another one.
inline void check_next_call(const char* api, const DomainState& d, const WindowDesc& signal) {
  const std::uint64_t mine = call_token(d, signal);
  if (mine == 0) return;
  const int next = next_rank(d);
  const std::uint64_t theirs = peer_token(d, coll_state(d), signal.ref.buffer, next, mine);
  if ((theirs >> 32) == (mine >> 32) && theirs != mine) [[unlikely]]
    call_mismatch_failed(api, d, signal, next);
}

/// The probe of a collective's waits on `signal`: publishes this rank's record, then returns true
/// once some peer's call of this rank's number has another signature (that peer in peer()).
/// get() is nullptr where the check does not run.
class MatchProbe {
 public:
  /// `eager`: the wait is an eager broadcast's, whose own history line is already published.
  MatchProbe(const DomainState& d, const WindowDesc& signal, bool eager = false);
  MatchProbe(const MatchProbe&) = delete;
  MatchProbe& operator=(const MatchProbe&) = delete;
  const WaitProbe* get() const { return mine_ ? &probe_ : nullptr; }
  int peer() const { return peer_; }

 private:
  static bool check(void* self);
  const DomainState& d_;
  const WindowDesc& signal_;
  std::uint64_t mine_;
  bool eager_;
  int peer_ = -1;
  WaitProbe probe_;
};

}  // namespace pld::detail
