// The LL one-hop exchange (docs/01-collectives.md, "LL") and the collectives built on it:
// allreduce, allgather, reduce_scatter, all_to_all, all_to_all_v and broadcast of small messages;
// and the LL barrier.
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
// Every rank numbers its LL data calls per channel, whatever their collective: epoch e = 1, 2, ...
// (the same sequence on every member, since all members make the same calls in the same order);
// the call uses parity e & 1.
//
// 1. push   For every peer p, rank `me` cuts the payload for p (the same bytes for every peer in
//           allreduce, allgather and broadcast, row p of its operand in reduce_scatter and
//           all_to_all, count and block p in all_to_all_v) into
//           4-byte pieces (the last one zero-padded) and writes word (piece | e << 32) into slot
//           [e & 1][me] of p's channel, each with one 8-byte store: a reader that sees epoch e in
//           a word sees that word's data with it (aligned 8-byte accesses are single-copy
//           atomic), so no fence orders data and flag. Then it rings p's doorbell: notify(Set e)
//           on the epoch half of the last word, i.e. the value already there. That adds nothing
//           but the wake-up: the seq_cst read-modify-write pairs with the sleeper count of
//           Backend::wait (signal.cc), so a reader that went to sleep is woken.
// 2. gather For every source s != me: wait until the last word of slot [e & 1][s] holds epoch e
//           (Backend::wait: spin, yield, sleep; deadline report, abort), then read every word,
//           each checked for epoch e.
// 3. finish Each rank writes only its own window: allreduce reduces sources 0, 1, ..., P-1 in
//           ascending rank order (the same bits as Mesh and TwoShot on every rank), reduce_scatter
//           does the same for its row, allgather and all_to_all store each source's row, and a
//           broadcast's non-root ranks store the root's data (the other ranks' pushes carry their
//           own target's bytes, unused: they only keep the exchange all-to-all, see below).
//
// Nothing is ever cleared. Slot [p][s] is rewritten by s with epoch e + 2 only once s finished
// call e + 1, which needed my payload of call e + 1, which I push only after I read slot [p][s]
// in call e — whichever collectives calls e, e + 1 and e + 2 are, since each sends to every peer.
// And e + 2 != e, also across the 2^32 wrap. A fresh (zeroed) channel holds epoch 0, which no call
// before the wrap waits for. In place is safe: my window is read and written by me alone.
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
#include "coll/tuning.h"
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

// What an LL wait waits for, in its error message: "<api>: waiting for rank <s>'s <thing> <e>
// (staging '<name>' <cell> <at>, channel of signal '<sig>'; <seen> <v>)".
struct EpochWait {
  const char* thing;  // "data of LL call", "arrival at LL barrier"
  const char* cell;   // "cell", "flag"
  const char* seen;   // "the word's epoch is", "the flag holds"
};

// Blocks until the int32 at `offset` of my heap — staging cell `at`, raised by domain rank
// `source` only — holds `epoch`.
void await_epoch(const char* api, const DomainState& d, const WindowDesc& signal, std::uint64_t offset,
                 std::uint32_t epoch, const Dims& at, int source, const EpochWait& how) {
  const WaitSite site{d.id, static_cast<std::uint32_t>(coll_state(d).ll_staging), &at,
                      d.members[static_cast<std::size_t>(source)], api};
  std::int32_t seen = 0;
  const WaitStatus st = d.backend->wait(offset, static_cast<std::int32_t>(epoch), WaitCmp::Eq, site, &seen);
  if (st == WaitStatus::Ok) return;
  const std::string what = fmt::format(
      "{}: waiting for rank {}'s {} {} (staging '{}' {} {}, channel of signal '{}'; {} {})", api, source, how.thing,
      epoch, kCollStagingName, how.cell, at.str(), d.buffer_name(signal.ref.buffer), how.seen, seen);
  if (st == WaitStatus::Timeout)
    throw WaitTimeoutError(what +
                           " at the deadline; every rank of the domain must call the same collectives in the "
                           "same order");
  throw AbortedError(what + ": released because another rank failed");
}

