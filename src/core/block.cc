#include "core/block.h"

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

std::uint32_t BlockRegistry::add(const BlockRecord& record) {
  std::lock_guard lock(mutex_);
  const std::uint32_t id = next_id_++;
  blocks_[id] = record;
  return id;
}

void BlockRegistry::set_owner(std::uint32_t id, const std::shared_ptr<void>& owner) {
  std::lock_guard lock(mutex_);
  auto it = blocks_.find(id);
  if (it != blocks_.end()) it->second.owner = owner;
}

void BlockRegistry::remove(std::uint32_t id) {
  std::lock_guard lock(mutex_);
  blocks_.erase(id);
}

SharedBlock shared_alloc(std::size_t bytes) {
  if (bytes == 0) return {};
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
  SharedBlock block;
  block.base = record.base;
  block.id = id;
  const int owned_fd = fd;
  block.owner = std::shared_ptr<void>(p, [id, bytes, owned_fd](void* base) {
    BlockRegistry::instance().remove(id);
    munmap(base, bytes);
    close(owned_fd);
  });
  BlockRegistry::instance().set_owner(id, block.owner);
  return block;
}

}  // namespace pld::detail
