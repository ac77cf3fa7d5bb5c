// The LL one-hop exchange (docs/01-collectives-reference.md, "LL") and the collectives built on it:
// allreduce, allgather, reduce_scatter, all_to_all and all_to_all_v of small messages; the LL
// barrier and the pushed broadcast on it. (A small broadcast is eager: coll/eager_broadcast.cc.)
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
//           and block p in all_to_all_v) into lines of 56 bytes (the last one zero-padded; an empty message is a token)
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
//           does the same for its row, allgather and all_to_all store each source's row.
//
// From kDisseminationRanks ranks an allreduce whose P / 2 sources fit a slot gathers them by
// dissemination instead: log2 P rounds, each one message to me - 2^j and one from me + 2^j (the
// sources that rank holds), then the same ascending-order reduction, so the same bits.
//
// Nothing is ever cleared. Slot [p][s] is rewritten by s with epoch e + 2 only once s finished
// call e + 1, which needed my message of call e + 1, which I send only after I read slot [p][s]
// in call e — whichever collectives calls e, e + 1 and e + 2 are, since in each every rank's
// return needs a message of every peer (sent to it, or passed on by dissemination). And e + 2 != e, also across the
// 2^32 wrap. A fresh (zeroed) channel holds epoch 0, which no call before the wrap waits for. In place is safe: my
// window is read and written by me alone. The same all-to-all makes every LL collective return
// only after every peer has entered it.
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

#include "coll/ll_call.h"
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

// Whether the domain has a staging channel for the signal's buffer and direct peers: the common
// condition of the LL allreduce and the LL barrier.
bool has_channel(const DomainState& d, const WindowDesc& signal) {
  const CollDomainState& s = coll_state(d);
  return s.ll_staging >= 0 && signal.ref.buffer < s.ll_epochs.size() && s.direct;
}

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

// Whether an LL allreduce of `bytes` per rank gathers its sources by dissemination: from
// kDisseminationRanks ranks, while the last round's message (P / 2 sources) fits a slot.
bool disseminates(int n, std::size_t bytes) {
  return n >= kDisseminationRanks && static_cast<std::size_t>(n / 2) * bytes <= kLLMaxBytes;
}

// reduce_received's result (sources in ascending rank order: the same bits), the sources gathered
// in log2 P rounds of one message out and one in: in round j (dist = 2^j) rank `me` holds the
// sources of me, me + 1, ..., me + dist - 1; it sends the first min(dist, P - dist) of them to
// me - dist and receives the next as many from me + dist.
void reduce_disseminated(LLCall& call, const DomainState& d, std::byte* mine, Index count, DType dtype, ReduceOp op) {
  const int n = d.nranks(), me = d.rank;
  const std::size_t bytes = static_cast<std::size_t>(count) * dtype_size(dtype);
  thread_local std::vector<std::byte> held;  // source (me + k) mod P at k * bytes
  held.resize(std::max(held.size(), static_cast<std::size_t>(n) * bytes));
  if (bytes > 0) std::memcpy(held.data(), mine, bytes);
  for (int dist = 1; dist < n; dist *= 2) {
    const std::size_t message = static_cast<std::size_t>(std::min(dist, n - dist)) * bytes;
    call.pack(held.data(), message);
    call.send(ring_at(me, n - dist, n));
    call.receive(ring_at(me, dist, n), message, held.data() + static_cast<std::size_t>(dist) * bytes);
  }
  const void* srcs[kMaxRanks];
  for (int k = 0; k < n; ++k) srcs[ring_at(me, k, n)] = held.data() + static_cast<std::size_t>(k) * bytes;
  reduce(mine, srcs, n, static_cast<std::size_t>(count), dtype, op);
}

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

void ll_allreduce(const char* api, const DomainState& d, const WindowDesc& target, const WindowDesc& signal,
                  Index count, ReduceOp op) {
  std::byte* mine = own_at(d, target, 0);
  const std::size_t bytes = static_cast<std::size_t>(count) * dtype_size(target.dtype);
  LLCall call(api, d, signal);
  if (disseminates(d.nranks(), bytes)) return reduce_disseminated(call, d, mine, count, target.dtype, op);
  call.pack(mine, bytes);
  call.send_all();
  reduce_received(call, d, mine, count, target.dtype, op);
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