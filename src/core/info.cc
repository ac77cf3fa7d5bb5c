#include "core/settings.h"

#include <pld/info.hpp>

#include <cstdlib>

namespace pld {

std::vector<SettingDescription> describe_settings() {
  std::vector<SettingDescription> out;
  for (const detail::SettingInfo& s : detail::settings()) {
    const char* v = std::getenv(s.name);
    out.push_back({s.name, s.type, s.default_value, v ? v : "", s.description});
  }
  return out;
}

const char* version() { return PLD_VERSION; }

}  // namespace pld
