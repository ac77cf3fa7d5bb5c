#include "rank/nbi.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <functional>
#include <string_view>

namespace pld::detail {

std::uint64_t NbiLedger::checksum(const Spans& spans) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& [at, bytes] : spans) {
    const std::size_t s = std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(at), bytes));
    h = (h ^ s) * 0x100000001b3ull;
  }
  return h;
}

void NbiLedger::track(std::string what, Spans spans) {
  const std::uint64_t sum = checksum(spans);
  std::lock_guard lock(mutex_);
  entries_.push_back(Entry{std::move(what), std::move(spans), sum});
}

void NbiLedger::complete(BackendProcess& backend, const char* where) {
  backend.quiet();
  outstanding_.store(false, std::memory_order_relaxed);
  std::vector<Entry> entries;
  {
    std::lock_guard lock(mutex_);
    entries.swap(entries_);
  }
  for (const Entry& e : entries)
    if (checksum(e.spans) != e.checksum)
      throw UsageError(
          fmt::format("{}: the source of {} changed before the transfer completed; a non-blocking put reads "
                      "its source until system::quiet() (or the end of the kernel): keep the buffer unchanged "
                      "until then, or use the blocking tensor::put",
                      where, e.what));
}

void NbiLedger::forget() {
  outstanding_.store(false, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  entries_.clear();
}

}  // namespace pld::detail
