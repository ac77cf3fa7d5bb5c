// The machine probe and the thresholds derived from it (src/core/machine.cc, thresholds.cc,
// compiled into this test): a fake sysfs tree read from a directory, CPUID merged in, each rule on
// two machines (a 2 MiB-L2 Xeon whose L3 share is 2 MiB per CPU, and a 2-CPU AMD EPYC VM), the fallbacks without cache
// information, and the environment's precedence over the derivation.
#include "core/thresholds.h"
#include "core/machine.h"
#include "fake_caches.hpp"
#include "support.hpp"

#include <pld/error.hpp>

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>

namespace pld::detail {
namespace {

namespace fs = std::filesystem;
using test::expect_usage_error;
using test::ScopedEnv;
constexpr std::uint64_t KiB = 1ull << 10, MiB = 1ull << 20;

struct FakeIndex {
  const char* level;
  const char* type;
  const char* size;
  const char* shared;
};

// A directory laid out like /sys/devices/system/cpu with cpu0/cache/index<i>/ per entry; removed
// with the object.
class FakeSysfs {
 public:
  explicit FakeSysfs(std::initializer_list<FakeIndex> levels)
      : root_(fs::temp_directory_path() / ("pld-sysfs-" + std::to_string(getpid()) + "-" + std::to_string(next_++))) {
    int i = 0;
    for (const FakeIndex& l : levels) {
      const fs::path dir = root_ / "cpu0" / "cache" / ("index" + std::to_string(i++));
      fs::create_directories(dir);
      write(dir / "level", l.level);
      write(dir / "type", l.type);
      write(dir / "size", l.size);
      write(dir / "shared_cpu_list", l.shared);
      write(dir / "coherency_line_size", "64");
    }
    fs::create_directories(root_);
  }
  ~FakeSysfs() { fs::remove_all(root_); }
  std::string path() const { return root_.string(); }

