// HostSession: what one orchestrator call recorded — comm domains, their window buffers (carved
// at the same offset of every member's window heap) and the dispatches, in program order. The
// worker layer checks it as a whole and then executes it on the ranks.
#pragma once

#include "host/comm_domain.h"

#include <pld/detail/dispatch.hpp>
#include <pld/host.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pld::detail {

struct DispatchRecord {
  int rank = 0;
  Trampoline trampoline = nullptr;
  void (*kernel)() = nullptr;
  std::vector<std::byte> args;
  std::vector<std::uint32_t> blocks;  // the HostTensor blocks the arguments view, each once
  std::vector<BlockSpan> spans;       // the bytes of them each argument views
  std::vector<std::uint32_t> domains;
};

/// Where a persistent DistributedWorker keeps window buffers across calls: each (program, comm
/// domain members, domain ordinal, buffer name) owns one place in the heap for the worker's life.
class PersistentLayout {
 public:
  PersistentLayout(int world_size, bool reset) : reset_(reset), top_(static_cast<std::size_t>(world_size), 0) {}
  bool reset() const { return reset_; }

 private:
  friend class HostSession;
  struct Domain {
    std::map<std::string, BufferInfo> buffers;
    bool sealed = false;  // a call using it has completed its recording
  };
  using Key = std::tuple<int, std::vector<int>, int>;  // program, members, ordinal among equal member lists
  std::mutex mutex_;
  bool reset_;
  std::vector<std::uint64_t> top_;  // per rank: end of the persistent part of the heap
  std::map<Key, Domain> domains_;
};

class HostSession {
 public:
  HostSession(int world_size, std::uint64_t heap_bytes);

  /// Allocates window buffers through `layout` (persistent worker); `program` indexes the
  /// worker's programs.
  void set_persistent(PersistentLayout* layout, int program) {
    layout_ = layout;
    program_ = program;
  }
  /// Window buffers keep their place (and contents) across calls: a persistent worker's call.
  bool persistent() const { return layout_ != nullptr; }
  std::uint64_t worker() const { return worker_; }
  /// Resident tensors passed to dispatches must belong to worker `uid` (0: pld::run, none allowed).
  void set_worker(std::uint64_t uid) { worker_ = uid; }

  /// A host callback, run once every dispatch recorded before it has finished and before any
  /// dispatch recorded after it starts.
  struct Callback {
    std::size_t position;  // number of dispatches recorded before it
    std::function<void()> fn;
  };
  void add_callback(std::function<void()> fn) { callbacks_.push_back(Callback{dispatches_.size(), std::move(fn)}); }
  const std::vector<Callback>& callbacks() const { return callbacks_; }
  /// Heap ranges of `rank` to zero-fill before this call runs: the whole allocated part for a
  /// fresh call; with persistent windows the buffers placed for the first time, plus every buffer
  /// of the call when they are reset.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> zero_regions(int rank) const;

  /// Throws unless `ref` was allocated by this call (`what` names the operation).
  void check_call(const char* what, const WindowRef& ref) const;

  int world_size() const { return world_size_; }
  std::uint64_t heap_bytes() const { return heap_bytes_; }

  /// Comm domains (host/comm_domain.cc): creates one over `ranks` (world ranks, distinct) and
  /// returns its id; throws UsageError for an empty list, a repeated or out-of-range rank.
  std::uint32_t domain_create(const std::vector<int>& ranks);
  const DomainRecord& domain(std::uint32_t id) const { return domains_.at(id); }
  const std::vector<DomainRecord>& domains() const { return domains_; }
  /// How many domains with the same members this call created before `d`.
  int ordinal_of(const DomainRecord& d) const;

  /// `dtype`: the element type of alloc_window_buffer(shape, dtype); views must keep it.
  WindowBuffer alloc(std::uint32_t domain, std::uint64_t bytes, const std::string& name,
                     std::optional<DType> dtype = std::nullopt);
  WindowRef view(std::uint32_t domain, const WindowBuffer& buffer, const Dims& shape, DType dtype) const;
  /// Throws unless `ref` is a buffer of an existing domain of this call, exactly as allocated, and
  /// a view of `shape` x `dtype` fits it. Every window view reaching a dispatch or a host builtin
  /// passes here, however it was made.
  void check_view(const char* what, const WindowRef& ref, const Dims& shape, DType dtype) const;

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

  // Persistent windows.
  PersistentLayout* layout_ = nullptr;
  int program_ = 0;
  struct Placed {
    std::uint32_t domain;
    BufferInfo info;
    bool fresh;  // placed for the first time in this call
  };
  std::vector<Placed> placed_;
  std::uint64_t worker_ = 0;
  std::vector<Callback> callbacks_;
  std::uint64_t place_persistent(const DomainRecord& d, std::uint64_t bytes, const std::string& name);
};

/// Name of pld's builtin signal window (names starting with "pld." are reserved).
inline constexpr const char* kBuiltinSignalName = "pld.builtin_signal";

/// Columns of pld's builtin signal: 16 lanes x 16 int32 (one cache line per lane).
inline constexpr Index kBuiltinSignalColumns = 256;

/// Alignment of every window buffer (one cache line: signals never share a line with a
/// neighbouring buffer).
inline constexpr std::uint64_t kWindowAlignment = 64;

/// Largest description of one comm domain sent to a rank (group/shm/protocol.h kMaxMessage).
inline constexpr std::size_t kMaxDomainMessage = 60 * 1024;

}  // namespace pld::detail
