// pld — host tensors. `HostTensor<T>` owns contiguous row-major storage that every rank can see,
// whenever it was created (there is no "share before fork" rule: the runtime hands the storage to
// the rank processes when a dispatch first needs it). `Tensor<T>` is a non-owning view.
#pragma once

#include <pld/detail/tensor.hpp>
#include <pld/error.hpp>
#include <pld/export.hpp>
#include <pld/types.hpp>

#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <vector>

namespace pld {

/// A non-owning, contiguous, row-major view of host or rank-local memory.
/// Views of a HostTensor can be passed to `Host::dispatch`; views of other memory cannot.
template <Element T>
class Tensor {
 public:
  using value_type = T;

  Tensor() = default;
  /// A view of `data` with `shape`. `block` is set by pld for views of its shared memory.
  Tensor(T* data, Dims shape, std::uint32_t block = 0, std::uint64_t block_offset = 0)
      : data_(data), shape_(shape), block_(block), block_offset_(block_offset) {
    detail::check_shape("Tensor", shape, sizeof(T));
    if (!data && shape.numel() > 0)
      detail::throw_usage("Tensor: null data for shape " + shape.str() + "; a view needs memory behind it");
  }

  /// First element, shape, number of dimensions, element count, extent of `dim`, element type.
  T* data() const { return data_; }
  const Dims& shape() const { return shape_; }
  int ndim() const { return shape_.size(); }
  Index numel() const { return shape_.numel(); }
  Index size(int dim) const { return shape_[dim]; }
  static constexpr DType dtype() { return dtype_of<T>; }
  /// The elements as a span.
  std::span<T> span() const { return {data_, static_cast<std::size_t>(numel())}; }

  /// Drops the leading dimension: `t[i]` of a `[4, 1, 256]` tensor is a `[1, 256]` view.
  Tensor operator[](Index i) const {
    if (shape_.size() == 0 || i < 0 || i >= shape_[0]) detail::throw_index("Tensor::operator[]", Dims{i}, shape_);
    const Dims inner = shape_.drop_front();
    const Index stride = inner.numel();
    return Tensor(data_ + i * stride, inner, block_,
                  block_offset_ + static_cast<std::uint64_t>(i * stride) * sizeof(T));
  }

  /// Rows [begin, end) of the leading dimension: `t.rows(2, 5)` of a `[8, 16]` tensor is a
  /// `[3, 16]` view of rows 2, 3 and 4 (`0 <= begin <= end <= size(0)`).
  Tensor rows(Index begin, Index end) const {
    if (shape_.size() == 0 || begin < 0 || begin > end || end > shape_[0])
      detail::throw_usage("Tensor::rows: rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                          ") of a tensor of shape " + shape_.str() + "; need 0 <= begin <= end <= " +
                          (shape_.size() ? std::to_string(shape_[0]) : std::string("its leading extent")));
    Dims sub = shape_;
    sub[0] = end - begin;
    const Index stride = shape_.drop_front().numel();
    return Tensor(data_ + begin * stride, sub, block_,
                  block_offset_ + static_cast<std::uint64_t>(begin * stride) * sizeof(T));
  }

  /// Checked element access: `t.at({r, c})`.
  T& at(const Dims& index) const { return data_[detail::linear_index("Tensor::at", index, shape_)]; }
  template <class... I>
  requires(std::is_integral_v<I>&&...) T& operator()(I... index) const {
    return at(Dims{static_cast<Index>(index)...});
  }

  /// Shared-memory block this view lies in (0 if none) and its byte offset there.
  std::uint32_t block() const { return block_; }
  std::uint64_t block_offset() const { return block_offset_; }

 private:
  T* data_ = nullptr;
  Dims shape_;
  std::uint32_t block_ = 0;
  std::uint64_t block_offset_ = 0;
};

/// An owning host tensor in shared memory. Copies share storage (like a tensor handle); use
/// `clone()` for a deep copy. Every rank sees the same bytes: what a kernel writes into a
/// HostTensor view is what the host reads after `pld::run` returns.
template <Element T>
class HostTensor {
 public:
  using value_type = T;

  HostTensor() = default;
  /// A zero-filled tensor of `shape`.
  explicit HostTensor(const Dims& shape) {
    block_ = detail::shared_alloc(static_cast<std::size_t>(detail::checked_bytes("HostTensor", shape, sizeof(T))));
    view_ = Tensor<T>(reinterpret_cast<T*>(block_.base), shape, block_.id, 0);
  }

