#include <pld/error.hpp>
#include <pld/tensor.hpp>

namespace pld {

Error::Error(const std::string& message) : std::runtime_error(message) {}
Error::~Error() = default;
UsageError::~UsageError() = default;
WaitTimeoutError::~WaitTimeoutError() = default;
AbortedError::~AbortedError() = default;

RankError::RankError(int rank, RankFailure cause, const std::string& message)
    : Error(message), rank_(rank), cause_(cause) {}
RankError::~RankError() = default;

const char* to_string(RankFailure cause) {
  switch (cause) {
    case RankFailure::KernelError: return "kernel error";
    case RankFailure::WaitTimeout: return "wait timeout";
    case RankFailure::Crashed: return "crashed";
    case RankFailure::Exited: return "exited";
    case RankFailure::Startup: return "startup";
  }
  return "?";
}

namespace detail {
[[noreturn]] void throw_usage(const std::string& message) { throw UsageError(message); }
}  // namespace detail

}  // namespace pld
