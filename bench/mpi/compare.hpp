// compare: the report of bench/compare_mpi.sh (compare.cpp documents it). The aggregated inputs and
// one function per report section; compare.cpp loads the JSON files and calls the sections in
// order, compare_report.cpp and compare_baselines.cpp print them.
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
// The median of `v` (the mean of the middle two for an even count); 0 when empty.
double median(std::vector<double> v);

// a / b: the median of the per-round ratios a[i] / b[i] when the rounds pair up (see Data), else
// a_stat / b_stat (0 when b_stat is not positive).
double paired_ratio(const std::vector<double>& a, const std::vector<double>& b, double a_stat, double b_stat,
                    bool use_min);

// All samples of one row: per configuration, one per round, in round order. The row's value is the
// median over the rounds (or the minimum with --stat min) of the best configuration.
struct Best {
  std::map<std::string, std::vector<Sample>> by_config;  // per configuration, in round order
  bool valid = false;
  Sample s;         // the chosen statistic
  int samples = 0;  // rounds of the chosen configuration
  void add(const Sample& x) { by_config[x.config].push_back(x); }
  void finish(bool use_min);
  // One field (&Sample::time_us, &Sample::busbw) of the chosen configuration, in round order.
  std::vector<double> rounds(double Sample::*field) const;
  std::vector<double> times() const { return rounds(&Sample::time_us); }
};
using Key = std::pair<std::string, std::uint64_t>;  // collective, size
using Table = std::map<Key, Best>;
// A baseline measured per size in every round, without a runtime: all_to_all's bare copy
// (exchange_ceiling, its fastest store kind) or the broadcast loop under pld's entry rule
// (entry_floor). `us`: the report's statistic per size; `rounds_us`: per size, one time per round.
struct Baseline {
  std::map<std::uint64_t, double> us;
  std::map<std::uint64_t, std::vector<double>> rounds_us;
};

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
  std::vector<std::string> pld_files, mpi_files, pld4_files, mpi4_files, pld_busy_files, mpi_busy_files;
  std::vector<std::string> exchange_files, entry_floor_files;
  std::string stream_file, stream_cache_file, plot_prefix, summary, stat = "median";
  int nranks = 2;
};

// Every measurement, aggregated per row.
struct Data {
  Table pld, pld_builtin, mpi, pld4, mpi4;
  Table pld_busy, mpi_busy;       // P=2 next to two busy loops (contended)
  std::set<std::string> configs;  // the Open MPI configurations (P=2)
  std::int64_t wrong = 0;         // wrong values over all runs
  std::vector<Key> keys;          // the rows both pld and Open MPI measured, in report order
  std::vector<Key> busy_keys;     // the same for the contended rows
  Baseline bare;                  // all_to_all's bare copy per size (empty when not measured)
  Baseline entry_floor;           // the broadcast loop under the entry rule (empty when not measured)
  bool use_min = false;           // --stat min

  // The ratios of the report, 0 when a side is missing. Under the median statistic each is the
  // median of the per-round ratios when both sides have a value in every round: a round runs both
  // sides back to back, so a drift of the machine from one round to the next (a VM's vCPU placement
  // moves small times 3-4x within minutes) cancels out of the ratio instead of pairing one side's
  // slow round with the other's fast one. Otherwise, and under --stat min, the ratio of the rows'
  // statistics.
  double time_ratio(const Best& a, const Best& b) const;                     // a's time / b's
  double time_ratio(const Key& k) const;                                     // pld / Open MPI
  double busbw_ratio(const Key& k) const;                                    // pld / Open MPI
  double over(const Baseline& base, const Table& side, const Key& k) const;  // side's time / the baseline's
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
Baseline load_bare_copy(const Options& o);
void print_bare_copy(const Data& d, json& ceiling);
Baseline load_entry_floor(const Options& o);
void print_entry_floor(const Data& d, std::vector<Target>& targets);
void add_busbw_targets(const Data& d, std::vector<Target>& targets);
void add_small_size_targets(const Data& d, std::vector<Target>& targets);
std::vector<Target> print_cliff_check(const Data& d);  // the rule, and its nearest honest form
Target print_barrier_p4(const Data& d);
/// The contended rows (P=2, two busy loops on the same cores) and their target.
Target print_contended(const Data& d);
json print_targets(const std::vector<Target>& targets, std::int64_t wrong);  // returns the targets
void write_plot(const Data& d, const Options& o);

}  // namespace compare
