// pld — the one exception family. Every failure a user can see is a pld::Error whose message
// names the operation, the offending value and what to do about it (docs/errors.md lists them).
#pragma once

#include <pld/export.hpp>

#include <stdexcept>
#include <string>

namespace pld {

/// Root of every exception pld throws.
class PLD_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message);
  ~Error() override;
};

/// Bad input or misuse of the API (wrong shape, peer out of range, dtype mismatch, ...).
/// Thrown where the mistake is detected: on the host before any rank runs when the host can know
/// it, otherwise inside the rank (and then carried back to the caller as a RankError).
class PLD_API UsageError : public Error {
 public:
  using Error::Error;
  ~UsageError() override;
};

/// Thrown inside a kernel when a wait passes its deadline; carried to the host as a RankError
/// with cause WaitTimeout and a report of every rank's wait.
class PLD_API WaitTimeoutError : public Error {
 public:
  using Error::Error;
  ~WaitTimeoutError() override;
};

/// Thrown inside a kernel whose wait was released because another rank failed.
class PLD_API AbortedError : public Error {
 public:
  using Error::Error;
  ~AbortedError() override;
};

/// Why a rank failed.
enum class RankFailure {
  KernelError,  ///< the kernel threw (the message carries the original error)
  WaitTimeout,  ///< a wait passed its deadline
  Crashed,      ///< the rank process was killed by a signal (SIGSEGV, SIGABRT, SIGKILL, ...)
  Exited,       ///< the rank process exited while it still had work
  Startup,      ///< the rank process could not be started
};

/// "kernel error", "wait timeout", "crashed", ... as RankError messages print it.
PLD_API const char* to_string(RankFailure cause);

/// A failure on a rank, reported to the host caller (pld::run, DistributedWorker).
class PLD_API RankError : public Error {
 public:
  RankError(int rank, RankFailure cause, const std::string& message);
  ~RankError() override;
  /// World rank that failed first.
  int rank() const { return rank_; }
  /// Why it failed.
  RankFailure cause() const { return cause_; }

 private:
  int rank_;
  RankFailure cause_;
};

}  // namespace pld
