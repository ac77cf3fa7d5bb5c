// The reference model of the fuzz tests: which arguments are valid (computed in 128-bit
// arithmetic, so nothing wraps), what a valid call does to memory (element by element), value
// patterns, and how a case's outcome is judged.
#pragma once

#include "fuzz/fuzz.hpp"

#include <pld/pld.hpp>

#include <cstring>
#include <string>
#include <typeinfo>
#include <vector>

namespace pld::fuzz {

using Wide = __int128;

/// Calls `f.template operator()<T>()` with the C++ type of `dtype`.
template <class F>
decltype(auto) with_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::FP32: return f.template operator()<float>();
    case DType::FP16: return f.template operator()<fp16>();
    case DType::BF16: return f.template operator()<bf16>();
    case DType::INT32: return f.template operator()<std::int32_t>();
    case DType::INT16: return f.template operator()<std::int16_t>();
    case DType::INT8: return f.template operator()<std::int8_t>();
    case DType::INT64: return f.template operator()<std::int64_t>();
    case DType::FP64: return f.template operator()<double>();
    case DType::UINT32: return f.template operator()<std::uint32_t>();
    case DType::UINT64: return f.template operator()<std::uint64_t>();
    case DType::UINT8: break;
  }
  return f.template operator()<std::uint8_t>();
}

inline DType draw_dtype(Rng& r) {
  return static_cast<DType>(r.below(9));
}

inline bool atomic_dtype(DType d) {
  return d == DType::FP32 || d == DType::FP16 || d == DType::BF16 || d == DType::INT32 || d == DType::INT16 ||
         d == DType::INT8;
}

// ----- validity --------------------------------------------------------------------------------

/// Exact element count of a shape (no wrap); -1 for a negative extent.
inline Wide numel_exact(const Dims& s) {
  Wide n = 1;
  for (Index e : s)
    if (e < 0) return -1;
  for (Index e : s)
    if (e == 0) return 0;
  for (Index e : s) {
    n *= e;  // n <= 2^64 before, e < 2^63: no overflow
    if (n > (Wide{1} << 64)) return Wide{1} << 100;
  }
  return n;
}

/// pld's rule for a shape: no negative extent, and the product of the non-zero extents fits int64
/// (its strides must be representable, even when another extent is 0 and it has no element).
inline bool shape_ok(const Dims& s) {
  Wide n = 1;
  for (Index e : s) {
    if (e < 0) return false;
    if (e == 0) continue;
    n *= e;
    if (n > INT64_MAX) return false;
  }
  return true;
}

/// `offsets` and `extent` have the rank of `shape`, are non-negative and fit: the model's box rule.
inline bool box_ok(const Dims& shape, const Dims& offsets, const Dims& extent) {
  if (offsets.size() != shape.size() || extent.size() != shape.size()) return false;
  for (int d = 0; d < shape.size(); ++d)
    if (offsets[d] < 0 || extent[d] < 0 || Wide{offsets[d]} + extent[d] > shape[d]) return false;
  return true;
}

inline bool valid_ok(const Dims& shape, const Dims& valid) {
  if (valid.size() != shape.size()) return false;
  for (int d = 0; d < shape.size(); ++d)
    if (shape[d] < 0 || valid[d] < 0 || valid[d] > shape[d]) return false;
  return true;
}

inline Dims pad_leading(const Dims& e, int rank) {
  Dims out;
  for (int d = 0; d < rank - e.size(); ++d) out.push_back(1);
  for (Index x : e) out.push_back(x);
  return out;
}

inline Dims zeros(int rank) {
  Dims z;
  for (int d = 0; d < rank; ++d) z.push_back(0);
  return z;
}

/// Tile shapes are either small or far too large to allocate: a shape whose true size, or whose
/// size as wrapping int64 arithmetic computes it, lies between the two is never drawn (it would
/// make an unfixed library zero-fill gigabytes).
inline constexpr std::size_t kSmallTileBytes = 64 << 10;
inline constexpr Wide kHugeBytes = Wide{1} << 40;
inline bool tile_shape_drawable(const Dims& s, std::size_t esz) {
  const Wide exact = numel_exact(s);
  if (exact < 0) return true;
  const Wide bytes = exact * esz;
  if (bytes > kSmallTileBytes && bytes < kHugeBytes) return false;
  std::uint64_t wrapped = 1;
  for (Index e : s) wrapped *= static_cast<std::uint64_t>(e);
  const unsigned __int128 wbytes = static_cast<unsigned __int128>(wrapped) * esz;
  const unsigned __int128 wsize = static_cast<std::uint64_t>(wbytes);  // as size_t arithmetic wraps
  return !((wbytes > kSmallTileBytes && wbytes < kHugeBytes) || (wsize > kSmallTileBytes && wsize < kHugeBytes));
}
inline bool tile_too_big(const Dims& s, std::size_t esz) {
  const Wide exact = numel_exact(s);
  return exact >= 0 && exact * static_cast<Wide>(esz) > kSmallTileBytes;
}

