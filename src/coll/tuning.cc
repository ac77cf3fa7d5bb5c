#include "coll/tuning.h"

#include "core/settings.h"

namespace pld::detail {

CollTuning read_coll_tuning() {
  CollTuning t;
  // Derived afresh, not thresholds(): this runs in the rank, after the fork, and reads the
  // environment the rank was started with.
  const Thresholds derived = derive_thresholds(machine().caches);
  t.allreduce_ll_max = std::min<std::uint64_t>(derived[Threshold::AllreduceLLMax], kLLMaxBytes);
  t.coll_ll_max = std::min<std::uint64_t>(derived[Threshold::CollLLMax], kLLMaxBytes);
  t.mesh_max_bytes = setting_bytes(Setting::AllreduceMeshMax);
  t.reproducible = setting_int(Setting::Reproducible) != 0;
  return t;
}

bool coll_rma_forced() {
  static const bool forced = setting_int(Setting::CollRma) != 0;
  return forced;
}

}  // namespace pld::detail
