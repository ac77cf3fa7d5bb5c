// The LL one-shot allreduce (docs/01-collectives.md, "LL").
//
// Staging: pld reserves one window per used comm domain (kCollStagingName, host/session.cc) and
// cuts it into channels, one per buffer id of the domain; a call uses the channel of its signal's
// buffer, so collectives that run concurrently on separate signals never share a channel. The
// signal's cells themselves are not touched. Channel layout, in 8-byte words:
//
//   [parity 2][source P][kLLMaxBytes / 4 words]        word = data (bytes 0-3) | epoch (bytes 4-7)
//   [parity 2][source P] flags of the LL barrier       int32 epoch, one 64-byte line each
//                                                      (at ll_flags_offset(P) = 2 * P * kLLSlotBytes)
//
// Every rank numbers its LL calls per channel: epoch e = 1, 2, ... (the same sequence on every
// member, since all members make the same calls in the same order); the call uses parity e & 1.
//
// 1. push   Rank `me` cuts its payload into 4-byte pieces (the last one zero-padded) and writes
//           word (piece | e << 32) into slot [e & 1][me] of every peer's channel, each with one
//           8-byte store: a reader that sees epoch e in a word sees that word's data with it
//           (aligned 8-byte accesses are single-copy atomic), so no fence orders data and flag.
//           Then it rings the peer's doorbell: notify(Set e) on the epoch half of the last word,
//           i.e. the value already there. That adds nothing but the wake-up: the seq_cst
//           read-modify-write pairs with the sleeper count of Backend::wait (signal.cc), so a
//           reader that went to sleep is woken.
// 2. gather For every source s != me: wait until the last word of slot [e & 1][s] holds epoch e
//           (Backend::wait: spin, yield, sleep; deadline report, abort), then read every word,
//           each checked for epoch e.
// 3. reduce My window = reduce(source 0, 1, ..., P-1) with my own input read from my window:
//           ascending rank order, the same bits as Mesh and TwoShot on every rank.
//
// Nothing is ever cleared. Slot [p][s] is rewritten by s with epoch e + 2 only once s finished
// call e + 1, which needed my payload of call e + 1, which I push only after I read slot [p][s]
// in call e; and e + 2 != e, also across the 2^32 wrap. A fresh (zeroed) channel holds epoch 0,
// which no call before the wrap waits for. In place is safe: my window is read by me alone.
//
// The LL barrier is the same exchange without data: barrier call e (its own epoch sequence per
// channel) sets flag [e & 1][me] of every peer's channel to e (notify Set: one seq_cst exchange,
// which also wakes a sleeping waiter) and waits until its own flags [e & 1][s] hold e. Each flag
// has one writer and its own cache line, and nothing is given back afterwards: where the credit
// barrier does two read-modify-writes on a line that both ranks write (the peer's +1, then my
// -1), this does one on a line only the peer reads (P = 2: 0.17 vs 0.21 us per barrier,
// bench/README.md). Flag [p][s] is rewritten (with e + 2) only after s passed barrier e + 1,
// which needed my flag e + 1, which I raise only after I saw flag [p][s] = e.
#include "coll/ll.h"

#include "coll/peer.h"
#include "core/settings.h"
#include "reduce/reduce.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace pld::detail {

namespace {

constexpr int kWords = static_cast<int>(kLLMaxBytes / 4);

std::uint64_t load_word(std::byte* at) {
  return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(at)).load(std::memory_order_acquire);
}

std::uint64_t ll_max_bytes() {
  static const std::uint64_t max = std::min<std::uint64_t>(setting_bytes(Setting::AllreduceLLMax), kLLMaxBytes);
  return max;
}

// What an LL wait waits for, in its error message: "<op>: waiting for rank <s>'s <thing> <e>
// (staging '<name>' <cell> <at>, channel of signal '<sig>'; <seen> <v>)".
struct EpochWait {
  const char* thing;  // "data of LL call", "arrival at LL barrier"
  const char* cell;   // "cell", "flag"
  const char* seen;   // "the word's epoch is", "the flag holds"
};

