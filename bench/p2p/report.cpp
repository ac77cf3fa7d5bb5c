// Output of pld-bench-p2p: a header describing the run, the side-by-side table with ratios and
// targets, the first-touch table, and the same numbers as JSON.
#include "common.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <stdexcept>

namespace bench {

namespace {

// The targets.
constexpr double kLatencyMaxRatio = 2.0;                     // pld latency <= 2x the bare ping-pong
constexpr double kBandwidthMinRatio = 0.8;                   // put/get >= 80% of memcpy ...
constexpr std::uint64_t kBandwidthTargetSize = 64ull << 20;  // ... at 64 MiB

std::string size_str(std::uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return fmt::format("{} GiB", b >> 30);
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= (1ull << 10) && b % (1ull << 10) == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown";
}

// Share of CPU time other processes used during a short quiet interval (from /proc/stat): a
// spinning ping-pong on a machine with other busy processes measures the scheduler, not pld.
double busy_share() {
  auto sample = [](std::uint64_t* busy, std::uint64_t* total) {
    std::ifstream in("/proc/stat");
    std::string cpu;
    std::uint64_t v[8] = {};
    in >> cpu;
    for (auto& x : v) in >> x;
    *total = 0;
    for (auto x : v) *total += x;
    *busy = *total - v[3] - v[4];  // minus idle and iowait
  };
  std::uint64_t b0, t0, b1, t1;
  sample(&b0, &t0);
  usleep(300000);
  sample(&b1, &t1);
  return t1 > t0 ? static_cast<double>(b1 - b0) / static_cast<double>(t1 - t0) : 0.0;
}
double machine_busy = -1;

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// One line of the table, with one value per round. Latency: lower is better, ratio = pld / bare.
// Bandwidth: higher is better, ratio = pld / memcpy. The ratio is taken per round (pld next to
// its own baseline) and the table shows the median of those.
struct Row {
  std::string metric;
  std::uint64_t bytes = 0;
  bool lower_is_better = false;
  std::optional<double> target;  // ratio bound, when this row has a target
  std::int64_t iters = 0, warmup = 0, wrong = 0;
  std::vector<double> pld, base, ratio;       // ns or GB/s, per round
  std::vector<double> pld_first, base_first;  // first-touch GB/s per round (bandwidth rows)

