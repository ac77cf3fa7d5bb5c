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

class CommCtx;

namespace detail {
PLD_API CommCtx comm_ctx(const char* op, const DomainState* state);
}  // namespace detail

/// A window buffer: returned by `alloc_window_buffer`, turned into typed views by `window<T>`.
struct WindowBuffer {
  detail::WindowRef ref{};  ///< where the buffer lies (internal)
  std::string name{};       ///< the name given to alloc_window_buffer (may be empty)
  /// Size of the buffer in bytes.
  std::uint64_t bytes() const { return ref.bytes; }
};

/// A rank's view of its comm domain: its domain-local rank, the domain size and the local
/// addresses of every member's window (`windows_in(peer)`, the model's `windowsIn[peer]`).
/// Obtained inside a kernel with `pld::get_comm_ctx(dt)`.
class PLD_API CommCtx {
 public:
  /// An unbound context; real ones come from get_comm_ctx.
  CommCtx() = default;
  /// Domain-local rank of the calling process.
  int rank() const;
  /// Number of ranks in the domain.
  int nranks() const;
  /// World rank of domain-local rank `peer`.
  int world_rank(int peer) const;
  /// Local address of `peer`'s window base (shm backend); nullptr where windows are not
  /// load/store addressable (mpi backend).
  std::byte* windows_in(int peer) const;
  /// The domain state it reads (internal).
  const detail::DomainState* state() const { return state_; }

 private:
  friend CommCtx detail::comm_ctx(const char* op, const detail::DomainState* state);
  explicit CommCtx(const detail::DomainState* state) : state_(state) {}
  const detail::DomainState* state_ = nullptr;
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
  const Dims& shape() const { return shape_; }
  int ndim() const { return shape_.size(); }
  Index numel() const { return shape_.numel(); }
  static constexpr DType dtype() { return dtype_of<T>; }
  /// The window buffer it views (internal).
  const detail::WindowRef& ref() const { return ref_; }
  /// The domain state it is bound to (internal; nullptr on the host).
  const detail::DomainState* state() const { return state_; }

 private:
  friend struct detail::Access;
  DistributedTensor(const detail::WindowRef& ref, const Dims& shape, const detail::DomainState* state = nullptr)
      : ref_(ref), shape_(shape), state_(state) {}

  detail::WindowRef ref_;
  Dims shape_;
  const detail::DomainState* state_ = nullptr;
};

}  // namespace pld
