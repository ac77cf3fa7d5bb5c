// Rank-side runtime state: which world rank this process is, its backend, the shared blocks it
// has mapped (HostTensor storage), its resident tensors (DeviceTensor) and the comm domains
// delivered by the host (rank/domain.h; their methods are in rank/domain.cc).
#pragma once

#include "backend/backend.h"
#include "rank/domain.h"
#include "rank/nbi.h"

#include <pld/window.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace pld::detail {

class RankRuntime {
 public:
  /// The runtime of this rank process; throws UsageError when called outside a kernel.
  static RankRuntime& get(const char* api);
  static RankRuntime* current();
  static void install(std::unique_ptr<RankRuntime> runtime);
  /// Takes the installed runtime back (the mpi backend keeps it between calls: its resident
  /// tensors live on).
  static std::unique_ptr<RankRuntime> uninstall();

  RankRuntime(int world_rank, BackendProcess* backend_process)
      : world_rank_(world_rank), backend_process_(backend_process) {}

  int world_rank() const { return world_rank_; }
  BackendProcess& backend_process() { return *backend_process_; }

  /// Wait deadline (seconds), whether spinning is allowed, and the job's abort flag — for waits
  /// the runtime does itself (deferred task conditions).
  void set_wait_policy(double timeout, bool may_spin, const std::atomic<std::uint32_t>* abort) {
    wait_timeout_ = timeout;
    may_spin_ = may_spin;
    abort_ = abort;
  }
  double wait_timeout() const { return wait_timeout_; }
  bool may_spin() const { return may_spin_; }
  bool aborting() const { return abort_ ? abort_->load(std::memory_order_acquire) != 0 : backend_process_->aborting(); }

  std::byte* block_base(std::uint32_t id);
  void block_attach(std::uint32_t id, int fd, std::uint64_t bytes);
  void block_inherit(std::uint32_t id, std::byte* base, std::uint64_t bytes);
  void block_retire(std::uint32_t id);
  /// Forgets every block (the mpi backend: they are this process's own HostTensors).
  void blocks_clear() { blocks_.clear(); }

  /// Resident tensors (DeviceTensor): private anonymous memory of this process.
  void device_alloc(std::uint32_t id, std::uint64_t bytes);
  void device_free(std::uint32_t id);
  /// Base of resident allocation `id` and its size; throws if it does not exist here.
  std::byte* device_base(std::uint32_t id, std::uint64_t* bytes = nullptr);

  /// The comm domains delivered by the host for the current call (rank/domain.cc).
  DomainState* domain(std::uint32_t id);
  void domain_define(std::unique_ptr<DomainState> state);
  void domains_clear() { domains_.clear(); }
  /// Calls `fn(const DomainState&)` for every delivered comm domain.
  template <class Fn>
  void for_each_domain(Fn&& fn) const {
    for (const auto& [id, d] : domains_) fn(*d);
  }
  /// The window buffer of a delivered comm domain that holds heap byte `offset`, or nullptr.
  const BufferInfo* buffer_at(std::uint64_t offset) const;

  /// The outstanding non-blocking transfers of this rank (rank/nbi.h).
  NbiLedger& nbi() { return nbi_; }

 private:
  struct Block {
    std::byte* base;
    std::uint64_t bytes;
    bool owned;  // mapped by this process (not inherited from the host at fork)
  };
  int world_rank_;
  BackendProcess* backend_process_;
  double wait_timeout_ = 300;
  bool may_spin_ = false;
  const std::atomic<std::uint32_t>* abort_ = nullptr;
  std::unordered_map<std::uint32_t, Block> blocks_;
  std::unordered_map<std::uint32_t, Block> devices_;
  std::unordered_map<std::uint32_t, std::unique_ptr<DomainState>> domains_;
  NbiLedger nbi_;
};

}  // namespace pld::detail
