// The tuning file (src/core/tuning_file.cc, compiled into this test): a good file replaces the
// derivation of the thresholds it sets and an environment variable still wins over it; a file from
// another machine is ignored with a warning; a malformed file, an unknown key and a bad value are
// UsageErrors naming the file, the key, the value and the fix; the text pld writes reads back.
#include "core/tuning_file.h"
#include "core/machine.h"
#include "core/thresholds.h"
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

Caches epyc_like() {
  return fake_caches(32 * KiB, 1 * MiB, 32 * MiB, 2);
}

constexpr const char* kModel = "Test CPU 9000";

// `thresholds` (a JSON object's members) in a file measured on kModel with epyc_like()'s caches.
std::string file_text(const std::string& thresholds, const std::string& extra = "") {
  return R"({"version": 1, "machine": {"cpu_model": "Test CPU 9000", "l1d_bytes": 32768, )"
         R"("l2_bytes": 1048576, "l3_bytes": 33554432}, "thresholds": {)" +
         thresholds + "}" + extra + "}";
}

// A file under the temporary directory, named uniquely (pld reads a path once per process), set as
// PLD_TUNING_FILE while the object lives.
class TuningFileEnv {
 public:
  explicit TuningFileEnv(const std::string& text)
      : path_(fs::temp_directory_path() /
              ("pld-tuning-" + std::to_string(getpid()) + "-" + std::to_string(next_++) + ".json")),
        env_("PLD_TUNING_FILE", path_.c_str()) {
    std::ofstream(path_) << text;
  }
  ~TuningFileEnv() { fs::remove(path_); }
  std::string path() const { return path_.string(); }

 private:
  static inline int next_ = 0;
  fs::path path_;
  ScopedEnv env_;
};

TEST(TuningFile, ItsValuesReplaceTheDerivation) {
  const TuningFileEnv file(file_text(R"("PLD_STREAMING_BYTES": 6291456, "PLD_PUSH_STREAMING_BYTES": "3M")"));
  const Thresholds t = derive_thresholds(epyc_like(), kModel);
  EXPECT_EQ(t[Threshold::Streaming], 6 * MiB);
  EXPECT_EQ(t.value(Threshold::Streaming).source, Source::TuningFile);
  EXPECT_EQ(t[Threshold::PushStreaming], 3 * MiB);
  EXPECT_EQ(t.value(Threshold::PushStreaming).source, Source::TuningFile);
  EXPECT_EQ(t.value(Threshold::CopyBlock).source, Source::Sysfs);  // not in the file: derived
  EXPECT_EQ(t[Threshold::CopyBlock], derive_threshold(Threshold::CopyBlock, epyc_like()).bytes);
  EXPECT_STREQ(source_name(Source::TuningFile), "tuning file");
}

TEST(TuningFile, TheEnvironmentWinsOverTheFile) {
  const TuningFileEnv file(file_text(R"("PLD_STREAMING_BYTES": "6M", "PLD_BROADCAST_PUSH_MAX": "2K")"));
  const ScopedEnv env("PLD_STREAMING_BYTES", "5M");
  const ScopedEnv automatic("PLD_BROADCAST_PUSH_MAX", "auto");  // auto: the file's value
  const Thresholds t = derive_thresholds(epyc_like(), kModel);
  EXPECT_EQ(t[Threshold::Streaming], 5 * MiB);
  EXPECT_EQ(t.value(Threshold::Streaming).source, Source::Env);
  EXPECT_EQ(t[Threshold::BroadcastPushMax], 2 * KiB);
  EXPECT_EQ(t.value(Threshold::BroadcastPushMax).source, Source::TuningFile);
}

