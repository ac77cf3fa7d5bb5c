// Shared blocks: the storage of HostTensors. Each block is a memfd mapped MAP_SHARED in the host;
// rank processes forked earlier receive the fd (SCM_RIGHTS) with the first dispatch that needs it,
// so a tensor created at any time is visible to every rank. Ids are never reused for other memory.
//
// A released block goes to a pool (up to PLD_TENSOR_POOL bytes, the oldest leaving first) and
// stays registered, so rank processes keep it mapped: a new tensor of the same page-rounded size
// takes it back under the same id — its pages are resident in the host and in every rank that
// touched them, and no rank maps anything. A call that passes the same shapes every time (a
// worker loop over numpy arrays) then costs copies, not page faults.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace pld::detail {

struct BlockRecord {
  std::weak_ptr<void> owner;  // the HostTensor storage; locked to keep a block alive while in flight
  int fd = -1;
  std::byte* base = nullptr;
  std::uint64_t bytes = 0;  // a whole number of pages
};

class BlockRegistry {
 public:
  static BlockRegistry& instance();

  /// Live blocks (for a fork: the child inherits their mappings).
  std::vector<std::pair<std::uint32_t, BlockRecord>> snapshot();
  /// The record of a live block; false if it was freed.
  bool find(std::uint32_t id, BlockRecord* out);

  /// The live block holding [p, p + bytes): its id, or 0 (ordinary memory, or a pooled block).
  std::uint32_t find_address(const std::byte* p, std::uint64_t bytes, BlockRecord* out);

  std::uint32_t add(const BlockRecord& record);
  void set_owner(std::uint32_t id, const std::shared_ptr<void>& owner);
  /// A pooled block of exactly `bytes` (page-rounded), taken out of the pool; 0 when none.
  std::uint32_t reuse(std::uint64_t bytes, BlockRecord* out);
  /// The last reference to block `id` went: pool it, or free it when the pool is full.
  void release(std::uint32_t id);
  /// Pooled bytes (tests, pld-info).
  std::uint64_t pooled_bytes();

 private:
  /// Unmaps and closes `record` and forgets block `id` (mutex held).
  void free_locked(std::uint32_t id);

  std::mutex mutex_;
  std::uint32_t next_id_ = 1;
  std::unordered_map<std::uint32_t, BlockRecord> blocks_;
  std::map<const std::byte*, std::uint32_t> by_base_;  // blocks_ by address (find_address)
  std::deque<std::uint32_t> pool_;                     // released blocks, oldest first
  std::uint64_t pooled_bytes_ = 0;
  std::uint64_t pool_limit_ = ~0ull;  // PLD_TENSOR_POOL, read on first release
};

}  // namespace pld::detail