/// A tile shape and valid shape for a box extent: usually the extent itself, sometimes larger
/// with the extent as valid part, sometimes a boundary value (never one in the unallocatable gap).
inline void draw_tile_shape(Rng& r, std::size_t esz, const Dims& extent, Dims& shape, Dims& valid) {
  shape = extent;
  valid = extent;
  for (int d = 0; d < shape.size(); ++d)
    if (shape[d] >= 0 && shape[d] < (Index{1} << 40) && r.chance(15)) shape[d] += r.range(1, 2);
  if (r.chance(6) && shape.size() > 0) {
    Dims s = shape;
    s[static_cast<int>(r.below(s.size()))] = boundary_index(r, 4);
    if (tile_shape_drawable(s, esz)) shape = s;
  }
  if (r.chance(4) && valid.size() < kMaxDims) valid = pad_leading(valid, valid.size() + 1);  // wrong rank
  if (!tile_shape_drawable(shape, esz)) shape = valid;
  if (!tile_shape_drawable(shape, esz)) shape = valid = zeros(extent.size());
}

// ----- memory model ----------------------------------------------------------------------------

/// Row-major array of elements of `esz` bytes at `base` (model image or real memory).
struct Area {
  std::byte* base = nullptr;
  Dims shape;
};

inline Index linear_of(const Dims& shape, const Dims& index) {
  Index lin = 0;
  for (int d = 0; d < shape.size(); ++d) lin = lin * shape[d] + index[d];
  return lin;
}

/// Small values exact in every dtype: [-3, 3] (unsigned: [0, 6]).
template <class T>
T small_value(std::uint64_t h) {
  const int v = static_cast<int>(h % 7);
  if constexpr (std::is_unsigned_v<T>)
    return static_cast<T>(v);
  else
    return static_cast<T>(static_cast<float>(v - 3));
}

template <class T>
void fill(std::byte* dst, std::size_t bytes, std::uint64_t salt) {
  T* p = reinterpret_cast<T*>(dst);
  for (std::size_t i = 0; i < bytes / sizeof(T); ++i) {
    const T v = small_value<T>((i * 0x9E3779B1u + salt) >> 7);
    std::memcpy(p + i, &v, sizeof(T));
  }
}

template <class T>
T load_elem(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

/// The model of every data move: for each index e of `extent` (rank k), element
/// `dst[doff + [0.., e]]` becomes `src[soff + [0.., e]]` (or is incremented by it when `add`);
/// `extent` lands on the trailing dimensions of both sides.
template <class T>
void model_copy(const Area& dst, const Dims& doff, const Area& src, const Dims& soff, const Dims& extent, bool add) {
  const Index n = extent.numel();
  const int k = extent.size();
  Dims e = zeros(k), di = doff, si = soff;
  for (Index t = 0; t < n; ++t) {
    for (int d = 0; d < k; ++d) {
      di[dst.shape.size() - k + d] = doff[dst.shape.size() - k + d] + e[d];
      si[src.shape.size() - k + d] = soff[src.shape.size() - k + d] + e[d];
    }
    std::byte* to = dst.base + linear_of(dst.shape, di) * static_cast<Index>(sizeof(T));
    T v = load_elem<T>(src.base + linear_of(src.shape, si) * static_cast<Index>(sizeof(T)));
    if (add) v = detail::Arith<T>::add(load_elem<T>(to), v);
    std::memcpy(to, &v, sizeof(T));
    for (int d = k - 1; d >= 0; --d) {
      if (++e[d] < extent[d]) break;
      e[d] = 0;
    }
  }
}

/// First differing byte of two images, or -1.
inline Index first_diff(const std::byte* a, const std::byte* b, std::size_t n) {
  if (n == 0 || std::memcmp(a, b, n) == 0) return -1;
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return static_cast<Index>(i);
  return -1;
}

// ----- outcome of one call ---------------------------------------------------------------------

struct Attempt {
  bool threw = false;   // a pld::Error
  std::string what;     // its message, or the raw exception's
  std::string problem;  // set when the exception itself is wrong
};

/// Runs `f`, catching what it throws: a pld::Error is an outcome, anything else a failure.
template <class F>
Attempt attempt(F&& f) {
  Attempt a;
  try {
    f();
  } catch (const WaitTimeoutError& e) {
    a.threw = true;
    a.problem = std::string("a wait timed out (a hang): ") + e.what();
  } catch (const Error& e) {
    a.threw = true;
    a.what = e.what();
  } catch (const std::exception& e) {
    a.threw = true;
    a.problem = std::string("raw ") + typeid(e).name() + " instead of a pld::Error: " + e.what();
  }
  return a;
}

/// "" when the outcome is right: success for valid arguments, a pld::Error naming `op` otherwise.
/// `either` accepts both (a valid call too large to allocate may fail).
inline std::string judge(const Attempt& a, bool valid, const char* op, bool either = false) {
  if (!a.problem.empty()) return a.problem;
  if (a.threw && !either && valid) return "valid arguments refused: " + a.what;
  if (!a.threw && !either && !valid) return "invalid arguments accepted (the model expects a pld::Error)";
  if (a.threw && a.what.find(op) == std::string::npos)
    return "the error does not name " + std::string(op) + ": " + a.what;
  return {};
}

struct Verdict {
  bool error = false;   // the call threw the pld::Error the model expected
  std::string problem;  // what went wrong, "" if nothing
};

inline Verdict verdict(const Attempt& a, bool valid, const char* op) {
  return Verdict{a.threw, judge(a, valid, op)};
}

}  // namespace pld::fuzz
