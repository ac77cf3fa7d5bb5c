// shm backend: construction and teardown. Heaps are mapped in window.cc, notify/wait live in
// signal.cc, put/get/atomic add in rma.cc.
#include "backend/shm/backend.h"
#include "core/info.h"
#include "core/log.h"

#include <pld/error.hpp>

#include <fmt/format.h>
#include <sys/mman.h>

#include <cstring>
#include <new>

namespace pld::detail {

ShmBackend::ShmBackend(int world_size, std::uint64_t heap_bytes, bool huge_pages, double wait_timeout,
                       std::int64_t wait_spin)
    : world_size_(world_size), heap_bytes_(heap_bytes), wait_timeout_(wait_timeout), wait_spin_(wait_spin) {
  cpu_atomics = true;     // atomic.cc: the read-modify-write and the wake-up, nothing else
  cpu_put_signal = true;  // rma.cc: the copy, the cell's update and the wake-up
  cpu_copies = true;      // rma.cc: put and get are copies
  try {
    control_ = new (map_memfd("pld-control", sizeof(ControlBlock))) ControlBlock();
    int refused = 0;  // errno of a refused madvise
    for (int r = 0; r < world_size; ++r) {
      try {
        bases_.push_back(map_memfd(fmt::format("pld-window-rank{}", r).c_str(), heap_bytes));
      } catch (const Error& e) {
        throw Error(
            fmt::format("pld: cannot map the window heap of rank {} of {} ({} bytes per rank, {} mapped so "
                        "far): {}; lower DistributedConfig::heap_bytes or PLD_HEAP_BYTES (every process maps "
                        "every rank's heap)",
                        r, world_size, heap_bytes, r, e.what()));
      }
      if (huge_pages && !refused) refused = advise_huge_pages(bases_.back(), heap_bytes);
    }
    if (log_enabled(LogLevel::Info, LogSys::Init)) {
      std::string pages = "4 KiB pages (PLD_HUGE_PAGES=0)";
      if (huge_pages && refused)
        pages = fmt::format("4 KiB pages (madvise MADV_HUGEPAGE: {})", std::strerror(refused));
      else if (huge_pages)
        pages = fmt::format(
            "2 MiB pages requested (kernel shmem THP mode: {}; advise, within_size, always and force "
            "grant them)",
            shmem_thp_mode());
      log(LogLevel::Info, LogSys::Init, "heaps: {} x {} bytes, {}", world_size, heap_bytes, pages);
    }
  } catch (...) {
    release();  // the destructor does not run for an object whose constructor threw
    throw;
  }
}

ShmBackend::~ShmBackend() {
  release();
}

void ShmBackend::release() {
  for (std::byte* base : bases_) munmap(base, heap_bytes_);
  bases_.clear();
  if (control_) munmap(control_, sizeof(ControlBlock));
  control_ = nullptr;
}

}  // namespace pld::detail
