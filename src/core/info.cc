#include "core/info.h"
#include "core/machine.h"
#include "core/settings.h"
#include "core/thresholds.h"
#include "core/tuning_file.h"

#include <pld/info.hpp>

#include <cstdlib>
#include <fstream>

namespace pld {

std::vector<SettingDescription> describe_settings() {
  std::vector<SettingDescription> out;
  for (const detail::SettingInfo& s : detail::settings()) {
    const char* v = std::getenv(s.name);
    out.push_back({s.name, s.type, s.default_value, v ? v : "", s.description});
  }
  return out;
}

const char* version() {
  return PLD_VERSION;
}

std::string heap_pages() {
  const std::string huge = detail::setting_string(detail::Setting::HugePages);
  if (std::strtoll(huge.c_str(), nullptr, 10) == 0) return "4 KiB pages (PLD_HUGE_PAGES=0)";
  const std::string mode = detail::shmem_thp_mode();
  return "2 MiB pages requested; the kernel's shmem THP mode is '" + mode + "', so they " +
         (detail::shmem_thp_grants(mode) ? "are granted"
          : mode == "unknown"            ? "may or may not be granted"
                                         : "stay 4 KiB pages");
}

std::vector<ThresholdDescription> describe_thresholds() {
  // Derived afresh (not the process's cached thresholds()): the environment as it is now.
  const detail::Thresholds t = detail::derive_thresholds(detail::machine().caches);
  std::vector<ThresholdDescription> out;
  for (const detail::ThresholdSpec& spec : detail::threshold_specs()) {
    const detail::ThresholdValue& v = t.value(spec.id);
    std::string source = detail::source_name(v.source);
    if (v.source == detail::Source::TuningFile) {
      source += ' ';
      source += detail::setting_string(detail::Setting::TuningFile);
    }
    out.push_back({detail::setting_info(spec.setting).name, v.bytes, source, spec.rule});
  }
  return out;
}

std::string tuning_file_text(const std::vector<TunedThreshold>& values, const std::string& written_by) {
  std::vector<std::pair<std::string, std::uint64_t>> set;
  std::vector<std::pair<std::string, std::string>> notes;
  for (const TunedThreshold& t : values) {
    set.emplace_back(t.name, t.bytes);
    if (!t.note.empty()) notes.emplace_back(t.name, t.note);
  }
  const detail::MachineInfo& m = detail::machine();
  return detail::tuning_file_text(m.cpu_model, m.caches, set, notes, written_by);
}

std::string describe_machine() {
  const detail::MachineInfo& m = detail::machine();
  return m.cpu_model + "; " + std::to_string(m.cpus) + (m.cpus == 1 ? " CPU; " : " CPUs; ") +
         detail::describe_caches(m.caches);
}

namespace detail {

std::string shmem_thp_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/shmem_enabled");
  std::string line;
  if (!std::getline(f, line)) return "unknown";
  const auto lb = line.find('['), rb = line.find(']');
  return lb != std::string::npos && rb > lb ? line.substr(lb + 1, rb - lb - 1) : line;
}

bool shmem_thp_grants(std::string_view mode) {
  return mode == "advise" || mode == "within_size" || mode == "always" || mode == "force";
}

}  // namespace detail

}  // namespace pld
