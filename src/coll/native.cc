#include "coll/native.h"

#include "coll/domain_state.h"

#include <pld/error.hpp>

#include <fmt/format.h>

namespace pld::detail {

NativeCollectives* native_lookup(const DomainState& d, const WindowDesc& signal) {
  if (d.nranks() == 1) return nullptr;
  return d.backend->native_collectives(signal.ref.buffer, coll_state(d).direct);
}

void native_done(WaitStatus status, const char* api, const DomainState& d) {
  if (status == WaitStatus::Ok) return;
  const std::string what =
      fmt::format("{}: waiting for every member of comm domain {} in MPI's own collective", api, d.label);
  if (status == WaitStatus::Timeout)
    throw WaitTimeoutError(what +
                           " at the deadline; every rank of the domain must call the same collectives in the same "
                           "order");
  throw AbortedError(what + ": released because another rank failed");
}

}  // namespace pld::detail