// Word `word` of LL slot [parity][source] (its epoch half is at `offset` + 4).
void await_word(const char* api, const DomainState& d, const WindowDesc& signal, std::uint64_t offset,
                std::uint32_t epoch, int parity, int source, int word) {
  await_epoch(api, d, signal, offset + 4, epoch, Dims{parity, source, word}, source,
              {"data of LL call", "cell", "the word's epoch is"});
}

// Flag [parity][source] of the LL barrier.
void await_flag(const char* api, const DomainState& d, const WindowDesc& signal, std::uint64_t offset,
                std::uint32_t epoch, int parity, int source) {
  await_epoch(api, d, signal, offset, epoch, Dims{parity, source}, source,
              {"arrival at LL barrier", "flag", "the flag holds"});
}

// Whether the domain has a staging channel for the signal's buffer and direct peers: the common
// condition of the LL allreduce and the LL barrier.
bool has_channel(const DomainState& d, const WindowDesc& signal) {
  const CollDomainState& s = coll_state(d);
  return s.ll_staging >= 0 && signal.ref.buffer < s.ll_epochs.size() && s.direct;
}

// Heap offset of the channel of the signal's buffer (the same on every member).
std::uint64_t channel_of(const DomainState& d, const CollDomainState& s, const WindowDesc& signal) {
  return d.buffers[static_cast<std::size_t>(s.ll_staging)].offset +
         signal.ref.buffer * ll_channel_bytes(static_cast<std::uint64_t>(d.nranks()));
}

// The flags of one LL barrier epoch (the LL barrier and the push broadcast share the sequence):
// raise(p) sets my flag in peer p's channel, await(s) returns once source s's flag in mine holds
// the epoch.
class LLFlags {
 public:
  LLFlags(const char* api, const DomainState& d, const WindowDesc& signal) : api_(api), d_(d), signal_(signal) {
    const CollDomainState& state = coll_state(d);
    const auto n = static_cast<std::uint64_t>(d.nranks());
    epoch_ = ++coll_state(d).ll_barrier_epochs[signal.ref.buffer];
    parity_ = static_cast<int>(epoch_ & 1);
    base_ = channel_of(d, state, signal) + ll_flags_offset(n) + static_cast<std::uint64_t>(parity_) * n * kLLFlagBytes;
  }
  void raise(int peer) const {
    d_.backend->notify(d_.members[static_cast<std::size_t>(peer)], at(d_.rank), static_cast<std::int32_t>(epoch_),
                       NotifyOp::Set);
  }
  // A flag already raised is taken with one acquire load (the LL flags are direct-only, so the own
  // heap is memory); the backend's wait runs only for a peer still on its way.
  void await(int source) const {
    std::byte* heap = d_.windows_in[static_cast<std::size_t>(d_.rank)];
    const auto* cell = reinterpret_cast<std::int32_t*>(heap + at(source));
    if (std::atomic_ref<const std::int32_t>(*cell).load(std::memory_order_acquire) != static_cast<std::int32_t>(epoch_))
      await_flag(api_, d_, signal_, at(source), epoch_, parity_, source);
  }

 private:
  std::uint64_t at(int source) const { return base_ + static_cast<std::uint64_t>(source) * kLLFlagBytes; }
  const char* api_;
  const DomainState& d_;
  const WindowDesc& signal_;
  std::uint32_t epoch_;
  int parity_;
  std::uint64_t base_;
};

}  // namespace

bool ll_barrier_fits(const DomainState& d, const WindowDesc& signal) {
  return has_channel(d, signal);
}