// Blocks until the int32 at `offset` of my heap — staging cell `at`, raised by domain rank
// `source` only — holds `epoch`.
void await_epoch(const char* op, const DomainState& d, const WindowDesc& signal, std::uint64_t offset,
                 std::uint32_t epoch, const Dims& at, int source, const EpochWait& how) {
  const WaitSite site{d.id, static_cast<std::uint32_t>(d.ll_staging), &at, d.members[static_cast<std::size_t>(source)],
                      op};
  std::int32_t seen = 0;
  const WaitStatus st = d.backend->wait(offset, static_cast<std::int32_t>(epoch), WaitCmp::Eq, site, &seen);
  if (st == WaitStatus::Ok) return;
  const std::string what =
      fmt::format("{}: waiting for rank {}'s {} {} (staging '{}' {} {}, channel of signal '{}'; {} {})", op, source,
                  how.thing, epoch, kCollStagingName, how.cell, at.str(), d.buffer_name(signal.ref.buffer), how.seen,
                  seen);
  if (st == WaitStatus::Timeout)
    throw WaitTimeoutError(what +
                           " at the deadline; every rank of the domain must call the same collectives in the "
                           "same order");
  throw AbortedError(what + ": released because another rank failed");
}

// Word `word` of LL slot [parity][source] (its epoch half is at `offset` + 4).
void await_word(const char* op, const DomainState& d, const WindowDesc& signal, std::uint64_t offset,
                std::uint32_t epoch, int parity, int source, int word) {
  await_epoch(op, d, signal, offset + 4, epoch, Dims{parity, source, word}, source,
              {"data of LL call", "cell", "the word's epoch is"});
}

// Flag [parity][source] of the LL barrier.
void await_flag(const char* op, const DomainState& d, const WindowDesc& signal, std::uint64_t offset,
                std::uint32_t epoch, int parity, int source) {
  await_epoch(op, d, signal, offset, epoch, Dims{parity, source}, source,
              {"arrival at LL barrier", "flag", "the flag holds"});
}

// Whether the domain has a staging channel for the signal's buffer and direct peers: the common
// condition of the LL allreduce and the LL barrier.
bool has_channel(const DomainState& d, const WindowDesc& signal) {
  return d.ll_staging >= 0 && signal.ref.buffer < d.ll_epochs.size() && direct_peers(d);
}

// Heap offset of the channel of the signal's buffer (the same on every member).
std::uint64_t channel_of(const DomainState& d, const WindowDesc& signal) {
  return d.buffers[static_cast<std::size_t>(d.ll_staging)].offset +
         signal.ref.buffer * ll_channel_bytes(static_cast<std::uint64_t>(d.nranks()));
}

}  // namespace

bool ll_barrier_fits(const DomainState& d, const WindowDesc& signal) {
  return has_channel(d, signal);
}

void ll_barrier(const char* op, const DomainState& d, const WindowDesc& signal) {
  const int n = d.nranks(), me = d.rank;
  const std::uint32_t epoch = ++d.ll_barrier_epochs[signal.ref.buffer];
  const int parity = static_cast<int>(epoch & 1);
  const std::uint64_t flags = channel_of(d, signal) + ll_flags_offset(static_cast<std::uint64_t>(n));
  auto flag = [&](int source) {
    return flags + (static_cast<std::uint64_t>(parity) * static_cast<std::uint64_t>(n) +
                    static_cast<std::uint64_t>(source)) * kLLFlagBytes;
  };
  for (int k = 1; k < n; ++k) {  // staggered: rank r starts with r + 1
    const int p = (me + k) % n;
    d.backend->notify(d.members[static_cast<std::size_t>(p)], flag(me), static_cast<std::int32_t>(epoch), NotifyOp::Set);
  }
  for (int k = 1; k < n; ++k) {
    const int s = (me + n - k) % n;  // the peer that raised my flag first is me - 1
    await_flag(op, d, signal, flag(s), epoch, parity, s);
  }
}

