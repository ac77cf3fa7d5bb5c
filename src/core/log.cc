#include "core/log.h"

#include "core/settings.h"

#include <pld/error.hpp>

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>

namespace pld::detail {

namespace {
constexpr const char* kSysNames[] = {"init", "worker", "rank", "coll", "debug"};
constexpr int kSysCount = 5;

struct LogState {
  int rank = -1;
  // Resolved lazily from PLD_LOG / PLD_LOG_SUBSYS (a bit mask), and again whenever a run starts
  // (log_check_level), so each pld::run and DistributedWorker logs as its environment says.
  std::atomic<int> level{-1};
  std::atomic<int> subsys{-1};
  std::FILE* file = nullptr;
  std::mutex mutex;
};
LogState& state() {
  static LogState s;
  return s;
}

int parse_level() {
  const std::string v = setting_string(Setting::Log);
  if (v == "error") return 0;
  if (v == "warn") return 1;
  if (v == "info") return 2;
  if (v == "debug") return 3;
  return -1;
}

// Bit mask of the subsystems named in PLD_LOG_SUBSYS ("all" = every one), or -1 if a name is unknown.
int parse_subsys(std::string* bad = nullptr) {
  const std::string v = setting_string(Setting::LogSubsys);
  int mask = 0;
  std::size_t at = 0;
  while (at <= v.size()) {
    std::size_t end = v.find(',', at);
    if (end == std::string::npos) end = v.size();
    std::string name = v.substr(at, end - at);
    while (!name.empty() && name.front() == ' ') name.erase(name.begin());
    while (!name.empty() && name.back() == ' ') name.pop_back();
    at = end + 1;
    if (name.empty()) continue;
    if (name == "all") {
      mask = (1 << kSysCount) - 1;
      continue;
    }
    int i = 0;
    while (i < kSysCount && name != kSysNames[i]) ++i;
    if (i == kSysCount) {
      if (bad) *bad = name;
      return -1;
    }
    mask |= 1 << i;
  }
  return mask;
}

std::string expand(const std::string& pattern, int rank) {
  std::string out;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      const char c = pattern[++i];
      if (c == 'h')
        out += host;
      else if (c == 'p')
        out += std::to_string(getpid());
      else if (c == 'r')
        out += rank < 0 ? std::string("host") : std::to_string(rank);
      else
        out += c;
    } else {
      out += pattern[i];
    }
  }
  return out;
}
}  // namespace

void log_set_rank(int rank) {
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  s.rank = rank;
  if (s.file && s.file != stderr) std::fclose(s.file);
  s.file = nullptr;  // re-opened for the new rank (PLD_LOG_FILE may contain %r / %p)
}

void log_check_level() {
  if (parse_level() < 0)
    throw UsageError(
        fmt::format("PLD_LOG='{}' is not a log level; use error, warn, info or debug", setting_string(Setting::Log)));
  std::string bad;
  if (parse_subsys(&bad) < 0)
    throw UsageError(
        fmt::format("PLD_LOG_SUBSYS='{}': '{}' is not a subsystem; use a comma-separated list of init, "
                    "worker, rank, coll, debug, or all",
                    setting_string(Setting::LogSubsys), bad));
  LogState& s = state();
  s.level.store(parse_level(), std::memory_order_relaxed);
  s.subsys.store(parse_subsys(), std::memory_order_relaxed);
}

bool log_enabled(LogLevel level, LogSys sys) {
  LogState& s = state();
  int enabled = s.level.load(std::memory_order_relaxed);
  if (enabled < 0) {
    enabled = parse_level() < 0 ? 1 : parse_level();
    s.level.store(enabled, std::memory_order_relaxed);
  }
  if (static_cast<int>(level) > enabled) return false;
  if (level <= LogLevel::Warn) return true;
  int mask = s.subsys.load(std::memory_order_relaxed);
  if (mask < 0) {
    mask = parse_subsys() < 0 ? (1 << kSysCount) - 1 : parse_subsys();
    s.subsys.store(mask, std::memory_order_relaxed);
  }
  return (mask >> static_cast<int>(sys)) & 1;
}

void log_line(LogLevel level, LogSys sys, const std::string& text) {
  static const char* kNames[] = {"ERROR", "WARN", "INFO", "DEBUG"};
  LogState& s = state();
  std::lock_guard lock(s.mutex);
  if (!s.file) {
    const std::string path = setting_string(Setting::LogFile);
    s.file = path.empty() ? stderr : std::fopen(expand(path, s.rank).c_str(), "a");
    if (!s.file) s.file = stderr;
  }
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::string who = s.rank < 0 ? std::string("host") : std::to_string(s.rank);
  std::fprintf(s.file, "%s:%d:%s pld %s %s %s\n", host, static_cast<int>(getpid()), who.c_str(),
               kNames[static_cast<int>(level)], kSysNames[static_cast<int>(sys)], text.c_str());
  std::fflush(s.file);
}

}  // namespace pld::detail
