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

// A consistent copy of a record line (sequence lock: word 0 is the token, stored last), or false
// when it keeps changing or was never written.
bool read_line(const std::uint64_t* line, std::uint64_t w[8]) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    const std::uint64_t token = std::atomic_ref<const std::uint64_t>(line[0]).load(std::memory_order_acquire);
    if (token == 0) return false;
    w[0] = token;
    for (int i = 1; i < 8; ++i) w[i] = std::atomic_ref<const std::uint64_t>(line[i]).load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (std::atomic_ref<const std::uint64_t>(line[0]).load(std::memory_order_relaxed) == token) return true;
  }
  return false;
}

// Writes the record line: word 0 cleared, words 1-7, then the token with release.
void write_line(std::uint64_t* line, const std::uint64_t w[8]) {
  std::atomic_ref<std::uint64_t>(line[0]).store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (int i = 1; i < 8; ++i) std::atomic_ref<std::uint64_t>(line[i]).store(w[i], std::memory_order_relaxed);
  std::atomic_ref<std::uint64_t>(line[0]).store(w[0], std::memory_order_release);
}

// A consistent copy of a rank's record in the line of `token`'s parity, or nothing.
std::optional<std::pair<std::uint64_t, CollCall>> read_record(const DomainState& d, const CollDomainState& s,
                                                              std::uint32_t buffer, int rank, std::uint64_t token) {
  std::uint64_t w[8];
  if (!read_line(record_words(d, s, buffer, rank, token), w)) return std::nullopt;
  return std::pair{w[0], unpack(w, buffer)};
}

std::uint64_t* history_words(const DomainState& d, std::uint32_t buffer, int rank, std::uint32_t message) {
  const CollDomainState& s = coll_state(d);
  return reinterpret_cast<std::uint64_t*>(d.windows_in[static_cast<std::size_t>(rank)] + channel_of(d, s, buffer) +
                                          eager_history_offset(static_cast<std::uint64_t>(d.nranks())) +
                                          (message % kEagerHistory) * kLLLineBytes);
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
  w[0] = c.token;
  write_line(record_words(d, s, signal.ref.buffer, d.rank, c.token), w);
}

void publish_history(const DomainState& d, const WindowDesc& signal, std::uint32_t message) {
  const CurrentCall& c = coll_state(d).calls[signal.ref.buffer];
  std::uint64_t w[8];
  pack(*c.key, w);
  w[0] = c.token;
  w[3] |= std::uint64_t{message} << 32;  // the key's extra is 32 bits: the message number rides above it
  write_line(history_words(d, signal.ref.buffer, d.rank, message), w);
}

std::optional<HistoryEntry> read_history(const DomainState& d, std::uint32_t buffer, int rank, std::uint32_t message) {
  std::uint64_t w[8];
  if (!read_line(history_words(d, buffer, rank, message), w)) return std::nullopt;
  HistoryEntry e{w[0], static_cast<std::uint32_t>(w[3] >> 32), {}};
  w[3] &= 0xffffffffu;
  e.call = unpack(w, buffer);
  return e;
}

std::optional<std::pair<std::uint64_t, CollCall>> history_call(const DomainState& d, std::uint32_t buffer, int rank,
                                                               std::uint64_t number) {
  for (std::uint32_t m = 0; m < kEagerHistory; ++m)
    if (const auto e = read_history(d, buffer, rank, m); e && (e->token >> 32) == number)
      return std::pair{e->token, e->call};
  return std::nullopt;
}

std::optional<std::pair<std::uint64_t, CollCall>> peer_call(const DomainState& d, std::uint32_t buffer, int rank,
                                                            std::uint64_t number) {
  if (auto r = read_record(d, coll_state(d), buffer, rank, number << 32); r && (r->first >> 32) == number) return r;
  return history_call(d, buffer, rank, number);
}

void calls_differ(const char* api, const DomainState& d, std::uint32_t buffer, std::uint64_t number,
                  const CollCall& mine, int peer, const CollCall* theirs) {
  std::string msg = fmt::format(
      "{}: collective mismatch on comm domain {} (collective #{} on signal '{}'): rank {} called {} but rank {} ", api,
      d.label, number, d.buffer_name(buffer), d.rank, describe_call(mine, d), peer);
  if (theirs) {
    msg += fmt::format("called {}", describe_call(*theirs, d));
    const auto diff = call_differences(mine, *theirs);
    if (!diff.empty()) msg += fmt::format(" (they differ in {})", fmt::join(diff, ", "));
  } else {
    msg += "is in another collective";
  }
  msg +=
      ". Every rank of a comm domain must make the same collective calls, with the same arguments, in the same "
      "order: look for a rank-dependent branch or argument (PLD_DEBUG=1 lists every rank's call).";
  throw UsageError(msg);
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
    // The peer still in an earlier call that this rank made as an eager broadcast.
    if (const auto behind = read_record(d, s, buffer, peer, mine.token + (std::uint64_t{1} << 32))) {
      const std::uint64_t number = behind->first >> 32;
      if (const auto made = history_call(d, buffer, d.rank, number);
          number < seq && made && made->first != behind->first)
        calls_differ(api, d, buffer, number, made->second, peer, &behind->second);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // A peer past this number without a record of it ran ahead through an eager broadcast.
  if (!theirs || (theirs->first >> 32) != seq) theirs = peer_call(d, buffer, peer, seq);
  const CollCall own = coll_call(*mine.key, signal);
  calls_differ(api, d, buffer, seq, own, peer, theirs && (theirs->first >> 32) == seq ? &theirs->second : nullptr);
}

MatchProbe::MatchProbe(const DomainState& d, const WindowDesc& signal, bool eager)
    : d_(d), signal_(signal), mine_(call_token(d, signal)), eager_(eager), probe_{&MatchProbe::check, this} {}

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
    // The peer's eager broadcast that this rank is in (eager_), or would make next: another call
    // of this number, or one this rank did not make before it.
    const std::uint32_t next = s.eager[p.signal_.ref.buffer].messages + (p.eager_ ? 0 : 1);
    if (const auto e = read_history(p.d_, p.signal_.ref.buffer, r, next); e && e->message == next) {
      const bool differs = p.eager_ ? e->token != p.mine_ : (e->token >> 32) <= (p.mine_ >> 32);
      if (differs) {
        p.peer_ = r;
        return true;
      }
    }
  }
  return false;
}

}  // namespace pld::detail
