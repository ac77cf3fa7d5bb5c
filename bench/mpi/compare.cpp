// compare — the report of bench/compare_mpi.sh: reads pld-bench and mpi_bench JSON files (several
// rounds, several Open MPI configurations), the stream ceiling, and prints
//
//   * one row per (collective, size): pld time (composite; builtin for information), Open MPI
//     time, pld/MPI time ratio, both bus bandwidths and their ratio, the MPI configuration that won
//     (times with pld-bench's digits, 4 decimals below 1 us; every ratio from the full-precision
//     times of the JSON files);
//   * the memory-traffic floor of allreduce 64 MiB fp32 (4 x 64 MiB at the streaming copy rate);
//   * all_to_all's bare copy (exchange_ceiling: two threads copying the same bytes, no runtime),
//     with pld's and Open MPI's all_to_all and all_to_all_v times as multiples of it;
//   * the small broadcasts against the floor of pld's entry rule (entry_floor: the LL broadcast
//     loop between two bare processes);
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
// lucky fast ones (a favourable vCPU placement on a VM). A ratio is the median of the per-round
// ratios (Data::time_ratio): the two sides of a round ran back to back.
//
// compare.cpp: the command line, loading and aggregating the JSON files; compare_report.cpp: the
// report sections; compare_baselines.cpp: the bare copy and the entry rule's floor.
#include "compare.hpp"

