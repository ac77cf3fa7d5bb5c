// compare — the report of bench/compare_mpi.sh: reads pld-bench and mpi_bench JSON files (several
// rounds, several Open MPI configurations), the stream ceiling, and prints
//
//   * one row per (collective, size): pld time (composite; builtin for information), Open MPI
//     time, pld/MPI time ratio, both bus bandwidths and their ratio, the MPI configuration that won;
//   * the memory-traffic floor of allreduce 64 MiB fp32 (4 x 64 MiB at the streaming copy rate);
//   * all_to_all's bare copy (exchange_ceiling: two threads copying the same bytes, no runtime),
//     with pld's and Open MPI's all_to_all and all_to_all_v times as multiples of it;
//   * the no-cliff check: from one size to the next (x2), no collective's time may grow more than
//     3x unless the bare copy of the same bytes grows as much (pld's jumps are a target; Open MPI's
//     are listed for information);
//   * the speed targets, PASS / FAIL with the measured value;
//
// and writes a gnuplot script + data (busbw vs size, pld vs Open MPI, one panel per collective;
// PREFIX.png and PREFIX.svg).
//
// Aggregation, the same for both sides: per row, the median time over the interleaved rounds
// (--stat min: the lowest); for Open MPI, the configuration with the best median, so MPI gets its
// best tuning per row. The median rejects both slow outliers (another process on the machine) and
// lucky fast ones (a favourable vCPU placement on a VM).
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

using nlohmann::json;

struct Sample {
  double time_us = 0, busbw = 0;
  std::int64_t wrong = 0;
  std::string config;
};
// All samples of one row: per configuration, one per round. The row's value is the median over the
// rounds (or the minimum with --stat min) of the best configuration.
struct Best {
  std::map<std::string, std::vector<Sample>> by_config;
  std::map<std::string, std::vector<double>> times_by_round;  // per configuration, in round order
  bool valid = false;
  Sample s;         // the chosen statistic
  int samples = 0;  // rounds of the chosen configuration
  void add(const Sample& x) {
    by_config[x.config].push_back(x);
    times_by_round[x.config].push_back(x.time_us);
  }
  void finish(bool use_min) {
    for (auto& [cfg, v] : by_config) {
      std::sort(v.begin(), v.end(), [](const Sample& a, const Sample& b) { return a.time_us < b.time_us; });
      Sample pick = use_min ? v.front() : v[(v.size() - 1) / 2];
      if (!use_min && v.size() % 2 == 0) {  // even count: mean of the middle two
        const Sample& hi = v[v.size() / 2];
        pick.time_us = (pick.time_us + hi.time_us) / 2;
        pick.busbw = (pick.busbw + hi.busbw) / 2;
      }
      if (!valid || pick.time_us < s.time_us) s = pick, valid = true, samples = static_cast<int>(v.size());
    }
  }
};
using Key = std::pair<std::string, std::uint64_t>;  // collective, size

const std::vector<std::string> kOrder = {"barrier",        "allreduce",  "broadcast",   "allgather",
                                         "reduce_scatter", "all_to_all", "all_to_all_v"};
int order_of(const std::string& c) {
  const auto it = std::find(kOrder.begin(), kOrder.end(), c);
  return static_cast<int>(it - kOrder.begin());
}

json load(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  return json::parse(f);
}

// Adds every row of a pld-bench / mpi_bench file under `group` ("composite", "builtin", "mpi").
void collect(const json& j, const std::string& group, const std::string& config, std::map<Key, Best>& into,
             std::int64_t& wrong) {
  for (const auto& t : j.at("tables")) {
    const std::string coll = t.at("collective");
    for (const auto& r : t.at("rows")) {
      if (!r.contains(group)) continue;
      const auto& g = r.at(group);
      Sample s{g.at("time_us").get<double>(), g.at("busbw").get<double>(), g.at("wrong").get<std::int64_t>(), config};
      wrong += std::max<std::int64_t>(s.wrong, 0);
      into[{coll, r.at("size").get<std::uint64_t>()}].add(s);
    }
  }
}

