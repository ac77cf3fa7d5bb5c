// pld — value types shared by the host and the kernel side: indices, shapes, element types and
// the ABI enums of the model (NotifyOp, WaitCmp, AtomicType, ReduceOp).
#pragma once

#include <pld/export.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>

namespace pld {

/// Element index and extent type (signed, so that `r - 1` never wraps).
using Index = std::int64_t;

/// Maximum tensor rank (number of dimensions) pld handles.
inline constexpr int kMaxDims = 8;

/// Largest core_num of a collective (threads splitting one rank's share of the work).
inline constexpr int kMaxCoreNum = 16;

/// A shape or an offset vector, written as a braced list: `{1, 256}`. Fixed capacity, no heap.
class PLD_API Dims {
 public:
  constexpr Dims() = default;
  Dims(std::initializer_list<Index> values) {
    for (Index v : values) push_back(v);
  }
  template <class It>
  Dims(It first, It last) {
    for (; first != last; ++first) push_back(static_cast<Index>(*first));
  }

  /// Number of entries; element access and iteration as for a std::vector.
  constexpr int size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr Index operator[](int i) const { return v_[i]; }
  constexpr Index& operator[](int i) { return v_[i]; }
  constexpr const Index* begin() const { return v_; }
  constexpr const Index* end() const { return v_ + size_; }
  constexpr Index back() const { return v_[size_ - 1]; }
  /// Appends an entry; throws UsageError past kMaxDims.
  void push_back(Index value) {
    if (size_ == kMaxDims) too_many();
    v_[size_++] = value;
  }

  /// Product of the extents (1 for an empty Dims).
  constexpr Index numel() const {
    Index n = 1;
    for (int i = 0; i < size_; ++i) n *= v_[i];
    return n;
  }
  /// The dims without the leading one.
  Dims drop_front() const;
  /// `[a, b, c]`
  std::string str() const;

  friend constexpr bool operator==(const Dims& a, const Dims& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  [[noreturn]] static void too_many();
  Index v_[kMaxDims] = {};
  int size_ = 0;
};

/// Element types of tensors and windows. The numeric values are part of the ABI (frames, traces).
enum class DType : std::uint8_t { FP32, FP16, BF16, INT32, INT16, INT8, INT64, FP64, UINT8, UINT32, UINT64 };

/// Bytes per element.
PLD_API std::size_t dtype_size(DType dtype);
/// "fp32", "fp16", ... as the model writes them.
PLD_API const char* dtype_name(DType dtype);

/// IEEE 754 binary16. Conversions round to nearest even; arithmetic is done in float.
struct PLD_API fp16 {
  std::uint16_t bits = 0;
  constexpr fp16() = default;
  /// From float (round to nearest even), to float (exact), from the raw bits.
  explicit fp16(float value);
  operator float() const;
  static constexpr fp16 from_bits(std::uint16_t b) {
    fp16 h;
    h.bits = b;
    return h;
  }
};

/// bfloat16 (the upper half of a float). Conversions round to nearest even; NaN stays NaN.
struct PLD_API bf16 {
  std::uint16_t bits = 0;
  constexpr bf16() = default;
  /// From float (round to nearest even), to float (exact), from the raw bits.
  explicit bf16(float value);
  operator float() const;
  static constexpr bf16 from_bits(std::uint16_t b) {
    bf16 h;
    h.bits = b;
    return h;
  }
};

namespace detail {
template <class T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::FP32;
};
template <>
struct DTypeOf<fp16> {
  static constexpr DType value = DType::FP16;
};
template <>
struct DTypeOf<bf16> {
  static constexpr DType value = DType::BF16;
};
template <>
struct DTypeOf<std::int32_t> {
  static constexpr DType value = DType::INT32;
};
template <>
struct DTypeOf<std::int16_t> {
  static constexpr DType value = DType::INT16;
};
template <>
struct DTypeOf<std::int8_t> {
  static constexpr DType value = DType::INT8;
};
template <>
struct DTypeOf<std::int64_t> {
  static constexpr DType value = DType::INT64;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::FP64;
};
template <>
struct DTypeOf<std::uint8_t> {
  static constexpr DType value = DType::UINT8;
};
template <>
struct DTypeOf<std::uint32_t> {
  static constexpr DType value = DType::UINT32;
};
template <>
struct DTypeOf<std::uint64_t> {
  static constexpr DType value = DType::UINT64;
};
}  // namespace detail

/// True for the C++ types that are pld element types.
template <class T>
concept Element = requires {
  detail::DTypeOf<std::remove_cv_t<T>>::value;
};

/// The DType of a C++ element type: `dtype_of<float> == DType::FP32`.
template <Element T>
inline constexpr DType dtype_of = detail::DTypeOf<std::remove_cv_t<T>>::value;

/// notify: what happens to the peer's cell. Values are the model's ABI.
enum class NotifyOp : int { AtomicAdd = 0, Set = 1 };
/// wait: how the local cell is compared with the expected value (signed int32): the wait
/// returns once `cell cmp expected` holds (Ne: !=, Gt: >, Lt: <, Le: <=).
enum class WaitCmp : int { Eq = 0, Ge = 1, Ne = 2, Gt = 3, Lt = 4, Le = 5 };
/// put / remote_store: plain store or element-wise atomic add into the peer's window.
enum class AtomicType : int { None = 0, Add = 1 };
/// Reduction operator of the collectives.
enum class ReduceOp : int { Sum = 0, Max = 1, Min = 2, Prod = 3 };

/// The enumerator's name ("AtomicAdd", "Ge", "Add", "Sum", ...).
PLD_API const char* to_string(NotifyOp op);
PLD_API const char* to_string(WaitCmp cmp);
PLD_API const char* to_string(AtomicType atomic);
PLD_API const char* to_string(ReduceOp op);

}  // namespace pld
