// compare: the report of bench/compare_mpi.sh (compare.cpp documents it). The aggregated inputs and
// one function per report section; compare.cpp loads the JSON files and calls the sections in
// order, compare_report.cpp prints them.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace compare {

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
using Table = std::map<Key, Best>;
using BareCopy = std::map<std::uint64_t, double>;  // size -> the bare copy's time, us

// The collectives in report order.
extern const std::vector<std::string> kOrder;

struct Target {
  explicit Target(std::string n) : name(std::move(n)) {}
  std::string name;
  bool measured = false, pass = false;
  std::string value;
};

// The command line.
struct Options {
  std::vector<std::string> pld_files, mpi_files, pld4_files, mpi4_files;
  std::vector<std::string> exchange_files;
  std::string stream_file, stream_cache_file, plot_prefix, summary, stat = "median";
  int nranks = 2;
};

// Every measurement, aggregated per row.
struct Data {
  Table pld, pld_builtin, mpi, pld4, mpi4;
  std::set<std::string> configs;  // the Open MPI configurations (P=2)
  std::int64_t wrong = 0;         // wrong values over all runs
  std::vector<Key> keys;          // the rows both pld and Open MPI measured, in report order
  BareCopy exchange_us;           // all_to_all's bare copy per size (empty when not measured)
};

json load(const std::string& path);
std::string human(std::uint64_t b);
/// A time in microseconds with pld-bench's digits (tools/pld-bench/rules.hpp): 4 decimals below 1 us.
std::string us(double t);

// The report sections, in the order compare.cpp calls them. Each prints its part; those that
// check a target append it to `targets`.
json print_ratio_table(const Data& d, const Options& o);  // returns the rows
std::vector<Target> time_ratio_targets(const Data& d);    // barrier, allreduce 4 B, 1 MiB
json print_memory_ceiling(const Data& d, const Options& o, std::vector<Target>& targets);
BareCopy load_bare_copy(const Options& o);
void print_bare_copy(const Data& d, json& ceiling);
void add_busbw_targets(const Data& d, std::vector<Target>& targets);
void add_small_size_targets(const Data& d, std::vector<Target>& targets);
Target print_cliff_check(const Data& d);
Target print_barrier_p4(const Data& d);
json print_targets(const std::vector<Target>& targets, std::int64_t wrong);  // returns the targets
void write_plot(const Data& d, const Options& o);

}  // namespace compare
