#include <pld/detail/checked.hpp>
#include <pld/error.hpp>
#include <pld/tensor.hpp>

#include <fmt/format.h>

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
[[noreturn]] void throw_usage(const std::string& message) {
  throw UsageError(message);
}

void throw_overflow(const char* api, const char* what, Index a, char sign, Index b) {
  throw UsageError(fmt::format("{}: {} {} {} {} overflows int64; use smaller values", api, what, a, sign, b));
}

void throw_shape_overflow(const char* api, const Dims& shape, std::size_t elem_size) {
  for (Index e : shape)
    if (e < 0)
      throw UsageError(fmt::format("{}: shape {} has a negative extent; extents must be >= 0", api, shape.str()));
  if (elem_size == 0 || !try_numel(shape))
    throw UsageError(
        fmt::format("{}: shape {} has more elements than int64 can count (the product of its extents "
                    "overflows); use smaller extents",
                    api, shape.str()));
  throw UsageError(
      fmt::format("{}: shape {} of {}-byte elements needs more bytes than int64 can count ({} elements x "
                  "{} bytes overflows); use smaller extents",
                  api, shape.str(), elem_size, *try_numel(shape), elem_size));
}
}  // namespace detail

}  // namespace pld
