// What this machine offers pld, read from the kernel (internal; pld::heap_pages in <pld/info.hpp>
// is the public summary).
#pragma once

#include <string>
#include <string_view>

namespace pld::detail {

/// The kernel's transparent-huge-page mode for shared memory: the selected word of
/// /sys/kernel/mm/transparent_hugepage/shmem_enabled ("never", "advise", ...), or "unknown" when
/// the file cannot be read (a container without /sys).
std::string shmem_thp_mode();

/// Whether that mode grants huge pages to a mapping advised with MADV_HUGEPAGE.
bool shmem_thp_grants(std::string_view mode);

}  // namespace pld::detail
