// The eager broadcast (docs/01-collectives-reference.md, "broadcast"): up to kEagerMaxBytes, the root
// writes its target into every peer's ring and returns; a peer waits for the message in its own
// ring and copies it out. Every member numbers its eager broadcasts per staging channel (message m
// = 1, 2, ...) and lays them out alike in ring lines (coll/tuning.h): message m takes ll_lines(size)
// lines from the current position, or from the ring's start where it would not fit before the end.
// A line is the LL line: 56 data bytes, then the token m << 32 | the call's signature, stored last
// with release, then the doorbell on its upper half (coll/ll.cc describes the same for LL slots).
//
// Flow control: every rank publishes how far it has read its ring (its position, the end of the
// last message it read or sent) into its acknowledgement word in every peer's channel, once it is
// kEagerAckLines past its last publication and at the end of every kernel. A root writes message
// m's lines [start, end) only once every peer's published position is at least end - the ring's
// lines and at least the end of message m - (kEagerHistory - 2), so it runs up to a ring (and
// fewer messages than its history holds) ahead of its slowest peer. It never waits for the lag
// below kEagerAckLines: the ring holds a message beyond it (static_assert in coll/tuning.h).
//
// The end of the kernel (rank/dispatch.h's hook): every rank that broadcast publishes its exact
// position, and a root waits until every peer has read up to the end of its last message; so a
// dispatch ends with every broadcast delivered, and the next one starts on a quiet ring.
//
// The match check: a peer in the same broadcast compares the token of every line; every rank
// keeps its broadcasts as call records in a history line per message (coll/match.h), so a probe
// finds a root that ran ahead into a call this rank did not make. Two ranks that both take
// themselves for the root read nothing of each other: every acknowledgement carries, beside the
// position, a chain hash of the tokens of every message up to it, and a root compares it with its
// own chain at that position when it looks at the positions (a full ring, the end of the kernel);
// only where they differ does it read the peer's history to name the message.
#include "coll/eager_broadcast.h"

#include "coll/ll_call.h"
#include "coll/match.h"
#include "coll/peer.h"
#include "coll/tuning.h"
#include "rank/dispatch.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace pld::detail {

