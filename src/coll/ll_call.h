// The two halves of every LL call (coll/ll.cc describes the protocol): LLCall, one data call's
// epoch-tagged lines into peers' slots and out of mine, and LLFlags, one LL barrier epoch's flags.
// Both are inline: every small collective runs them, and a call's fields stay in registers; the
// waits for a line or flag still on its way, and their reports, are out of line (ll_call.cc).
#pragma once

#include "coll/domain_state.h"
#include "coll/match.h"
#include "coll/tuning.h"
#include "rank/runtime.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace pld::detail {

// Domain rank (me + k) mod n for 0 <= me + k < 2n: the staggered peer orders of the LL calls, without a
// division on every call.
inline int ring_at(int me, int k, int n) {
  const int p = me + k;
  return p < n ? p : p - n;
}

// Throws the error of a collective's wait on a staging word that ended `st` (Timeout or Aborted):
// `what` is the wait ("<api>: waiting for ...").
[[noreturn]] void staging_wait_failed(WaitStatus st, const std::string& what);

// Line `line` of LL slot [parity][source] (its epoch at `offset`, its token in the word `tail`
// that ends at offset + 4): waits for the epoch, then compares the signature that came with it.
// Out of line: the LL calls reach it only for a message still on its way (or a peer in another
// call), and inlined its report's arguments cost every call.
[[gnu::noinline]] void await_line(const char* api, const DomainState& d, const WindowDesc& signal, std::uint64_t offset,
                                  const std::uint64_t* tail, std::uint64_t token, int parity, int source, int line);

// Flag [parity][source] of the LL barrier (its word at `offset`, the epoch in its upper half).
// Out of line: a flag already raised never needs it, and inline its frame would cost every barrier
// call. Compares the signature that came with the flag.
[[gnu::noinline]] void await_flag(const char* api, const DomainState& d, const WindowDesc& signal, std::uint64_t offset,
                                  std::uint64_t flag, int parity, int source, const char* thing);

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

// One LL data call (steps 1 and 2 of coll/ll.cc): pack(data, bytes) cuts a message into epoch-tagged
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
  // call could start (see coll/ll.cc).
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

}  // namespace pld::detail
