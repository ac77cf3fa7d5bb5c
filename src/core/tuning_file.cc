// Reading, validating and writing the tuning file (the format and its rules: tuning_file.h).
#include "core/tuning_file.h"

#include "core/log.h"
#include "core/settings.h"

#include <pld/error.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

namespace pld::detail {

namespace {

using Json = nlohmann::json;

constexpr const char* kFix =
    "write the file with pld-bench --tune, or see docs/performance-thresholds.md for its format";
constexpr const char* kTopKeys[] = {"version", "machine", "thresholds", "notes", "written_by"};
constexpr const char* kMachineKeys[] = {"cpu_model", "l1d_bytes", "l2_bytes", "l3_bytes"};

[[noreturn]] void fail(const std::string& path, const std::string& problem, const std::string& fix = kFix) {
  throw UsageError(fmt::format("PLD_TUNING_FILE={}: {}; {}", path, problem, fix));
}

template <std::size_t N>
std::string joined(const char* const (&keys)[N]) {
  std::string out;
  for (const char* k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

// Every key of `object` (at `where`) is one of `keys`.
template <std::size_t N>
void check_keys(const std::string& path, const Json& object, const char* where, const char* const (&keys)[N]) {
  for (const auto& [key, value] : object.items()) {
    bool known = false;
    for (const char* k : keys) known = known || key == k;
    if (!known) fail(path, fmt::format("unknown key '{}' {}", key, where), "the keys there are " + joined(keys));
  }
}

const Json& member(const std::string& path, const Json& object, const char* key, const char* where) {
  const auto it = object.find(key);
  if (it == object.end()) fail(path, fmt::format("'{}' is missing {}", key, where));
  return *it;
}

std::uint64_t unsigned_member(const std::string& path, const Json& object, const char* key) {
  const Json& v = member(path, object, key, "in 'machine'");
  if (!v.is_number_unsigned())
    fail(path, fmt::format("machine.{}={} is not a byte count", key, v.dump()), "write a non-negative integer");
  return v.get<std::uint64_t>();
}

const ThresholdSpec* spec_named(const std::string& name) {
  for (const ThresholdSpec& spec : threshold_specs())
    if (name == setting_info(spec.setting).name) return &spec;
  return nullptr;
}

std::string threshold_names() {
  std::string out;
  for (const ThresholdSpec& spec : threshold_specs())
    out += (out.empty() ? "" : ", ") + std::string(setting_info(spec.setting).name);
  return out;
}

// One entry of "thresholds": a known variable with a byte size (a number or a string such as
// "4M") in its threshold's range.
std::uint64_t threshold_value(const std::string& path, const ThresholdSpec& spec, const Json& v) {
  const char* name = setting_info(spec.setting).name;
  std::uint64_t bytes = 0;
  if (v.is_number_unsigned())
    bytes = v.get<std::uint64_t>();
  else if (v.is_string())
    bytes = parse_bytes(v.get<std::string>(), fmt::format("PLD_TUNING_FILE={}: {}", path, name).c_str());
  else
    fail(path, fmt::format("{}={} is not a byte size", name, v.dump()),
         "write a non-negative integer or a string such as \"4M\"");
  if (bytes < spec.min || bytes > spec.max)
    fail(path,
         fmt::format("{}={} is out of range [{}, {}]", name, v.is_string() ? v.get<std::string>() : v.dump(),
                     format_bytes(spec.min), format_bytes(spec.max)),
         fmt::format("set a size in that range, or remove the key to derive it from the caches ({})", spec.rule));
  return bytes;
}

std::string describe_file_machine(const std::string& cpu_model, std::uint64_t l1d, std::uint64_t l2, std::uint64_t l3) {
  auto size = [](std::uint64_t b) { return b ? format_bytes(b) : std::string("unknown"); };
  return fmt::format("'{}' (L1d {}, L2 {}, L3 {})", cpu_model, size(l1d), size(l2), size(l3));
}

}  // namespace

std::optional<std::uint64_t> TuningFile::value(Threshold t) const {
  for (const auto& [id, bytes] : values)
    if (id == t) return bytes;
  return std::nullopt;
}

TuningFile parse_tuning_file(const std::string& text, const std::string& path) {
  Json doc;
  try {
    doc = Json::parse(text);
  } catch (const Json::parse_error& e) {
    fail(path, fmt::format("not JSON ({})", e.what()));
  }
  if (!doc.is_object()) fail(path, "not a JSON object");
  check_keys(path, doc, "at the top level", kTopKeys);
  const Json& version = member(path, doc, "version", "at the top level");
  if (!version.is_number_integer() || version.get<std::int64_t>() != kTuningFileVersion)
    fail(path, fmt::format("version {} is not one this pld reads ({})", version.dump(), kTuningFileVersion),
         "measure again with this pld's pld-bench --tune");
  TuningFile f;
  f.path = path;
  const Json& m = member(path, doc, "machine", "at the top level");
  if (!m.is_object()) fail(path, "'machine' is not an object");
  check_keys(path, m, "in 'machine'", kMachineKeys);
  const Json& model = member(path, m, "cpu_model", "in 'machine'");
  if (!model.is_string()) fail(path, fmt::format("machine.cpu_model={} is not a string", model.dump()));
  f.cpu_model = model.get<std::string>();
  f.l1d_bytes = unsigned_member(path, m, "l1d_bytes");
  f.l2_bytes = unsigned_member(path, m, "l2_bytes");
  f.l3_bytes = unsigned_member(path, m, "l3_bytes");
  const Json& t = member(path, doc, "thresholds", "at the top level");
  if (!t.is_object()) fail(path, "'thresholds' is not an object");
  for (const auto& [key, value] : t.items())
    if (spec_named(key) == nullptr)
      fail(path, fmt::format("unknown key '{}' in 'thresholds'", key), "the thresholds are " + threshold_names());
  for (const ThresholdSpec& spec : threshold_specs())
    if (const auto it = t.find(setting_info(spec.setting).name); it != t.end())
      f.values.emplace_back(spec.id, threshold_value(path, spec, *it));
  if (const auto it = doc.find("written_by"); it != doc.end() && !it->is_string())
    fail(path, "'written_by' is not a string");
  return f;
}

TuningFile read_tuning_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  if (!(in && text << in.rdbuf()))
    fail(path, "the file cannot be read", "name a readable tuning file (pld-bench --tune writes one) or unset it");
  return parse_tuning_file(text.str(), path);
}

std::string tuning_file_mismatch(const TuningFile& file, const std::string& cpu_model, const Caches& caches) {
  if (file.cpu_model == cpu_model && file.l1d_bytes == caches.l1d.bytes && file.l2_bytes == caches.l2.bytes &&
      file.l3_bytes == caches.l3.bytes)
    return "";
  return fmt::format("it was measured on {}, this machine is {}",
                     describe_file_machine(file.cpu_model, file.l1d_bytes, file.l2_bytes, file.l3_bytes),
                     describe_file_machine(cpu_model, caches.l1d.bytes, caches.l2.bytes, caches.l3.bytes));
}

const TuningFile* tuning_file_in_force(const std::string& cpu_model, const Caches& caches) {
  const std::string path = setting_string(Setting::TuningFile);
  if (path.empty()) return nullptr;
  static std::mutex mutex;
  static std::map<std::string, TuningFile> files;  // by path; a bad file is not kept, so it fails again
  static std::set<std::string> warned;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = files.find(path);
  if (it == files.end()) it = files.emplace(path, read_tuning_file(path)).first;
  const std::string mismatch = tuning_file_mismatch(it->second, cpu_model, caches);
  if (mismatch.empty()) return &it->second;
  if (warned.insert(path + "\n" + mismatch).second)
    log(LogLevel::Warn, LogSys::Init,
        "PLD_TUNING_FILE={} is ignored: {}; the thresholds are derived from the caches instead (measure this "
        "machine with pld-bench --tune --tune-out FILE)",
        path, mismatch);
  return nullptr;
}

std::string tuning_file_text(const std::string& cpu_model, const Caches& caches,
                             const std::vector<std::pair<std::string, std::uint64_t>>& values,
                             const std::vector<std::pair<std::string, std::string>>& notes,
                             const std::string& written_by) {
  Json doc = Json::object();
  doc["version"] = kTuningFileVersion;
  doc["machine"] = {{"cpu_model", cpu_model},
                    {"l1d_bytes", caches.l1d.bytes},
                    {"l2_bytes", caches.l2.bytes},
                    {"l3_bytes", caches.l3.bytes}};
  doc["thresholds"] = Json::object();
  for (const auto& [name, bytes] : values) doc["thresholds"][name] = bytes;
  doc["notes"] = Json::object();
  for (const auto& [name, text] : notes) doc["notes"][name] = text;
  doc["written_by"] = written_by;
  std::string text = doc.dump(2) + "\n";
  parse_tuning_file(text, "(the file being written)");  // the same rules as a file pld reads
  return text;
}

}  // namespace pld::detail
