// pld — plumbing of windows (internal; included by window.hpp): the address-free identity of a
// window buffer, the type-erased view the runtime's entry points take, and the one way pld's own
// code reaches the constructors that take internal types.
#pragma once

#include <pld/types.hpp>

#include <cstdint>
#include <utility>

namespace pld::detail {

struct DomainState;  // rank-side state of one comm domain (src/rank/domain.h)
class HostSession;   // host-side state of one orchestrator call (src/host)

/// Address-free identity of a window buffer: which domain, which buffer, where in the window.
struct WindowRef {
  std::uint32_t call = 0;  // the orchestrator call that allocated it (windows live for one call)
  std::uint32_t domain = 0;
  std::uint32_t buffer = 0;
  std::uint64_t offset = 0;  // byte offset of the buffer in every member's window
  std::uint64_t bytes = 0;   // buffer size in bytes
};

/// A window view without its element type: what DistributedTensor<T> holds, so the runtime's
/// entry points take it by reference, never a copy.
struct WindowDesc {
  const DomainState* state = nullptr;
  WindowRef ref;
  Dims shape;
  DType dtype = DType::FP32;
};

/// Constructs the public types whose constructors take internal types (DistributedTensor from a
/// WindowRef and a domain state, DeviceTensor from its allocation, Host from a session, RunHandle
/// from a call); those constructors are private and befriend Access. pld's own code and its tests
/// use it; user code never needs it.
struct Access {
  template <class C, class... A>
  static C make(A&&... args) {
    return C(std::forward<A>(args)...);
  }
};

}  // namespace pld::detail
