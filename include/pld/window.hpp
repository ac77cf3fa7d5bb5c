// pld — symmetric windows. A window buffer is carved at the same offset of every member rank's
// window in a comm domain; `DistributedTensor<T>` is a typed view of it. Inside a kernel the view
// means "my copy of the window"; peers are reached by passing a peer rank to notify /
// remote_load / remote_store / put / get, which resolve `windowsIn[peer] + offset`.
#pragma once

#include <pld/export.hpp>
#include <pld/types.hpp>

#include <cstdint>
#include <string>

namespace pld {

/// Largest number of ranks in one comm domain (and in the world).
inline constexpr int kMaxRanks = 256;

namespace detail {
struct DomainState;  // rank-side state of one comm domain (src/rank)

/// Address-free identity of a window buffer: which domain, which buffer, where in the window.
struct WindowRef {
  std::uint32_t call = 0;    // the orchestrator call that allocated it (windows live for one call)
  std::uint32_t domain = 0;
  std::uint32_t buffer = 0;
  std::uint64_t offset = 0;  // byte offset of the buffer in every member's window
  std::uint64_t bytes = 0;   // buffer size in bytes
};
}  // namespace detail

/// A window buffer: returned by `alloc_window_buffer`, turned into typed views by `window<T>`.
struct WindowBuffer {
  detail::WindowRef ref;
  std::string name;
  std::uint64_t bytes() const { return ref.bytes; }
};

/// A rank's view of its comm domain: its domain-local rank, the domain size and the local
/// addresses of every member's window (`windows_in(peer)`, the model's `windowsIn[peer]`).
/// Obtained inside a kernel with `pld::get_comm_ctx(dt)`.
class PLD_API CommCtx {
 public:
  CommCtx() = default;
  explicit CommCtx(const detail::DomainState* state) : state_(state) {}
  /// Domain-local rank of the calling process.
  int rank() const;
  /// Number of ranks in the domain.
  int nranks() const;
  /// World rank of domain-local rank `peer`.
  int world_rank(int peer) const;
  /// Local address of `peer`'s window base (shm backend); nullptr where windows are not
  /// load/store addressable (mpi backend).
  std::byte* windows_in(int peer) const;
  const detail::DomainState* state() const { return state_; }

 private:
  const detail::DomainState* state_ = nullptr;
};

/// A typed, window-bound view: `[shape]` elements of `T` starting at the buffer's offset.
/// Created on the host by `Host::window<T>` / `CommDomain::window<T>`; bound to the rank's domain
/// state when a dispatch delivers it to a kernel.
template <Element T>
class DistributedTensor {
 public:
  using value_type = T;

  DistributedTensor() = default;
  DistributedTensor(const detail::WindowRef& ref, const Dims& shape, const detail::DomainState* state = nullptr)
      : ref_(ref), shape_(shape), state_(state) {}

  const Dims& shape() const { return shape_; }
  int ndim() const { return shape_.size(); }
  Index numel() const { return shape_.numel(); }
  static constexpr DType dtype() { return dtype_of<T>; }
  const detail::WindowRef& ref() const { return ref_; }
  /// The domain state it is bound to (nullptr on the host).
  const detail::DomainState* state() const { return state_; }

 private:
  detail::WindowRef ref_;
  Dims shape_;
  const detail::DomainState* state_ = nullptr;
};

}  // namespace pld
