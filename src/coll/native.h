// The choice between pld's schedules and the backend engine's own collectives
// (Backend::native_collectives: under the mpi backend MPI_Ibarrier, MPI_Ialltoall & co. on the domain's
// communicator, for domains whose peers pld cannot reach as memory; PLD_MPI_NATIVE_COLL). Each
// collective makes it after its checks and coll_enter, before its LL / direct / RMA choice;
// every member of the domain makes the same one. The engine's call leaves the signal untouched,
// ignores core_num (lanes are a shared-memory notion) and reduces in pld's order (ascending
// rank), so every mode gives the bits of TwoShot.
#pragma once

#include "backend/backend.h"
#include "rank/domain.h"

#include <pld/kernel.hpp>

namespace pld::detail {

/// native_for() where the backend offers the engine's collectives (native.cc).
NativeCollectives* native_lookup(const DomainState& d, const WindowDesc& signal);

/// The engine's collectives for a call on `signal` in domain `d` (more than one member), or
/// nullptr: pld's schedules run. Inline: on shm it is one load per collective.
inline NativeCollectives* native_for(const DomainState& d, const WindowDesc& signal) {
  return d.backend->offers_native ? native_lookup(d, signal) : nullptr;
}

/// What a rank in the engine's collective `api` on `signal` is in, for the deadline report.
inline WaitSite native_site(const char* api, const WindowDesc& signal) {
  return WaitSite{signal.ref.domain, signal.ref.buffer, nullptr, -1, api};
}

/// Throws WaitTimeoutError / AbortedError naming the collective and the domain for an engine
/// call that did not complete.
void native_done(WaitStatus status, const char* api, const DomainState& d);

}  // namespace pld::detail
