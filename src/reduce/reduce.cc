// Highway "foreach_target" translation unit: this file is compiled once per SIMD target and the
// dispatcher below picks one at run time. Everything between HWY_BEFORE_NAMESPACE and
// HWY_AFTER_NAMESPACE is per target.
#include "reduce/reduce.h"

#include <pld/error.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "reduce/reduce.cc"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace pld::detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Scalar forms (tails and the types without vector instructions). Integers wrap.
template <class T>
T scalar_apply(ReduceOp op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case ReduceOp::Sum: return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      case ReduceOp::Prod: return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      case ReduceOp::Max: return a > b ? a : b;
      case ReduceOp::Min: return a < b ? a : b;
    }
  } else {
    switch (op) {
      case ReduceOp::Sum: return a + b;
      case ReduceOp::Prod: return a * b;
      case ReduceOp::Max: return a > b ? a : b;  // NaN -> b, as maxps
      case ReduceOp::Min: return a < b ? a : b;
    }
  }
  return a;
}

template <ReduceOp kOp, class V>
HWY_INLINE V vector_apply(V a, V b) {
  if constexpr (kOp == ReduceOp::Sum) return hn::Add(a, b);
  if constexpr (kOp == ReduceOp::Prod) return hn::Mul(a, b);
  if constexpr (kOp == ReduceOp::Max) return hn::Max(a, b);
  if constexpr (kOp == ReduceOp::Min) return hn::Min(a, b);
}

// Whether Highway has a vector form of kOp for T on every target (no 8-bit or 64-bit multiply).
template <class T, ReduceOp kOp>
constexpr bool kHasVector = !(kOp == ReduceOp::Prod && std::is_integral_v<T> && (sizeof(T) == 1 || sizeof(T) == 8));

template <class T, ReduceOp kOp>
void reduce_native(T* HWY_RESTRICT dst, const T* const* srcs, int nsrc, std::size_t n) {
  std::size_t i = 0;
  if constexpr (kHasVector<T, kOp>) {
    const hn::ScalableTag<T> d;
    const std::size_t lanes = hn::Lanes(d);
    for (; i + lanes <= n; i += lanes) {
      auto acc = hn::LoadU(d, srcs[0] + i);
      for (int k = 1; k < nsrc; ++k) acc = vector_apply<kOp>(acc, hn::LoadU(d, srcs[k] + i));
      hn::StoreU(acc, d, dst + i);
    }
  }
  for (; i < n; ++i) {
    T acc = srcs[0][i];
    for (int k = 1; k < nsrc; ++k) acc = scalar_apply(kOp, acc, srcs[k][i]);
    dst[i] = acc;
  }
}

// fp16 / bf16: widen to fp32, combine, round once to nearest even.
template <class H>
float half_to_float(std::uint16_t bits) {
  if constexpr (std::is_same_v<H, fp16>)
    return static_cast<float>(fp16::from_bits(bits));
  else
    return static_cast<float>(bf16::from_bits(bits));
}
template <class H>
std::uint16_t float_to_half(float f) {
  return H(f).bits;
}

// Highway converts fp16 <-> fp32 with a hardware instruction on x86 from AVX2 up (F16C). Its
// emulation on older targets (the static dispatch's SSE2/SSSE3/SSE4 baseline included) truncates
// instead of rounding, drops the sign of results below fp16's range ((-1) * 0 gives +0) and maps
// inf/NaN to finite values; there fp16 takes the element-wise loop, which rounds like fp16(float).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
constexpr bool kVectorFp16 = true;
#else
constexpr bool kVectorFp16 = false;
#endif

