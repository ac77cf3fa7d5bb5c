// The derivation of pld's size thresholds from the machine's caches (the table is in thresholds.h;
// docs/performance-thresholds.md, "Thresholds from the machine", gives the reasoning behind each
// rule).
#include "core/thresholds.h"

#include "core/tuning_file.h"

#include <pld/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace pld::detail {

namespace {

constexpr std::uint64_t KiB = 1ull << 10, MiB = 1ull << 20, GiB = 1ull << 30;

constexpr ThresholdSpec kSpecs[kThresholdCount] = {
    {Threshold::Streaming, Setting::StreamingBytes, "(L2 + L3 / CPUs sharing the L3) / 2", 8 * MiB, 0, 64 * GiB},
    {Threshold::PushStreaming, Setting::PushStreamingBytes, "(L2 + L3 / CPUs sharing the L3) / 4", 1 * MiB, 0,
     64 * GiB},
    {Threshold::CopyBlock, Setting::CopyBlockBytes, "L2 / 32, power of two in [16 KiB, 256 KiB]", 64 * KiB, 4 * KiB,
     1 * GiB},
    {Threshold::TwoShotStep, Setting::TwoShotStepBytes, "largest power of two <= L1d, in [4 KiB, 256 KiB]", 32 * KiB,
     64, 1 * GiB},
    {Threshold::RmaChunk, Setting::RmaChunkBytes, "L2 / 8, power of two in [16 KiB, 4 MiB]", 256 * KiB, 4 * KiB,
     1 * GiB},
    {Threshold::RmaScratch, Setting::RmaScratchBytes, "2 x L2, power of two, at least the RMA chunk", 4 * MiB, 4 * KiB,
     16 * GiB},
    // Larger LL overrides are capped at the staging slot, 512 B (coll/tuning.cc).
    {Threshold::AllreduceLLMax, Setting::AllreduceLLMax, "4 cache lines, at most 256 B", 256, 0, 64 * GiB},
    {Threshold::CollLLMax, Setting::CollLLMax, "4 cache lines, at most 256 B", 256, 0, 64 * GiB},
    {Threshold::BroadcastPushMax, Setting::BroadcastPushMax, "L1d / 8, power of two in [1 KiB, 64 KiB]", 4 * KiB, 0,
     1 * GiB},
};

std::uint64_t floor_pow2(std::uint64_t v) {
  std::uint64_t p = 1;
  while (p <= v / 2) p *= 2;
  return v == 0 ? 0 : p;
}

std::uint64_t pow2_in(std::uint64_t v, std::uint64_t lo, std::uint64_t hi) {
  return std::clamp(floor_pow2(v), lo, hi);
}

std::uint64_t round_to_pages(std::uint64_t v) {
  return std::max<std::uint64_t>(4 * KiB, v / (4 * KiB) * (4 * KiB));
}

// The weaker of two sources (CPUID beats nothing, sysfs beats CPUID).
Source weaker(Source a, Source b) {
  if (a == Source::Default || b == Source::Default) return Source::Default;
  return (a == Source::Cpuid || b == Source::Cpuid) ? Source::Cpuid : Source::Sysfs;
}

// C: the cache one CPU can count on, its L2 plus its share of the L3 (the L2 alone when the L3 is
// unknown). glibc's non-temporal threshold starts from the same per-thread share of the shared
// cache. Unknown (bytes 0) without an L2.
ThresholdValue core_cache(const Caches& c) {
  if (c.l2.bytes == 0) return {};
  if (c.l3.bytes == 0) return {c.l2.bytes, c.l2.source};
  const std::uint64_t l2_share = c.l2.bytes / static_cast<std::uint64_t>(std::max(1, c.l2.sharing));
  return {l2_share + c.l3.bytes / static_cast<std::uint64_t>(std::max(1, c.l3.sharing)),
          weaker(c.l2.source, c.l3.source)};
}

}  // namespace

std::span<const ThresholdSpec> threshold_specs() {
  return kSpecs;
}

const ThresholdSpec& threshold_spec(Threshold t) {
  return kSpecs[static_cast<int>(t)];
}

ThresholdValue derive_threshold(Threshold t, const Caches& c) {
  const ThresholdSpec& spec = threshold_spec(t);
  const ThresholdValue cache = core_cache(c);
  const std::uint64_t l2 = c.l2.bytes;
  ThresholdValue v;
  switch (t) {
    case Threshold::Streaming: v = {round_to_pages(cache.bytes / 2), cache.source}; break;
    case Threshold::PushStreaming: v = {round_to_pages(cache.bytes / 4), cache.source}; break;
    case Threshold::CopyBlock: v = {pow2_in(l2 / 32, 16 * KiB, 256 * KiB), c.l2.source}; break;
    case Threshold::TwoShotStep: v = {pow2_in(c.l1d.bytes, 4 * KiB, 256 * KiB), c.l1d.source}; break;
    case Threshold::RmaChunk: v = {pow2_in(l2 / 8, 16 * KiB, 4 * MiB), c.l2.source}; break;
    case Threshold::RmaScratch:
      v = {std::max(floor_pow2(2 * l2), derive_threshold(Threshold::RmaChunk, c).bytes), c.l2.source};
      break;
    case Threshold::AllreduceLLMax: v = {std::min<std::uint64_t>(4 * c.line_bytes, 256), c.line_source}; break;
    case Threshold::CollLLMax: v = {std::min<std::uint64_t>(4 * c.line_bytes, 256), c.line_source}; break;
    case Threshold::BroadcastPushMax: v = {pow2_in(c.l1d.bytes / 8, 1 * KiB, 64 * KiB), c.l1d.source}; break;
  }
  if (v.source == Source::Default) return {spec.fallback, Source::Default};  // a cache the rule needs is unknown
  return v;
}

Thresholds derive_thresholds(const Caches& caches, const std::string& cpu_model) {
  const TuningFile* file = tuning_file_in_force(cpu_model, caches);  // validated whoever wins
  Thresholds out;
  for (const ThresholdSpec& spec : kSpecs) {
    const std::string text = setting_string(spec.setting);
    ThresholdValue& v = out.values[static_cast<int>(spec.id)];
    if (text == "auto") {
      const std::optional<std::uint64_t> tuned = file ? file->value(spec.id) : std::nullopt;
      v = tuned ? ThresholdValue{*tuned, Source::TuningFile} : derive_threshold(spec.id, caches);
      continue;
    }
    const char* name = setting_info(spec.setting).name;
    const std::uint64_t bytes = parse_bytes(text, name);
    if (bytes < spec.min || bytes > spec.max)
      throw UsageError(
          fmt::format("{}={} is out of range [{}, {}]; set a size in that range or 'auto' (derived "
                      "from the caches: {})",
                      name, text, format_bytes(spec.min), format_bytes(spec.max), spec.rule));
    v = {bytes, Source::Env};
  }
  return out;
}

const Thresholds& thresholds() {
  static const Thresholds t = derive_thresholds(machine().caches);
  return t;
}

}  // namespace pld::detail
