// The settings registry: every environment variable pld reads, with type, default and
// description, from settings.def. Nothing else in pld calls getenv.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace pld::detail {

enum class Setting {
#define PLD_SETTING(id, name, type, def, desc) id,
#include "core/settings.def"
#undef PLD_SETTING
};

struct SettingInfo {
  Setting id;
  const char* name;
  const char* type;
  const char* default_value;
  const char* description;
};

std::span<const SettingInfo> settings();
const SettingInfo& setting_info(Setting s);

/// The raw value (environment, else the default).
std::string setting_string(Setting s);
/// Parsed values; a malformed value throws UsageError naming the variable and the expected form.
std::uint64_t setting_bytes(Setting s);
double setting_seconds(Setting s);
std::int64_t setting_int(Setting s);

/// Parses "256M", "1G", "4096" (used for the settings and for tools' command lines).
std::uint64_t parse_bytes(const std::string& text, const char* what);

}  // namespace pld::detail