TEST(TuningFile, AFileFromAnotherMachineIsIgnoredWithAWarning) {
  const TuningFileEnv file(file_text(R"("PLD_STREAMING_BYTES": "6M")"));
  Caches bigger_l2 = epyc_like();
  bigger_l2.l2.bytes = 2 * MiB;
  for (const auto& [model, caches] :
       {std::pair<std::string, Caches>{"Other CPU 1", epyc_like()}, {kModel, bigger_l2}}) {
    testing::internal::CaptureStderr();
    const Thresholds t = derive_thresholds(caches, model);
    const std::string log = testing::internal::GetCapturedStderr();
    EXPECT_EQ(t.value(Threshold::Streaming).source, Source::Sysfs) << model;
    EXPECT_EQ(t[Threshold::Streaming], derive_threshold(Threshold::Streaming, caches).bytes);
    EXPECT_NE(log.find("WARN init PLD_TUNING_FILE=" + file.path() +
                       " is ignored: it was measured on 'Test CPU 9000' "
                       "(L1d 32 KiB, L2 1 MiB, L3 32 MiB), this machine is '" +
                       model + "'"),
              std::string::npos)
        << log;
  }
  testing::internal::CaptureStderr();  // once per process and machine: no second warning
  derive_thresholds(bigger_l2, kModel);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(TuningFile, MalformedFilesNameTheFileAndTheFix) {
  {
    const TuningFileEnv file(R"({"version": 1, "machine": )");
    expect_usage_error([] { derive_thresholds(epyc_like(), kModel); },
                       "PLD_TUNING_FILE=" + file.path() + ": not JSON (");
    expect_usage_error([] { derive_thresholds(epyc_like(), kModel); }, "write the file with pld-bench --tune");
  }
  {
    const TuningFileEnv file(R"([1, 2])");
    expect_usage_error([] { derive_thresholds(epyc_like(), kModel); }, ": not a JSON object");
  }
  {
    const TuningFileEnv file(file_text("", R"(, "tresholds": {})"));
    expect_usage_error([] { derive_thresholds(epyc_like(), kModel); },
                       "unknown key 'tresholds' at the top level; the keys there are version, machine, thresholds, "
                       "notes, written_by");
  }
  {
    const TuningFileEnv file(R"({"version": 2, "machine": {}, "thresholds": {}})");
    expect_usage_error([] { derive_thresholds(epyc_like(), kModel); },
                       "version 2 is not one this pld reads (1); measure again");
  }
  {
    const TuningFileEnv file(R"({"version": 1, "thresholds": {}})");
    expect_usage_error([] { derive_thresholds(epyc_like(), kModel); }, "'machine' is missing at the top level");
  }
  {
    const ScopedEnv env("PLD_TUNING_FILE", "/nonexistent/pld/tuning.json");
    expect_usage_error([] { derive_thresholds(epyc_like(), kModel); },
                       "PLD_TUNING_FILE=/nonexistent/pld/tuning.json: the file cannot be read; name a readable");
  }
}

TEST(TuningFile, UnknownKeysAndBadValuesNameTheKeyAndTheValue) {
  {
    const TuningFileEnv file(file_text(R"("PLD_WAIT_TIMEOUT": 30)"));
    expect_usage_error([] { derive_thresholds(epyc_like(), kModel); },
                       ": unknown key 'PLD_WAIT_TIMEOUT' in 'thresholds'; the thresholds are PLD_STREAMING_BYTES, ");
  }
  {
    const TuningFileEnv file(file_text(R"("PLD_COPY_BLOCK_BYTES": 1024)"));
    expect_usage_error([&] { derive_thresholds(epyc_like(), kModel); },
                       "PLD_TUNING_FILE=" + file.path() +
                           ": PLD_COPY_BLOCK_BYTES=1024 is out of range [4 KiB, 1 GiB]; set a size in that range, or "
                           "remove the key");
  }
  {
    const TuningFileEnv file(file_text(R"("PLD_STREAMING_BYTES": "big")"));
    expect_usage_error([] { derive_thresholds(epyc_like(), kModel); },
                       ": PLD_STREAMING_BYTES='big' is not a byte size; write a count");
  }
  {
    const TuningFileEnv file(file_text(R"("PLD_STREAMING_BYTES": -4096)"));
    expect_usage_error([] { derive_thresholds(epyc_like(), kModel); },
                       ": PLD_STREAMING_BYTES=-4096 is not a byte size; write a non-negative integer");
  }
  {  // a bad file fails whatever machine it names: it is validated before it is compared
    const TuningFileEnv file(file_text(R"("PLD_COPY_BLOCK_BYTES": 1024)"));
    expect_usage_error([] { derive_thresholds(epyc_like(), "Other CPU 1"); }, "PLD_COPY_BLOCK_BYTES=1024 is out");
  }
}

TEST(TuningFile, TheTextPldWritesReadsBack) {
  const std::string text =
      tuning_file_text(kModel, epyc_like(), {{"PLD_STREAMING_BYTES", 6 * MiB}, {"PLD_BROADCAST_PUSH_MAX", 2 * KiB}},
                       {{"PLD_STREAMING_BYTES", "measured"}}, "this test");
  const TuningFile f = parse_tuning_file(text, "written.json");
  EXPECT_EQ(f.cpu_model, kModel);
  EXPECT_EQ(f.l2_bytes, 1 * MiB);
  EXPECT_EQ(f.value(Threshold::Streaming), 6 * MiB);
  EXPECT_EQ(f.value(Threshold::BroadcastPushMax), 2 * KiB);
  EXPECT_FALSE(f.value(Threshold::CopyBlock).has_value());
  EXPECT_EQ(tuning_file_mismatch(f, kModel, epyc_like()), "");
  expect_usage_error(
      [] {
        tuning_file_text(kModel, epyc_like(), {{"PLD_STREAMING", 1}}, {}, "this test");
      },
      "unknown key 'PLD_STREAMING' in 'thresholds'");
}

}  // namespace
}  // namespace pld::detail