  /// A zero-filled tensor, or one with every element `value`: `HostTensor<float>::full({2, 4}, 1)`.
  static HostTensor zeros(const Dims& shape) { return HostTensor(shape); }
  static HostTensor full(const Dims& shape, T value) {
    HostTensor t(shape);
    std::fill(t.begin(), t.end(), value);
    return t;
  }
  /// `start, start + step, ...` in row-major order.
  static HostTensor arange(const Dims& shape, double start = 0, double step = 1) {
    HostTensor t(shape);
    for (Index i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<T>(start + step * static_cast<double>(i));
    return t;
  }
  /// Uniform random values from a fixed seed: floating point in [-1, 1), signed integers in
  /// [-8, 8], unsigned in [0, 16].
  static HostTensor random(const Dims& shape, std::uint64_t seed) {
    if constexpr (std::is_integral_v<T>)
      return random(shape, seed, std::is_signed_v<T> ? -8 : 0, std::is_signed_v<T> ? 8 : 16);
    else
      return random(shape, seed, -1, 1);
  }
  /// Uniform random values in [lo, hi) (integers: [lo, hi]); the range must fit the type.
  static HostTensor random(const Dims& shape, std::uint64_t seed, double lo, double hi) {
    if (!(lo <= hi))
      detail::throw_usage("HostTensor::random: lo " + std::to_string(lo) + " must not exceed hi " + std::to_string(hi));
    if constexpr (std::is_integral_v<T>)
      if (lo < static_cast<double>(std::numeric_limits<T>::min()) ||
          !(hi < static_cast<double>(std::numeric_limits<T>::max()) + 1.0))
        detail::throw_usage("HostTensor::random: range [" + std::to_string(lo) + ", " + std::to_string(hi) +
                            "] does not fit " + dtype_name(dtype_of<T>) + "; pick bounds the type can hold");
    HostTensor t(shape);
    std::mt19937_64 gen(seed);
    for (Index i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_integral_v<T>) {
        std::uniform_int_distribution<std::int64_t> dist(static_cast<std::int64_t>(lo), static_cast<std::int64_t>(hi));
        t.data()[i] = static_cast<T>(dist(gen));
      } else {
        std::uniform_real_distribution<double> dist(lo, hi);
        t.data()[i] = static_cast<T>(static_cast<float>(dist(gen)));
      }
    }
    return t;
  }
  /// Copies `values` into a new tensor of `shape` (numel must match).
  static HostTensor from(std::span<const T> values, const Dims& shape) {
    HostTensor t(shape);
    if (static_cast<Index>(values.size()) != t.numel())
      detail::throw_usage("HostTensor::from: " + std::to_string(values.size()) + " values do not fill shape " +
                          shape.str() + " (" + std::to_string(t.numel()) + " elements); pass a matching shape");
    std::copy(values.begin(), values.end(), t.begin());
    return t;
  }
  static HostTensor from(const std::vector<T>& values, const Dims& shape) {
    return from(std::span<const T>(values), shape);
  }
  static HostTensor from(const std::vector<T>& values) {
    return from(std::span<const T>(values), Dims{static_cast<Index>(values.size())});
  }

  /// A deep copy with its own storage.
  HostTensor clone() const {
    HostTensor t(shape());
    std::copy(begin(), end(), t.begin());
    return t;
  }

  /// The whole tensor as a view; `t[i]` drops the leading dimension (what a dispatch usually takes).
  Tensor<T> view() const { return view_; }
  operator Tensor<T>() const { return view_; }
  Tensor<T> operator[](Index i) const { return view_[i]; }
  /// Rows [begin, end) of the leading dimension as a view (dispatchable, like view()).
  Tensor<T> rows(Index begin, Index end) const { return view_.rows(begin, end); }
  /// Checked element access: `t.at({r, c})` or `t(r, c)`.
  T& at(const Dims& index) const { return view_.at(index); }
  template <class... I>
  requires(std::is_integral_v<I>&&...) T& operator()(I... index) const { return view_(index...); }

  /// As Tensor: data, shape, ndim, numel, dtype; begin/end/span/to_vector over the elements.
  T* data() const { return view_.data(); }
  const Dims& shape() const { return view_.shape(); }
  int ndim() const { return view_.ndim(); }
  Index numel() const { return view_.numel(); }
  static constexpr DType dtype() { return dtype_of<T>; }
  T* begin() const { return data(); }
  T* end() const { return data() + numel(); }
  std::span<T> span() const { return view_.span(); }
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }

 private:
  detail::SharedBlock block_;
  Tensor<T> view_;
};

}  // namespace pld
