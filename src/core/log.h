// Logging by level, per rank: PLD_LOG=error|warn|info|debug, PLD_LOG_FILE. Every line is
// prefixed host:pid:rank (rank "host" for the host process).
#pragma once

#include <fmt/format.h>

#include <string>

namespace pld::detail {

enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3 };

/// Set once per process: -1 for the host, else the world rank.
void log_set_rank(int rank);
bool log_enabled(LogLevel level);
/// Throws UsageError if PLD_LOG is not one of error, warn, info, debug.
void log_check_level();
void log_line(LogLevel level, const std::string& text);

template <class... A>
void log(LogLevel level, fmt::format_string<A...> f, A&&... args) {
  if (log_enabled(level)) log_line(level, fmt::format(f, std::forward<A>(args)...));
}

}  // namespace pld::detail