 private:
  static void write(const fs::path& p, const char* text) { std::ofstream(p) << text << "\n"; }
  static inline int next_ = 0;
  fs::path root_;
};

const FakeSysfs& epyc_vm() {
  static const FakeSysfs tree{{"1", "Data", "48K", "0"},
                              {"1", "Instruction", "32K", "0"},
                              {"2", "Unified", "1024K", "0"},
                              {"3", "Unified", "32768K", "0-1"}};
  return tree;
}

TEST(MachineProbe, ReadsCachesFromAFakeSysfsTree) {
  const Caches c = caches_from_sysfs(epyc_vm().path());
  EXPECT_EQ(c.l1d.bytes, 48 * KiB);  // the instruction cache is skipped
  EXPECT_EQ(c.l1d.sharing, 1);
  EXPECT_EQ(c.l2.bytes, 1 * MiB);
  EXPECT_EQ(c.l3.bytes, 32 * MiB);
  EXPECT_EQ(c.l3.sharing, 2);
  EXPECT_EQ(c.l3.source, Source::Sysfs);
  EXPECT_EQ(c.line_bytes, 64u);
  EXPECT_EQ(describe_caches(c),
            "L1d 48 KiB (1 CPU, sysfs), L2 1 MiB (1 CPU, sysfs), L3 32 MiB (2 CPUs, sysfs), line 64 B");
}

TEST(MachineProbe, MissingOrMalformedFilesLeaveValuesUnknown) {
  const Caches none = caches_from_sysfs("/nonexistent/pld/sysfs");
  EXPECT_EQ(none.l1d.bytes + none.l2.bytes + none.l3.bytes + none.line_bytes, 0u);
  const FakeSysfs bad{{"2", "Unified", "lots", "0"}, {"3", "Unified", "8M", "zero"}};
  const Caches c = caches_from_sysfs(bad.path());
  EXPECT_EQ(c.l2.bytes, 0u);
  EXPECT_EQ(c.l3.bytes, 8 * MiB);
  EXPECT_EQ(c.l3.sharing, 1);  // an unreadable list counts the reading CPU only
}

TEST(MachineProbe, CountsCpuLists) {
  EXPECT_EQ(count_cpu_list("0"), 1);
  EXPECT_EQ(count_cpu_list("0-1"), 2);
  EXPECT_EQ(count_cpu_list("0-3,8,10-11"), 7);
  EXPECT_EQ(count_cpu_list(""), 0);
  EXPECT_EQ(count_cpu_list("3-1"), 0);
  EXPECT_EQ(count_cpu_list("0,a"), 0);
}

TEST(MachineProbe, MergeTakesSysfsAndTheLargerSharing) {
  Caches sysfs = caches_from_sysfs(epyc_vm().path());
  sysfs.l1d = {};
  Caches cpuid;
  cpuid.l1d = {32 * KiB, 2, Source::Cpuid};
  cpuid.l3 = {64 * MiB, 16, Source::Cpuid};  // the host's sharing, seen through CPUID
  const Caches c = merge_caches(sysfs, cpuid);
  EXPECT_EQ(c.l1d.bytes, 32 * KiB);  // unknown in sysfs: CPUID's
  EXPECT_EQ(c.l1d.source, Source::Cpuid);
  EXPECT_EQ(c.l3.bytes, 32 * MiB);  // known in sysfs: sysfs's size...
  EXPECT_EQ(c.l3.sharing, 16);      // ...shared the most either one reports
  EXPECT_EQ(c.l3.source, Source::Sysfs);
}

// An AMD EPYC VM whose hypervisor leaves leaf 0x8000001D empty and sysfs without cache entries:
// its 0x80000005/6 registers, leaf 1's 254 logical processors sharing the package's 508 MiB of L3,
// and its 2 online vCPUs.
TEST(MachineProbe, SizeLeavesWhenTheTopologyLeafIsEmpty) {
  const Caches c = caches_from_size_leaves(0x300c0140u, 0x04006140u, 0x0fe09140u, 254, 2);
  EXPECT_EQ(c.l1d.bytes, 48 * KiB);
  EXPECT_EQ(c.l2.bytes, 1 * MiB);
  EXPECT_EQ(c.l2.sharing, 1);
  EXPECT_EQ(c.l3.bytes, 32512 * KiB);  // 1016 x 512 KiB over 254 / 16 ~ 16 complexes
  EXPECT_EQ(c.l3.sharing, 2);
  EXPECT_EQ(c.l3.source, Source::Cpuid);
  EXPECT_EQ(c.line_bytes, 64u);
  // A 64-CPU VM on the same host counts on its complex: 16 CPUs on 31.75 MiB.
  EXPECT_EQ(caches_from_size_leaves(0x300c0140u, 0x04006140u, 0x0fe09140u, 254, 64).l3.sharing, 16);
  const Caches intel = caches_from_size_leaves(0, 0x08007040u, 0, 0, 4);  // L2 2 MiB only
  EXPECT_EQ(intel.l1d.bytes, 0u);
  EXPECT_EQ(intel.l2.bytes, 2 * MiB);
  EXPECT_EQ(intel.l3.bytes, 0u);
  EXPECT_EQ(caches_from_size_leaves(0, 0, 0, 8, 2).l3.bytes, 0u);
}

Caches xeon_like() {
  return fake_caches(48 * KiB, 2 * MiB, 256 * MiB, 128, Source::Cpuid);
}

TEST(Thresholds, RulesOnAXeon) {
  const Caches c = xeon_like();  // C = 2 MiB + 256 MiB / 128 = 4 MiB
  EXPECT_EQ(derive_threshold(Threshold::Streaming, c).bytes, 2 * MiB);
  EXPECT_EQ(derive_threshold(Threshold::Streaming, c).source, Source::Cpuid);  // the weaker input
  EXPECT_EQ(derive_threshold(Threshold::PushStreaming, c).bytes, 1 * MiB);
  EXPECT_EQ(derive_threshold(Threshold::CopyBlock, c).bytes, 64 * KiB);
  EXPECT_EQ(derive_threshold(Threshold::TwoShotStep, c).bytes, 32 * KiB);
  EXPECT_EQ(derive_threshold(Threshold::RmaChunk, c).bytes, 256 * KiB);
  EXPECT_EQ(derive_threshold(Threshold::RmaScratch, c).bytes, 4 * MiB);
  EXPECT_EQ(derive_threshold(Threshold::AllreduceLLMax, c).bytes, 256u);
  EXPECT_EQ(derive_threshold(Threshold::CollLLMax, c).bytes, 256u);
  EXPECT_EQ(derive_threshold(Threshold::BroadcastPushMax, c).bytes, 4 * KiB);  // 48 KiB / 8, rounded down
}

TEST(Thresholds, RulesOnAnEpycVm) {
  const Caches c = caches_from_sysfs(epyc_vm().path());  // C = 1 MiB + 32 MiB / 2 = 17 MiB
  EXPECT_EQ(derive_threshold(Threshold::Streaming, c).bytes, 17 * MiB / 2);
  EXPECT_EQ(derive_threshold(Threshold::PushStreaming, c).bytes, 17 * MiB / 4);
  EXPECT_EQ(derive_threshold(Threshold::PushStreaming, c).source, Source::Sysfs);
  EXPECT_EQ(derive_threshold(Threshold::CopyBlock, c).bytes, 32 * KiB);
  EXPECT_EQ(derive_threshold(Threshold::RmaChunk, c).bytes, 128 * KiB);
  EXPECT_EQ(derive_threshold(Threshold::RmaScratch, c).bytes, 2 * MiB);
}

TEST(Thresholds, UnknownCachesGiveTheDefaults) {
  const Caches none;
  for (const ThresholdSpec& spec : threshold_specs()) {
    const ThresholdValue v = derive_threshold(spec.id, none);
    EXPECT_EQ(v.bytes, spec.fallback) << spec.rule;
    EXPECT_EQ(v.source, Source::Default) << spec.rule;
  }
  Caches l2_only;  // no L3: C is the L2
  l2_only.l2 = {2 * MiB, 1, Source::Sysfs};
  EXPECT_EQ(derive_threshold(Threshold::PushStreaming, l2_only).bytes, 512 * KiB);
}

TEST(Thresholds, TheEnvironmentOverridesTheDerivation) {
  const Caches c = xeon_like();
  {
    ScopedEnv env("PLD_PUSH_STREAMING_BYTES", "3M");
    const Thresholds t = derive_thresholds(c);
    EXPECT_EQ(t[Threshold::PushStreaming], 3 * MiB);
    EXPECT_EQ(t.value(Threshold::PushStreaming).source, Source::Env);
    EXPECT_EQ(t[Threshold::Streaming], 2 * MiB);  // the others stay derived
    EXPECT_EQ(t.value(Threshold::Streaming).source, Source::Cpuid);
  }
  {
    ScopedEnv env("PLD_PUSH_STREAMING_BYTES", "auto");
    EXPECT_EQ(derive_thresholds(c).value(Threshold::PushStreaming).source, Source::Cpuid);
  }
  {
    ScopedEnv env("PLD_COLL_LL_MAX", "0");  // 0 is a value (LL off), not "derive"
    EXPECT_EQ(derive_thresholds(c)[Threshold::CollLLMax], 0u);
  }
}

TEST(Thresholds, BadOverridesNameTheVariableAndTheFix) {
  const Caches c = xeon_like();
  {
    ScopedEnv env("PLD_COPY_BLOCK_BYTES", "1K");
    expect_usage_error([&] { derive_thresholds(c); }, "PLD_COPY_BLOCK_BYTES=1K is out of range [4 KiB, 1 GiB]");
  }
  {
    ScopedEnv env("PLD_STREAMING_BYTES", "big");
    expect_usage_error([&] { derive_thresholds(c); }, "PLD_STREAMING_BYTES='big' is not a byte size");
  }
}

TEST(Thresholds, EveryThresholdHasItsSetting) {
  for (const ThresholdSpec& spec : threshold_specs()) {
    EXPECT_EQ(&threshold_spec(spec.id), &spec);
    EXPECT_STREQ(setting_info(spec.setting).default_value, "auto") << setting_info(spec.setting).name;
    EXPECT_LE(spec.min, spec.fallback);
    EXPECT_LE(spec.fallback, spec.max);
  }
}

}  // namespace
}  // namespace pld::detail