void ll_barrier(const char* api, const DomainState& d, const WindowDesc& signal) {
  const int n = d.nranks(), me = d.rank;
  const LLFlags flags(api, d, signal);
  for (int k = 1; k < n; ++k) flags.raise((me + k) % n);      // staggered: rank r starts with r + 1
  for (int k = 1; k < n; ++k) flags.await((me + n - k) % n);  // the peer that raised my flag first is me - 1
}

bool ll_push_broadcast_fits(const DomainState& d, const WindowDesc& signal, std::uint64_t bytes) {
  return d.nranks() > 1 && bytes * static_cast<std::uint64_t>(d.nranks() - 1) <= broadcast_push_max_bytes() &&
         has_channel(d, signal);
}

void ll_push_broadcast(const char* api, const DomainState& d, const WindowDesc& target, const WindowDesc& signal,
                       int root) {
  // Both barriers run on every rank whatever it takes the root to be: ranks that disagree on the
  // root get wrong data (as on the other paths), never a hang, and the flags keep the LL barrier's
  // ordering (no rank is two epochs ahead of a flag's reader).
  ll_barrier(api, d, signal);  // every rank is in the call: every target is free
  if (d.rank == root) {
    const int n = d.nranks();
    const std::size_t bytes = static_cast<std::size_t>(target.shape.numel()) * dtype_size(target.dtype);
    const std::byte* mine = own_at(d, target, 0);
    for (int k = 1; k < n; ++k) std::memcpy(window_at(api, d, (d.rank + k) % n, target, 0), mine, bytes);
  }
  ll_barrier(api, d, signal);  // the root's flags release its copies
}

bool ll_fits(const DomainState& d, const WindowDesc& signal, std::uint64_t bytes) {
  return bytes <= coll_tuning().allreduce_ll_max && has_channel(d, signal);
}

bool ll_rows_fit(const DomainState& d, const WindowDesc& signal, std::uint64_t row_bytes) {
  return d.nranks() > 1 && row_bytes > 0 && row_bytes <= coll_tuning().coll_ll_max && has_channel(d, signal);
}

bool ll_all_to_all_v_fits(const DomainState& d, const WindowDesc& signal, std::uint64_t block_bytes) {
  return d.nranks() > 1 && block_bytes <= coll_tuning().coll_ll_max && 4 + block_bytes <= kLLMaxBytes &&
         has_channel(d, signal);
}

namespace {

// One LL data call (steps 1 and 2 above): pack(data) cuts `bytes` into epoch-tagged words,
// send(p) writes them into peer p's slot and rings its doorbell, receive(s) returns source s's
// bytes (in a per-thread buffer that lives until the next call). send_all, send_each and
// receive_all visit the peers staggered: rank r sends to r + 1 first and receives from r - 1
// (the peer that sent to it first) first.
class LLCall {
 public:
  LLCall(const char* api, const DomainState& d, const WindowDesc& signal, std::size_t bytes)
      : LLCall(api, d, coll_state(d), signal, bytes) {}
  LLCall(const char* api, const DomainState& d, CollDomainState& state, const WindowDesc& signal, std::size_t bytes)
      : api_(api),
        d_(d),
        signal_(signal),
        bytes_(bytes),
        words_(static_cast<int>((bytes + 3) / 4)),
        epoch_(++state.ll_epochs[signal.ref.buffer]),
        parity_(static_cast<int>(epoch_ & 1)),
        channel_(channel_of(d, state, signal)) {}

  void pack(const std::byte* data) {
    for (int i = 0; i < words_; ++i) {
      std::uint32_t piece = 0;
      std::memcpy(&piece, data + 4 * i, std::min<std::size_t>(4, bytes_ - 4 * static_cast<std::size_t>(i)));
      packed_[i] = static_cast<std::uint64_t>(epoch_) << 32 | piece;
    }
  }

