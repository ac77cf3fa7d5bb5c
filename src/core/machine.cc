#include "core/machine.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace pld::detail {

namespace {

std::string read_line(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::string line;
  std::getline(f, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

// "48K", "1024K", "32M", "512" (sysfs writes K); 0 when malformed.
std::uint64_t parse_cache_size(const std::string& text) {
  std::size_t i = 0;
  std::uint64_t v = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i)
    v = v * 10 + static_cast<std::uint64_t>(text[i] - '0');
  if (i == 0 || v > (1ull << 40)) return 0;
  const std::string unit = text.substr(i);
  if (unit.empty() || unit == "B") return v;
  if (unit == "K" || unit == "KiB") return v << 10;
  if (unit == "M" || unit == "MiB") return v << 20;
  if (unit == "G" || unit == "GiB") return v << 30;
  return 0;
}

template <class C>
auto* level_slot(C& c, int level) {
  using Slot = decltype(&c.l1d);
  switch (level) {
    case 1: return &c.l1d;
    case 2: return &c.l2;
    case 3: return &c.l3;
    default: return static_cast<Slot>(nullptr);
  }
}

// Fills `c` from one CPUID cache descriptor (leaf 4 and 0x8000001D share the layout).
bool add_cpuid_level(Caches& c, unsigned a, unsigned b, unsigned cc) {
  const unsigned type = a & 31u;  // 0 none, 1 data, 2 instruction, 3 unified
  if (type == 0) return false;
  if (type == 2) return true;
  CacheLevel* slot = level_slot(c, static_cast<int>((a >> 5) & 7u));
  if (slot == nullptr) return true;
  const std::uint64_t ways = ((b >> 22) & 0x3ffu) + 1, parts = ((b >> 12) & 0x3ffu) + 1, line = (b & 0xfffu) + 1;
  slot->bytes = ways * parts * line * (static_cast<std::uint64_t>(cc) + 1);
  slot->sharing = static_cast<int>(((a >> 14) & 0xfffu) + 1);
  slot->source = Source::Cpuid;
  c.line_bytes = line;
  c.line_source = Source::Cpuid;
  return true;
}

#if defined(__x86_64__) || defined(__i386__)
// The logical processors of this package as leaf 1 names them (EBX[23:16], valid with EDX.HTT).
int package_cpus() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  __cpuid(1, a, b, c, d);
  return ((d >> 28) & 1u) ? static_cast<int>((b >> 16) & 0xffu) : 0;
}
#endif

int online_cpus() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    const auto begin = line.find_first_not_of(' ', colon + 1);
    return begin == std::string::npos ? "unknown" : line.substr(begin);
  }
  return "unknown";
}

}  // namespace

const char* source_name(Source s) {
  switch (s) {
    case Source::Default: return "default";
    case Source::Sysfs: return "sysfs";
    case Source::Cpuid: return "cpuid";
    case Source::Env: return "env";
    case Source::TuningFile: return "tuning file";
  }
  return "?";
}

int count_cpu_list(const std::string& list) {
  int count = 0;
  std::size_t i = 0;
  auto number = [&](long& out) {
    const std::size_t start = i;
    out = 0;
    for (; i < list.size() && list[i] >= '0' && list[i] <= '9'; ++i) out = out * 10 + (list[i] - '0');
    return i > start && out < (1L << 20);
  };
  while (i < list.size()) {
    long lo = 0, hi = 0;
    if (!number(lo)) return 0;
    hi = lo;
    if (i < list.size() && list[i] == '-' && (++i, !number(hi))) return 0;
    if (hi < lo) return 0;
    count += static_cast<int>(hi - lo + 1);
    if (i < list.size() && list[i] != ',') return 0;
    if (i < list.size()) ++i;
  }
  return count;
}

Caches caches_from_sysfs(const std::string& root) {
  Caches c;
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::path(root) / "cpu0" / "cache";
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind("index", 0) != 0) continue;
    const std::string type = read_line(it->path() / "type");
    if (type != "Data" && type != "Unified") continue;
    const std::string level = read_line(it->path() / "level");
    CacheLevel* slot = level_slot(c, level.size() == 1 ? level[0] - '0' : 0);
    const std::uint64_t bytes = parse_cache_size(read_line(it->path() / "size"));
    if (slot == nullptr || bytes == 0) continue;
    slot->bytes = bytes;
    slot->sharing = std::max(1, count_cpu_list(read_line(it->path() / "shared_cpu_list")));
    slot->source = Source::Sysfs;
    const std::uint64_t line = parse_cache_size(read_line(it->path() / "coherency_line_size"));
    if (line >= 16 && line <= 1024) {
      c.line_bytes = line;
      c.line_source = Source::Sysfs;
    }
  }
  return c;
}

