// What the machine reports about itself: its CPU model, its online CPUs and its data caches (size,
// line size and how many logical CPUs share each level). core/thresholds.cc derives pld's size
// thresholds from it. Read once per process (machine()); the readers take their inputs as
// arguments so that tests can hand them a fake sysfs tree.
#pragma once

#include <cstdint>
#include <string>

namespace pld::detail {

/// Where a value came from, as pld-info prints it (TuningFile: PLD_TUNING_FILE, core/tuning_file.h).
enum class Source { Default, Sysfs, Cpuid, Env, TuningFile };
const char* source_name(Source s);

/// One data (or unified) cache level as seen from CPU 0. bytes == 0: the level is unknown.
struct CacheLevel {
  std::uint64_t bytes = 0;
  int sharing = 0;  ///< logical CPUs that share one instance (>= 1 when bytes > 0)
  Source source = Source::Default;
};

struct Caches {
  CacheLevel l1d, l2, l3;
  std::uint64_t line_bytes = 0;  ///< coherency line size; 0: unknown
  Source line_source = Source::Default;
};

struct MachineInfo {
  std::string cpu_model;  ///< "AMD EPYC", from /proc/cpuinfo; "unknown" when it cannot be read
  int cpus = 1;           ///< online logical CPUs
  Caches caches;
};

/// The default sysfs directory of the CPUs (holds cpu0/cache/index*/).
inline constexpr const char* kSysfsCpuRoot = "/sys/devices/system/cpu";

/// Caches of cpu0 under `root` (a directory laid out like /sys/devices/system/cpu): every
/// cpu0/cache/index*/ with type Data or Unified gives its level's size, shared_cpu_list and
/// coherency_line_size. Missing or unreadable files leave their values unknown (0).
Caches caches_from_sysfs(const std::string& root);

/// Caches from the CPUID instruction (x86: leaf 4 on Intel, 0x8000001D on AMD; where a hypervisor
/// leaves that leaf empty, the size leaves 0x80000005/6 through caches_from_size_leaves(); elsewhere
/// none).
Caches caches_from_cpuid();

/// Logical CPUs of one L3 instance where CPUID gives only the package's L3: an AMD core complex
/// (8 cores, 2 threads each, since Zen 3), the only x86 parts that report an L3 in 0x80000006.
inline constexpr int kL3ComplexCpus = 16;

/// Caches from the registers of the size-only leaves: `l1_ecx` of 0x80000005 (L1d), `l2_ecx` and
/// `l3_edx` of 0x80000006 (L2, and the package's L3; Intel leaves 0x80000005 and the L3 field
/// zero). These leaves name no sharing: L1d and L2 count as one CPU's; the L3 as one instance per
/// kL3ComplexCpus of the package's `package_cpus` logical CPUs (leaf 1; 0 = unknown: one
/// instance), shared by this machine's `online_cpus` up to kL3ComplexCpus — the complex a VM's
/// vCPUs run in. Zero fields stay unknown.
Caches caches_from_size_leaves(unsigned l1_ecx, unsigned l2_ecx, unsigned l3_edx, int package_cpus, int online_cpus);

/// One view of both: sysfs where it knows a value, CPUID for the rest; a level's sharing is the
/// larger of the two counts (a VM's sysfs counts only its own vCPUs, while CPUID may name every
/// logical CPU of the host that shares the cache — the share pld can count on is the smaller).
Caches merge_caches(const Caches& sysfs, const Caches& cpuid);

/// Number of CPUs in a cpulist such as "0-3,8,10-11" (0 when it cannot be parsed).
int count_cpu_list(const std::string& list);

/// Reads the machine: caches_from_sysfs(sysfs_root) merged with caches_from_cpuid(), the online
/// CPUs, the CPU model.
MachineInfo probe_machine(const std::string& sysfs_root = kSysfsCpuRoot);

/// probe_machine() of this process, read once.
const MachineInfo& machine();

/// "L1d 48 KiB, L2 1 MiB (1 CPU), L3 32 MiB (2 CPUs), line 64 B" — for pld-info and logs.
std::string describe_caches(const Caches& c);

/// 4096 -> "4 KiB", 3 << 20 -> "3 MiB", 100 -> "100 B".
std::string format_bytes(std::uint64_t bytes);

}  // namespace pld::detail
