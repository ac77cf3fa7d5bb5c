// pld — symmetric windows. A window buffer is carved at the same offset of every member rank's
// window in a comm domain; `DistributedTensor<T>` is a typed view of it. Inside a kernel the view
// means "my copy of the window"; peers are reached by passing a peer rank to notify /
// remote_load / remote_store / put / get, which resolve `windowsIn[peer] + offset`.
#pragma once

#include <pld/detail/window.hpp>
#include <pld/export.hpp>
#include <pld/types.hpp>

#include <cstdint>
#include <string>

namespace pld {

/// Largest number of ranks in one comm domain (and in the world).
inline constexpr int kMaxRanks = 256;

/// A window buffer: returned by `alloc_window_buffer`, turned into typed views by `window<T>`.
struct WindowBuffer {
  detail::WindowRef ref{};  ///< where the buffer lies (internal)
  std::string name{};       ///< the name given to alloc_window_buffer (may be empty)
  /// Size of the buffer in bytes.
  std::uint64_t bytes() const { return ref.bytes; }
};

/// A typed, window-bound view: `[shape]` elements of `T` starting at the buffer's offset.
/// Created on the host by `Host::window<T>` / `CommDomain::window<T>`; bound to the rank's domain
/// state when a dispatch delivers it to a kernel.
template <Element T>
class DistributedTensor {
 public:
  using value_type = T;

  /// An empty view (bound to nothing); real ones come from Host::window<T> / CommDomain::window<T>.
  DistributedTensor() = default;

  /// Shape, number of dimensions, element count and element type of the view.
  const Dims& shape() const { return view_.shape; }
  int ndim() const { return view_.shape.size(); }
  Index numel() const { return view_.shape.numel(); }
  static constexpr DType dtype() { return dtype_of<T>; }
  /// The window buffer it views (internal).
  const detail::WindowRef& ref() const { return view_.ref; }
  /// The domain state it is bound to (internal; nullptr on the host).
  const detail::DomainState* state() const { return view_.state; }
  /// The view without its element type, as the runtime's entry points take it (internal).
  const detail::WindowDesc& desc() const { return view_; }

 private:
  friend struct detail::Access;
  DistributedTensor(const detail::WindowRef& ref, const Dims& shape, const detail::DomainState* state = nullptr)
      : view_{state, ref, shape, dtype_of<T>} {}

  detail::WindowDesc view_{nullptr, {}, {}, dtype_of<T>};
};

}  // namespace pld
