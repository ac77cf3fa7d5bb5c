// The waits of LL calls for a line or flag still on its way (coll/ll_call.h), and their reports.
#include "coll/ll_call.h"

#include "coll/match.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <string>

namespace pld::detail {

namespace {

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
  staging_wait_failed(st, what);
}

}  // namespace

void staging_wait_failed(WaitStatus st, const std::string& what) {
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

}  // namespace pld::detail
