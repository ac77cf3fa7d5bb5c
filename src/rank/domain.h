// A comm domain as a member rank sees it (DomainState): its members, its window buffers, the
// local address of every member's window and the backend that reaches them. The host describes
// each domain a rank uses before the rank's first dispatch that uses it (group/shm: a Domain
// message; group/mpi: from the replayed call); the rank keeps it for the call (RankRuntime).
#pragma once

#include "backend/backend.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace pld::detail {

/// State a higher layer keeps per comm domain (the collectives': coll/domain_state.h), which the
/// domain owns without knowing its type: made by the first get(), safe to race for from several
/// threads, destroyed with the domain.
class DomainSlot {
 public:
  /// The object, or nullptr before the first get(): the fast path of a caller that knows T.
  void* peek() const { return ptr_.load(std::memory_order_acquire); }

  template <class T, class Make>
  T& get(Make&& make) const {
    if (void* p = peek()) return *static_cast<T*>(p);
    std::lock_guard<std::mutex> lock(mutex_);
    if (!owner_) {
      owner_ = std::shared_ptr<T>(make());
      ptr_.store(owner_.get(), std::memory_order_release);
    }
    return *static_cast<T*>(owner_.get());
  }

 private:
  mutable std::mutex mutex_;
  mutable std::shared_ptr<void> owner_;  // keeps T's deleter
  mutable std::atomic<void*> ptr_{nullptr};
};

/// One window buffer of a comm domain: where it lies in every member's window, and its name.
struct BufferInfo {
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
  std::string name;
};

/// One comm domain as a member rank sees it.
struct DomainState {
  std::uint32_t id = 0;
  int rank = 0;                        // domain-local rank of this process
  std::vector<int> members;            // world ranks, ascending
  std::vector<std::byte*> windows_in;  // heap base of each member (nullptr if not addressable)
  std::vector<BufferInfo> buffers;     // by buffer id
  std::string label;                   // "world" or "{1, 2}"
  Backend* backend = nullptr;
  DomainSlot coll;  // the collectives' state of this domain (coll/domain_state.h)

  int nranks() const { return static_cast<int>(members.size()); }
  const std::string& buffer_name(std::uint32_t id) const;
};

/// How reports name comm domain `id` with `members`: "world" for the world (id 0), else the
/// member list, "{1, 2}".
std::string domain_label(std::uint32_t id, const std::vector<int>& members);

/// Domain `id` as world rank `world_rank` sees it: its domain-local rank is its position among
/// `members` (world ranks, ascending), and every member's window is reached through `backend`.
std::unique_ptr<DomainState> make_domain_state(std::uint32_t id, std::vector<int> members,
                                               std::vector<BufferInfo> buffers, int world_rank, Backend* backend);

}  // namespace pld::detail
