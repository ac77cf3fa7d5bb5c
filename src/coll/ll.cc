// The LL one-hop exchange (docs/01-collectives-reference.md, "LL") and the collectives built on it:
// allreduce, allgather, reduce_scatter, all_to_all, all_to_all_v and broadcast of small messages;
// and the LL barrier.
//
// Staging: pld reserves one window per used comm domain (kCollStagingName, host/session.cc) and
// cuts it into channels, one per buffer id of the domain; a call uses the channel of its signal's
// buffer, so collectives that run concurrently on separate signals never share a channel. The
// signal's cells themselves are not touched. Channel layout (coll/tuning.h):
//
//   [parity 2][source P][ll_lines(kLLMaxBytes) lines]   line = 56 data bytes | token (bytes 56-63):
//                                                        signature (56-59), epoch (60-63)
//   [parity 2][source P] flags of the LL barrier         int32 epoch, one 64-byte line each
//                                                        (at ll_flags_offset(P))
//   this rank's call record                              one line (coll/match.h)
//
// Every rank numbers its LL data calls per channel, whatever their collective: epoch e = 1, 2, ...
// (the same sequence on every member, since all members make the same calls in the same order);
// the call uses parity e & 1. A line's token is e << 32 | the call's signature (coll/match.h):
// ranks in the same call write and expect the same token, and a line with epoch e and another
// signature is a peer in another collective, which fails the call (UsageError) instead of mixing
// its data in.
//
// 1. push   For every peer p, rank `me` cuts its message for p (the same bytes for every peer in
//           allreduce and allgather, row p of its operand in reduce_scatter and all_to_all, count
//           and block p in all_to_all_v, the target from a broadcast's root, nothing from its other
//           ranks) into lines of 56 bytes (the last one zero-padded; an empty message is a token)
//           and writes them into slot [e & 1][me] of p's channel, each line's token last with a
//           release store: a reader that acquires the token in a line sees that line's data (on x86
//           every store is a plain move). Then it rings p's doorbell (Backend::ring) on the epoch
//           of the last line, i.e. the value already there: notify(Set e) without its general
//           checks. That adds nothing but the wake-up test: after the (repeated) release store,
//           one load of the sleeper count of Backend::wait (signal.cc), so a reader that went to
//           sleep is woken.
// 2. gather For every source s != me: wait until the last line of slot [e & 1][s] holds the token
//           (Backend::wait: spin, yield, sleep; deadline report, abort), then copy every line out,
//           each checked for the token.
// 3. finish Each rank writes only its own window: allreduce reduces sources 0, 1, ..., P-1 in
//           ascending rank order (the same bits as Mesh and TwoShot on every rank), reduce_scatter
//           does the same for its row, allgather and all_to_all store each source's row, and a
//           broadcast's non-root ranks store the root's data (the other ranks' empty messages only
//           say that they entered the call, see below).
//
// Nothing is ever cleared. Slot [p][s] is rewritten by s with epoch e + 2 only once s finished
// call e + 1, which needed my message of call e + 1, which I send only after I read slot [p][s]
// in call e — whichever collectives calls e, e + 1 and e + 2 are, since in each every rank sends
// to every peer and waits for every peer. And e + 2 != e, also across the 2^32 wrap. A fresh
// (zeroed) channel holds epoch 0, which no call before the wrap waits for. In place is safe: my
// window is read and written by me alone. The same all-to-all makes every LL collective return
// only after every peer has entered it. A broadcast root that calls back to back sends the data
// of call k + 1 before it waits for the entries of call k + 1, which its data of call k released
// two hops earlier: a loop of broadcasts runs at about one hop per call, not a round trip.
//
// The LL barrier is the same exchange without data: barrier call e (its own epoch sequence per
// channel) sets flag [e & 1][me] of every peer's channel to e << 32 | the call's signature (a
// release store and the doorbell, as a line's token) and waits until its own flags [e & 1][s]
// hold it. Each flag has one writer and its own cache line, and nothing is given back afterwards:
// where the credit barrier does two read-modify-writes on a line that both ranks write (the
// peer's +1, then my -1), this does one store on a line only the peer reads (P = 2, both
// signalling with a read-modify-write: 0.17 vs 0.21 us per barrier, bench/README.md). Flag
// [p][s] is rewritten (with e + 2) only after s passed barrier e + 1, which needed my flag e + 1,
// which I raise only after I saw flag [p][s] = e.
#include "coll/ll.h"