template <class H, ReduceOp kOp>
void reduce_half(std::uint16_t* dst, const std::uint16_t* const* srcs, int nsrc, std::size_t n) {
  const hn::ScalableTag<float> df;
  const hn::RebindToUnsigned<decltype(df)> du32;
  const hn::Rebind<std::int32_t, decltype(df)> di32;
  const hn::Rebind<std::uint16_t, decltype(df)> du16;
  using HwyHalf = std::conditional_t<std::is_same_v<H, fp16>, hwy::float16_t, hwy::bfloat16_t>;
  const hn::Rebind<HwyHalf, decltype(df)> dh;
  const std::size_t lanes = hn::Lanes(df);
  std::size_t i = 0;
  if constexpr (!std::is_same_v<H, fp16> || kVectorFp16) {
    for (; i + lanes <= n; i += lanes) {
      auto load = [&](int k) {
        if constexpr (std::is_same_v<H, fp16>) {
          return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const HwyHalf*>(srcs[k] + i)));
        } else {  // bf16 is the upper half of a float
          return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du32, hn::LoadU(du16, srcs[k] + i))));
        }
      };
      auto acc = load(0);
      for (int k = 1; k < nsrc; ++k) acc = vector_apply<kOp>(acc, load(k));
      if constexpr (std::is_same_v<H, fp16>) {
        hn::StoreU(hn::DemoteTo(dh, acc), dh, reinterpret_cast<HwyHalf*>(dst + i));
      } else {
        const auto bits = hn::BitCast(du32, acc);
        const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du32, 1));
        const auto rounded = hn::ShiftRight<16>(hn::Add(bits, hn::Add(hn::Set(du32, 0x7fffu), lsb)));
        const auto quiet = hn::ShiftRight<16>(hn::Or(bits, hn::Set(du32, 0x400000u)));
        const auto out = hn::IfThenElse(hn::RebindMask(du32, hn::IsNaN(acc)), quiet, rounded);
        hn::StoreU(hn::DemoteTo(du16, hn::BitCast(di32, out)), du16, dst + i);
      }
    }
  }
  for (; i < n; ++i) {
    float acc = half_to_float<H>(srcs[0][i]);
    for (int k = 1; k < nsrc; ++k) acc = scalar_apply(kOp, acc, half_to_float<H>(srcs[k][i]));
    dst[i] = float_to_half<H>(acc);
  }
}

template <ReduceOp kOp>
void reduce_op(void* dst, const void* const* srcs, int nsrc, std::size_t n, DType dtype) {
  auto native = [&](auto tag) {
    using T = decltype(tag);
    reduce_native<T, kOp>(static_cast<T*>(dst), reinterpret_cast<const T* const*>(srcs), nsrc, n);
  };
  switch (dtype) {
    case DType::FP32: return native(float{});
    case DType::FP64: return native(double{});
    case DType::INT32: return native(std::int32_t{});
    case DType::INT16: return native(std::int16_t{});
    case DType::INT8: return native(std::int8_t{});
    case DType::INT64: return native(std::int64_t{});
    case DType::UINT8: return native(std::uint8_t{});
    case DType::UINT32: return native(std::uint32_t{});
    case DType::UINT64: return native(std::uint64_t{});
    case DType::FP16:
      return reduce_half<fp16, kOp>(static_cast<std::uint16_t*>(dst),
                                    reinterpret_cast<const std::uint16_t* const*>(srcs), nsrc, n);
    case DType::BF16:
      return reduce_half<bf16, kOp>(static_cast<std::uint16_t*>(dst),
                                    reinterpret_cast<const std::uint16_t* const*>(srcs), nsrc, n);
  }
}

void ReduceAll(void* dst, const void* const* srcs, int nsrc, std::size_t n, DType dtype, ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return reduce_op<ReduceOp::Sum>(dst, srcs, nsrc, n, dtype);
    case ReduceOp::Max: return reduce_op<ReduceOp::Max>(dst, srcs, nsrc, n, dtype);
    case ReduceOp::Min: return reduce_op<ReduceOp::Min>(dst, srcs, nsrc, n, dtype);
    case ReduceOp::Prod: return reduce_op<ReduceOp::Prod>(dst, srcs, nsrc, n, dtype);
  }
}

const char* TargetName() {
  return hwy::TargetName(HWY_TARGET);
}

}  // namespace pld::detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace pld::detail {

HWY_EXPORT(ReduceAll);
HWY_EXPORT(TargetName);

void reduce(void* dst, const void* const* srcs, int nsrc, std::size_t count, DType dtype, ReduceOp op) {
  if (nsrc < 1) throw Error("reduce: no sources (internal error)");
  if (count == 0) return;
  if (nsrc == 1) {
    if (dst != srcs[0]) std::memmove(dst, srcs[0], count * dtype_size(dtype));
    return;
  }
  // Below one 64-byte vector the instruction set does not matter (and vector and scalar forms
  // give the same bits): skip the dispatch table.
  if (count * dtype_size(dtype) < 64) return HWY_STATIC_DISPATCH(ReduceAll)(dst, srcs, nsrc, count, dtype, op);
  HWY_DYNAMIC_DISPATCH(ReduceAll)(dst, srcs, nsrc, count, dtype, op);
}

const char* reduce_target() {
  return HWY_DYNAMIC_DISPATCH(TargetName)();
}

}  // namespace pld::detail
#endif