  void send(int peer) {
    const std::uint64_t my_slot = slot(d_.rank), doorbell = my_slot + 8 * static_cast<std::uint64_t>(words_ - 1) + 4;
    auto* dst = reinterpret_cast<std::uint64_t*>(d_.windows_in[static_cast<std::size_t>(peer)] + my_slot);
    for (int i = 0; i < words_; ++i)
      std::atomic_ref<std::uint64_t>(dst[i]).store(packed_[i], std::memory_order_relaxed);
    d_.backend->notify(d_.members[static_cast<std::size_t>(peer)], doorbell, static_cast<std::int32_t>(epoch_),
                       NotifyOp::Set);
  }

  void send_all() {
    for (int k = 1; k < d_.nranks(); ++k) send((d_.rank + k) % d_.nranks());
  }

  // Packs and sends payload(p) to every peer p.
  template <class Payload>
  void send_each(Payload&& payload) {
    for (int k = 1; k < d_.nranks(); ++k) {
      const int p = (d_.rank + k) % d_.nranks();
      pack(payload(p));
      send(p);
    }
  }

  // Calls f(s, bytes of source s) for every source s != me.
  template <class F>
  void receive_all(F&& f) {
    for (int k = 1; k < d_.nranks(); ++k) {
      const int s = (d_.rank + d_.nranks() - k) % d_.nranks();
      f(s, receive(s));
    }
  }

  const std::byte* receive(int source) {
    thread_local std::byte pieces[kMaxRanks][kLLMaxBytes];
    std::byte* heap = d_.windows_in[static_cast<std::size_t>(d_.rank)];
    const std::uint64_t at = slot(source);
    const std::uint64_t last = at + 8 * static_cast<std::uint64_t>(words_ - 1);
    if (load_word(heap + last) >> 32 != epoch_)
      await_word(api_, d_, signal_, last, epoch_, parity_, source, words_ - 1);
    for (int i = 0; i < words_; ++i) {
      const std::uint64_t w_at = at + 8 * static_cast<std::uint64_t>(i);
      std::uint64_t w = load_word(heap + w_at);
      if (w >> 32 != epoch_) {  // never on x86 (stores arrive in order), allowed by the protocol
        await_word(api_, d_, signal_, w_at, epoch_, parity_, source, i);
        w = load_word(heap + w_at);
      }
      const auto piece = static_cast<std::uint32_t>(w);
      std::memcpy(pieces[source] + 4 * i, &piece, 4);
    }
    return pieces[source];
  }

 private:
  std::uint64_t slot(int source) const {
    return channel_ + (static_cast<std::uint64_t>(parity_) * static_cast<std::uint64_t>(d_.nranks()) +
                       static_cast<std::uint64_t>(source)) *
                          kLLSlotBytes;
  }

  const char* api_;
  const DomainState& d_;
  const WindowDesc& signal_;
  std::size_t bytes_;
  int words_;
  std::uint32_t epoch_;
  int parity_;
  std::uint64_t channel_;
  std::uint64_t packed_[kWords] = {};
};

// mine = op(source 0, ..., source P-1) in ascending rank order, my own source being `mine`, the
// others this call's messages (after its sends).
void reduce_received(LLCall& call, const DomainState& d, std::byte* mine, Index count, DType dtype, ReduceOp op) {
  const void* srcs[kMaxRanks];
  srcs[d.rank] = mine;
  call.receive_all([&](int s, const std::byte* data) { srcs[s] = data; });
  reduce(mine, srcs, d.nranks(), static_cast<std::size_t>(count), dtype, op);
}

}  // namespace

void ll_allreduce(const char* api, const DomainState& d, const WindowDesc& target, const WindowDesc& signal,
                  Index count, ReduceOp op) {
  std::byte* mine = own_at(d, target, 0);
  LLCall call(api, d, signal, static_cast<std::size_t>(count) * dtype_size(target.dtype));
  call.pack(mine);
  call.send_all();
  reduce_received(call, d, mine, count, target.dtype, op);
}

