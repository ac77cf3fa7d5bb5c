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
  tracked_.store(true, std::memory_order_relaxed);
}

void NbiLedger::track_get(std::string what, Spans spans) {
  std::lock_guard lock(mutex_);
  gets_.push_back(Entry{std::move(what), std::move(spans), 0});
  gets_outstanding_.store(true, std::memory_order_relaxed);
  tracked_.store(true, std::memory_order_relaxed);
}

void NbiLedger::check_read(const char* api, const std::byte* at, std::size_t bytes) {
  if (!gets_outstanding() || bytes == 0) return;
  std::lock_guard lock(mutex_);
  for (const Entry& e : gets_)
    for (const auto& [dst, n] : e.spans)
      if (at < dst + n && dst < at + bytes)
        throw UsageError(
            fmt::format("{}: reads the destination of {} before the transfer completed; a non-blocking get "
                        "writes its destination until system::quiet() (or the end of the kernel): call "
                        "system::quiet() before reading it, or use the blocking tensor::get",
                        api, e.what));
}

void NbiLedger::complete(BackendProcess& backend, const char* where) {
  backend.quiet();
  outstanding_.store(false, std::memory_order_relaxed);
  if (!tracked_.load(std::memory_order_relaxed)) return;  // outside debug mode: nothing to compare
  std::vector<Entry> entries;
  {
    std::lock_guard lock(mutex_);
    entries.swap(entries_);
    gets_.clear();
    gets_outstanding_.store(false, std::memory_order_relaxed);
    tracked_.store(false, std::memory_order_relaxed);
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
  gets_.clear();
  gets_outstanding_.store(false, std::memory_order_relaxed);
  tracked_.store(false, std::memory_order_relaxed);
}

}  // namespace pld::detail
