// The group factory: the options of a group from the config and the environment, the backend
// chosen by the launcher detection, and the implementation that backend needs.
#include "group/group.h"

#include "backend/launcher.h"
#include "core/log.h"
#include "core/settings.h"
#include "core/thresholds.h"
#include "debug/checks.h"
#include "debug/race.h"
#include "group/shm/group.h"
#ifdef PLD_HAVE_MPI
#include "group/mpi/group.h"
#endif

#include <pld/error.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <string>

namespace pld::detail {

namespace {

BackendKind resolve_backend(const DistributedConfig& config) {
  BackendKind kind = config.backend;
  if (kind == BackendKind::Auto) {
    const std::string env = setting_string(Setting::Backend);
    if (env == "shm")
      kind = BackendKind::Shm;
    else if (env == "mpi")
      kind = BackendKind::Mpi;
    else if (env != "auto")
      throw UsageError(fmt::format("PLD_BACKEND='{}' is not a backend; use auto, shm or mpi", env));
  }
#ifdef PLD_HAVE_MPI
  if (kind == BackendKind::Auto) kind = launcher_size() > 0 ? BackendKind::Mpi : BackendKind::Shm;
  if (kind == BackendKind::Mpi && launcher_size() == 0)
    throw UsageError(
        "backend mpi: the program was not started by an MPI launcher; start it with mpirun -n P "
        "(or choose the shm backend)");
#else
  if (kind == BackendKind::Auto) kind = BackendKind::Shm;
  if (kind == BackendKind::Mpi)
    throw UsageError(
        "backend mpi: this pld was built without MPI (configure with -DPLD_WITH_MPI=ON and Open MPI's "
        "libopenmpi-dev installed), or choose the shm backend");
#endif
  return kind;
}

// PLD_DEBUG: "0", "1", "race", "race:warn", or a comma-separated combination ("1,race").
void parse_debug(const std::string& value, bool* debug, RaceMode* race) {
  *debug = false;
  *race = RaceMode::Off;
  std::size_t at = 0;
  while (at <= value.size()) {
    const std::size_t comma = std::min(value.find(',', at), value.size());
    const std::string part = value.substr(at, comma - at);
    if (part == "1")
      *debug = true;
    else if (part == "race")
      *race = RaceMode::Fail;
    else if (part == "race:warn")
      *race = RaceMode::Warn;
    else if (part != "0" && !(part.empty() && value.empty()))
      throw UsageError(fmt::format(
          "PLD_DEBUG={}: '{}' is not a debug mode; write 0, 1 (debug mode), race (the race detector), race:warn, or "
          "a comma-separated combination such as 1,race",
          value, part));
    at = comma + 1;
  }
}

RaceMode race_mode(RaceCheck check, RaceMode from_setting) {
  switch (check) {
    case RaceCheck::Off: return RaceMode::Off;
    case RaceCheck::Fail: return RaceMode::Fail;
    case RaceCheck::Warn: return RaceMode::Warn;
    default: return from_setting;
  }
}

}  // namespace

bool ProcessGroup::all_alive() const {
  for (int r = 0; r < world_size(); ++r)
    if (!alive(r)) return false;
  return true;
}

GroupOptions group_options(const DistributedConfig& config) {
  config.validate();
  const BackendKind backend = resolve_backend(config);
  log_check_level();
  derive_thresholds(machine().caches);  // malformed size and collective settings fail here, not in a rank
  setting_bytes(Setting::AllreduceMeshMax);
  setting_int(Setting::Reproducible);
  setting_int(Setting::CollRma);
  // Debug mode is decided here, before any rank is forked, so that every rank inherits it.
  RaceMode race = RaceMode::Off;
  parse_debug(setting_string(Setting::Debug), &g_debug_checks, &race);
  g_race_mode = race_mode(config.race_check, race);
  GroupOptions o;
  o.backend = backend;
  o.device_ids = config.device_ids;
  o.heap_bytes = config.heap_bytes ? config.heap_bytes : setting_bytes(Setting::HeapBytes);
  if (o.heap_bytes == 0)
    throw UsageError("PLD_HEAP_BYTES=0: the window heap must have at least one page; write e.g. 256M");
  o.heap_bytes = (o.heap_bytes + 4095) / 4096 * 4096;
  o.huge_pages = setting_int(Setting::HugePages) != 0;
  o.wait_timeout = config.wait_timeout > 0 ? config.wait_timeout : setting_seconds(Setting::WaitTimeout);
  o.wait_note = setting_seconds(Setting::WaitNote);
  o.wait_spin = setting_int(Setting::WaitSpin);
  o.startup_timeout = setting_seconds(Setting::StartupTimeout);
  o.swimlane = config.swimlane || setting_int(Setting::Swimlane) != 0;
  o.dfx_dir = config.dfx_dir.empty() ? setting_string(Setting::DfxDir) : config.dfx_dir;
  // More ranks than cores: a spinning waiter only delays the rank it waits for, so yield at once
  // (bench/README.md: P=4 on 2 cores, barrier 3.7 -> 2.8 us).
  // (Under mpi the ranks may be on several machines: the launcher says how many share this one.)
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const int here = backend == BackendKind::Mpi ? launcher_local_size() : config.world_size();
  if (cores > 0 && here > cores) o.wait_spin = 0;
  return o;
}

std::unique_ptr<ProcessGroup> make_group(const GroupOptions& options) {
  switch (options.backend) {
    case BackendKind::Shm: return std::make_unique<ShmGroup>(options);
#ifdef PLD_HAVE_MPI
    case BackendKind::Mpi: return std::make_unique<MpiGroup>(options);
#endif
    default:
      throw UsageError(
          fmt::format("make_group: backend {} is not available in this build; use group_options() to "
                      "resolve the backend first",
                      static_cast<int>(options.backend)));
  }
}

}  // namespace pld::detail