void ll_broadcast(const char* api, const DomainState& d, const WindowDesc& target, const WindowDesc& signal, int root) {
  const std::size_t bytes = static_cast<std::size_t>(target.shape.numel()) * dtype_size(target.dtype);
  std::byte* mine = own_at(d, target, 0);
  // Every rank sends (a non-root its own, ignored bytes) and every rank receives: the exchange
  // stays all-to-all, which is what lets slots be reused without acknowledgements.
  LLCall call(api, d, signal, bytes);
  call.pack(mine);
  call.send_all();
  call.receive_all([&](int s, const std::byte* data) {
    if (s == root) std::memcpy(mine, data, bytes);
  });
}

void ll_all_to_all_v(const char* api, const DomainState& d, const std::byte* input, const std::int32_t* send_counts,
                     const WindowDesc& target, const WindowDesc& recv_counts, const WindowDesc& signal) {
  const Index max_recv = target.shape[0] / d.nranks();
  const std::size_t row_bytes = static_cast<std::size_t>(target.shape[1]) * dtype_size(target.dtype);
  const std::size_t block_bytes = static_cast<std::size_t>(max_recv) * row_bytes;
  auto deliver = [&](int source, std::int32_t rows, const std::byte* data) {
    std::memcpy(own_at(d, recv_counts, 4 * static_cast<std::uint64_t>(source)), &rows, 4);
    const std::size_t bytes = static_cast<std::size_t>(rows) * row_bytes;
    if (bytes > 0)  // an empty block may come from a null input
      std::memcpy(own_at(d, target, static_cast<std::uint64_t>(source) * block_bytes), data, bytes);
  };
  // Each message: the row count, then the rows of the block (zero-padded to MAX_RECV rows).
  LLCall call(api, d, signal, 4 + block_bytes);
  std::byte message[kLLMaxBytes] = {};
  call.send_each([&](int p) {
    const std::size_t bytes = static_cast<std::size_t>(send_counts[p]) * row_bytes;
    std::memcpy(message, &send_counts[p], 4);
    if (bytes > 0)
      std::memcpy(message + 4, input + static_cast<std::size_t>(p) * block_bytes, bytes);  // input may be null
    std::memset(message + 4 + bytes, 0, block_bytes - bytes);
    return static_cast<const std::byte*>(message);
  });
  deliver(d.rank, send_counts[d.rank], input + static_cast<std::size_t>(d.rank) * block_bytes);
  call.receive_all([&](int s, const std::byte* data) {
    std::int32_t rows = 0;
    std::memcpy(&rows, data, 4);
    deliver(s, rows, data + 4);
  });
}

void ll_rows(const char* api, LLRows kind, const DomainState& d, const std::byte* input, const WindowDesc& target,
             const WindowDesc& signal, ReduceOp op) {
  const Index size = target.shape[1];
  const std::size_t row_bytes = static_cast<std::size_t>(size) * dtype_size(target.dtype);
  auto own_row = [&](int row) { return own_at(d, target, static_cast<std::uint64_t>(row) * row_bytes); };
  LLCall call(api, d, signal, row_bytes);
  switch (kind) {
    case LLRows::ReduceScatter:
      call.send_each([&](int p) { return static_cast<const std::byte*>(own_row(p)); });
      return reduce_received(call, d, own_row(d.rank), size, target.dtype, op);
    case LLRows::Allgather:
      call.pack(input);  // the same row for every peer
      call.send_all();
      std::memcpy(own_row(d.rank), input, row_bytes);
      break;
    case LLRows::AllToAll:
      call.send_each([&](int p) { return input + static_cast<std::size_t>(p) * row_bytes; });
      std::memcpy(own_row(d.rank), input + static_cast<std::size_t>(d.rank) * row_bytes, row_bytes);
      break;
  }
  call.receive_all([&](int s, const std::byte* data) { std::memcpy(own_row(s), data, row_bytes); });
}

}  // namespace pld::detail
