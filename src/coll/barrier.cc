// barrier: the LL barrier (one flag per peer in pld's staging window, coll/ll.cc) where the domain
// has a staging channel for the signal's buffer and direct peers; else one credit barrier on the
// signal's column 0 (coll/credit.h) and its give-back.
#include "coll/checks.h"
#include "coll/credit.h"
#include "coll/ll.h"
#include "coll/match.h"
#include "coll/native.h"
#include "debug/checks.h"
#include "debug/race.h"
#include "trace/trace.h"

namespace pld::detail {

void coll_barrier(const WindowDesc& signal) {
  const char* api = "barrier";
  const trace::CollSpan span(api, signal);
  check_barrier(signal);
  const DomainState& d = *signal.state;
  static constexpr CallKey key{.kind = CollKind::Barrier};
  static constexpr std::uint32_t signature = call_signature(key);
  const RaceCollective race(d);
  coll_enter(d, signal, key, signature);
  if (d.nranks() == 1) return;
  if (NativeCollectives* native = native_for(d, signal))
    return native_done(native->barrier(native_site(api, signal)), api, d);
  if (ll_barrier_fits(d, signal)) return ll_barrier(api, d, signal);
  CreditBarrier b(api, d, signal, 0, 1);
  b.sync();
  b.finish();
}

}  // namespace pld::detail