#include "coll/match.h"
#include "coll/peer.h"
#include "coll/tuning.h"
#include "core/dtype.h"
#include "reduce/reduce.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

namespace pld::detail {

namespace {

// Domain rank (me + k) mod n for 0 <= me + k < 2n: the staggered peer orders below, without a
// division on every call.
int ring_at(int me, int k, int n) {
  const int p = me + k;
  return p < n ? p : p - n;
}

// What an LL wait waits for, in its error message: "<api>: waiting for rank <s>'s <thing> <e>
// (staging '<name>' <cell> <at>, channel of signal '<sig>'; <seen> <v>)".
struct EpochWait {
  const char* thing;  // "data of LL call", "arrival at LL barrier", "arrival at entry barrier"
  const char* cell;   // "line", "flag"
  const char* seen;   // "the line's epoch is", "the flag holds"
};

// Blocks until the int32 at `offset` of my heap — staging cell `at`, raised by domain rank
// `source` only — holds `epoch`.
void await_epoch(const char* api, const DomainState& d, const WindowDesc& signal, std::uint64_t offset,
                 std::uint32_t epoch, const Dims& at, int source, const EpochWait& how) {
  const MatchProbe probe(d, signal);
  WaitSite site{d.id, static_cast<std::uint32_t>(coll_state(d).ll_staging), &at,
                d.members[static_cast<std::size_t>(source)], api};
  site.probe = probe.get();
  std::int32_t seen = 0;
  const WaitStatus st = d.backend->wait(offset, static_cast<std::int32_t>(epoch), WaitCmp::Eq, site, &seen);
  if (st == WaitStatus::Ok) return;
  if (st == WaitStatus::Mismatch) call_mismatch_failed(api, d, signal, probe.peer());
  const std::string what = fmt::format(
      "{}: waiting for rank {}'s {} {} (staging '{}' {} {}, channel of signal '{}'; {} {})", api, source, how.thing,
      epoch, kCollStagingName, how.cell, at.str(), d.buffer_name(signal.ref.buffer), how.seen, seen);
  if (st == WaitStatus::Timeout)
    throw WaitTimeoutError(what +
                           " at the deadline; every rank of the domain must call the same collectives in the "
                           "same order");
  throw AbortedError(what + ": released because another rank failed");
}

// Line `line` of LL slot [parity][source] (its epoch at `offset`, its token in the word `tail`
// that ends at offset + 4): waits for the epoch, then compares the signature that came with it.
// Out of line: the LL calls reach it only for a message still on its way (or a peer in another
// call), and inlined its report's arguments cost every call.
[[gnu::noinline]] void await_line(const char* api, const DomainState& d, const WindowDesc& signal, std::uint64_t offset,
                                  const std::uint64_t* tail, std::uint64_t token, int parity, int source, int line) {
  const auto epoch = static_cast<std::uint32_t>(token >> 32);
  await_epoch(api, d, signal, offset, epoch, Dims{parity, source, line}, source,
              {"data of LL call", "line", "the line's epoch is"});
  if (std::atomic_ref<const std::uint64_t>(*tail).load(std::memory_order_acquire) != token)
    call_mismatch_failed(api, d, signal, source);
}

// Flag [parity][source] of the LL barrier (its word at `offset`, the epoch in its upper half).
// Out of line: a flag already raised never needs it, and inline its frame would cost every barrier
// call. Compares the signature that came with the flag.
[[gnu::noinline]] void await_flag(const char* api, const DomainState& d, const WindowDesc& signal, std::uint64_t offset,
                                  std::uint64_t flag, int parity, int source, const char* thing) {
  await_epoch(api, d, signal, offset + 4, static_cast<std::uint32_t>(flag >> 32), Dims{parity, source}, source,
              {thing, "flag", "the flag holds"});
  const auto* word = reinterpret_cast<const std::uint64_t*>(d.windows_in[static_cast<std::size_t>(d.rank)] + offset);
  if (std::atomic_ref<const std::uint64_t>(*word).load(std::memory_order_acquire) != flag)
    call_mismatch_failed(api, d, signal, source);
}

// Whether the domain has a staging channel for the signal's buffer and direct peers: the common
// condition of the LL allreduce and the LL barrier.
bool has_channel(const DomainState& d, const WindowDesc& signal) {
  const CollDomainState& s = coll_state(d);
  return s.ll_staging >= 0 && signal.ref.buffer < s.ll_epochs.size() && s.direct;
}

// The flags of one LL barrier epoch (the LL barrier and the push broadcast share the sequence):
// raise(p) sets my flag in peer p's channel, await(s) returns once source s's flag in mine holds
// the epoch. A flag is one word, epoch << 32 | the call's signature (coll/match.h), stored with
// release as an LL line's token is, then the doorbell: ranks in different calls of the same
// number meet at a flag with another signature and fail the match check before any data moves.
class LLFlags {
 public:
  LLFlags(const char* api, const DomainState& d, const WindowDesc& signal, const char* thing)
      : api_(api), d_(d), signal_(signal), thing_(thing) {
    CollDomainState& state = coll_state(d);
    const auto n = static_cast<std::uint64_t>(d.nranks());
    epoch_ = ++state.ll_barrier_epochs[signal.ref.buffer];
    flag_ = std::uint64_t{epoch_} << 32 | static_cast<std::uint32_t>(call_token(d, signal));
    parity_ = static_cast<int>(epoch_ & 1);
    base_ = channel_of(d, state, signal.ref.buffer) + ll_flags_offset(n) +
            static_cast<std::uint64_t>(parity_) * n * kLLFlagBytes;
  }
  void raise(int peer) const {
    auto* word = reinterpret_cast<std::uint64_t*>(d_.windows_in[static_cast<std::size_t>(peer)] + at(d_.rank));
    std::atomic_ref<std::uint64_t>(*word).store(flag_, std::memory_order_release);
    d_.backend->ring(d_.members[static_cast<std::size_t>(peer)], at(d_.rank) + 4, static_cast<std::int32_t>(epoch_));
  }
  // A flag already raised is taken with one acquire load (the LL flags are direct-only, so the own
  // heap is memory); the backend's wait runs only for a peer still on its way.
  void await(int source) const {
    std::byte* heap = d_.windows_in[static_cast<std::size_t>(d_.rank)];
    const auto* word = reinterpret_cast<const std::uint64_t*>(heap + at(source));
    if (std::atomic_ref<const std::uint64_t>(*word).load(std::memory_order_acquire) != flag_) [[unlikely]]
      await_flag(api_, d_, signal_, at(source), flag_, parity_, source, thing_);
  }

