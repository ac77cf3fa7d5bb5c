// pld::run: one-shot execution — validate, record the orchestrator, start a process group,
// execute, shut down. Also DistributedConfig::validate.
#include "group/group.h"
#include "host/session.h"

#include <pld/error.hpp>
#include <pld/host.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

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
      throw UsageError(
          fmt::format("DistributedConfig: device id {} appears twice (device_ids {}); list each device "
                      "once",
                      id, fmt::join(device_ids, ", ")));
  }
  if (!(std::isfinite(wait_timeout) && wait_timeout >= 0))
    throw UsageError(
        fmt::format("DistributedConfig: wait_timeout {} must be a finite number of seconds >= 0 (0 = "
                    "PLD_WAIT_TIMEOUT)",
                    wait_timeout));
  if (race_check != RaceCheck::Setting && race_check != RaceCheck::Off && race_check != RaceCheck::Fail &&
      race_check != RaceCheck::Warn)
    throw UsageError(fmt::format("DistributedConfig: race_check {} is not a RaceCheck; pass Setting, Off, Fail or Warn",
                                 static_cast<int>(race_check)));
  if (backend != BackendKind::Auto && backend != BackendKind::Shm && backend != BackendKind::Mpi)
    throw UsageError(
        fmt::format("DistributedConfig: backend {} is not one of Auto, Shm, Mpi", static_cast<int>(backend)));
}

namespace detail {

void run(const DistributedConfig& config, const std::function<void(Host&)>& orchestrator) {
  const GroupOptions options = group_options(config);
  // Record the whole call first: bad input found here fails before any rank starts.
  HostSession session(config.world_size(), options.heap_bytes);
  Host host = Access::make<Host>(&session);
  orchestrator(host);
  session.finish();
  const std::unique_ptr<ProcessGroup> group = make_group(options);
  group->execute(session);
  group->shutdown();
}

}  // namespace detail
}  // namespace pld
