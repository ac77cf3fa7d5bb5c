// Window heaps of the shm backend: one memfd per rank, mapped MAP_SHARED by every process and
// advised for transparent huge pages (PLD_HUGE_PAGES).
// memfd objects never appear in /dev/shm and vanish with their last mapping, so nothing is left
// behind however the processes end.
#include "backend/shm/backend.h"
#include "core/log.h"

#include <pld/error.hpp>

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace pld::detail {

// The descriptor is closed once mapped: the mapping keeps the memory alive, and forked ranks
// inherit the mapping itself.
std::byte* map_memfd(const char* label, std::uint64_t bytes) {
  const int fd = memfd_create(label, MFD_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("pld: memfd_create({}) failed: {}", label, std::strerror(errno)));
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int e = errno;
    close(fd);
    throw Error(
        fmt::format("pld: cannot size {} to {} bytes: {}; lower PLD_HEAP_BYTES", label, bytes, std::strerror(e)));
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) {
    const int e = errno;
    close(fd);
    throw Error(fmt::format("pld: cannot map {} ({} bytes): {}; lower PLD_HEAP_BYTES", label, bytes, std::strerror(e)));
  }
  close(fd);
  return static_cast<std::byte*>(p);
}

// A hint: a kernel without THP (EINVAL) or shmem_enabled = never leaves 4 KiB pages, and the heap
// works the same. Asked before any page exists, so every fault can take a huge page.
int advise_huge_pages(std::byte* base, std::uint64_t bytes) {
  return madvise(base, bytes, MADV_HUGEPAGE) == 0 ? 0 : errno;
}

void ShmBackend::zero(int rank, std::uint64_t offset, std::size_t bytes) {
  std::memset(bases_[static_cast<std::size_t>(rank)] + offset, 0, bytes);
}

std::int32_t ShmBackend::peek(int rank, std::uint64_t offset) const {
  auto* cell = reinterpret_cast<std::int32_t*>(bases_[static_cast<std::size_t>(rank)] + offset);
  return std::atomic_ref<std::int32_t>(*cell).load(std::memory_order_acquire);
}

}  // namespace pld::detail
