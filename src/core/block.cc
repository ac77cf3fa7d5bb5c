#include "core/block.h"

#include "core/settings.h"

#include <pld/error.hpp>
#include <pld/tensor.hpp>

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pld::detail {

BlockRegistry& BlockRegistry::instance() {
  static BlockRegistry* registry = new BlockRegistry();  // never destroyed: tensors may outlive main
  return *registry;
}

std::vector<std::pair<std::uint32_t, BlockRecord>> BlockRegistry::snapshot() {
  std::lock_guard lock(mutex_);
  return {blocks_.begin(), blocks_.end()};
}

bool BlockRegistry::find(std::uint32_t id, BlockRecord* out) {
  std::lock_guard lock(mutex_);
  auto it = blocks_.find(id);
  if (it == blocks_.end()) return false;
  *out = it->second;
  return true;
}

std::uint32_t BlockRegistry::find_address(const std::byte* p, std::uint64_t bytes, BlockRecord* out) {
  std::lock_guard lock(mutex_);
  auto it = by_base_.upper_bound(p);
  if (it == by_base_.begin()) return 0;
  --it;
  const BlockRecord& r = blocks_.at(it->second);
  const auto offset = static_cast<std::uint64_t>(p - r.base);
  if (offset > r.bytes || bytes > r.bytes - offset || r.owner.expired()) return 0;
  *out = r;
  return it->second;
}

std::uint32_t BlockRegistry::add(const BlockRecord& record) {
  std::lock_guard lock(mutex_);
  const std::uint32_t id = next_id_++;
  blocks_[id] = record;
  by_base_[record.base] = id;
  return id;
}

void BlockRegistry::set_owner(std::uint32_t id, const std::shared_ptr<void>& owner) {
  std::lock_guard lock(mutex_);
  auto it = blocks_.find(id);
  if (it != blocks_.end()) it->second.owner = owner;
}

std::uint32_t BlockRegistry::reuse(std::uint64_t bytes, BlockRecord* out) {
  std::lock_guard lock(mutex_);
  for (auto it = pool_.begin(); it != pool_.end(); ++it) {
    const BlockRecord& r = blocks_.at(*it);
    if (r.bytes != bytes) continue;
    const std::uint32_t id = *it;
    pool_.erase(it);
    pooled_bytes_ -= bytes;
    *out = r;
    return id;
  }
  return 0;
}

void BlockRegistry::release(std::uint32_t id) {
  std::lock_guard lock(mutex_);
  if (pool_limit_ == ~0ull) {
    try {
      pool_limit_ = setting_bytes(Setting::TensorPool);
    } catch (const Error&) {
      pool_limit_ = 0;  // a malformed value fails where a user reads it (pld-info), never in a destructor
    }
  }
  const std::uint64_t bytes = blocks_.at(id).bytes;
  if (bytes > pool_limit_) return free_locked(id);
  pool_.push_back(id);
  pooled_bytes_ += bytes;
  while (pooled_bytes_ > pool_limit_) {
    const std::uint32_t old = pool_.front();
    pool_.pop_front();
    pooled_bytes_ -= blocks_.at(old).bytes;
    free_locked(old);
  }
}

std::uint64_t BlockRegistry::pooled_bytes() {
  std::lock_guard lock(mutex_);
  return pooled_bytes_;
}

void BlockRegistry::free_locked(std::uint32_t id) {
  const BlockRecord r = blocks_.at(id);
  blocks_.erase(id);
  by_base_.erase(r.base);
  munmap(r.base, r.bytes);
  close(r.fd);
}

namespace {

// A SharedBlock over registered block `id` whose last reference returns it to the registry.
SharedBlock own_block(std::uint32_t id, const BlockRecord& record) {
  SharedBlock block;
  block.base = record.base;
  block.id = id;
  block.owner = std::shared_ptr<void>(record.base, [id](void*) { BlockRegistry::instance().release(id); });
  BlockRegistry::instance().set_owner(id, block.owner);
  return block;
}

}  // namespace

SharedBlock shared_block_at(const void* p, std::size_t bytes, std::uint64_t* offset) {
  BlockRecord record;
  const std::uint32_t id = BlockRegistry::instance().find_address(static_cast<const std::byte*>(p), bytes, &record);
  SharedBlock block;
  if (id == 0) return block;
  block.owner = record.owner.lock();
  if (!block.owner) return block;  // released since the lookup
  block.base = record.base;
  block.id = id;
  *offset = static_cast<std::uint64_t>(static_cast<const std::byte*>(p) - record.base);
  return block;
}

SharedBlock shared_alloc(std::size_t bytes, bool zero) {
  if (bytes == 0) return {};
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  bytes = (bytes + page - 1) / page * page;
  BlockRecord pooled;
  if (const std::uint32_t id = BlockRegistry::instance().reuse(bytes, &pooled)) {
    if (zero) std::memset(pooled.base, 0, bytes);
    return own_block(id, pooled);
  }
  const int fd = memfd_create("pld-tensor", MFD_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("HostTensor: memfd_create failed: {}", std::strerror(errno)));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int e = errno;
    close(fd);
    throw Error(fmt::format("HostTensor: cannot allocate {} bytes of shared memory: {}", bytes, std::strerror(e)));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    close(fd);
    throw Error(fmt::format("HostTensor: cannot map {} bytes of shared memory: {}", bytes, std::strerror(e)));
  }
  BlockRecord record{{}, fd, static_cast<std::byte*>(p), bytes};
  const std::uint32_t id = BlockRegistry::instance().add(record);
  return own_block(id, record);
}

}  // namespace pld::detail