std::string human(std::uint64_t b) {
  char buf[32];
  if (b >= (1ull << 20) && b % (1ull << 20) == 0)
    std::snprintf(buf, sizeof buf, "%llu MiB", (unsigned long long)(b >> 20));
  else if (b >= 1024 && b % 1024 == 0)
    std::snprintf(buf, sizeof buf, "%llu KiB", (unsigned long long)(b >> 10));
  else
    std::snprintf(buf, sizeof buf, "%llu B", (unsigned long long)b);
  return buf;
}

struct Target {
  explicit Target(std::string n) : name(std::move(n)) {}
  std::string name;
  bool measured = false, pass = false;
  std::string value;
};

using Table = std::map<Key, Best>;
using BareCopy = std::map<std::uint64_t, double>;  // size -> the bare copy's time, us

// The no-cliff rule on one side's table: every step to at most twice the bytes whose time grows
// more than 3x, unless the bare copy (when measured at both sizes) grows more than 3x too. Prints
// each jump; returns the number of unexcused ones and, in `worst`, the largest growth seen.
int print_cliffs(const char* side, const Table& t, const std::vector<Key>& keys, const BareCopy& bare, double& worst,
                 std::string& worst_at) {
  int cliffs = 0;
  for (std::size_t i = 1; i < keys.size(); ++i) {
    const Key &a = keys[i - 1], &b = keys[i];
    if (a.first != b.first || a.first == "barrier" || b.second > 2 * a.second || !t.count(a) || !t.count(b)) continue;
    const double ta = t.at(a).s.time_us, tb = t.at(b).s.time_us;
    if (ta <= 0) continue;
    const double growth = tb / ta;
    if (growth > worst) {
      worst = growth;
      worst_at = a.first + " " + human(a.second) + " -> " + human(b.second);
    }
    if (growth <= 3.0) continue;
    const bool have_bare = bare.count(a.second) && bare.count(b.second) && bare.at(a.second) > 0;
    const double bare_growth = have_bare ? bare.at(b.second) / bare.at(a.second) : 0;
    const bool excused = have_bare && bare_growth > 3.0;
    cliffs += !excused;
    char bare_text[32] = "not measured";
    if (have_bare) std::snprintf(bare_text, sizeof bare_text, "%.1fx", bare_growth);
    std::printf("  %-9s %-15s %9s -> %-9s %9.2f -> %9.2f us  %5.1fx  bare copy %s%s\n", side, a.first.c_str(),
                human(a.second).c_str(), human(b.second).c_str(), ta, tb, growth, bare_text,
                excused ? " (excused)" : " CLIFF");
  }
  return cliffs;
}

