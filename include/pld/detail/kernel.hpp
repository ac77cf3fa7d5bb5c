// pld — plumbing of the kernel side (internal; included by kernel.hpp): type-erased operands
// (a rank-local array or a window view bound to its domain) and the entry points the public
// templates of kernel.hpp, collectives.hpp and task.hpp call.
#pragma once

#include <pld/error.hpp>
#include <pld/export.hpp>
#include <pld/tensor.hpp>
#include <pld/types.hpp>
#include <pld/window.hpp>

#include <algorithm>
#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace pld {

template <Element T>
class Tile;
struct PutOptions;
struct GetOptions;

namespace detail {

PLD_API Dims checked_valid(const char* api, const Dims& shape, const Dims& valid);
/// Element count of a tile of `shape`, after checking that its byte size fits an Index and this
/// machine's memory (UsageError naming `op`, the shape and the size otherwise).
PLD_API std::size_t tile_elements(const char* api, const Dims& shape, std::size_t elem_size);
[[noreturn]] PLD_API void throw_tile_alloc(const char* api, const Dims& shape, std::size_t elem_size);

/// Zero-filled storage of a tile of `shape`; a failed allocation is a UsageError naming `op`.
template <class T>
std::vector<T> tile_storage(const char* api, const Dims& shape) {
  const std::size_t n = tile_elements(api, shape, sizeof(T));
  try {
    return std::vector<T>(n);
  } catch (const std::bad_alloc&) {
    throw_tile_alloc(api, shape, sizeof(T));
  } catch (const std::length_error&) {
    throw_tile_alloc(api, shape, sizeof(T));
  }
}

/// Type-erased operands: a rank-local array, or a window view bound to its domain (WindowDesc,
/// detail/window.hpp).
struct LocalDesc {
  std::byte* data = nullptr;
  Dims shape;
  DType dtype = DType::FP32;
  Dims valid;  // tiles only; equals shape otherwise
};

template <class T>
LocalDesc desc(const Tensor<T>& t) {
  return {reinterpret_cast<std::byte*>(t.data()), t.shape(), dtype_of<T>, t.shape()};
}
template <class T>
LocalDesc desc(const Tile<T>& t) {
  return {reinterpret_cast<std::byte*>(const_cast<T*>(t.data())), t.shape(), dtype_of<T>, t.valid_shape()};
}
template <class T>
const WindowDesc& desc(const DistributedTensor<T>& t) {
  return t.desc();
}

/// A window view by address: its parts, nothing of it copied on the way.
struct ViewRef {
  const DomainState* state;
  const WindowRef* ref;
  const Dims* shape;
  DType dtype;
};
template <class T>
ViewRef view_ref(const DistributedTensor<T>& t) {
  return {t.state(), &t.ref(), &t.shape(), dtype_of<T>};
}
/// A rank-local operand by address (a put's source, a get's destination): a rank-local array
/// (`data`, shape and dtype in `view`) or, with `window`, the calling rank's own copy of the
/// window view `view`.
struct LocalRef {
  ViewRef view;
  std::byte* data;
  bool window;
};
template <class T>
LocalRef local_ref(const Tensor<T>& t) {
  return {{nullptr, nullptr, &t.shape(), dtype_of<T>}, reinterpret_cast<std::byte*>(t.data()), false};
}
template <class T>
LocalRef local_ref(const DistributedTensor<T>& t) {
  return {view_ref(t), nullptr, true};
}
/// A full-slice put (tensor::put, tensor::put_nbi) as the templates hand it over: every
/// operand by address.
struct PutCall {
  ViewRef dst;
  int peer;
  LocalRef src;
  const PutOptions* options;
  bool nbi;
};
/// The one entry of the full-slice put templates: validates, records, moves the data.
PLD_API void put(const PutCall& call);
/// A full-slice get (tensor::get, tensor::get_nbi) as the templates hand it over.
struct GetCall {
  LocalRef dst;
  int peer;
  ViewRef src;
  const GetOptions* options;
  bool nbi;
};
/// The one entry of the full-slice get templates: validates, records, moves the data.
PLD_API void get(const GetCall& call);

/// The calling rank's own copy of a window view, as a local array.
PLD_API LocalDesc window_local(const char* api, const WindowDesc& w);

/// The race detector's hooks for a language binding (PLD_DEBUG=race): the running kernel's name
/// in reports, and a source of the caller's own frames, called for every access the detector
/// records (it writes them to `note` and returns true, or returns false for none).
PLD_API void race_kernel_name(const char* name);
/// Whether the race detector runs in this process (a binding skips its hooks when it does not).
PLD_API bool race_checking();
using RaceNoteFn = bool (*)(std::string* note);
PLD_API void race_note_source(RaceNoteFn fn);

PLD_API void notify(const WindowDesc& signal, int peer, const Dims& offsets, std::int32_t value, NotifyOp op);
PLD_API void wait(const WindowDesc& signal, const Dims& offsets, std::int32_t expected, WaitCmp cmp);
PLD_API void defer_wait(const WindowDesc& signal, const Dims& offsets, std::int32_t expected, WaitCmp cmp);

/// The checks of tile_load / remote_load alone, on a tile not yet allocated (`tile.data` unused).
PLD_API void check_tile_load(const char* api, const LocalDesc& tile, const LocalDesc& src, const Dims& offsets);
PLD_API void check_remote_load(const LocalDesc& tile, const WindowDesc& src, int peer, const Dims& offsets);
PLD_API void tile_load(const char* api, LocalDesc& tile, const LocalDesc& src, const Dims& offsets);
PLD_API void tile_store(const char* api, const LocalDesc& tile, const LocalDesc& dst, const Dims& offsets);
PLD_API void element_read(const char* api, const LocalDesc& src, const Dims& offsets, void* value);
PLD_API void element_write(const char* api, const LocalDesc& dst, const Dims& offsets, const void* value);
PLD_API void remote_load(LocalDesc& tile, const WindowDesc& src, int peer, const Dims& offsets);
PLD_API void remote_store(const char* api, const LocalDesc& src, const WindowDesc& dst, int peer, const Dims& offsets,
                          AtomicType atomic);
PLD_API void put(const WindowDesc& dst, int peer, const LocalDesc& src, const Dims* dst_offsets,
                 const Dims* src_offsets, const Dims* shape, const PutOptions& options);
PLD_API void get(const LocalDesc& dst, int peer, const WindowDesc& src, const Dims* dst_offsets,
                 const Dims* src_offsets, const Dims* shape, const GetOptions& options);
PLD_API void check_same_shape(const char* api, const Dims& a, const Dims& b);

/// A tile of `shape` / `valid`, allocated only after its size and `check(tile)` (the calling
/// operation's own checks) passed: a bad call fails before any memory is taken.
template <class T, class Check>
Tile<T> checked_tile(const char* api, const Dims& shape, const Dims& valid, Check&& check) {
  const LocalDesc probe{nullptr, shape, dtype_of<T>, checked_valid(api, shape, valid)};
  tile_elements(api, shape, sizeof(T));
  check(probe);
  return Tile<T>(shape, valid);
}

/// tile::load from a rank-local array.
template <class T>
Tile<T> load_tile(const LocalDesc& src, const Dims& offsets, const Dims& shape, const Dims& valid) {
  Tile<T> t = checked_tile<T>("tile::load", shape, valid,
                              [&](const LocalDesc& probe) { check_tile_load("tile::load", probe, src, offsets); });
  auto d = desc(t);
  tile_load("tile::load", d, src, offsets);
  return t;
}

template <class T, class F>
Tile<T> elementwise(const char* api, const Tile<T>& a, const Tile<T>& b, F f) {
  check_same_shape(api, a.shape(), b.shape());
  Dims valid = a.valid_shape();
  for (int d = 0; d < valid.size(); ++d) valid[d] = std::min(valid[d], b.valid_shape()[d]);
  Tile<T> out(a.shape(), valid);
  const T* x = a.data();
  const T* y = b.data();
  T* z = out.data();
  const Dims& shape = a.shape();
  const bool all_valid = valid == shape;
  for (Index i = 0, n = a.numel(); i < n; ++i) {
    bool inside = all_valid;
    if (!inside) {  // elements outside the valid box stay zero
      inside = true;
      for (Index rest = i, d = shape.size() - 1; d >= 0 && inside; --d) {
        inside = rest % shape[static_cast<int>(d)] < valid[static_cast<int>(d)];
        rest /= shape[static_cast<int>(d)];
      }
    }
    z[i] = inside ? f(x[i], y[i]) : T{};
  }
  return out;
}

/// Element arithmetic: integers wrap (computed unsigned), fp16/bf16 in float rounded once.
template <class T, bool = std::is_integral_v<T>>
struct ArithType {
  using type = std::conditional_t<std::is_same_v<T, fp16> || std::is_same_v<T, bf16>, float, T>;
};
template <class T>
struct ArithType<T, true> {
  using type = std::make_unsigned_t<T>;
};

template <class T>
struct Arith {
  using C = typename ArithType<T>::type;
  static T add(T x, T y) { return static_cast<T>(static_cast<C>(static_cast<C>(x) + static_cast<C>(y))); }
  static T sub(T x, T y) { return static_cast<T>(static_cast<C>(static_cast<C>(x) - static_cast<C>(y))); }
  static T mul(T x, T y) { return static_cast<T>(static_cast<C>(static_cast<C>(x) * static_cast<C>(y))); }
  static T max(T x, T y) { return less(y, x) ? x : y; }  // NaN: the second operand, as the collectives
  static T min(T x, T y) { return less(x, y) ? x : y; }
  static bool less(T x, T y) {
    using F = std::conditional_t<std::is_same_v<T, fp16> || std::is_same_v<T, bf16>, float, T>;
    return static_cast<F>(x) < static_cast<F>(y);
  }
};

}  // namespace detail
}  // namespace pld
