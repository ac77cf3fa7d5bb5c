// Shared blocks: the storage of HostTensors. Each block is a memfd mapped MAP_SHARED in the host;
// rank processes forked earlier receive the fd (SCM_RIGHTS) with the first dispatch that needs it,
// so a tensor created at any time is visible to every rank. Ids are never reused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace pld::detail {

struct BlockRecord {
  std::weak_ptr<void> owner;  // the HostTensor storage; locked to keep a block alive while in flight
  int fd = -1;
  std::byte* base = nullptr;
  std::uint64_t bytes = 0;
};

class BlockRegistry {
 public:
  static BlockRegistry& instance();

  /// Live blocks (for a fork: the child inherits their mappings).
  std::vector<std::pair<std::uint32_t, BlockRecord>> snapshot();
  /// The record of a live block; false if it was freed.
  bool find(std::uint32_t id, BlockRecord* out);

  std::uint32_t add(const BlockRecord& record);
  void set_owner(std::uint32_t id, const std::shared_ptr<void>& owner);
  void remove(std::uint32_t id);

 private:
  std::mutex mutex_;
  std::uint32_t next_id_ = 1;
  std::unordered_map<std::uint32_t, BlockRecord> blocks_;
};

}  // namespace pld::detail
