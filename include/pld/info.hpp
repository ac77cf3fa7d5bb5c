// pld — introspection: the library version, the registry of environment variables (the same
// list that docs/environment.md and `pld-info --print-env` show) and the heaps' pages here.
#pragma once

#include <pld/export.hpp>

#include <string>
#include <vector>

namespace pld {

struct SettingDescription {
  std::string name;           ///< e.g. "PLD_WAIT_TIMEOUT"
  std::string type;           ///< "bytes", "seconds", "count", "string", "path"
  std::string default_value;  ///< as written in the registry
  std::string value;          ///< the value in this process's environment ("" if unset)
  std::string description;
};

/// Every environment variable pld reads, in registry order.
PLD_API std::vector<SettingDescription> describe_settings();

/// True when this pld was built with the mpi backend (Open MPI found at build time).
PLD_API bool has_mpi_backend();

/// "0.1.0"
PLD_API const char* version();

/// How the shm backend's window heaps get their pages on this machine (PLD_HUGE_PAGES and the
/// kernel's shmem THP mode), as `pld-info` prints it: "2 MiB pages requested; the kernel's shmem
/// THP mode is 'never', so they stay 4 KiB pages".
PLD_API std::string heap_pages();

}  // namespace pld