bool ll_fits(const DomainState& d, const WindowDesc& signal, std::uint64_t bytes) {
  return bytes <= ll_max_bytes() && has_channel(d, signal);
}

void ll_allreduce(const char* op, const DomainState& d, const WindowDesc& target, const WindowDesc& signal, Index count,
                  ReduceOp rop) {
  const int n = d.nranks(), me = d.rank;
  const std::size_t bytes = static_cast<std::size_t>(count) * dtype_size(target.dtype);
  const int words = static_cast<int>((bytes + 3) / 4);
  const std::uint32_t epoch = ++d.ll_epochs[signal.ref.buffer];
  const int parity = static_cast<int>(epoch & 1);
  const std::uint64_t channel = channel_of(d, signal);
  auto slot = [&](int source) {
    return channel +
           (static_cast<std::uint64_t>(parity) * static_cast<std::uint64_t>(n) + static_cast<std::uint64_t>(source)) *
               kLLSlotBytes;
  };
  std::byte* mine = d.windows_in[static_cast<std::size_t>(me)] + target.ref.offset;

  // 1. push
  std::uint64_t packed[kWords];
  for (int i = 0; i < words; ++i) {
    std::uint32_t piece = 0;
    std::memcpy(&piece, mine + 4 * i, std::min<std::size_t>(4, bytes - 4 * static_cast<std::size_t>(i)));
    packed[i] = static_cast<std::uint64_t>(epoch) << 32 | piece;
  }
  const std::uint64_t my_slot = slot(me), doorbell = my_slot + 8 * static_cast<std::uint64_t>(words - 1) + 4;
  for (int k = 1; k < n; ++k) {  // staggered: rank r starts with r + 1
    const int p = (me + k) % n;
    auto* dst = reinterpret_cast<std::uint64_t*>(d.windows_in[static_cast<std::size_t>(p)] + my_slot);
    for (int i = 0; i < words; ++i) std::atomic_ref<std::uint64_t>(dst[i]).store(packed[i], std::memory_order_relaxed);
    d.backend->notify(d.members[static_cast<std::size_t>(p)], doorbell, static_cast<std::int32_t>(epoch),
                      NotifyOp::Set);
  }

  // 2. gather, in staggered order (the peer that pushed to me first is me - 1)
  thread_local std::byte pieces[kMaxRanks][kLLMaxBytes];
  const void* srcs[kMaxRanks];
  srcs[me] = mine;
  std::byte* heap = d.windows_in[static_cast<std::size_t>(me)];
  for (int k = 1; k < n; ++k) {
    const int s = (me + n - k) % n;
    const std::uint64_t at = slot(s);
    const std::uint64_t last = at + 8 * static_cast<std::uint64_t>(words - 1);
    if (load_word(heap + last) >> 32 != epoch) await_word(op, d, signal, last, epoch, parity, s, words - 1);
    for (int i = 0; i < words; ++i) {
      const std::uint64_t w_at = at + 8 * static_cast<std::uint64_t>(i);
      std::uint64_t w = load_word(heap + w_at);
      if (w >> 32 != epoch) {  // never on x86 (stores arrive in order), allowed by the protocol
        await_word(op, d, signal, w_at, epoch, parity, s, i);
        w = load_word(heap + w_at);
      }
      const auto piece = static_cast<std::uint32_t>(w);
      std::memcpy(pieces[s] + 4 * i, &piece, 4);
    }
    srcs[s] = pieces[s];
  }

  // 3. reduce, ascending rank order
  reduce(mine, srcs, n, static_cast<std::size_t>(count), target.dtype, rop);
}

}  // namespace pld::detail
