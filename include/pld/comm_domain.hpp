// pld — comm domains. A comm domain is a subset of the world's ranks with its own window buffers
// and signal cells; the world itself is one. On the host, `CommDomain` allocates the domain's
// window buffers and makes typed views of them (`Host::domain` creates one, `Host::world` is the
// world); inside a kernel, `CommCtx` is a rank's view of the domain a window belongs to
// (`pld::get_comm_ctx(dt)`): its domain-local rank, the domain size and the members' windows.
#pragma once

#include <pld/detail/window.hpp>
#include <pld/export.hpp>
#include <pld/types.hpp>
#include <pld/window.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pld {

class CommCtx;
class Host;

namespace detail {
PLD_API CommCtx comm_ctx(const char* api, const DomainState* state);
}  // namespace detail

/// A comm domain: a subset of the world's ranks with its own windows and signal cells. Ranks
/// inside it are domain-local: rank(ctx) is the position in the sorted member list. The world
/// itself is a domain (`Host::world()`); a rank may belong to several overlapping domains.
///   auto pair = h.domain({2, 3});
///   auto buf = pair.alloc_window_buffer(64 * sizeof(float), "pair_data");
///   auto data = pair.window<float>(buf, {1, 64});
class PLD_API CommDomain {
 public:
  /// Number of ranks in the domain.
  int size() const;
  /// World ranks of the members, ascending.
  const std::vector<int>& ranks() const;

  /// Reserves `bytes` at the same offset of every member's window, zero-filled.
  /// The size is in BYTES: `alloc_window_buffer(n * sizeof(float))`. Passing an element count
  /// (or a rank count) here is the classic bug; `window<T>` catches views that do not fit.
  /// Throws UsageError when the heap is full or for a name starting with "pld.".
  WindowBuffer alloc_window_buffer(std::uint64_t bytes, const std::string& name = {});
  /// Convenience form: `shape` elements of `dtype`. Throws UsageError for an empty shape, a
  /// negative extent or a size that overflows.
  WindowBuffer alloc_window_buffer(const Dims& shape, DType dtype, const std::string& name = {});

  /// A typed view of `buffer` with `shape`; the view must fit in the buffer. Throws UsageError for
  /// a buffer of another domain or call, or a view that does not fit.
  template <Element T>
  DistributedTensor<T> window(const WindowBuffer& buffer, const Dims& shape) const {
    return detail::Access::make<DistributedTensor<T>>(window_ref(buffer, shape, dtype_of<T>), shape);
  }

  /// The domain's id in this orchestrator call (0 = the world).
  std::uint32_t id() const { return id_; }

 private:
  friend class Host;
  CommDomain(detail::HostSession* session, std::uint32_t id) : session_(session), id_(id) {}
  detail::WindowRef window_ref(const WindowBuffer& buffer, const Dims& shape, DType dtype) const;
  detail::HostSession* session_;
  std::uint32_t id_;
};

/// A rank's view of its comm domain: its domain-local rank, the domain size and the local
/// addresses of every member's window (`windows_in(peer)`, the model's `windowsIn[peer]`).
/// Obtained inside a kernel with `pld::get_comm_ctx(dt)`; every method of an unbound context
/// throws UsageError, and a peer out of [0, nranks()) too.
///   const pld::CommCtx ctx = pld::get_comm_ctx(data);
///   const int next = (pld::rank(ctx) + 1) % pld::nranks(ctx);
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
  friend CommCtx detail::comm_ctx(const char* api, const detail::DomainState* state);
  explicit CommCtx(const detail::DomainState* state) : state_(state) {}
  const detail::DomainState* state_ = nullptr;
};

}  // namespace pld
