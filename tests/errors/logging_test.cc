// Logging by level and subsystem: PLD_LOG_SUBSYS keeps the info/debug lines of the subsystems it
// names, every line carries host:pid:rank and its subsystem, and PLD_LOG_FILE with %r gives one
// file per rank.
#include "support.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace pld::test {
namespace {

void nothing(DistributedTensor<std::int32_t>) {}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(Logging, UnknownSubsystemIsAUsageError) {
  setenv("PLD_LOG_SUBSYS", "coll,gpu", 1);
  expect_usage_error([] { run(ranks(1), [](Host&) {}); }, "PLD_LOG_SUBSYS='coll,gpu': 'gpu' is not a subsystem");
  unsetenv("PLD_LOG_SUBSYS");
}

TEST(Logging, SubsystemsFilterInfoAndDebugLinesPerRankFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("pld-log-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  setenv("PLD_LOG", "debug", 1);
  setenv("PLD_LOG_SUBSYS", "worker", 1);
  setenv("PLD_LOG_FILE", (dir / "log.%r").c_str(), 1);
  run(ranks(2), [](Host& h) {
    auto b = h.alloc_window_buffer({2}, DType::INT32, "s");
    for (int r = 0; r < 2; ++r) h.dispatch(r, nothing, h.window<std::int32_t>(b, {2}));
  });
  unsetenv("PLD_LOG");
  unsetenv("PLD_LOG_SUBSYS");
  unsetenv("PLD_LOG_FILE");
  const std::string host = slurp(dir / "log.host");
  char name[256] = {};
  gethostname(name, sizeof name - 1);
  EXPECT_NE(host.find(std::string(name) + ":" + std::to_string(getpid()) +
                      ":host pld INFO worker started 2 rank "
                      "processes"),
            std::string::npos)
      << host;
  // The ranks' dispatch lines belong to the rank subsystem, which is filtered out.
  EXPECT_FALSE(std::filesystem::exists(dir / "log.0")) << slurp(dir / "log.0");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pld::test
