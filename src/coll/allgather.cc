// allgather: rank r's local row lands in row r of every rank's [P, SIZE] target. Rows of at most
// PLD_COLL_LL_MAX bytes take the LL one-hop exchange (coll/ll.cc: no barriers, each rank writes
// only its own target); larger ones are pushed between two barriers (coll/push.h), one fused copy
// reading the row once for all peers.
#include "coll/checks.h"
#include "coll/ll.h"
#include "coll/match.h"
#include "coll/native.h"
#include "coll/peer.h"
#include "coll/push.h"
#include "debug/checks.h"
#include "debug/race.h"
#include "trace/trace.h"

namespace pld::detail {

void coll_allgather(const LocalDesc& local, const WindowDesc* local_window, const WindowDesc& target,
                    const WindowDesc& signal, int core_num) {
  const char* api = "allgather";
  const trace::CollSpan span(api, target);
  const int stride = check_allgather(local, local_window, target, signal, core_num);
  const DomainState& d = *signal.state;
  const CallKey key = call_key(CollKind::Allgather, target, core_num);
  const RaceCollective race(d);
  coll_enter(d, signal, key);
  const std::size_t row_bytes = static_cast<std::size_t>(target.shape[1]) * dtype_size(target.dtype);
  if (NativeCollectives* native = native_for(d, signal))
    return native_done(native->allgather(local.data, own_at(d, target, 0), row_bytes, native_site(api, signal)), api,
                       d);
  if (ll_rows_fit(d, signal, row_bytes)) return ll_rows(api, LLRows::Allgather, d, local.data, target, signal);
  push_rows(api, d, target, signal, stride, core_num, Rows::Same, [&](int) { return local.data; });
}

}  // namespace pld::detail
