// The outstanding non-blocking transfers of a rank process (tensor::put_nbi, get_nbi,
// put_signal_nbi): whether any is outstanding, so that the end of a kernel completes them (an
// implicit system::quiet), and, in debug mode (PLD_DEBUG):
//   * a checksum of every non-blocking put's source taken when it is issued and compared when it
//     completes, so that a source buffer rewritten before quiet is reported instead of sending
//     whatever the buffer held at the time;
//   * the destination of every non-blocking get, so that a read of it before quiet (tile::load,
//     tile::read, the source of a put) is reported instead of returning whatever it held.
#pragma once

#include "backend/backend.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace pld::detail {

class NbiLedger {
 public:
  /// The bytes a non-blocking put reads: runs of the source array.
  using Spans = std::vector<std::pair<const std::byte*, std::size_t>>;

  /// A non-blocking operation was issued (cheap: one relaxed store).
  void issued() { outstanding_.store(true, std::memory_order_relaxed); }
  bool outstanding() const { return outstanding_.load(std::memory_order_relaxed); }
  /// Debug mode: remembers the source of one non-blocking put (`what` describes the call).
  void track(std::string what, Spans spans);
  /// Debug mode: remembers the destination of one non-blocking get (`what` describes the call).
  void track_get(std::string what, Spans spans);
  /// Whether a tracked get is outstanding (cheap: one relaxed load).
  bool gets_outstanding() const { return gets_outstanding_.load(std::memory_order_relaxed); }
  /// Debug mode: throws UsageError naming `api` and the get when `[at, at + bytes)` overlaps the
  /// destination of an outstanding non-blocking get.
  void check_read(const char* api, const std::byte* at, std::size_t bytes);
  /// Completes every outstanding operation (`backend.quiet()`), then compares every tracked
  /// source with its checksum; throws UsageError naming `where` and the first put whose source
  /// changed. Forgets them (and the gets' destinations) either way.
  void complete(BackendProcess& backend, const char* where);
  /// Forgets every outstanding operation without completing it (a kernel that failed: the
  /// group completes the transfers at the end of the call).
  void forget();

 private:
  struct Entry {
    std::string what;
    Spans spans;
    std::uint64_t checksum;
  };
  static std::uint64_t checksum(const Spans& spans);

  std::atomic<bool> outstanding_{false};
  std::atomic<bool> gets_outstanding_{false};
  std::atomic<bool> tracked_{false};  // entries_ or gets_ hold something (debug mode)
  std::mutex mutex_;
  std::vector<Entry> entries_;
  std::vector<Entry> gets_;  // checksum unused
};

}  // namespace pld::detail
