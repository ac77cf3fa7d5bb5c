// compare_baselines.cpp: the report's baselines, measured per size in every round without a
// runtime — all_to_all's bare copy (bench/mpi/exchange_ceiling.cpp) and the broadcast loop under
// pld's entry rule (bench/mpi/entry_floor.cpp) — loaded from their JSON files, and their report
// sections (compare.cpp documents the report).
#include "compare.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace compare {

namespace {

// Where a baseline's JSON rows keep their fields; `only` keeps the rows of that kind alone.
struct RowFields {
  const char *size, *kind, *time_us, *only = nullptr;
};

// One baseline from its JSON files, one per round. Per size, the statistic over the rounds of
// each kind, then the fastest kind; per round, that round's fastest kind.
Baseline load_baseline(const std::vector<std::string>& files, bool use_min, const RowFields& f) {
  std::map<std::pair<std::uint64_t, std::string>, std::vector<double>> by_kind;
  Baseline base;
  for (const auto& file : files) {
    const json j = load(file);
    std::map<std::uint64_t, double> fastest;  // this round's, per size
    for (const auto& r : j.at("rows")) {
      const std::string kind = r.at(f.kind).get<std::string>();
      if (f.only && kind != f.only) continue;
      const auto size = r.at(f.size).get<std::uint64_t>();
      const double t = r.at(f.time_us).get<double>();
      by_kind[{size, kind}].push_back(t);
      auto [it, fresh] = fastest.try_emplace(size, t);
      if (!fresh) it->second = std::min(it->second, t);
    }
    for (const auto& [size, t] : fastest) base.rounds_us[size].push_back(t);
  }
  for (auto& [k, v] : by_kind) {
    const double m = use_min ? *std::min_element(v.begin(), v.end()) : median(v);
    auto [it, fresh] = base.us.try_emplace(k.first, m);
    if (!fresh) it->second = std::min(it->second, m);
  }
  return base;
}

}  // namespace

// Each store kind's mean iteration time (the statistic pld-bench and mpi_bench report).
Baseline load_bare_copy(const Options& o) {
  return load_baseline(o.exchange_files, o.stat == "min", {"size", "kind", "mean_us"});
}

// The `entered` shape: pld's rule and LL layout, plain release stores.
Baseline load_entry_floor(const Options& o) {
  return load_baseline(o.entry_floor_files, o.stat == "min", {"bytes", "shape", "time_us", "entered"});
}

// all_to_all and all_to_all_v of both sides as multiples of their bare copy; into ceiling["exchange"].
void print_bare_copy(const Data& d, json& ceiling) {
  if (d.bare.us.empty()) return;
  std::printf(
      "\nall_to_all against its bare copy (bench/mpi/exchange_ceiling: 2 threads copy the bytes all_to_all\n"
      "moves, no runtime, fastest store kind, same rounds; each side's time over it, 1.00x = no overhead;\n"
      "noise moves it by ~10%%):\n");
  std::printf("  %-9s %12s %16s %16s %16s %16s\n", "size", "bare copy us", "pld all_to_all", "MPI all_to_all",
              "pld a2a_v", "MPI a2a_v");
  json jx = json::array();
  for (const auto& [size, ceil_us] : d.bare.us) {
    std::printf("  %-9s %12.1f", human(size).c_str(), ceil_us);
    json row{{"size", size}, {"ceiling_us", ceil_us}};
    for (const char* c : {"all_to_all", "all_to_all_v"})
      for (const Table* side : {&d.pld, &d.mpi}) {
        const Key k{c, size};
        if (!side->count(k)) {
          std::printf(" %16s", "-");
          continue;
        }
        const double t = side->at(k).s.time_us;
        std::printf(" %9s %5.2fx", us(t).c_str(), d.over(d.bare, *side, k));
        row[std::string(side == &d.pld ? "pld_" : "mpi_") + c + "_us"] = t;
      }
    std::printf("\n");
    jx.push_back(row);
  }
  ceiling["exchange"] = jx;
}

// Small broadcasts against the floor of pld's entry rule: every rank returns from a collective
// only after every peer has entered it, so a loop of broadcasts costs at least entry_floor's
// `entered` loop, about one cache-line trip per call, while Open MPI's root returns once its eager
// send is queued. Prints per size the floor and each side over it; the target sets pld against
// the slower of Open MPI and the floor, round by round.
void print_entry_floor(const Data& d, std::vector<Target>& targets) {
  if (d.entry_floor.us.empty()) return;
  std::printf(
      "\nbroadcast against the floor of pld's entry rule (bench/mpi/entry_floor 'entered': the LL loop between\n"
      "two bare processes, no runtime; a rank returns only after every peer entered the call, so a loop\n"
      "costs about one cache-line trip per call, where Open MPI's root returns once its send is queued):\n");
  std::printf("  %-9s %10s %10s %10s %10s %10s\n", "size", "floor us", "pld us", "MPI us", "pld/floor", "MPI/floor");
  Target t{"broadcast 4 B - 1 KiB <= 1.5x the slower of MPI_Bcast and the entry rule's floor"};
  double worst = 0;
  std::uint64_t at = 0;
  for (const auto& [size, floor_us] : d.entry_floor.us) {
    const Key k{"broadcast", size};
    if (!d.pld.count(k) || !d.mpi.count(k)) continue;
    const Best &p = d.pld.at(k), &m = d.mpi.at(k);
    std::printf("  %-9s %10s %10s %10s %9.2fx %9.2fx\n", human(size).c_str(), us(floor_us).c_str(),
                us(p.s.time_us).c_str(), us(m.s.time_us).c_str(), d.over(d.entry_floor, d.pld, k),
                d.over(d.entry_floor, d.mpi, k));
    const std::vector<double> mt = m.times(), &ft = d.entry_floor.rounds_us.at(size);
    std::vector<double> slower;
    for (std::size_t i = 0; mt.size() == ft.size() && i < mt.size(); ++i) slower.push_back(std::max(mt[i], ft[i]));
    const double r = paired_ratio(p.times(), slower, p.s.time_us, std::max(m.s.time_us, floor_us), d.use_min);
    if (size >= 4 && size <= 1024 && (r > worst || at == 0)) worst = r, at = size;
  }
  if (at) {
    t.measured = true;
    t.pass = worst <= 1.5;
    char buf[96];
    std::snprintf(buf, sizeof buf, "max %.2fx (at %s)", worst, human(at).c_str());
    t.value = buf;
  }
  targets.push_back(t);
}

}  // namespace compare
