#include "core/settings.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace pld::detail {

namespace {
constexpr SettingInfo kSettings[] = {
#define PLD_SETTING(id, name, type, def, desc) {Setting::id, name, type, def, desc},
#include "core/settings.def"
#undef PLD_SETTING
};
}  // namespace

std::span<const SettingInfo> settings() {
  return kSettings;
}

const SettingInfo& setting_info(Setting s) {
  return kSettings[static_cast<int>(s)];
}

std::string setting_string(Setting s) {
  const SettingInfo& info = setting_info(s);
  const char* v = std::getenv(info.name);
  return (v && *v) ? std::string(v) : std::string(info.default_value);
}

std::uint64_t parse_bytes(const std::string& text, const char* what) {
  // <digits>[K|M|G][i][B]: "4096", "256M", "1GiB", "64KB".
  std::size_t i = 0;
  std::uint64_t v = 0;
  bool ok = !text.empty();
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
    if (v > (UINT64_MAX - digit) / 10) ok = false;
    v = v * 10 + digit;
  }
  if (i == 0) ok = false;
  std::uint64_t scale = 1;
  if (i < text.size()) {
    switch (text[i]) {
      case 'k':
      case 'K':
        scale = 1ull << 10;
        ++i;
        break;
      case 'm':
      case 'M':
        scale = 1ull << 20;
        ++i;
        break;
      case 'g':
      case 'G':
        scale = 1ull << 30;
        ++i;
        break;
      default: break;
    }
  }
  const std::string tail = text.substr(i);
  if (!(tail.empty() || tail == "B" || (scale > 1 && (tail == "i" || tail == "iB")))) ok = false;
  if (ok && v > UINT64_MAX / scale) ok = false;
  if (!ok)
    throw UsageError(
        fmt::format("{}='{}' is not a byte size; write a count with an optional K, M or G suffix, "
                    "e.g. 256M",
                    what, text));
  return v * scale;
}

std::uint64_t setting_bytes(Setting s) {
  return parse_bytes(setting_string(s), setting_info(s).name);
}

double setting_seconds(Setting s) {
  const std::string text = setting_string(s);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || (end && *end) || !std::isfinite(v) || v <= 0)
    throw UsageError(
        fmt::format("{}='{}' is not a positive number of seconds; write e.g. 30 or 0.5", setting_info(s).name, text));
  return v;
}

std::int64_t setting_int(Setting s) {
  const std::string text = setting_string(s);
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || (end && *end) || v < 0)
    throw UsageError(fmt::format("{}='{}' is not a non-negative integer", setting_info(s).name, text));
  return v;
}

}  // namespace pld::detail