#include "rules.hpp"  // tools/pld-bench/rules.hpp, on the include path

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace compare {

const std::vector<std::string> kOrder = {"barrier",        "allreduce",  "broadcast",   "allgather",
                                         "reduce_scatter", "all_to_all", "all_to_all_v"};

json load(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  return json::parse(f);
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

std::string us(double t) {
  const std::string s = pldbench::rules::format_us(t);
  return s.substr(std::min(s.find_first_not_of(' '), s.size()));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

namespace {

std::vector<double> field_of(const std::vector<Sample>& v, double Sample::*field) {
  std::vector<double> out;
  for (const Sample& x : v) out.push_back(x.*field);
  return out;
}

}  // namespace

void Best::finish(bool use_min) {
  for (const auto& [cfg, v] : by_config) {
    Sample pick = v.front();
    if (use_min) {
      pick =
          *std::min_element(v.begin(), v.end(), [](const Sample& a, const Sample& c) { return a.time_us < c.time_us; });
    } else {
      pick.time_us = median(field_of(v, &Sample::time_us));
      pick.busbw = median(field_of(v, &Sample::busbw));
    }
    if (!valid || pick.time_us < s.time_us) s = pick, valid = true, samples = static_cast<int>(v.size());
  }
}

std::vector<double> Best::rounds(double Sample::*field) const {
  return field_of(by_config.at(s.config), field);
}

double paired_ratio(const std::vector<double>& a, const std::vector<double>& b, double a_stat, double b_stat,
                    bool use_min) {
  const bool paired = !use_min && a.size() > 1 && a.size() == b.size() &&
                      std::all_of(b.begin(), b.end(), [](double x) { return x > 0; });
  if (!paired) return b_stat > 0 ? a_stat / b_stat : 0;
  std::vector<double> r;
  for (std::size_t i = 0; i < a.size(); ++i) r.push_back(a[i] / b[i]);
  return median(r);
}

double Data::time_ratio(const Best& a, const Best& b) const {
  return paired_ratio(a.times(), b.times(), a.s.time_us, b.s.time_us, use_min);
}

double Data::time_ratio(const Key& k) const {
  return pld.count(k) && mpi.count(k) ? time_ratio(pld.at(k), mpi.at(k)) : 0;
}

double Data::busbw_ratio(const Key& k) const {
  if (!pld.count(k) || !mpi.count(k)) return 0;
  const Best &p = pld.at(k), &m = mpi.at(k);
  return paired_ratio(p.rounds(&Sample::busbw), m.rounds(&Sample::busbw), p.s.busbw, m.s.busbw, use_min);
}

double Data::over(const Baseline& base, const Table& side, const Key& k) const {
  if (!side.count(k) || !base.us.count(k.second)) return 0;
  const Best& b = side.at(k);
  const auto it = base.rounds_us.find(k.second);
  return paired_ratio(b.times(), it == base.rounds_us.end() ? std::vector<double>{} : it->second, b.s.time_us,
                      base.us.at(k.second), use_min);
}

namespace {

int order_of(const std::string& c) {
  const auto it = std::find(kOrder.begin(), kOrder.end(), c);
  return static_cast<int>(it - kOrder.begin());
}

// Adds every row of a pld-bench / mpi_bench file under `group` ("composite", "builtin", "mpi").
void collect(const json& j, const std::string& group, const std::string& config, Table& into, std::int64_t& wrong) {
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

// "CONFIG=PATH" -> {CONFIG, PATH}; a bare PATH is configuration "mpi".
std::pair<std::string, std::string> split_config(const std::string& s) {
  const auto eq = s.find('=');
  return eq == std::string::npos ? std::make_pair(std::string("mpi"), s)
                                 : std::make_pair(s.substr(0, eq), s.substr(eq + 1));
}

// pld-bench files (composite rows) into `pld`, mpi_bench files ("CONFIG=PATH") into `mpi`.
void collect_pair(const std::vector<std::string>& pld_files, const std::vector<std::string>& mpi_files, Table& pld,
                  Table& mpi, std::int64_t& wrong) {
  for (const auto& f : pld_files) collect(load(f), "composite", "pld", pld, wrong);
  for (const auto& f : mpi_files) {
    const auto [cfg, path] = split_config(f);
    collect(load(path), "mpi", cfg, mpi, wrong);
  }
}

// The rows both tables measured, in report order (collective, then size).
std::vector<Key> keys_of_both(const Table& a, const Table& b) {
  std::vector<Key> keys;
  for (const auto& [k, v] : a)
    if (b.count(k)) keys.push_back(k);
  std::sort(keys.begin(), keys.end(), [](const Key& x, const Key& y) {
    return std::make_pair(order_of(x.first), x.second) < std::make_pair(order_of(y.first), y.second);
  });
  return keys;
}

// Loads every pld-bench and mpi_bench file, picks each row's statistic and the rows to report.
Data load_data(const Options& o) {
  Data d;
  for (const auto& f : o.pld_files) {
    const json j = load(f);
    collect(j, "composite", "pld", d.pld, d.wrong);
    collect(j, "builtin", "pld", d.pld_builtin, d.wrong);
  }
  for (const auto& f : o.mpi_files) {
    const auto [cfg, path] = split_config(f);
    collect(load(path), "mpi", cfg, d.mpi, d.wrong);
    d.configs.insert(cfg);
  }
  collect_pair(o.pld4_files, o.mpi4_files, d.pld4, d.mpi4, d.wrong);
  collect_pair(o.pld_busy_files, o.mpi_busy_files, d.pld_busy, d.mpi_busy, d.wrong);

  d.use_min = o.stat == "min";
  for (auto* m : {&d.pld, &d.pld_builtin, &d.mpi, &d.pld4, &d.mpi4, &d.pld_busy, &d.mpi_busy})
    for (auto& [k, v] : *m) v.finish(d.use_min);

  d.keys = keys_of_both(d.pld, d.mpi);
  d.busy_keys = keys_of_both(d.pld_busy, d.mpi_busy);
  return d;
}

}  // namespace

}  // namespace compare

int main(int argc, char** argv) {
  using namespace compare;
  Options o;
  CLI::App app{"compare: pld-bench vs Open MPI report for bench/compare_mpi.sh"};
  app.add_option("--pld", o.pld_files, "pld-bench JSON files (P=2)");
  app.add_option("--mpi", o.mpi_files, "mpi_bench JSON files as CONFIG=PATH (P=2)");
  app.add_option("--pld4", o.pld4_files, "pld-bench JSON files of the P=4 barrier");
  app.add_option("--mpi4", o.mpi4_files, "mpi_bench JSON files of the P=4 barrier as CONFIG=PATH");
  app.add_option("--pld-busy", o.pld_busy_files, "pld-bench JSON files of P=2 next to two busy loops");
  app.add_option("--mpi-busy", o.mpi_busy_files, "mpi_bench JSON files of P=2 next to two busy loops as CONFIG=PATH");
  app.add_option("--stream", o.stream_file, "stream JSON: DRAM ceiling (arrays far above the LLC)");
  app.add_option("--stream-cache", o.stream_cache_file, "stream JSON at the allreduce's own footprint");
  app.add_option("--exchange", o.exchange_files, "exchange_ceiling JSON files (one per round)");
  app.add_option("--entry-floor", o.entry_floor_files, "entry_floor JSON files (one per round)");
  app.add_option("--plot", o.plot_prefix, "write PREFIX.gp and PREFIX.dat (gnuplot, busbw vs size)");
  app.add_option("--summary", o.summary, "write the table and targets as JSON");
  app.add_option("--nranks", o.nranks);
  app.add_option("--stat", o.stat, "median (default) or min over the rounds")->check(CLI::IsMember({"median", "min"}));
  CLI11_PARSE(app, argc, argv);

  Data d = load_data(o);
  const json rows = print_ratio_table(d, o);
  std::vector<Target> targets = time_ratio_targets(d);
  json ceiling = print_memory_ceiling(d, o, targets);
  d.bare = load_bare_copy(o);
  print_bare_copy(d, ceiling);
  d.entry_floor = load_entry_floor(o);
  add_busbw_targets(d, targets);
  add_small_size_targets(d, targets);
  print_entry_floor(d, targets);
  for (Target& t : print_cliff_check(d)) targets.push_back(std::move(t));
  targets.push_back(print_barrier_p4(d));
  targets.push_back(print_contended(d));
  const json jt = print_targets(targets, d.wrong);
  write_plot(d, o);

  if (!o.summary.empty())
    std::ofstream(o.summary)
        << json{{"rows", rows}, {"ceiling", ceiling}, {"targets", jt}, {"wrong_total", d.wrong}}.dump(2) << "\n";
  return d.wrong ? 1 : 0;
}