  void add(double p, double b) {
    pld.push_back(p);
    base.push_back(b);
    ratio.push_back(b > 0 ? p / b : 0.0);
  }
  double med_ratio() const { return median(ratio); }
  bool pass() const {
    if (!target) return true;
    return lower_is_better ? med_ratio() <= *target : med_ratio() >= *target;
  }
};

std::vector<Row> rows_of(const Options& o, const Results& r) {
  std::vector<Row> rows;
  Row lat;
  lat.metric = "latency";
  lat.bytes = 4;  // one int32 signal
  lat.lower_is_better = true;
  lat.target = kLatencyMaxRatio;
  lat.iters = o.lat_iters;
  lat.warmup = o.lat_warmup;
  for (const Round& rd : r) lat.add(rd.lat_pld.half_rtt_ns(), rd.lat_bare.half_rtt_ns());
  rows.push_back(lat);
  Row lat2 = lat;  // same pld numbers against the bare ping-pong with pld's signal layout; no target
  lat2.metric = "lat-2cell";
  lat2.target.reset();
  lat2.pld.clear();
  lat2.base.clear();
  lat2.ratio.clear();
  for (const Round& rd : r) lat2.add(rd.lat_pld.half_rtt_ns(), rd.lat_bare2.half_rtt_ns());
  rows.push_back(lat2);
  auto add = [&](const char* metric, std::vector<BwResult> Round::*pld) {
    for (std::size_t i = 0; i < o.sizes.size(); ++i) {
      Row b;
      b.metric = metric;
      b.bytes = o.sizes[i];
      if (b.bytes == kBandwidthTargetSize) b.target = kBandwidthMinRatio;
      for (const Round& rd : r) {
        const BwResult& p = (rd.*pld)[i];
        const BwResult& m = rd.memcpy_[i];
        b.iters = p.plan.iters;
        b.warmup = p.plan.warmup;
        b.add(p.gbps(), m.gbps());
        b.wrong += p.wrong + m.wrong;
        b.pld_first.push_back(p.first_gbps());
        b.base_first.push_back(m.first_gbps());
      }
      rows.push_back(b);
    }
  };
  add("put", &Round::put);
  add("get", &Round::get);
  return rows;
}

std::string target_str(const Row& row) {
  if (!row.target) return "-";
  return fmt::format("{}{:.2f}x", row.lower_is_better ? "<=" : ">=", *row.target);
}

}  // namespace

void print_header(const Options& o) {
  std::string sizes;
  for (std::uint64_t s : o.sizes) sizes += (sizes.empty() ? "" : ", ") + size_str(s);
  fmt::print("# pld-bench-p2p: two ranks of pld (shm backend) side by side with bare baselines\n");
  fmt::print("#   host        : {}, {} online CPUs, CPU pinning {}\n", cpu_model(), sysconf(_SC_NPROCESSORS_ONLN),
             o.pin ? "on (rank/process r -> CPU r)" : "off");
  machine_busy = busy_share();
  fmt::print("#   env         : PLD_WAIT_SPIN={}; CPU busy before start {:.0f}%{}\n",
             env_or("PLD_WAIT_SPIN", "(default)"), 100 * machine_busy,
             machine_busy > 0.1 ? " (other processes are running: expect noisy numbers)" : "");
  fmt::print(
      "#   latency     : notify(Set)->wait(Ge) ping-pong, {} warm-up + {} timed round trips, half round "
      "trip reported;\n#                 baseline = two fork()ed processes on one int32 in MAP_SHARED memory, "
      "_mm_pause spin;\n#                 lat-2cell = same pld numbers vs a bare ping-pong with one int32 per "
      "direction on\n#                 separate pages (pld's signal layout: each side polls its own cell)\n",
      o.lat_warmup, o.lat_iters);
  fmt::print(
      "#   bandwidth   : rank 0 tensor::put into / tensor::get from rank 1's window, sizes {};\n"
      "#                 baseline = memcpy in one process; iterations = {} per size / size, clamped to "
      "[{}, {}]{}\n",
      sizes, size_str(o.bw_bytes), o.min_iters, o.max_iters,
      o.iters > 0 ? fmt::format(" (overridden: --iters {})", o.iters) : std::string());
  fmt::print(
      "#   timing      : steady_clock inside one dispatch per measurement (dispatch overhead excluded); "
      "the first call\n#                 of each size is timed apart (first touch) and the warm-up "
      "pre-faults every buffer\n");
  fmt::print(
      "#   rounds      : {}; in each round every pld number is taken right after its baseline (fresh "
      "pld::run, fresh buffers)\n#\n",
      o.rounds);
  std::fflush(stdout);
}

int print_table(const Options& o, const Results& r) {
  const std::vector<Row> rows = rows_of(o, r);
  fmt::print("#{:>9} {:>9} {:>9} {:>7} {:>12} {:>12} {:>8} {:>8} {:>6} {:>6}\n", "metric", "size", "iters", "unit",
             "pld", "baseline", "ratio", "target", "result", "#wrong");
  int missed = 0;
  std::int64_t wrong = 0;
  for (const Row& row : rows) {
    const bool lat = row.lower_is_better;
    const char* result = !row.target ? "" : row.pass() ? "PASS" : "MISS";
    missed += row.pass() ? 0 : 1;
    wrong += row.wrong;
    fmt::print(" {:>9} {:>9} {:>9} {:>7} {:>12.2f} {:>12.2f} {:>7.3f}x {:>8} {:>6} {:>6}\n", row.metric,
               size_str(row.bytes), row.iters, lat ? "ns" : "GB/s", median(row.pld), median(row.base), row.med_ratio(),
               target_str(row), result, lat ? std::string("-") : std::to_string(row.wrong));
  }
  fmt::print("#\n# first call of each size (fresh buffers: includes page faults), GB/s, median of the rounds\n");
  fmt::print("#{:>9} {:>9} {:>12} {:>12}\n", "metric", "size", "pld", "memcpy");
  for (const Row& row : rows)
    if (!row.lower_is_better)
      fmt::print(" {:>9} {:>9} {:>12.2f} {:>12.2f}\n", row.metric, size_str(row.bytes), median(row.pld_first),
                 median(row.base_first));
  fmt::print(
      "#\n# pld, baseline: median of {} rounds; ratio: median of the per-round ratios, latency = pld / bare\n"
      "# (lower is better), bandwidth = pld / memcpy (higher is better); GB/s = 1e9 B/s\n",
      r.size());
  for (const Row& row : rows)
    if (!row.pass())
      fmt::print("# TARGET MISSED: {} {}: ratio {:.3f}x, target {}\n", row.metric, size_str(row.bytes), row.med_ratio(),
                 target_str(row));
  if (missed == 0) fmt::print("# targets: all met\n");
  fmt::print("# wrong: {}\n", wrong);
  std::fflush(stdout);
  return missed;
}

void write_json(const Options& o, const Results& r, const std::string& path) {
  using nlohmann::json;
  json doc;
  doc["benchmark"] = "pld-bench-p2p";
  doc["host"] = {{"cpu", cpu_model()}, {"cpus", sysconf(_SC_NPROCESSORS_ONLN)}, {"busy_before_start", machine_busy}};
  doc["env"] = {{"PLD_WAIT_SPIN", env_or("PLD_WAIT_SPIN", "")}};
  doc["options"] = {
      {"rounds", o.rounds},     {"lat_iters", o.lat_iters}, {"lat_warmup", o.lat_warmup}, {"sizes", o.sizes},
      {"bw_bytes", o.bw_bytes}, {"iters", o.iters},         {"warmup", o.warmup},         {"pin", o.pin}};
  json rows = json::array();
  for (const Row& row : rows_of(o, r)) {
    json j = {{"metric", row.metric},
              {"bytes", row.bytes},
              {"unit", row.lower_is_better ? "ns" : "GB/s"},
              {"pld", median(row.pld)},
              {"baseline", median(row.base)},
              {"ratio", row.med_ratio()},
              {"rounds", {{"pld", row.pld}, {"baseline", row.base}, {"ratio", row.ratio}}},
              {"iters", row.iters},
              {"warmup", row.warmup}};
    if (row.target) {
      j["target"] = target_str(row);
      j["pass"] = row.pass();
    }
    if (!row.lower_is_better) {
      j["wrong"] = row.wrong;
      j["first_touch_pld"] = median(row.pld_first);
      j["first_touch_baseline"] = median(row.base_first);
    }
    rows.push_back(j);
  }
  doc["results"] = rows;
  std::ofstream out(path);
  if (!out) throw std::runtime_error(fmt::format("cannot write {}", path));
  out << doc.dump(2) << '\n';
}

}  // namespace bench