Caches caches_from_cpuid() {
  Caches c;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, cc = 0, d = 0;
  __cpuid(0x80000000u, a, b, cc, d);
  const bool amd_leaf = a >= 0x8000001Du;
  __cpuid(0, a, b, cc, d);
  const bool intel_leaf = a >= 4;
  // AMD reports its cache topology in 0x8000001D (leaf 4 is reserved there); Intel in leaf 4.
  const unsigned leaf = (amd_leaf && b == 0x68747541u /* "Auth" */) ? 0x8000001Du : (intel_leaf ? 4u : 0u);
  for (unsigned sub = 0; leaf != 0 && sub < 16; ++sub) {
    __cpuid_count(leaf, sub, a, b, cc, d);
    if (!add_cpuid_level(c, a, b, cc)) break;
  }
  __cpuid(0x80000000u, a, b, cc, d);
  if (c.l1d.bytes == 0 && c.l2.bytes == 0 && a >= 0x80000006u) {  // a VM may leave the topology leaf empty
    unsigned l1 = 0, l2 = 0, l3 = 0;
    __cpuid(0x80000005u, a, b, l1, d);
    __cpuid(0x80000006u, a, b, l2, l3);
    c = caches_from_size_leaves(l1, l2, l3, package_cpus(), online_cpus());
  }
#endif
  return c;
}

Caches caches_from_size_leaves(unsigned l1_ecx, unsigned l2_ecx, unsigned l3_edx, int package_cpus, int online_cpus) {
  Caches c;
  auto set = [&c](CacheLevel& slot, std::uint64_t bytes, unsigned line, int sharing) {
    if (bytes == 0) return;
    slot = {bytes, std::max(1, sharing), Source::Cpuid};
    if (c.line_bytes == 0 && line >= 16) {
      c.line_bytes = line;
      c.line_source = Source::Cpuid;
    }
  };
  set(c.l1d, static_cast<std::uint64_t>(l1_ecx >> 24) << 10, l1_ecx & 0xffu, 1);  // KiB
  set(c.l2, static_cast<std::uint64_t>(l2_ecx >> 16) << 10, l2_ecx & 0xffu, 1);   // KiB
  // The package's L3 in 512 KiB units, as one instance per core complex of kL3ComplexCpus.
  const std::uint64_t package_l3 = static_cast<std::uint64_t>(l3_edx >> 18) << 19;
  const int complexes = std::max(1, (package_cpus + kL3ComplexCpus / 2) / kL3ComplexCpus);  // nearest
  set(c.l3, package_l3 / static_cast<std::uint64_t>(complexes), l3_edx & 0xffu,
      std::clamp(online_cpus, 1, kL3ComplexCpus));
  return c;
}

Caches merge_caches(const Caches& sysfs, const Caches& cpuid) {
  Caches c = sysfs;
  for (int level = 1; level <= 3; ++level) {
    CacheLevel& out = *level_slot(c, level);
    const CacheLevel& other = *level_slot(cpuid, level);
    if (out.bytes == 0)
      out = other;
    else if (other.bytes != 0)
      out.sharing = std::max(out.sharing, other.sharing);
  }
  if (c.line_bytes == 0) {
    c.line_bytes = cpuid.line_bytes;
    c.line_source = cpuid.line_source;
  }
  return c;
}

MachineInfo probe_machine(const std::string& sysfs_root) {
  MachineInfo m;
  m.cpu_model = cpu_model();
  m.cpus = online_cpus();
  m.caches = merge_caches(caches_from_sysfs(sysfs_root), caches_from_cpuid());
  return m;
}

const MachineInfo& machine() {
  static const MachineInfo info = probe_machine();
  return info;
}

std::string format_bytes(std::uint64_t bytes) {
  if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0) return fmt::format("{} GiB", bytes >> 30);
  if (bytes >= (1ull << 20) && bytes % (1ull << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1ull << 10) && bytes % (1ull << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

std::string describe_caches(const Caches& c) {
  auto level = [](const char* name, const CacheLevel& l) {
    if (l.bytes == 0) return fmt::format("{} unknown", name);
    return fmt::format("{} {} ({} CPU{}, {})", name, format_bytes(l.bytes), l.sharing, l.sharing == 1 ? "" : "s",
                       source_name(l.source));
  };
  return fmt::format("{}, {}, {}, line {}", level("L1d", c.l1d), level("L2", c.l2), level("L3", c.l3),
                     c.line_bytes ? format_bytes(c.line_bytes) : std::string("unknown"));
}

}  // namespace pld::detail
