// HostSession: what one orchestrator call recorded — comm domains, their window buffers (carved
// at the same offset of every member's window heap) and the dispatches, in program order. The
// worker layer checks it as a whole and then executes it on the ranks.
#pragma once

#include "rank/runtime.h"

#include <pld/detail/dispatch.hpp>
#include <pld/host.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pld::detail {

struct DomainRecord {
  std::uint32_t id = 0;
  std::vector<int> members;        // world ranks, ascending
  std::vector<int> local_of;       // world rank -> domain-local rank, or -1
  std::vector<BufferInfo> buffers; // by buffer id
  std::string label;
  std::vector<bool> dispatched;    // by domain-local rank: got a dispatch using this domain
  bool used = false;
};

struct DispatchRecord {
  int rank = 0;
  Trampoline trampoline = nullptr;
  void (*kernel)() = nullptr;
  std::vector<std::byte> args;
  std::vector<std::uint32_t> blocks;
  std::vector<std::uint32_t> domains;
};

class HostSession {
 public:
  HostSession(int world_size, std::uint64_t heap_bytes);

  /// Throws unless `ref` was allocated by this call (`what` names the operation).
  void check_call(const char* what, const WindowRef& ref) const;

  int world_size() const { return world_size_; }
  std::uint64_t heap_bytes() const { return heap_bytes_; }

  std::uint32_t domain_create(const std::vector<int>& ranks);
  const DomainRecord& domain(std::uint32_t id) const { return domains_.at(id); }
  const std::vector<DomainRecord>& domains() const { return domains_; }

  WindowBuffer alloc(std::uint32_t domain, std::uint64_t bytes, const std::string& name);
  WindowRef view(std::uint32_t domain, const WindowBuffer& buffer, const Dims& shape, DType dtype) const;

  void record(int rank, Trampoline trampoline, void (*kernel)(), ArgWriter& writer);
  /// Once the orchestrator returned: reserves pld's staging windows, then checks the call as a
  /// whole (every member of a used domain got work).
  void finish();

  const std::vector<DispatchRecord>& dispatches() const { return dispatches_; }
  /// End of the allocated part of `rank`'s window heap.
  std::uint64_t heap_top(int rank) const { return heap_top_[static_cast<std::size_t>(rank)]; }
  /// The domain as a rank sees it, minus the rank-specific parts (for host-side checks).
  const DomainState& host_state(std::uint32_t domain);
  /// pld's signal window for host builtins on `domain`, allocated on first use in this call.
  const WindowBuffer& builtin_signal(std::uint32_t domain);

  /// "buffer 'sig' of domain world" for reports.
  std::string describe_buffer(std::uint32_t domain, std::uint32_t buffer) const;

 private:
  /// One kCollStagingName window per used domain, above everything the call allocated, with one
  /// LL channel per buffer id up to kCollStagingBudget (coll/ll.cc); skipped when the heap is too
  /// full (no LL path then).
  void reserve_coll_staging();

  std::uint32_t call_;  // unique per HostSession in this process
  int world_size_;
  std::uint64_t heap_bytes_;
  std::vector<std::uint64_t> heap_top_;
  std::vector<DomainRecord> domains_;
  std::vector<DispatchRecord> dispatches_;
  std::vector<std::shared_ptr<void>> keep_alive_;  // host tensors in flight
  std::vector<std::unique_ptr<DomainState>> host_states_;
  std::vector<std::unique_ptr<WindowBuffer>> builtin_signals_;
};

/// Name of pld's builtin signal window (names starting with "pld." are reserved).
inline constexpr const char* kBuiltinSignalName = "pld.builtin_signal";

/// Columns of pld's builtin signal: 16 lanes x 16 int32 (one cache line per lane).
inline constexpr Index kBuiltinSignalColumns = 256;

/// Alignment of every window buffer (one cache line: signals never share a line with a
/// neighbouring buffer).
inline constexpr std::uint64_t kWindowAlignment = 64;

/// Largest description of one comm domain sent to a rank (worker/protocol.h kMaxMessage).
inline constexpr std::size_t kMaxDomainMessage = 60 * 1024;

}  // namespace pld::detail
