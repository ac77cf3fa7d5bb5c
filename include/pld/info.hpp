// pld — introspection: the library version, the registry of environment variables (the same
// list that docs/environment.md and `pld-info --print-env` show), the heaps' pages here, and the
// machine's caches with the size thresholds pld derives from them (`pld-info` prints both), and the
// text of a tuning file that replaces them with measured ones (`pld-bench --tune` writes it).
#pragma once

#include <pld/export.hpp>

#include <cstdint>
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

/// One size threshold that pld derives from the machine's caches (docs/performance-thresholds.md,
/// "Thresholds from the machine").
struct ThresholdDescription {
  std::string name;         ///< the environment variable that overrides it, e.g. "PLD_STREAMING_BYTES"
  std::uint64_t bytes = 0;  ///< the value in force for this process's environment
  std::string source;       ///< "sysfs", "cpuid", "default" (the caches it needs are unknown), "env" or
                            ///< "tuning file <path>" (PLD_TUNING_FILE)
  std::string rule;         ///< how it is derived, e.g. "2 x (L2 + L3 / CPUs sharing the L3)"
};

/// Every machine-derived threshold, in a fixed order. Throws UsageError when one of their
/// environment variables or the tuning file (PLD_TUNING_FILE) is malformed or out of range.
PLD_API std::vector<ThresholdDescription> describe_thresholds();

/// One threshold of a tuning file: its variable, its value, and how it was found.
struct TunedThreshold {
  std::string name;         ///< e.g. "PLD_STREAMING_BYTES"
  std::uint64_t bytes = 0;  ///< the value pld takes from the file
  std::string note;         ///< kept in the file for its readers ("" for none); pld ignores it
};

/// The text of a tuning file for this machine (its CPU model and cache sizes) that sets `values`,
/// as PLD_TUNING_FILE reads it (docs/performance-thresholds.md, "Tuning on this machine");
/// `written_by` names the tool. Throws UsageError for a name that is not a threshold's variable or
/// a value out of its range.
PLD_API std::string tuning_file_text(const std::vector<TunedThreshold>& values, const std::string& written_by);

/// The machine as pld sees it: "AMD EPYC; 2 CPUs; L1d 48 KiB (1 CPU, sysfs), L2 1 MiB (1 CPU,
/// sysfs), L3 32 MiB (2 CPUs, sysfs), line 64 B".
PLD_API std::string describe_machine();

}  // namespace pld
