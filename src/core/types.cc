#include "core/dtype.h"

#include <pld/tensor.hpp>
#include <pld/types.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

namespace pld {

void Dims::too_many() {
  throw UsageError(
      fmt::format("Dims: more than {} dimensions; pld tensors have at most {} dimensions", kMaxDims, kMaxDims));
}

Dims Dims::drop_front() const {
  return size_ ? Dims(begin() + 1, end()) : Dims();
}

std::string Dims::str() const {
  return fmt::format("[{}]", fmt::join(begin(), end(), ", "));
}

std::size_t dtype_size(DType dtype) {
  const auto i = static_cast<std::size_t>(dtype);
  if (i < std::size(detail::kDTypeBytes)) return detail::kDTypeBytes[i];
  throw UsageError(fmt::format("dtype_size: unknown DType value {}", static_cast<int>(dtype)));
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::FP32: return "fp32";
    case DType::FP16: return "fp16";
    case DType::BF16: return "bf16";
    case DType::INT32: return "int32";
    case DType::INT16: return "int16";
    case DType::INT8: return "int8";
    case DType::INT64: return "int64";
    case DType::FP64: return "fp64";
    case DType::UINT8: return "uint8";
    case DType::UINT32: return "uint32";
    case DType::UINT64: return "uint64";
  }
  return "unknown";
}

// fp16 goes through the compiler's _Float16 (IEEE round to nearest even).
fp16::fp16(float value) {
  const _Float16 h = static_cast<_Float16>(value);
  std::memcpy(&bits, &h, sizeof bits);
}
fp16::operator float() const {
  _Float16 h;
  std::memcpy(&h, &bits, sizeof bits);
  return static_cast<float>(h);
}

// bf16: keep the upper half of the float, rounding to nearest even; NaNs stay quiet NaNs.
bf16::bf16(float value) {
  std::uint32_t u;
  std::memcpy(&u, &value, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    bits = static_cast<std::uint16_t>((u >> 16) | 0x40u);
    return;
  }
  u += 0x7fffu + ((u >> 16) & 1u);
  bits = static_cast<std::uint16_t>(u >> 16);
}
bf16::operator float() const {
  const std::uint32_t u = static_cast<std::uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

const char* to_string(NotifyOp op) {
  switch (op) {
    case NotifyOp::AtomicAdd: return "AtomicAdd";
    case NotifyOp::Set: return "Set";
  }
  return "?";
}
const char* to_string(WaitCmp cmp) {
  switch (cmp) {
    case WaitCmp::Eq: return "Eq";
    case WaitCmp::Ge: return "Ge";
    case WaitCmp::Ne: return "Ne";
    case WaitCmp::Gt: return "Gt";
    case WaitCmp::Lt: return "Lt";
    case WaitCmp::Le: return "Le";
  }
  return "?";
}
const char* to_string(AtomicType atomic) {
  switch (atomic) {
    case AtomicType::None: return "None";
    case AtomicType::Add: return "Add";
  }
  return "?";
}
const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "Sum";
    case ReduceOp::Max: return "Max";
    case ReduceOp::Min: return "Min";
    case ReduceOp::Prod: return "Prod";
  }
  return "?";
}

namespace detail {

void throw_index(const char* api, const Dims& index, const Dims& shape) {
  throw UsageError(fmt::format("{}: index {} is outside shape {}; every index must lie in [0, extent)", api,
                               index.str(), shape.str()));
}

void throw_bad_shape(const char* api, const Dims& shape) {
  throw UsageError(fmt::format("{}: shape {} has a negative extent; extents must be >= 0", api, shape.str()));
}

}  // namespace detail
}  // namespace pld