// The largest ratio of one side's time over `denominator(size)` among the sizes [lo, hi] of
// collective `coll`, as a target that passes at or under `limit`.
template <class Denominator>
Target max_ratio_target(const std::string& name, const Table& side, const std::vector<Key>& keys,
                        const std::string& coll, std::uint64_t lo, std::uint64_t hi, double limit,
                        Denominator&& denominator) {
  Target t{name};
  double worst = 0;
  std::uint64_t at = 0;
  for (const Key& k : keys) {
    if (k.first != coll || k.second < lo || k.second > hi || !side.count(k)) continue;
    const double d = denominator(k);
    if (d <= 0) continue;
    const double r = side.at(k).s.time_us / d;
    if (r > worst || at == 0) worst = r, at = k.second;
  }
  if (at) {
    t.measured = true;
    t.pass = worst <= limit;
    char buf[96];
    std::snprintf(buf, sizeof buf, "max %.2fx (at %s)", worst, human(at).c_str());
    t.value = buf;
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> pld_files, mpi_files, pld4_files, mpi4_files;
  std::vector<std::string> exchange_files;
  std::string stream_file, stream_cache_file, plot_prefix, summary, stat = "median";
  int nranks = 2;
  CLI::App app{"compare: pld-bench vs Open MPI report for bench/compare_mpi.sh"};
  app.add_option("--pld", pld_files, "pld-bench JSON files (P=2)");
  app.add_option("--mpi", mpi_files, "mpi_bench JSON files as CONFIG=PATH (P=2)");
  app.add_option("--pld4", pld4_files, "pld-bench JSON files of the P=4 barrier");
  app.add_option("--mpi4", mpi4_files, "mpi_bench JSON files of the P=4 barrier as CONFIG=PATH");
  app.add_option("--stream", stream_file, "stream JSON: DRAM ceiling (arrays far above the LLC)");
  app.add_option("--stream-cache", stream_cache_file, "stream JSON at the allreduce's own footprint");
  app.add_option("--exchange", exchange_files, "exchange_ceiling JSON files (one per round)");
  app.add_option("--plot", plot_prefix, "write PREFIX.gp and PREFIX.dat (gnuplot, busbw vs size)");
  app.add_option("--summary", summary, "write the table and targets as JSON");
  app.add_option("--nranks", nranks);
  app.add_option("--stat", stat, "median (default) or min over the rounds")->check(CLI::IsMember({"median", "min"}));
  CLI11_PARSE(app, argc, argv);

  std::map<Key, Best> pld, pld_builtin, mpi, pld4, mpi4;
  std::int64_t wrong = 0;
  for (const auto& f : pld_files) {
    const json j = load(f);
    collect(j, "composite", "pld", pld, wrong);
    collect(j, "builtin", "pld", pld_builtin, wrong);
  }
  std::set<std::string> configs;
  auto split = [](const std::string& s) {
    const auto eq = s.find('=');
    return eq == std::string::npos ? std::make_pair(std::string("mpi"), s)
                                   : std::make_pair(s.substr(0, eq), s.substr(eq + 1));
  };
  for (const auto& f : mpi_files) {
    const auto [cfg, path] = split(f);
    collect(load(path), "mpi", cfg, mpi, wrong);
    configs.insert(cfg);
  }
  for (const auto& f : pld4_files) collect(load(f), "composite", "pld", pld4, wrong);
  for (const auto& f : mpi4_files) {
    const auto [cfg, path] = split(f);
    collect(load(path), "mpi", cfg, mpi4, wrong);
  }

  for (auto* m : {&pld, &pld_builtin, &mpi, &pld4, &mpi4})
    for (auto& [k, v] : *m) v.finish(stat == "min");

  std::vector<Key> keys;
  for (const auto& [k, v] : pld)
    if (mpi.count(k)) keys.push_back(k);
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    return std::make_pair(order_of(a.first), a.second) < std::make_pair(order_of(b.first), b.second);
  });

  std::printf("pld vs Open MPI, P=%d, fp32, op sum (allreduce, reduce_scatter), broadcast root 0\n", nranks);
  int rounds = 0;
  for (const auto& [k, v] : pld) rounds = std::max(rounds, v.samples);
  std::printf(
      "%s time of %d interleaved round(s) per row, both sides alike; Open MPI: its best configuration per "
      "row (of %zu)\n",
      stat.c_str(), rounds, configs.size());
  std::printf(
      "pld = composite path (in-kernel loop); 'builtin' = pld::Host method, one dispatch per iteration "
      "(information)\n\n");
  std::printf("%-15s %9s %10s %11s %10s %9s %9s %9s %9s  %s\n", "collective", "size", "pld us", "builtin us", "MPI us",
              "pld/MPI", "pld GB/s", "MPI GB/s", "bus x", "MPI config");
  json rows = json::array();
  std::string last;
  for (const Key& k : keys) {
    const Sample& p = pld[k].s;
    const Sample& m = mpi[k].s;
    const bool has_builtin = pld_builtin.count(k) && pld_builtin[k].valid;
    const double tr = m.time_us > 0 ? p.time_us / m.time_us : 0;
    const double br = m.busbw > 0 ? p.busbw / m.busbw : 0;
    if (!last.empty() && last != k.first) std::printf("\n");
    last = k.first;
    char builtin[32] = "-";
    if (has_builtin) std::snprintf(builtin, sizeof builtin, "%.2f", pld_builtin[k].s.time_us);
    char bus[3][32] = {"-", "-", "-"};
    if (k.first != "barrier") {
      std::snprintf(bus[0], 32, "%.2f", p.busbw);
      std::snprintf(bus[1], 32, "%.2f", m.busbw);
      std::snprintf(bus[2], 32, "%.2fx", br);
    }
    std::printf("%-15s %9s %10.2f %11s %10.2f %8.2fx %9s %9s %9s  %s\n", k.first.c_str(), human(k.second).c_str(),
                p.time_us, builtin, m.time_us, tr, bus[0], bus[1], bus[2], m.config.c_str());
    rows.push_back({{"collective", k.first},
                    {"size", k.second},
                    {"pld_time_us", p.time_us},
                    {"pld_builtin_time_us", has_builtin ? pld_builtin[k].s.time_us : -1.0},
                    {"mpi_time_us", m.time_us},
                    {"time_ratio", tr},
                    {"pld_busbw", p.busbw},
                    {"mpi_busbw", m.busbw},
                    {"busbw_ratio", br},
                    {"mpi_config", m.config}});
  }

  // ----- memory ceiling ---------------------------------------------------------------------
  std::vector<Target> targets;
  auto ratio_target = [&](const std::string& name, const Key& k, double limit) {
    Target t{name};
    if (pld.count(k) && mpi.count(k)) {
      const double r = pld[k].s.time_us / mpi[k].s.time_us;
      t.measured = true;
      t.pass = r <= limit;
      char buf[96];
      std::snprintf(buf, sizeof buf, "%.2fx (pld %.2f us, MPI %.2f us)", r, pld[k].s.time_us, mpi[k].s.time_us);
      t.value = buf;
    }
    targets.push_back(t);
  };
  ratio_target("barrier P=2 <= 0.55x MPI_Barrier", {"barrier", 0}, 0.55);
  ratio_target("allreduce 4 B <= 0.6x MPI_Allreduce", {"allreduce", 4}, 0.6);
  ratio_target("allreduce 1 MiB <= 0.5x MPI_Allreduce", {"allreduce", 1ull << 20}, 0.5);

  json ceiling;
  std::printf("\nmemory-bandwidth ceiling (stream copy, memcpy, 2 threads at once, bytes read + written):\n");
  double dram = 0, cache = 0;
  if (!stream_file.empty()) {
    const json s = load(stream_file);
    dram = s.at("copy_gbps");
    std::printf("  DRAM      %7.2f GB/s   (%s src + dst per thread, far above the LLC)\n", dram,
                human(s.at("bytes").get<std::uint64_t>()).c_str());
    ceiling["dram_gbps"] = dram;
  }
  if (!stream_cache_file.empty()) {
    const json s = load(stream_cache_file);
    cache = s.at("copy_gbps");
    std::printf("  footprint %7.2f GB/s   (%s src + dst per thread = the allreduce's 2 x 64 MiB of windows)\n", cache,
                human(s.at("bytes").get<std::uint64_t>()).c_str());
    ceiling["footprint_gbps"] = cache;
  }
  {
    Target t{"allreduce 64 MiB fp32 <= 1.5x memory-traffic floor (4 x 64 MiB / DRAM stream)"};
    const Key k{"allreduce", 64ull << 20};
    if (pld.count(k) && dram > 0) {
      const double bytes = 4.0 * 64.0 * (1 << 20);
      const double floor_ms = bytes / (dram * 1e9) * 1e3, pld_ms = pld[k].s.time_us / 1e3;
      t.measured = true;
      t.pass = pld_ms <= 1.5 * floor_ms;
      char buf[160];
      std::snprintf(buf, sizeof buf, "%.2fx (pld %.2f ms, floor %.2f ms)", pld_ms / floor_ms, pld_ms, floor_ms);
      t.value = buf;
      std::printf("  allreduce 64 MiB fp32: pld %.2f ms; floor 4 x 64 MiB / %.2f GB/s = %.2f ms -> %.2fx the floor",
                  pld_ms, dram, floor_ms, pld_ms / floor_ms);
      if (cache > 0) {
        const double floor_c = bytes / (cache * 1e9) * 1e3;
        std::printf("; at the footprint rate %.2f ms -> %.2fx", floor_c, pld_ms / floor_c);
        ceiling["footprint_floor_ms"] = floor_c;
      }
      std::printf("\n");
      ceiling["floor_ms"] = floor_ms;
      ceiling["pld_ms"] = pld_ms;
      if (mpi.count(k))
        std::printf("  (Open MPI: %.2f ms -> %.2fx the floor)\n", mpi[k].s.time_us / 1e3,
                    mpi[k].s.time_us / 1e3 / floor_ms);
    }
    targets.push_back(t);
  }

  // ----- all_to_all's bare copy ----------------------------------------------------------------
  // Per size: the median over the rounds of each store kind's mean iteration time (the statistic
  // pld-bench and mpi_bench report), then the fastest kind.
  std::map<std::uint64_t, double> exchange_us;
  {
    std::map<std::pair<std::uint64_t, std::string>, std::vector<double>> by_kind;
    for (const auto& f : exchange_files) {
      const json j = load(f);
      for (const auto& r : j.at("rows"))
        by_kind[{r.at("size").get<std::uint64_t>(), r.at("kind").get<std::string>()}].push_back(
            r.at("mean_us").get<double>());
    }
    for (auto& [k, v] : by_kind) {
      std::sort(v.begin(), v.end());
      const double m = stat == "min"  ? v.front()
                       : v.size() % 2 ? v[v.size() / 2]
                                      : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
      auto [it, fresh] = exchange_us.try_emplace(k.first, m);
      if (!fresh) it->second = std::min(it->second, m);
    }
  }
  if (!exchange_us.empty()) {
    std::printf(
        "\nall_to_all against its bare copy (bench/mpi/exchange_ceiling: 2 threads copy the bytes all_to_all\n"
        "moves, no runtime, fastest store kind, same rounds; each side's time over it, 1.00x = no overhead;\n"
        "noise moves it by ~10%%):\n");
    std::printf("  %-9s %12s %16s %16s %16s %16s\n", "size", "bare copy us", "pld all_to_all", "MPI all_to_all",
                "pld a2a_v", "MPI a2a_v");
    json jx = json::array();
    for (const auto& [size, ceil_us] : exchange_us) {
      std::printf("  %-9s %12.1f", human(size).c_str(), ceil_us);
      json row{{"size", size}, {"ceiling_us", ceil_us}};
      for (const char* c : {"all_to_all", "all_to_all_v"})
        for (auto* side : {&pld, &mpi}) {
          const Key k{c, size};
          if (!side->count(k)) {
            std::printf(" %16s", "-");
            continue;
          }
          const double t = (*side)[k].s.time_us;
          std::printf(" %9.1f %5.2fx", t, t / ceil_us);
          row[std::string(side == &pld ? "pld_" : "mpi_") + c + "_us"] = t;
        }
      std::printf("\n");
      jx.push_back(row);
    }
    ceiling["exchange"] = jx;
  }

  // ----- every collective >= 1.5x MPI busbw from 1 MiB up -------------------------------------
  for (const std::string& c : kOrder) {
    if (c == "barrier") continue;
    Target t{c + " busbw >= 1.5x MPI from 1 MiB up"};
    double worst = 1e30;
    std::uint64_t at = 0;
    for (const Key& k : keys)
      if (k.first == c && k.second >= (1ull << 20)) {
        const double r = pld[k].s.busbw / mpi[k].s.busbw;
        if (r < worst) worst = r, at = k.second;
      }
    if (at) {
      t.measured = true;
      t.pass = worst >= 1.5;
      char buf[96];
      std::snprintf(buf, sizeof buf, "min %.2fx (at %s)", worst, human(at).c_str());
      t.value = buf;
      // all_to_all(_v) moves what exchange_ceiling copies: Open MPI's time over the bare copy's
      // estimates the largest ratio a runtime could reach at that size here.
      if ((c == "all_to_all" || c == "all_to_all_v") && exchange_us.count(at)) {
        char bare[160];
        std::snprintf(bare, sizeof bare,
                      "; time over the bare copy: pld %.2fx, Open MPI %.2fx (about the most a runtime "
                      "can gain here)",
                      pld[{c, at}].s.time_us / exchange_us[at], mpi[{c, at}].s.time_us / exchange_us[at]);
        t.value += bare;
      }
      // The same row round by round (pld and Open MPI's chosen configuration ran back to back in
      // each round): how far the noise moves a ratio near its target.
      const Key k{c, at};
      const auto& p = pld[k].times_by_round["pld"];
      const auto& m = mpi[k].times_by_round[mpi[k].s.config];
      if (p.size() > 1 && p.size() == m.size()) {
        t.value += "; per round";
        for (std::size_t i = 0; i < p.size(); ++i) {
          std::snprintf(buf, sizeof buf, " %.2f", p[i] > 0 ? m[i] / p[i] : 0.0);
          t.value += buf;
        }
      }
    }
    targets.push_back(t);
  }

  // ----- the small-size and all_to_all targets -----------------------------------------
  auto over_mpi = [&](const Key& k) { return mpi.count(k) ? mpi[k].s.time_us : 0.0; };
  auto over_bare = [&](const Key& k) { return exchange_us.count(k.second) ? exchange_us[k.second] : 0.0; };
  for (const char* c : {"all_to_all", "all_to_all_v"}) {
    if (!exchange_us.empty())
      targets.push_back(max_ratio_target(std::string(c) + " <= 1.15x its bare copy from 1 MiB", pld, keys, c,
                                         1ull << 20, UINT64_MAX, 1.15, over_bare));
    targets.push_back(max_ratio_target(std::string(c) + " <= 1.0x Open MPI at every size", pld, keys, c, 0, UINT64_MAX,
                                       1.0, over_mpi));
  }
  targets.push_back(
      max_ratio_target("broadcast 4 B - 1 KiB <= 1.5x MPI_Bcast", pld, keys, "broadcast", 4, 1024, 1.5, over_mpi));
  targets.push_back(
      max_ratio_target("allreduce 4 B - 256 B <= 0.8x MPI_Allreduce", pld, keys, "allreduce", 4, 256, 0.8, over_mpi));

  // ----- no cliffs ------------------------------------------------------------------------------
  {
    std::printf(
        "\nno-cliff check: steps to 2x the bytes where the time grows more than 3x (excused when the bare copy\n"
        "of the same bytes, bench/mpi/exchange_ceiling, grows more than 3x too):\n");
    double worst = 0, mpi_worst = 0;
    std::string worst_at, mpi_worst_at;
    const int cliffs = print_cliffs("pld", pld, keys, exchange_us, worst, worst_at);
    const int mpi_cliffs = print_cliffs("Open MPI", mpi, keys, exchange_us, mpi_worst, mpi_worst_at);
    if (cliffs + mpi_cliffs == 0 && worst <= 3.0 && mpi_worst <= 3.0) std::printf("  none\n");
    std::printf("  largest growth per step: pld %.2fx (%s), Open MPI %.2fx (%s)\n", worst, worst_at.c_str(), mpi_worst,
                mpi_worst_at.c_str());
    Target t{"no cliff: pld time <= 3x per 2x bytes unless the bare copy's is too"};
    t.measured = worst > 0;
    t.pass = cliffs == 0;
    char buf[128];
    std::snprintf(buf, sizeof buf, "%d cliff(s); largest growth %.2fx (%s)", cliffs, worst, worst_at.c_str());
    t.value = buf;
    targets.push_back(t);
  }

  // ----- P=4 barrier --------------------------------------------------------------------------
  {
    Target t{"barrier P=4 <= 1.0x MPI_Barrier"};
    const Key k{"barrier", 0};
    if (pld4.count(k) && mpi4.count(k)) {
      const double r = pld4[k].s.time_us / mpi4[k].s.time_us;
      t.measured = true;
      t.pass = r <= 1.0;
      char buf[128];
      std::snprintf(buf, sizeof buf, "%.2fx (pld %.2f us, MPI %.2f us, %s)", r, pld4[k].s.time_us, mpi4[k].s.time_us,
                    mpi4[k].s.config.c_str());
      t.value = buf;
      std::printf("\nP=4 (oversubscribed, 4 ranks on 2 cores): barrier pld %.2f us, Open MPI %.2f us (%s)\n",
                  pld4[k].s.time_us, mpi4[k].s.time_us, mpi4[k].s.config.c_str());
    }
    targets.push_back(t);
  }

  std::printf("\ntargets:\n");
  json jt = json::array();
  int failed = 0;
  for (const Target& t : targets) {
    const char* verdict = !t.measured ? "N/A " : t.pass ? "PASS" : "FAIL";
    failed += t.measured && !t.pass;
    std::printf("  [%s] %-78s %s\n", verdict, t.name.c_str(), t.value.c_str());
    jt.push_back({{"target", t.name}, {"measured", t.measured}, {"pass", t.pass}, {"value", t.value}});
  }
  std::printf("  %d target(s) missed; %lld wrong value(s) in all runs\n", failed, static_cast<long long>(wrong));

  // ----- plot ---------------------------------------------------------------------------------
  if (!plot_prefix.empty()) {
    std::ofstream dat(plot_prefix + ".dat");
    int index = 0;
    std::vector<std::string> panels;
    for (const std::string& c : kOrder) {
      if (c == "barrier") continue;
      bool any = false;
      for (const Key& k : keys)
        if (k.first == c) {
          if (!any) dat << "# " << c << "\n# size pld_busbw mpi_busbw\n";
          any = true;
          dat << k.second << " " << pld[k].s.busbw << " " << mpi[k].s.busbw << "\n";
        }
      if (any) {
        dat << "\n\n";
        panels.push_back(c);
        ++index;
      }
    }
    // The panels once (PREFIX.body.gp), drawn twice: PNG (pngcairo) and SVG.
    std::ofstream body(plot_prefix + ".body.gp");
    body << "set multiplot layout 2,3 title 'bus bandwidth vs size, P=" << nranks << ", fp32 (" << stat
         << " of rounds; higher is better)'\n"
         << "set logscale x 2\nset format x '%.0b%B'\nset xlabel 'size (bytes)'\nset ylabel 'busbw (GB/s)'\n"
         << "set grid\nset key top left\nset yrange [0:*]\n";
    for (std::size_t i = 0; i < panels.size(); ++i)
      body << "set title '" << panels[i] << "' noenhanced\nplot '" << plot_prefix << ".dat' index " << i
           << " using 1:2 with linespoints lw 2 pt 7 title 'pld', '' index " << i
           << " using 1:3 with linespoints lw 2 pt 5 dt 2 title 'Open MPI'\n";
    body << "unset multiplot\n";
    std::ofstream gp(plot_prefix + ".gp");
    gp << "# busbw vs size, pld (composite path) vs Open MPI, P=" << nranks << " (bench/compare_mpi.sh)\n"
       << "set terminal pngcairo size 1200,760 font 'sans,10'\nset output '" << plot_prefix << ".png'\n"
       << "load '" << plot_prefix << ".body.gp'\n"
       << "set terminal svg size 1200,760 dynamic font 'sans,11'\nset output '" << plot_prefix << ".svg'\n"
       << "load '" << plot_prefix << ".body.gp'\n";
  }

  if (!summary.empty())
    std::ofstream(summary) << json{{"rows", rows}, {"ceiling", ceiling}, {"targets", jt}, {"wrong_total", wrong}}.dump(
                                  2)
                           << "\n";
  return wrong ? 1 : 0;
}