namespace {

constexpr int kLineWords = static_cast<int>(kLLLineBytes / 8);

// Whether position a is before b (positions wrap at 2^32).
bool before(std::uint32_t a, std::uint32_t b) {
  return static_cast<std::int32_t>(a - b) < 0;
}

// Heap offsets (the same in every member's heap) of a channel's ring line and acknowledgement word.
std::uint64_t ring_line(const DomainState& d, std::uint32_t buffer, std::uint32_t position) {
  return channel_of(d, coll_state(d), buffer) + eager_ring_offset(static_cast<std::uint64_t>(d.nranks())) +
         (position % kEagerRingLines) * kLLLineBytes;
}
std::uint64_t ack_word(const DomainState& d, std::uint32_t buffer, int source) {
  return channel_of(d, coll_state(d), buffer) + eager_acks_offset(static_cast<std::uint64_t>(d.nranks())) +
         static_cast<std::uint64_t>(source) * kEagerAckBytes;
}

// Domain rank `source`'s acknowledgement in this rank's channel: chain << 32 | position.
std::uint64_t load_ack(const DomainState& d, std::uint32_t buffer, int source) {
  const auto* word = reinterpret_cast<const std::uint64_t*>(d.windows_in[static_cast<std::size_t>(d.rank)] +
                                                            ack_word(d, buffer, source));
  return std::atomic_ref<const std::uint64_t>(*word).load(std::memory_order_acquire);
}
std::uint32_t position_of(std::uint64_t ack) {
  return static_cast<std::uint32_t>(ack);
}
std::uint64_t ack_of(std::uint32_t chain, std::uint32_t position) {
  return std::uint64_t{chain} << 32 | position;
}

// The chain after a message with `token`.
std::uint32_t chained(std::uint32_t chain, std::uint64_t token) {
  const std::uint64_t h = (token ^ std::uint64_t{chain} * 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;
  return static_cast<std::uint32_t>(h >> 32);
}

// The acknowledgement after this rank's message m (0 before the first).
std::uint64_t ack_after(const EagerChannel& ch, std::uint32_t m) {
  return m == 0 ? 0 : ch.acks[m % kEagerHistory];
}

// Whether a peer's acknowledgement agrees with this rank's messages 1 .. `done`: it acknowledges a
// position one of them ended at with this rank's chain there. A position ahead of this rank's, or
// older than the messages it keeps, has nothing to compare with.
bool acked_alike(const EagerChannel& ch, std::uint32_t done, std::uint64_t ack) {
  const std::uint32_t at = position_of(ack);
  if (before(ch.position, at)) return true;
  for (std::uint32_t k = 0; k < kEagerHistory; ++k) {
    const std::uint32_t m = done - k;
    const std::uint64_t mine = ack_after(ch, m);
    if (position_of(mine) == at) return mine == ack;
    if (m == 0 || before(position_of(mine), at)) return false;
  }
  return true;
}

// The channels this rank broadcast on since the end of the last kernel (several threads of a
// kernel may broadcast on different signals).
struct Active {
  const DomainState* d;
  std::uint32_t buffer;
};
std::mutex g_active_mutex;
std::vector<Active> g_active;

void kernel_end();
void kernel_failed();

void mark_active(const DomainState& d, std::uint32_t buffer, EagerChannel& ch) {
  ch.active = true;
  const std::lock_guard<std::mutex> lock(g_active_mutex);
  g_active.push_back({&d, buffer});
  g_kernel_end = {&kernel_end, &kernel_failed};
}

// Publishes this rank's acknowledgement (its position, after its last message) into every peer's channel.
void publish_position(const DomainState& d, std::uint32_t buffer, EagerChannel& ch) {
  const std::uint64_t at = ack_word(d, buffer, d.rank);
  const std::uint64_t value = ack_after(ch, ch.messages);
  for (int k = 1; k < d.nranks(); ++k) {
    const int p = ring_at(d.rank, k, d.nranks());
    auto* word = reinterpret_cast<std::uint64_t*>(d.windows_in[static_cast<std::size_t>(p)] + at);
    std::atomic_ref<std::uint64_t>(*word).store(value, std::memory_order_release);
    d.backend->ring(d.members[static_cast<std::size_t>(p)], at, static_cast<std::int32_t>(ch.position));
  }
  ch.published = ch.position;
}

// The first of the broadcasts this rank's history holds that domain rank q's history holds with
// another token (0: none). A message q has not reached yet ends the comparison, one that q's
// history no longer holds is skipped.
std::uint32_t first_difference(const DomainState& d, std::uint32_t buffer, const EagerChannel& ch, int q) {
  const std::uint32_t first = ch.messages > kEagerHistory ? ch.messages - kEagerHistory + 1 : 1;
  for (std::uint32_t m = first; !before(ch.messages, m); ++m) {
    const auto mine = read_history(d, buffer, d.rank, m);
    const auto theirs = read_history(d, buffer, q, m);
    if (!theirs || before(theirs->message, m)) return 0;  // q is not there yet
    if (mine && mine->message == m && theirs->message == m && theirs->token != mine->token) return m;
  }
  return 0;
}

// Throws the mismatch of message m: this rank's broadcast and q's call of that number.
[[noreturn]] void message_differs(const char* api, const DomainState& d, std::uint32_t buffer, int q, std::uint32_t m) {
  const auto mine = read_history(d, buffer, d.rank, m);
  const auto theirs = read_history(d, buffer, q, m);
  const std::uint64_t number = mine->token >> 32;
  const auto same_number = peer_call(d, buffer, q, number);
  calls_differ(api, d, buffer, number, mine->call, q,
               same_number ? &same_number->second : (theirs ? &theirs->call : nullptr));
}

// Whether domain rank q's record (either parity) is a call of a number this rank's history holds
// as a broadcast with another token: q is in a call this rank passed as an eager root. Sets
// *number to it.
bool record_differs(const DomainState& d, std::uint32_t buffer, int q, std::uint64_t* number) {
  for (std::uint64_t parity = 0; parity < 2; ++parity) {
    const std::uint64_t theirs = peer_token(d, coll_state(d), buffer, q, parity << 32);
    if (theirs == 0) continue;
    if (const auto mine = history_call(d, buffer, d.rank, theirs >> 32); mine && mine->first != theirs) {
      *number = theirs >> 32;
      return true;
    }
  }
  return false;
}

// The probe of a root's wait for peer q's position: the call's own match probe (in a call), then
// this rank's broadcasts against q's history and q's record against this rank's history.
class AckProbe {
 public:
  AckProbe(const DomainState& d, const WindowDesc* signal, std::uint32_t buffer, const EagerChannel& ch, int q)
      : d_(d), buffer_(buffer), ch_(ch), q_(q), probe_{&AckProbe::check, this} {
    if (signal) match_.emplace(d, *signal, true);
  }
  const WaitProbe* get() const { return &probe_; }
  // After the wait returned Mismatch: throws what the probe found.
  [[noreturn]] void fail(const char* api, const WindowDesc* signal) const {
    if (message_ != 0) message_differs(api, d_, buffer_, q_, message_);
    if (number_ != 0) {
      const auto mine = history_call(d_, buffer_, d_.rank, number_);
      const auto theirs = peer_call(d_, buffer_, q_, number_);
      calls_differ(api, d_, buffer_, number_, mine->second, q_, theirs ? &theirs->second : nullptr);
    }
    call_mismatch_failed(api, d_, *signal, match_->peer());
  }

 private:
  static bool check(void* self) {
    auto& p = *static_cast<AckProbe*>(self);
    if (p.match_ && (*p.match_->get())()) return true;
    p.message_ = first_difference(p.d_, p.buffer_, p.ch_, p.q_);
    return p.message_ != 0 || record_differs(p.d_, p.buffer_, p.q_, &p.number_);
  }
  const DomainState& d_;
  std::uint32_t buffer_;
  const EagerChannel& ch_;
  int q_;
  std::optional<MatchProbe> match_;
  std::uint32_t message_ = 0;
  std::uint64_t number_ = 0;
  WaitProbe probe_;
};

// Waits until domain rank q has published a position of at least `need`; returns its
// acknowledgement. `signal`: the broadcast waiting (nullptr at the end of the kernel).
[[gnu::noinline]] std::uint64_t await_ack(const char* api, const DomainState& d, const WindowDesc* signal,
                                          std::uint32_t buffer, const EagerChannel& ch, int q, std::uint32_t need) {
  const AckProbe probe(d, signal, buffer, ch, q);
  const Dims at{q};
  WaitSite site{d.id, static_cast<std::uint32_t>(coll_state(d).ll_staging), &at, d.members[static_cast<std::size_t>(q)],
                api};
  site.probe = probe.get();
  for (;;) {
    const std::uint64_t ack = load_ack(d, buffer, q);
    const std::uint32_t v = position_of(ack);
    if (!before(v, need)) return ack;
    std::int32_t seen = 0;
    const WaitStatus st =
        d.backend->wait(ack_word(d, buffer, q), static_cast<std::int32_t>(v), WaitCmp::Ne, site, &seen);
    if (st == WaitStatus::Ok) continue;
    if (st == WaitStatus::Mismatch) probe.fail(api, signal);
    const std::string what = fmt::format(
        "{}{}: waiting for rank {} to read this rank's eager broadcasts (staging '{}' acknowledgement {}, channel of "
        "signal '{}'; it has read up to ring line {}, line {} is needed)",
        api, signal ? "" : " at the end of the kernel", q, kCollStagingName, at.str(), d.buffer_name(buffer), v, need);
    staging_wait_failed(st, what);
  }
}

// Makes every peer's published position at least `need`, and compares their acknowledgements with
// this rank's messages 1 .. `done` (their histories, where one differs).
void await_ring(const char* api, const DomainState& d, const WindowDesc* signal, std::uint32_t buffer, EagerChannel& ch,
                std::uint32_t need, std::uint32_t done) {
  std::uint32_t lowest = need;
  bool first = true;
  for (int k = 1; k < d.nranks(); ++k) {
    const int q = ring_at(d.rank, k, d.nranks());
    std::uint64_t ack = load_ack(d, buffer, q);
    if (before(position_of(ack), need)) ack = await_ack(api, d, signal, buffer, ch, q, need);
    if (first || before(position_of(ack), lowest)) lowest = position_of(ack);
    first = false;
    if (!acked_alike(ch, done, ack))
      if (const std::uint32_t m = first_difference(d, buffer, ch, q)) message_differs(api, d, buffer, q, m);
  }
  ch.acked = lowest;
}

// The end of a kernel that broadcast: publish, wait as a root, compare (see the file comment).
void kernel_end() {
  std::vector<Active> active;
  {
    const std::lock_guard<std::mutex> lock(g_active_mutex);
    active.swap(g_active);
  }
  for (const Active& a : active) {
    EagerChannel& ch = coll_state(*a.d).eager[a.buffer];
    if (!ch.active) continue;  // listed twice
    ch.active = false;
    if (ch.published != ch.position) publish_position(*a.d, a.buffer, ch);
  }
  for (const Active& a : active) {
    EagerChannel& ch = coll_state(*a.d).eager[a.buffer];
    await_ring("broadcast", *a.d, nullptr, a.buffer, ch, ch.sent, ch.messages);
  }
}

void kernel_failed() {
  const std::lock_guard<std::mutex> lock(g_active_mutex);
  for (const Active& a : g_active) coll_state(*a.d).eager[a.buffer].active = false;
  g_active.clear();
}

// Waits for line `position` of this rank's ring to hold message `token` from `root`, then compares
// the token.
[[gnu::noinline]] void await_message(const char* api, const DomainState& d, const WindowDesc& signal,
                                     std::uint32_t position, std::uint64_t token, int root) {
  const std::uint64_t line = ring_line(d, signal.ref.buffer, position);
  const MatchProbe probe(d, signal, true);
  const Dims at{static_cast<Index>(position % kEagerRingLines)};
  WaitSite site{d.id, static_cast<std::uint32_t>(coll_state(d).ll_staging), &at,
                d.members[static_cast<std::size_t>(root)], api};
  site.probe = probe.get();
  std::int32_t seen = 0;
  const auto message = static_cast<std::uint32_t>(token >> 32);
  const WaitStatus st =
      d.backend->wait(line + kLLLineBytes - 4, static_cast<std::int32_t>(message), WaitCmp::Eq, site, &seen);
  if (st == WaitStatus::Ok) {
    const auto* tail =
        reinterpret_cast<const std::uint64_t*>(d.windows_in[static_cast<std::size_t>(d.rank)] + line + kLLLineData);
    if (std::atomic_ref<const std::uint64_t>(*tail).load(std::memory_order_acquire) != token)
      call_mismatch_failed(api, d, signal, root);
    return;
  }
  if (st == WaitStatus::Mismatch) call_mismatch_failed(api, d, signal, probe.peer());
  const std::string what = fmt::format(
      "{}: waiting for rank {}'s data of eager broadcast {} (staging '{}' ring line {}, channel of signal '{}'; the "
      "line holds message {})",
      api, root, message, kCollStagingName, at.str(), d.buffer_name(signal.ref.buffer), seen);
  staging_wait_failed(st, what);
}

}  // namespace

void eager_broadcast(const char* api, const DomainState& d, const WindowDesc& target, std::size_t bytes,
                     const WindowDesc& signal, int root) {
  const std::uint32_t buffer = signal.ref.buffer;
  EagerChannel& ch = coll_state(d).eager[buffer];
  const std::uint32_t m = ++ch.messages;
  const std::uint64_t token = std::uint64_t{m} << 32 | static_cast<std::uint32_t>(call_token(d, signal));
  const auto lines = static_cast<std::uint32_t>(ll_lines(bytes));
  const std::uint32_t off = ch.position % kEagerRingLines;
  const std::uint32_t start = off + lines > kEagerRingLines ? ch.position + (kEagerRingLines - off) : ch.position;
  const std::uint32_t end = start + lines;
  publish_history(d, signal, m);
  if (!ch.active) mark_active(d, buffer, ch);
  std::byte* mine = own_at(d, target, 0);
  if (d.rank == root) {
    // Every peer has read up to a ring before this message's end, and up to message m - (history - 2).
    std::uint32_t need = end - kEagerRingLines;
    if (m > kEagerHistory - 2)
      if (const std::uint32_t p = position_of(ch.acks[(m - (kEagerHistory - 2)) % kEagerHistory]); before(need, p))
        need = p;
    if (before(ch.acked, need)) await_ring(api, d, &signal, buffer, ch, need, m - 1);
    std::uint64_t packed[ll_lines(kEagerMaxBytes) * kLLLineBytes / 8];
    for (std::uint32_t l = 0; l < lines; ++l) {
      std::uint64_t* line = packed + kLineWords * l;
      const std::size_t at = kLLLineData * l, n = std::min<std::size_t>(kLLLineData, bytes - at);
      if (n < kLLLineData) std::memset(line, 0, kLLLineData);
      std::memcpy(line, mine + at, n);
      line[kLineWords - 1] = token;
    }
    const std::uint64_t first = ring_line(d, buffer, start);
    for (int k = 1; k < d.nranks(); ++k) {
      const int p = ring_at(d.rank, k, d.nranks());
      auto* dst = reinterpret_cast<std::uint64_t*>(d.windows_in[static_cast<std::size_t>(p)] + first);
      for (std::uint32_t l = 0; l < lines; ++l) {
        const int w = kLineWords * static_cast<int>(l);
        std::memcpy(dst + w, packed + w, kLLLineData);
        std::atomic_ref<std::uint64_t>(dst[w + kLineWords - 1]).store(token, std::memory_order_release);
      }
      d.backend->ring(d.members[static_cast<std::size_t>(p)], first + (lines - 1) * kLLLineBytes + kLLLineBytes - 4,
                      static_cast<std::int32_t>(m));
    }
    ch.sent = end;
  } else {
    const auto* words = reinterpret_cast<const std::uint64_t*>(d.windows_in[static_cast<std::size_t>(d.rank)] +
                                                               ring_line(d, buffer, start));
    // The last line first (it comes last), then every line, each checked for the token.
    for (std::uint32_t l = lines; l-- > 0;) {
      const std::uint64_t* tail = words + kLineWords * l + kLineWords - 1;
      if (std::atomic_ref<const std::uint64_t>(*tail).load(std::memory_order_acquire) != token) [[unlikely]]
        await_message(api, d, signal, start + l, token, root);
      if (l + 1 == lines) continue;
      std::memcpy(mine + kLLLineData * l, words + kLineWords * l, kLLLineData);
    }
    const std::size_t from = kLLLineData * (lines - 1);
    std::memcpy(mine + from, words + kLineWords * (lines - 1), bytes - from);
  }
  ch.position = end;
  ch.acks[m % kEagerHistory] = ack_of(chained(static_cast<std::uint32_t>(ack_after(ch, m - 1) >> 32), token), end);
  if (ch.position - ch.published >= kEagerAckLines) publish_position(d, buffer, ch);
}

}  // namespace pld::detail
