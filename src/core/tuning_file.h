// The tuning file: size thresholds measured on one machine (`pld-bench --tune` writes it), read at
// start-up from PLD_TUNING_FILE. It is JSON:
//
//   {"version": 1,
//    "machine": {"cpu_model": "AMD EPYC 7B13", "l1d_bytes": 49152, "l2_bytes": 1048576,
//                "l3_bytes": 33554432},
//    "thresholds": {"PLD_STREAMING_BYTES": 8388608, "PLD_PUSH_STREAMING_BYTES": "4M"},
//    "notes": {"PLD_STREAMING_BYTES": "streaming wins from 8 MiB (put + get, 9 rounds)"},
//    "written_by": "pld-bench --tune (pld 0.1.0)"}
//
// "thresholds" maps the variables of core/thresholds.h to a byte count (a number, or a string
// such as "4M"); "notes" and "written_by" are for people and pld ignores them. Per threshold the
// variable, when set to something other than "auto", wins over the file, and the file over the
// derivation. The rules, in the order pld applies them:
//   - a file that cannot be read, is not JSON, has a key pld does not know (at any level), a
//     version other than 1 or a value that is not a byte size in the threshold's range is a
//     UsageError naming the file, the key, the value and the fix — whatever machine it names;
//   - a file measured on another machine (its CPU model or one of its cache sizes differs from
//     this machine's) is ignored, with one warning per process naming both machines.
#pragma once

#include "core/machine.h"
#include "core/thresholds.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pld::detail {

/// The version of the format this pld reads and writes.
inline constexpr int kTuningFileVersion = 1;

struct TuningFile {
  std::string path;  ///< as PLD_TUNING_FILE names it
  std::string cpu_model;
  std::uint64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;  ///< 0: the level was unknown there
  std::vector<std::pair<Threshold, std::uint64_t>> values;  ///< in the order of threshold_specs()

  /// The file's value of `t`, if it sets one.
  std::optional<std::uint64_t> value(Threshold t) const;
};

/// Parses `text` as the tuning file at `path` (named in the errors) and validates every key and
/// value; throws UsageError.
TuningFile parse_tuning_file(const std::string& text, const std::string& path);

/// Reads and parses the file at `path`; UsageError when it cannot be read or is malformed.
TuningFile read_tuning_file(const std::string& path);

/// Empty when `file` was measured on this machine (the same CPU model and L1d, L2 and L3 sizes),
/// else both machines, for the warning: "it was measured on 'X' (L1d 48 KiB, ...), this machine
/// is 'Y' (...)".
std::string tuning_file_mismatch(const TuningFile& file, const std::string& cpu_model, const Caches& caches);

/// The tuning file in force for a machine with `cpu_model` and `caches`: PLD_TUNING_FILE, read
/// and validated once per process and path (the host reads it before its ranks start; they
/// inherit what it read). nullptr when the variable is empty or the file was measured on another
/// machine (then a warning, once per process). Throws UsageError for a bad file.
const TuningFile* tuning_file_in_force(const std::string& cpu_model, const Caches& caches);

/// The JSON text of a tuning file measured on `cpu_model` / `caches` that sets `values` (variable
/// name, bytes) and keeps `notes` (variable name, text) and `written_by`. Validated as a read file
/// is: a name that is not a threshold, or a value out of its range, throws UsageError.
std::string tuning_file_text(const std::string& cpu_model, const Caches& caches,
                             const std::vector<std::pair<std::string, std::uint64_t>>& values,
                             const std::vector<std::pair<std::string, std::string>>& notes,
                             const std::string& written_by);

}  // namespace pld::detail
