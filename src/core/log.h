// Logging by level and subsystem, per rank: PLD_LOG=error|warn|info|debug, PLD_LOG_SUBSYS (a
// comma-separated list of subsystems whose info/debug lines are kept; errors and warnings always
// are), PLD_LOG_FILE. Every line is prefixed host:pid:rank (rank "host" for the host process) and
// names its subsystem.
#pragma once

#include <fmt/format.h>

#include <string>

namespace pld::detail {

enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3 };
/// Subsystems (PLD_LOG_SUBSYS names): init (start-up, settings), worker (the host's rank
/// processes and calls), rank (a rank's dispatches), coll (one line per collective call), debug
/// (hang reports, debug-mode checks).
enum class LogSys { Init = 0, Worker = 1, Rank = 2, Coll = 3, Debug = 4 };

/// Set once per process: -1 for the host, else the world rank.
void log_set_rank(int rank);
bool log_enabled(LogLevel level, LogSys sys = LogSys::Worker);
/// Throws UsageError if PLD_LOG is not one of error, warn, info, debug, or PLD_LOG_SUBSYS names
/// an unknown subsystem.
void log_check_level();
void log_line(LogLevel level, LogSys sys, const std::string& text);

template <class... A>
void log(LogLevel level, LogSys sys, fmt::format_string<A...> f, A&&... args) {
  if (log_enabled(level, sys)) log_line(level, sys, fmt::format(f, std::forward<A>(args)...));
}
/// Without a subsystem: the worker subsystem.
template <class... A>
void log(LogLevel level, fmt::format_string<A...> f, A&&... args) {
  if (log_enabled(level, LogSys::Worker)) log_line(level, LogSys::Worker, fmt::format(f, std::forward<A>(args)...));
}

}  // namespace pld::detail
