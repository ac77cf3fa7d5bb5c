#include "rank/runtime.h"

#include <pld/detail/dispatch.hpp>
#include <pld/error.hpp>

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace pld::detail {

namespace {
std::unique_ptr<RankRuntime>& slot() {
  static std::unique_ptr<RankRuntime> runtime;
  return runtime;
}
}  // namespace

RankRuntime* RankRuntime::current() {
  return slot().get();
}

RankRuntime& RankRuntime::get(const char* api) {
  if (!slot())
    throw UsageError(
        fmt::format("{}: called outside a kernel; kernel operations run inside a rank "
                    "process (pass the kernel to Host::dispatch)",
                    api));
  return *slot();
}

void RankRuntime::install(std::unique_ptr<RankRuntime> runtime) {
  slot() = std::move(runtime);
}

std::unique_ptr<RankRuntime> RankRuntime::uninstall() {
  return std::move(slot());
}

std::byte* RankRuntime::block_base(std::uint32_t id) {
  auto it = blocks_.find(id);
  if (it == blocks_.end())
    throw Error(fmt::format("pld: shared block {} was not delivered to rank {} (internal error)", id, world_rank_));
  return it->second.base;
}

void RankRuntime::block_attach(std::uint32_t id, int fd, std::uint64_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int e = errno;
  close(fd);
  if (p == MAP_FAILED)
    throw Error(
        fmt::format("pld: rank {} cannot map a host tensor of {} bytes: {}", world_rank_, bytes, std::strerror(e)));
  blocks_[id] = Block{static_cast<std::byte*>(p), bytes, true};
}

void RankRuntime::block_inherit(std::uint32_t id, std::byte* base, std::uint64_t bytes) {
  blocks_[id] = Block{base, bytes, false};
}

void RankRuntime::block_retire(std::uint32_t id) {
  auto it = blocks_.find(id);
  if (it == blocks_.end()) return;
  // Inherited mappings are the host's; unmapping our copy of the mapping is still right.
  munmap(it->second.base, it->second.bytes);
  blocks_.erase(it);
}

void RankRuntime::device_alloc(std::uint32_t id, std::uint64_t bytes) {
  if (devices_.count(id))
    throw Error(fmt::format("pld: resident tensor {} already exists on rank {} (internal error)", id, world_rank_));
  const std::uint64_t len = std::max<std::uint64_t>(bytes, 1);
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw Error(
        fmt::format("rank {} cannot allocate a resident tensor of {} bytes: {}; free tensors or allocate "
                    "less",
                    world_rank_, bytes, std::strerror(errno)));
  devices_[id] = Block{static_cast<std::byte*>(p), len, true};
}

void RankRuntime::device_free(std::uint32_t id) {
  auto it = devices_.find(id);
  if (it == devices_.end()) return;
  munmap(it->second.base, it->second.bytes);
  devices_.erase(it);
}

std::byte* RankRuntime::device_base(std::uint32_t id, std::uint64_t* bytes) {
  auto it = devices_.find(id);
  if (it == devices_.end())
    throw Error(
        fmt::format("pld: resident tensor {} does not exist on rank {}; was it allocated on another rank "
                    "(DeviceTensor::worker_id)?",
                    id, world_rank_));
  if (bytes) *bytes = it->second.bytes;
  return it->second.base;
}

std::byte* rank_block_base(std::uint32_t id) {
  return RankRuntime::get("dispatch").block_base(id);
}

std::byte* rank_device_base(std::uint32_t id) {
  return RankRuntime::get("dispatch").device_base(id);
}

}  // namespace pld::detail
