#include "coll/match.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <chrono>
#include <optional>
#include <thread>

namespace pld::detail {

namespace {

// How long a rank that saw a mismatch waits for the peer's record of the same call (the peer
// publishes it once its own wait goes to sleep, within milliseconds).
constexpr double kPeerRecordWait = 2.0;  // seconds

std::uint64_t* record_words(const DomainState& d, const CollDomainState& s, std::uint32_t buffer, int rank,
                            std::uint64_t token) {
  return reinterpret_cast<std::uint64_t*>(d.windows_in[static_cast<std::size_t>(rank)] +
                                          record_at(d, s, buffer, token));
}

// The record's words 1-7: the key (its shape's first four extents).
void pack(const CallKey& k, std::uint64_t w[8]) {
  const int nd = k.shape ? std::min(k.shape->size(), 4) : 0;
  w[1] = static_cast<std::uint64_t>(k.kind) | static_cast<std::uint64_t>(k.dtype) << 8 |
         static_cast<std::uint64_t>(k.op) << 16 | static_cast<std::uint64_t>(k.mode) << 24 |
         static_cast<std::uint64_t>(static_cast<std::uint16_t>(k.core_num)) << 32 |
         static_cast<std::uint64_t>(nd) << 48;
  w[2] = static_cast<std::uint32_t>(k.root) | static_cast<std::uint64_t>(k.target) << 32;
  w[3] = k.extra;
  for (int i = 0; i < 4; ++i) w[4 + i] = i < nd ? static_cast<std::uint64_t>((*k.shape)[i]) : 0;
}

CollCall unpack(const std::uint64_t w[8], std::uint32_t signal) {
  CollCall c;
  c.kind = static_cast<CollKind>(w[1] & 0xff);
  c.dtype = static_cast<DType>((w[1] >> 8) & 0xff);
  c.op = static_cast<std::uint8_t>((w[1] >> 16) & 0xff);
  c.mode = static_cast<std::uint8_t>((w[1] >> 24) & 0xff);
  c.core_num = static_cast<std::int16_t>((w[1] >> 32) & 0xffff);
  const int nd = static_cast<int>((w[1] >> 48) & 0xff);
  c.root = static_cast<std::int32_t>(static_cast<std::uint32_t>(w[2]));
  c.target = static_cast<std::uint32_t>(w[2] >> 32);
  c.extra = static_cast<std::uint32_t>(w[3]);
  c.signal = signal;
  for (int i = 0; i < nd; ++i) c.shape.push_back(static_cast<Index>(w[4 + i]));
  return c;
}

// A consistent copy of a rank's record in the line of `token`'s parity (sequence lock), or nothing
// when it keeps changing or was never written.
std::optional<std::pair<std::uint64_t, CollCall>> read_record(const DomainState& d, const CollDomainState& s,
                                                              std::uint32_t buffer, int rank, std::uint64_t token) {
  const std::uint64_t* line = record_words(d, s, buffer, rank, token);
  for (int attempt = 0; attempt < 64; ++attempt) {
    const std::uint64_t token = std::atomic_ref<const std::uint64_t>(line[0]).load(std::memory_order_acquire);
    if (token == 0) return std::nullopt;
    std::uint64_t w[8] = {token};
    for (int i = 1; i < 8; ++i) w[i] = std::atomic_ref<const std::uint64_t>(line[i]).load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (std::atomic_ref<const std::uint64_t>(line[0]).load(std::memory_order_relaxed) == token)
      return std::pair{token, unpack(w, buffer)};
  }
  return std::nullopt;
}

}  // namespace

CollCall coll_call(const CallKey& key, const WindowDesc& signal) {
  CollCall c;
  c.kind = key.kind;
  c.dtype = key.dtype;
  c.op = static_cast<std::uint8_t>(key.op);
  c.mode = static_cast<std::uint8_t>(key.mode);
  c.root = key.root;
  c.core_num = key.core_num;
  c.signal = signal.ref.buffer;
  c.target = key.target;
  c.extra = key.extra;
  if (key.shape) c.shape = *key.shape;
  return c;
}

void publish_call(const DomainState& d, const WindowDesc& signal) {
  const CollDomainState& s = coll_state(d);
  if (!s.match || signal.ref.buffer >= s.calls.size()) return;
  const CurrentCall& c = s.calls[signal.ref.buffer];
  if (c.key == nullptr) return;
  std::uint64_t w[8];
  pack(*c.key, w);
  std::uint64_t* line = record_words(d, s, signal.ref.buffer, d.rank, c.token);
  std::atomic_ref<std::uint64_t>(line[0]).store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (int i = 1; i < 8; ++i) std::atomic_ref<std::uint64_t>(line[i]).store(w[i], std::memory_order_relaxed);
  std::atomic_ref<std::uint64_t>(line[0]).store(c.token, std::memory_order_release);
}

void call_mismatch_failed(const char* api, const DomainState& d, const WindowDesc& signal, int peer) {
  publish_call(d, signal);  // the peer's report needs this rank's call too
  const CollDomainState& s = coll_state(d);
  const std::uint32_t buffer = signal.ref.buffer;
  const CurrentCall& mine = s.calls[buffer];
  const std::uint64_t seq = mine.token >> 32;
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::duration<double>(kPeerRecordWait);
  std::optional<std::pair<std::uint64_t, CollCall>> theirs;
  for (;;) {
    theirs = read_record(d, s, buffer, peer, mine.token);
    if ((theirs && (theirs->first >> 32) >= seq) || Clock::now() > until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const CollCall own = coll_call(*mine.key, signal);
  std::string msg = fmt::format(
      "{}: collective mismatch on comm domain {} (collective #{} on signal '{}'): rank {} called {} but rank {} ", api,
      d.label, seq, d.buffer_name(buffer), d.rank, describe_call(own, d), peer);
  if (theirs && (theirs->first >> 32) == seq) {
    msg += fmt::format("called {}", describe_call(theirs->second, d));
    const auto diff = call_differences(own, theirs->second);
    if (!diff.empty()) msg += fmt::format(" (they differ in {})", fmt::join(diff, ", "));
  } else {
    msg += "is in another collective";
  }
  msg +=
      ". Every rank of a comm domain must make the same collective calls, with the same arguments, in the same "
      "order: look for a rank-dependent branch or argument (PLD_DEBUG=1 lists every rank's call).";
  throw UsageError(msg);
}

MatchProbe::MatchProbe(const DomainState& d, const WindowDesc& signal)
    : d_(d), signal_(signal), mine_(call_token(d, signal)), probe_{&MatchProbe::check, this} {}

bool MatchProbe::check(void* self) {
  auto& p = *static_cast<MatchProbe*>(self);
  publish_call(p.d_, p.signal_);  // a peer stalled on this rank's call compares it
  const CollDomainState& s = coll_state(p.d_);
  for (int r = 0; r < p.d_.nranks(); ++r) {
    if (r == p.d_.rank) continue;
    const std::uint64_t theirs = peer_token(p.d_, s, p.signal_.ref.buffer, r, p.mine_);
    if ((theirs >> 32) == (p.mine_ >> 32) && theirs != p.mine_) {
      p.peer_ = r;
      return true;
    }
  }
  return false;
}

}  // namespace pld::detail
