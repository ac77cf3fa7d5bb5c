#include "coll/match.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <optional>

namespace pld::detail {

namespace {

// The record's words of domain rank `rank` on `buffer`'s channel.
std::uint64_t* record_words(const DomainState& d, const CollDomainState& s, std::uint32_t buffer, int rank) {
  std::byte* heap = d.windows_in[static_cast<std::size_t>(rank)];
  return reinterpret_cast<std::uint64_t*>(heap + channel_of(d, s, buffer) +
                                          call_record_offset(static_cast<std::uint64_t>(d.nranks())));
}

std::uint32_t signature(const std::uint64_t w[8]) {
  std::uint64_t h = 0x9e3779b97f4a7c15ull;
  for (int i = 1; i < 8; ++i) {
    h = (h ^ w[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  return static_cast<std::uint32_t>(h ^ (h >> 32));
}

struct Record {
  std::uint64_t token;
  CollCall call;
};

// A consistent copy of a rank's record (sequence lock), or nothing when it keeps changing or was
// never written.
std::optional<Record> read_record(const DomainState& d, const CollDomainState& s, std::uint32_t buffer, int rank) {
  const std::uint64_t* line = record_words(d, s, buffer, rank);
  for (int attempt = 0; attempt < 64; ++attempt) {
    const std::uint64_t token = std::atomic_ref<const std::uint64_t>(line[0]).load(std::memory_order_acquire);
    if (token == 0) continue;
    std::uint64_t w[8] = {token};
    for (int i = 1; i < 8; ++i) w[i] = std::atomic_ref<const std::uint64_t>(line[i]).load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (std::atomic_ref<const std::uint64_t>(line[0]).load(std::memory_order_relaxed) == token)
      return Record{token, unpack_call(w)};
  }
  return std::nullopt;
}

}  // namespace

void publish_call(const DomainState& d, CollDomainState& s, std::uint32_t buffer, const CollCall& call) {
  std::uint64_t w[8];
  pack_call(call, w);
  std::uint64_t& token = s.calls[buffer];
  token = (((token >> 32) + 1) << 32) | signature(w);
  std::uint64_t* line = record_words(d, s, buffer, d.rank);
  std::atomic_ref<std::uint64_t>(line[0]).store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (int i = 1; i < 8; ++i) std::atomic_ref<std::uint64_t>(line[i]).store(w[i], std::memory_order_relaxed);
  std::atomic_ref<std::uint64_t>(line[0]).store(token, std::memory_order_release);
}

void call_mismatch_failed(const char* api, const DomainState& d, const WindowDesc& signal, int peer) {
  const CollDomainState& s = coll_state(d);
  const std::uint32_t buffer = signal.ref.buffer;
  const std::uint64_t mine = s.calls[buffer];
  const std::optional<Record> own = read_record(d, s, buffer, d.rank);
  const std::optional<Record> theirs = read_record(d, s, buffer, peer);
  const std::string me_called = own ? describe_call(own->call, d) : std::string(api);
  std::string msg = fmt::format("{}: collective mismatch on comm domain {} (collective #{} on signal '{}'): rank {} ",
                                api, d.label, mine >> 32, d.buffer_name(buffer), d.rank);
  if (theirs && (theirs->token >> 32) == (mine >> 32)) {
    const auto diff = own ? call_differences(own->call, theirs->call) : std::vector<const char*>{};
    msg += fmt::format("called {} but rank {} called {}", me_called, peer, describe_call(theirs->call, d));
    if (!diff.empty()) msg += fmt::format(" (they differ in {})", fmt::join(diff, ", "));
  } else {
    msg += fmt::format("called {} but rank {} is in another collective", me_called, peer);
  }
  msg +=
      ". Every rank of a comm domain must make the same collective calls, with the same arguments, in the same "
      "order: look for a rank-dependent branch or argument (PLD_DEBUG=1 lists every rank's call).";
  throw UsageError(msg);
}

MatchProbe::MatchProbe(const DomainState& d, const WindowDesc& signal)
    : d_(d), buffer_(signal.ref.buffer), mine_(call_token(d, signal)), probe_{&MatchProbe::check, this} {}

bool MatchProbe::check(void* self) {
  auto& p = *static_cast<MatchProbe*>(self);
  const CollDomainState& s = coll_state(p.d_);
  for (int r = 0; r < p.d_.nranks(); ++r) {
    if (r == p.d_.rank) continue;
    const std::uint64_t theirs = peer_token(p.d_, s, p.buffer_, r);
    if ((theirs >> 32) == (p.mine_ >> 32) && theirs != p.mine_) {
      p.peer_ = r;
      return true;
    }
  }
  return false;
}

}  // namespace pld::detail
