// pld::run: one-shot execution — validate, fork, record the orchestrator, execute, shut down.
#include "core/log.h"
#include "core/settings.h"
#include "debug/checks.h"
#include "host/session.h"
#include "worker/rank_group.h"

#include <pld/error.hpp>
#include <pld/host.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <cmath>
#include <set>

namespace pld {

void DistributedConfig::validate() const {
  if (device_ids.empty())
    throw UsageError("DistributedConfig: device_ids is empty; list one device id per rank, e.g. {0, 1}");
  if (device_ids.size() > static_cast<std::size_t>(kMaxRanks))
    throw UsageError(fmt::format("DistributedConfig: {} device ids, more than the {} ranks pld supports",
                                 device_ids.size(), kMaxRanks));
  std::set<int> seen;
  for (int id : device_ids) {
    if (id < 0)
      throw UsageError(fmt::format("DistributedConfig: device id {} is negative (device_ids {}); device ids are >= 0",
                                   id, fmt::join(device_ids, ", ")));
    if (!seen.insert(id).second)
      throw UsageError(fmt::format("DistributedConfig: device id {} appears twice (device_ids {}); list each device "
                                   "once",
                                   id, fmt::join(device_ids, ", ")));
  }
  if (!(std::isfinite(wait_timeout) && wait_timeout >= 0))
    throw UsageError(fmt::format("DistributedConfig: wait_timeout {} must be a finite number of seconds >= 0 (0 = "
                                 "PLD_WAIT_TIMEOUT)",
                                 wait_timeout));
  if (backend != BackendKind::Auto && backend != BackendKind::Shm)
    throw UsageError(fmt::format("DistributedConfig: backend {} is not one of Auto, Shm", static_cast<int>(backend)));
}

namespace detail {

GroupOptions group_options(const DistributedConfig& config) {
  config.validate();
  if (config.backend == BackendKind::Auto) {
    const std::string backend = setting_string(Setting::Backend);
    if (backend != "auto" && backend != "shm")
      throw UsageError(fmt::format("PLD_BACKEND='{}' is not a backend; use auto or shm", backend));
  }
  log_check_level();
  setting_bytes(Setting::AllreduceMeshMax);  // malformed collective settings fail here, not in a rank
  setting_int(Setting::Reproducible);
  // Debug mode is decided here, before any rank is forked, so that every rank inherits it.
  g_debug_checks = setting_int(Setting::Debug) != 0;
  GroupOptions o;
  o.device_ids = config.device_ids;
  o.heap_bytes = config.heap_bytes ? config.heap_bytes : setting_bytes(Setting::HeapBytes);
  if (o.heap_bytes == 0)
    throw UsageError("PLD_HEAP_BYTES=0: the window heap must have at least one page; write e.g. 256M");
  o.heap_bytes = (o.heap_bytes + 4095) / 4096 * 4096;
  o.wait_timeout = config.wait_timeout > 0 ? config.wait_timeout : setting_seconds(Setting::WaitTimeout);
  o.wait_spin = setting_int(Setting::WaitSpin);
  o.startup_timeout = setting_seconds(Setting::StartupTimeout);
  o.swimlane = config.swimlane || setting_int(Setting::Swimlane) != 0;
  o.dfx_dir = config.dfx_dir.empty() ? setting_string(Setting::DfxDir) : config.dfx_dir;
  // More ranks than cores: a spinning waiter only delays the rank it waits for, so yield at once
  // (bench/README.md: P=4 on 2 cores, barrier 3.7 -> 2.8 us).
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores > 0 && config.world_size() > cores) o.wait_spin = 0;
  return o;
}

void run(const DistributedConfig& config, const std::function<void(Host&)>& orchestrator) {
  const GroupOptions options = group_options(config);
  // Record the whole call first: bad input found here fails before any rank starts.
  HostSession session(config.world_size(), options.heap_bytes);
  Host host(&session);
  orchestrator(host);
  session.finish();
  RankGroup group(options);
  group.execute(session);
  group.shutdown();
}

}  // namespace detail
}  // namespace pld