 private:
  std::uint64_t at(int source) const { return base_ + static_cast<std::uint64_t>(source) * kLLFlagBytes; }
  const char* api_;
  const DomainState& d_;
  const WindowDesc& signal_;
  const char* thing_;  // what a wait for a flag reports
  std::uint32_t epoch_;
  std::uint64_t flag_;  // epoch << 32 | signature (0 where the match check does not run)
  int parity_;
  std::uint64_t base_;
};

}  // namespace

bool ll_barrier_fits(const DomainState& d, const WindowDesc& signal) {
  return has_channel(d, signal);
}

void ll_barrier(const char* api, const DomainState& d, const WindowDesc& signal, bool entry) {
  const int n = d.nranks(), me = d.rank;
  const LLFlags flags(api, d, signal, entry ? "arrival at entry barrier" : "arrival at LL barrier");
  if (n >= kDisseminationRanks) {
    // Dissemination: round j raises my flag at me + 2^j, awaits me - 2^j's (distinct sources).
    for (int dist = 1; dist < n; dist *= 2) {
      flags.raise(ring_at(me, dist, n));
      flags.await(ring_at(me, n - dist, n));
    }
    return;
  }
  for (int k = 1; k < n; ++k) flags.raise(ring_at(me, k, n));      // staggered: rank r starts with r + 1
  for (int k = 1; k < n; ++k) flags.await(ring_at(me, n - k, n));  // the peer that raised my flag first is me - 1
}

void ll_push_broadcast(const char* api, const DomainState& d, const WindowDesc& target, const WindowDesc& signal,
                       int root) {
  // Both barriers run on every rank whatever it takes the root to be, so the flags keep the LL
  // barrier's ordering (no rank is two epochs ahead of a flag's reader); ranks that disagree on
  // the root fail the match check after the first.
  ll_barrier(api, d, signal);  // every rank is in the call (its flag's signature is this one's): targets are free
  if (d.rank == root) {
    const int n = d.nranks();
    const std::size_t bytes = static_cast<std::size_t>(target.shape.numel()) * elem_bytes(target.dtype);
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

// One LL data call (steps 1 and 2 above): pack(data, bytes) cuts a message into epoch-tagged
// lines, send(p) writes them into peer p's slot and rings its doorbell, receive(s, bytes, out)
// copies source s's message of `bytes` into `out`. send_all, send_each and receive_all visit the
// peers staggered: rank r sends to r + 1 first and receives from r - 1 (the peer that sent to it
// first) first. The domain's fields a call uses are copied in once: the stores into peers' slots
// may alias anything, and the copies keep them from being loaded again after each.
class LLCall {
 public:
  LLCall(const char* api, const DomainState& d, const WindowDesc& signal) : LLCall(api, d, coll_state(d), signal) {}
  LLCall(const char* api, const DomainState& d, CollDomainState& state, const WindowDesc& signal)
      : api_(api),
        d_(d),
        signal_(signal),
        backend_(d.backend),
        heaps_(d.windows_in.data()),
        members_(d.members.data()),
        n_(d.nranks()),
        me_(d.rank),
        epoch_(++state.ll_epochs[signal.ref.buffer]),
        token_(std::uint64_t{epoch_} << 32 | static_cast<std::uint32_t>(call_token(d, signal))),
        parity_(static_cast<int>(epoch_ & 1)),
        slots_(channel_of(d, state, signal.ref.buffer) +
               static_cast<std::uint64_t>(parity_) * static_cast<std::uint64_t>(n_) * kLLSlotBytes) {}

  // An empty message packs nothing (lines_ 0): send() stores the epoch word of its line alone.
  void pack(const std::byte* data, std::size_t bytes) {
    lines_ = bytes == 0 ? 0 : static_cast<int>(ll_lines(bytes));
    auto* out = reinterpret_cast<std::byte*>(packed_);
    for (int l = 0; l < lines_; ++l) {
      std::byte* line = out + kLLLineBytes * static_cast<std::size_t>(l);
      const std::size_t at = kLLLineData * static_cast<std::size_t>(l);
      const std::size_t n = std::min<std::size_t>(kLLLineData, bytes - at);
      // A full line in fixed-size moves; the tail zeroes the whole line (fixed-size stores, the
      // epoch overwrites its last word) and then copies its bytes.
      if (n == kLLLineData) {
        std::memcpy(line, data + at, kLLLineData);
      } else {
        std::memset(line, 0, kLLLineBytes);
        std::memcpy(line, data + at, n);
      }
      std::memcpy(line + kLLLineData, &token_, 8);
    }
  }

  // Words 0-6 of each line plainly, then word 7 (data | epoch) with release: a reader that
  // acquires the epoch sees the line's data. The plain stores race with nothing: the reader reads
  // them only after that acquire, and it has finished with the slot's previous epoch before this
  // call could start (see the top of the file).
  void send(int peer) {
    if (lines_ == 0) return send_entry(peer);
    const std::uint64_t my_slot = slot(me_);
    auto* dst = reinterpret_cast<std::uint64_t*>(heaps_[peer] + my_slot);
    for (int l = 0; l < lines_; ++l) {
      const int w = kLineWords * l;
      std::memcpy(dst + w, packed_ + w, kLLLineBytes - 8);
      std::atomic_ref<std::uint64_t>(dst[w + kLineWords - 1])
          .store(packed_[w + kLineWords - 1], std::memory_order_release);
    }
    backend_->ring(members_[peer], epoch_at(my_slot, lines_ - 1), static_cast<std::int32_t>(epoch_));
  }

  // An empty message (a rank's entry into the call): the token in line 0's last word (bytes
  // 56-63), nothing else, and the doorbell.
  void send_entry(int peer) {
    const std::uint64_t my_slot = slot(me_);
    auto* dst = reinterpret_cast<std::uint64_t*>(heaps_[peer] + my_slot);
    std::atomic_ref<std::uint64_t>(dst[kLineWords - 1]).store(token_, std::memory_order_release);
    backend_->ring(members_[peer], epoch_at(my_slot, 0), static_cast<std::int32_t>(epoch_));
  }

  void send_all() {
    for (int k = 1; k < n_; ++k) send(ring_at(me_, k, n_));
  }

  // send_all() of an empty message, without looking at what is packed.
  void send_entries() {
    for (int k = 1; k < n_; ++k) send_entry(ring_at(me_, k, n_));
  }

  // Packs and sends payload(p) (`bytes` long) to every peer p.
  template <class Payload>
  void send_each(std::size_t bytes, Payload&& payload) {
    for (int k = 1; k < n_; ++k) {
      const int p = ring_at(me_, k, n_);
      pack(payload(p), bytes);
      send(p);
    }
  }

  // Calls f(s) for every source s != me, in receiving order.
  template <class F>
  void receive_all(F&& f) {
    for (int k = 1; k < n_; ++k) f(ring_at(me_, n_ - k, n_));
  }

  // Source s's message of `bytes` into `out`: its last line first (it comes last), then every line
  // before it, each checked for the epoch (never waits on x86, where stores arrive in order; the
  // protocol allows any order), and its bytes copied. An empty message is its epoch alone.
  void receive(int source, std::size_t bytes, std::byte* out) const {
    const std::uint64_t at = slot(source);
    const auto* words = reinterpret_cast<const std::uint64_t*>(heaps_[me_] + at);
    const int last = static_cast<int>(ll_lines(bytes)) - 1;
    await(source, at, words, last);
    for (int l = 0; l < last; ++l) {
      await(source, at, words, l);
      std::memcpy(out + kLLLineData * static_cast<std::size_t>(l), words + kLineWords * l, kLLLineData);
    }
    const std::size_t from = kLLLineData * static_cast<std::size_t>(last);
    if (bytes > from) std::memcpy(out + from, words + kLineWords * last, std::min(kLLLineData, bytes - from));
  }

  // receive() of an empty message from `source`: returns once its epoch is in line 0.
  void await_entry(int source) const {
    const std::uint64_t at = slot(source);
    await(source, at, reinterpret_cast<const std::uint64_t*>(heaps_[me_] + at), 0);
  }

 private:
  static constexpr int kLineWords = static_cast<int>(kLLLineBytes / 8);

  // Returns once line `l` of source s's slot (at `at`, mapped at `words`) holds this call's token.
  void await(int source, std::uint64_t at, const std::uint64_t* words, int l) const {
    const std::uint64_t* tail = words + kLineWords * l + kLineWords - 1;
    if (std::atomic_ref<const std::uint64_t>(*tail).load(std::memory_order_acquire) != token_) [[unlikely]]
      await_line(api_, d_, signal_, epoch_at(at, l), tail, token_, parity_, source, l);
  }
  // Heap offset of the epoch of line `line` (the token's upper half: bytes 60-63).
  static std::uint64_t epoch_at(std::uint64_t slot_at, int line) {
    return slot_at + kLLLineBytes * static_cast<std::uint64_t>(line) + kLLLineBytes - 4;
  }
  std::uint64_t slot(int source) const { return slots_ + static_cast<std::uint64_t>(source) * kLLSlotBytes; }

  const char* api_;
  const DomainState& d_;
  const WindowDesc& signal_;
  Backend* backend_;
  std::byte* const* heaps_;  // d.windows_in
  const int* members_;       // d.members
  int n_, me_;
  std::uint32_t epoch_;
  std::uint64_t token_;  // epoch << 32 | the call's signature (coll/match.h), every line's last word
  int parity_;
  std::uint64_t slots_;  // heap offset of the slots of this call's parity
  int lines_ = 0;
  std::uint64_t packed_[kLLSlotBytes / 8];  // the first lines_ lines are packed; not zeroed per call
};

// mine = op(source 0, ..., source P-1) in ascending rank order, my own source being `mine`, the
// others this call's messages of `bytes` (after its sends).
void reduce_received(LLCall& call, const DomainState& d, std::byte* mine, Index count, DType dtype, ReduceOp op) {
  const std::size_t bytes = static_cast<std::size_t>(count) * dtype_size(dtype);
  thread_local std::vector<std::byte> received;
  received.resize(std::max(received.size(), static_cast<std::size_t>(d.nranks()) * kLLMaxBytes));
  const void* srcs[kMaxRanks];
  srcs[d.rank] = mine;
  call.receive_all([&](int s) {
    std::byte* at = received.data() + static_cast<std::size_t>(s) * kLLMaxBytes;
    call.receive(s, bytes, at);
    srcs[s] = at;
  });
  reduce(mine, srcs, d.nranks(), static_cast<std::size_t>(count), dtype, op);
}

}  // namespace

void ll_allreduce(const char* api, const DomainState& d, const WindowDesc& target, const WindowDesc& signal,
                  Index count, ReduceOp op) {
  std::byte* mine = own_at(d, target, 0);
  LLCall call(api, d, signal);
  call.pack(mine, static_cast<std::size_t>(count) * dtype_size(target.dtype));
  call.send_all();
  reduce_received(call, d, mine, count, target.dtype, op);
}

void ll_broadcast(const char* api, const DomainState& d, const WindowDesc& target, std::size_t bytes,
                  const WindowDesc& signal, int root) {
  std::byte* mine = own_at(d, target, 0);
  // The root sends its data, every other rank an empty message (its entry into the call); every
  // rank receives from every peer. So the exchange stays all-to-all (slots are reused without
  // acknowledgements) and no rank returns before every peer has entered the call, yet a root
  // that loops waits only for the entries its previous call's data let through.
  // The two sides apart, so that each runs a straight path: the root receives entries alone, the
  // other ranks send them.
  LLCall call(api, d, signal);
  if (d.rank == root) {
    call.pack(mine, bytes);
    call.send_all();
    call.receive_all([&](int s) { call.await_entry(s); });
  } else {
    call.send_entries();
    call.receive_all([&](int s) {
      if (s == root)
        call.receive(s, bytes, mine);
      else
        call.await_entry(s);
    });
  }
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
  const std::size_t message_bytes = 4 + block_bytes;
  LLCall call(api, d, signal);
  std::byte message[kLLMaxBytes];  // every message is written in full: count, rows, zero padding
  call.send_each(message_bytes, [&](int p) {
    const std::size_t bytes = static_cast<std::size_t>(send_counts[p]) * row_bytes;
    std::memcpy(message, &send_counts[p], 4);
    if (bytes > 0)
      std::memcpy(message + 4, input + static_cast<std::size_t>(p) * block_bytes, bytes);  // input may be null
    std::memset(message + 4 + bytes, 0, block_bytes - bytes);
    return static_cast<const std::byte*>(message);
  });
  deliver(d.rank, send_counts[d.rank], input + static_cast<std::size_t>(d.rank) * block_bytes);
  call.receive_all([&](int s) {
    call.receive(s, message_bytes, message);
    std::int32_t rows = 0;
    std::memcpy(&rows, message, 4);
    deliver(s, rows, message + 4);
  });
}

void ll_rows(const char* api, LLRows kind, const DomainState& d, const std::byte* input, const WindowDesc& target,
             const WindowDesc& signal, ReduceOp op) {
  const Index size = target.shape[1];
  const std::size_t row_bytes = static_cast<std::size_t>(size) * dtype_size(target.dtype);
  auto own_row = [&](int row) { return own_at(d, target, static_cast<std::uint64_t>(row) * row_bytes); };
  LLCall call(api, d, signal);
  switch (kind) {
    case LLRows::ReduceScatter:
      call.send_each(row_bytes, [&](int p) { return static_cast<const std::byte*>(own_row(p)); });
      return reduce_received(call, d, own_row(d.rank), size, target.dtype, op);
    case LLRows::Allgather:
      call.pack(input, row_bytes);  // the same row for every peer
      call.send_all();
      std::memcpy(own_row(d.rank), input, row_bytes);
      break;
    case LLRows::AllToAll:
      call.send_each(row_bytes, [&](int p) { return input + static_cast<std::size_t>(p) * row_bytes; });
      std::memcpy(own_row(d.rank), input + static_cast<std::size_t>(d.rank) * row_bytes, row_bytes);
      break;
  }
  call.receive_all([&](int s) { call.receive(s, row_bytes, own_row(s)); });
}

}  // namespace pld::detail
