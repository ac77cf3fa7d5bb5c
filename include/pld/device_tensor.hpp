// pld — resident tensors of a DistributedWorker.
//
// A DeviceTensor<T> lives in ONE rank process's private memory (the model's device memory of
// rank `worker_id()`) for as long as the worker keeps that process, across any number of
// dispatches. Passing it to `Host::dispatch` for that rank hands the kernel a `Tensor<T>` of that
// memory directly — no copy through the host. The host reaches the contents only through the
// worker: `copy_to` / `copy_from`, staged through a temporary shared buffer, so any host memory
// works as source or destination.
//
//   auto w = rt.alloc_tensor<float>({1024}, /*worker_id=*/1, init);   // resident on rank 1
//   rt.run(program, w);            // program: h.dispatch(1, kernel, w) -> kernel(Tensor<float>)
//   rt.copy_from(std::span(out), w);
//   rt.free_tensor(w);
//
// A StackedDeviceTensor<T> is B DeviceTensors of equal shape, shard i on rank worker_ids()[i]
// (the model's `x[i]` selects shard i). Handles are cheap to copy; they stay valid until freed,
// until the worker closes, or until the rank process holding them is lost (recovery replaces the
// process but cannot bring back its memory) — each of those is a clear error when used.
#pragma once

#include <pld/detail/device_tensor.hpp>
#include <pld/detail/window.hpp>
#include <pld/error.hpp>
#include <pld/export.hpp>
#include <pld/tensor.hpp>
#include <pld/types.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pld {

/// A tensor resident in one rank process of a DistributedWorker. Copies refer to the same memory.
template <Element T>
class DeviceTensor {
 public:
  using value_type = T;

  /// An empty handle; real ones come from DistributedWorker::alloc_tensor.
  DeviceTensor() = default;

  /// Shape, number of dimensions, element count and element type.
  const Dims& shape() const { return shape_; }
  int ndim() const { return shape_.size(); }
  Index numel() const { return shape_.numel(); }
  static constexpr DType dtype() { return dtype_of<T>; }
  /// The world rank whose process holds the memory.
  int worker_id() const { return alloc_ ? alloc_->rank : -1; }
  /// False for a default-constructed handle or once freed / lost / closed.
  bool live() const { return alloc_ && alloc_->state.load() == detail::DeviceAllocation::Live; }

  /// The allocation record shared by every copy (internal).
  const std::shared_ptr<detail::DeviceAllocation>& allocation() const { return alloc_; }

 private:
  friend struct detail::Access;
  DeviceTensor(std::shared_ptr<detail::DeviceAllocation> alloc, Dims shape) : alloc_(std::move(alloc)), shape_(shape) {}
  std::shared_ptr<detail::DeviceAllocation> alloc_;
  Dims shape_;
};

/// B resident shards of equal shape; shard i on world rank worker_ids()[i].
template <Element T>
class StackedDeviceTensor {
 public:
  using value_type = T;

  StackedDeviceTensor() = default;
  StackedDeviceTensor(std::vector<DeviceTensor<T>> shards, Dims full_shape, std::vector<int> worker_ids)
      : shards_(std::move(shards)), full_shape_(full_shape), worker_ids_(std::move(worker_ids)) {}

  /// Shard i (the model's `x[i]`).
  const DeviceTensor<T>& operator[](Index i) const {
    if (i < 0 || i >= static_cast<Index>(shards_.size()))
      detail::throw_usage("StackedDeviceTensor[" + std::to_string(i) + "]: index out of range [0, " +
                          std::to_string(shards_.size()) + ")");
    return shards_[static_cast<std::size_t>(i)];
  }
  /// Number of shards (B).
  Index size() const { return static_cast<Index>(shards_.size()); }
  /// [B, shard shape...]
  const Dims& full_shape() const { return full_shape_; }
  /// World rank of each shard, and the shards themselves.
  const std::vector<int>& worker_ids() const { return worker_ids_; }
  const std::vector<DeviceTensor<T>>& shards() const { return shards_; }

 private:
  std::vector<DeviceTensor<T>> shards_;
  Dims full_shape_;
  std::vector<int> worker_ids_;
};

}  // namespace pld
