// compare_report.cpp: the sections of the report of bench/compare_mpi.sh, each printing its part
// and checking its targets (compare.cpp documents the report and calls the sections in order).
#include "compare.hpp"

#include <cstdint>
#include <cstdio>
#include <fstream>

namespace compare {

namespace {

// How much slower than its bare copy all_to_all(_v) may be from 1 MiB up, and how close to it a
// cliff's larger size must land to count as "onto the bare copy".
constexpr double kOverBare = 1.15;

// The largest broadcast the small-broadcast target judges against MPI_Bcast; up to it the entry
// rule bounds pld (the broadcast floor), which is also why the contended target leaves these out.
constexpr std::uint64_t kSmallBroadcastMax = 1024;

// " within 1.15x" and the like: a tolerance as the target names print it.
std::string times(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%gx", x);
  return buf;
}

// The size of the bare copy whose working set (the bytes both ranks touch, P = 2) is that of
// `coll` at `size`: a cache level fills at the same step for both. exchange_ceiling at S touches
// 4S (two inputs, two targets of S), as all_to_all(_v) of S does. broadcast, allreduce and
// reduce_scatter of S work in place on two windows of S, 2S: the bare copy at S / 2 (a broadcast's
// rank also copies what that one copies, its half). allgather of S touches 3S (two rows of S / 2,
// two targets of S): set against the bare copy at S, the stricter of its two neighbours.
std::uint64_t bare_copy_bytes(const std::string& coll, std::uint64_t size) {
  const bool in_place = coll == "broadcast" || coll == "allreduce" || coll == "reduce_scatter";
  return in_place ? size / 2 : size;
}

// The no-cliff rule on one side's table: every step to at most twice the bytes whose time grows
// more than 3x, unless the bare copy of the same working set (when measured at both sizes) grows
// more than 3x too. A growth is the median of the per-round growths, as every ratio of the report:
// a round measures both sizes back to back, so a move of the VM's vCPUs between rounds (which
// moves the L3's edge by a size step) does not pair one round's fast size with another's slow one.
// An unexcused step that lands within kOverBare of the bare copy at the larger size is counted
// apart (`onto_bare`): the side is as fast as the bare copy there and the step only says it was
// faster than the bare copy below (the smaller size stayed cached), not that it fell off a curve.
// Prints each jump; returns how many are unexcused, how many of those land on the bare copy, and
// the largest growth seen.

struct Cliffs {
  int count = 0, onto_bare = 0;
  double worst = 0;
  std::string worst_at;
};

Cliffs print_cliffs(const char* side, const Table& t, const Data& d) {
  Cliffs c;
  const Baseline& bare = d.bare;
  auto rounds = [&](std::uint64_t size) {
    const auto it = bare.rounds_us.find(size);
    return it == bare.rounds_us.end() ? std::vector<double>{} : it->second;
  };
  for (std::size_t i = 1; i < d.keys.size(); ++i) {
    const Key &a = d.keys[i - 1], &b = d.keys[i];
    if (a.first != b.first || a.first == "barrier" || b.second > 2 * a.second || !t.count(a) || !t.count(b)) continue;
    const double ta = t.at(a).s.time_us, tb = t.at(b).s.time_us;
    if (ta <= 0) continue;
    const double growth = d.time_ratio(t.at(b), t.at(a));
    if (growth > c.worst) {
      c.worst = growth;
      c.worst_at = a.first + " " + human(a.second) + " -> " + human(b.second);
    }
    if (growth <= 3.0) continue;
    const std::uint64_t ba = bare_copy_bytes(a.first, a.second), bb = bare_copy_bytes(b.first, b.second);
    const bool have_bare = bare.us.count(ba) && bare.us.count(bb) && bare.us.at(ba) > 0 && bare.us.at(bb) > 0;
    const double bare_growth =
        have_bare ? paired_ratio(rounds(bb), rounds(ba), bare.us.at(bb), bare.us.at(ba), d.use_min) : 0;
    const double over_bare = have_bare ? paired_ratio(t.at(b).times(), rounds(bb), tb, bare.us.at(bb), d.use_min) : 0;
    const bool excused = have_bare && bare_growth > 3.0;
    const bool onto_bare = !excused && have_bare && over_bare <= kOverBare;
    c.count += !excused;
    c.onto_bare += onto_bare;
    char bare_text[96] = "not measured";
    if (have_bare)
      std::snprintf(bare_text, sizeof bare_text, "%.1fx (%s -> %s); %s at %.2fx the bare copy", bare_growth,
                    human(ba).c_str(), human(bb).c_str(), human(b.second).c_str(), over_bare);
    std::printf("  %-9s %-15s %9s -> %-9s %9s -> %9s us  %5.1fx  bare copy %s%s\n", side, a.first.c_str(),
                human(a.second).c_str(), human(b.second).c_str(), us(ta).c_str(), us(tb).c_str(), growth, bare_text,
                excused     ? " (excused)"
                : onto_bare ? " CLIFF onto the bare copy"
                            : " CLIFF");
  }
  return c;
}

// The largest `ratio(key)` (0: not measured) among the sizes [lo, hi] of collective `coll`, as a
// target that passes at or under `limit`.
template <class Ratio>
Target max_ratio_target(const std::string& name, const std::vector<Key>& keys, const std::string& coll,
                        std::uint64_t lo, std::uint64_t hi, double limit, Ratio&& ratio) {
  Target t{name};
  double worst = 0;
  std::uint64_t at = 0;
  for (const Key& k : keys) {
    if (k.first != coll || k.second < lo || k.second > hi) continue;
    const double r = ratio(k);
    if (r <= 0) continue;
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

// pld's time over Open MPI's at one row, as a target that passes at or under `limit`.
Target time_ratio_target(const Data& d, const std::string& name, const Key& k, double limit) {
  Target t{name};
  if (d.pld.count(k) && d.mpi.count(k)) {
    const double p = d.pld.at(k).s.time_us, m = d.mpi.at(k).s.time_us;
    const double r = d.time_ratio(k);
    t.measured = true;
    t.pass = r <= limit;
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.2fx (pld %s us, MPI %s us)", r, us(p).c_str(), us(m).c_str());
    t.value = buf;
  }
  return t;
}

// One row of the ratio table: printed, and returned for the summary.
json print_ratio_row(const Data& d, const Key& k) {
  const Sample& p = d.pld.at(k).s;
  const Sample& m = d.mpi.at(k).s;
  const bool has_builtin = d.pld_builtin.count(k) && d.pld_builtin.at(k).valid;
  const double tr = d.time_ratio(k), br = d.busbw_ratio(k);
  char builtin[32] = "-";
  if (has_builtin) std::snprintf(builtin, sizeof builtin, "%s", us(d.pld_builtin.at(k).s.time_us).c_str());
  char bus[3][32] = {"-", "-", "-"};
  if (k.first != "barrier") {
    std::snprintf(bus[0], 32, "%.2f", p.busbw);
    std::snprintf(bus[1], 32, "%.2f", m.busbw);
    std::snprintf(bus[2], 32, "%.2fx", br);
  }
  std::printf("%-15s %9s %10s %11s %10s %8.2fx %9s %9s %9s  %s\n", k.first.c_str(), human(k.second).c_str(),
              us(p.time_us).c_str(), builtin, us(m.time_us).c_str(), tr, bus[0], bus[1], bus[2], m.config.c_str());
  return {{"collective", k.first},    {"size", k.second},
          {"pld_time_us", p.time_us}, {"pld_builtin_time_us", has_builtin ? d.pld_builtin.at(k).s.time_us : -1.0},
          {"mpi_time_us", m.time_us}, {"time_ratio", tr},
          {"pld_busbw", p.busbw},     {"mpi_busbw", m.busbw},
          {"busbw_ratio", br},        {"mpi_config", m.config}};
}

// Prints the copy rate and array size of one stream JSON file with `format`; returns the rate.
double print_stream(const std::string& file, const char* format) {
  const json s = load(file);
  const double gbps = s.at("copy_gbps");
  std::printf(format, gbps, human(s.at("bytes").get<std::uint64_t>()).c_str());
  return gbps;
}

}  // namespace

json print_ratio_table(const Data& d, const Options& o) {
  std::printf("pld vs Open MPI, P=%d, fp32, op sum (allreduce, reduce_scatter), broadcast root 0\n", o.nranks);
  int rounds = 0;
  for (const auto& [k, v] : d.pld) rounds = std::max(rounds, v.samples);
  std::printf(
      "%s time of %d interleaved round(s) per row, both sides alike; Open MPI: its best configuration per "
      "row (of %zu);\n%s\n",
      o.stat.c_str(), rounds, d.configs.size(),
      d.use_min ? "ratios of the minima"
                : "every ratio (pld/MPI, bus x, over the bare copy): the median of the per-round ratios (each round "
                  "ran both sides back to back)");
  std::printf(
      "pld = composite path (in-kernel loop); 'builtin' = pld::Host method, one dispatch per iteration "
      "(information)\n\n");
  std::printf("%-15s %9s %10s %11s %10s %9s %9s %9s %9s  %s\n", "collective", "size", "pld us", "builtin us", "MPI us",
              "pld/MPI", "pld GB/s", "MPI GB/s", "bus x", "MPI config");
  json rows = json::array();
  std::string last;
  for (const Key& k : d.keys) {
    if (!last.empty() && last != k.first) std::printf("\n");
    last = k.first;
    rows.push_back(print_ratio_row(d, k));
  }
  return rows;
}

std::vector<Target> time_ratio_targets(const Data& d) {
  return {time_ratio_target(d, "barrier P=2 <= 0.55x MPI_Barrier", {"barrier", 0}, 0.55),
          time_ratio_target(d, "allreduce 4 B <= 0.6x MPI_Allreduce", {"allreduce", 4}, 0.6),
          time_ratio_target(d, "allreduce 1 MiB <= 0.5x MPI_Allreduce", {"allreduce", 1ull << 20}, 0.5)};
}

// The stream ceilings, and allreduce 64 MiB fp32 against the memory-traffic floor: 4 x 64 MiB
// (read and write both windows) at the streaming copy rate.
json print_memory_ceiling(const Data& d, const Options& o, std::vector<Target>& targets) {
  json ceiling;
  std::printf("\nmemory-bandwidth ceiling (stream copy, memcpy, 2 threads at once, bytes read + written):\n");
  double dram = 0, cache = 0;
  if (!o.stream_file.empty()) {
    dram = print_stream(o.stream_file, "  DRAM      %7.2f GB/s   (%s src + dst per thread, far above the LLC)\n");
    ceiling["dram_gbps"] = dram;
  }
  if (!o.stream_cache_file.empty()) {
    cache =
        print_stream(o.stream_cache_file,
                     "  footprint %7.2f GB/s   (%s src + dst per thread = the allreduce's 2 x 64 MiB of windows)\n");
    ceiling["footprint_gbps"] = cache;
  }
  Target t{"allreduce 64 MiB fp32 <= 1.5x memory-traffic floor (4 x 64 MiB / DRAM stream)"};
  const Key k{"allreduce", 64ull << 20};
  if (d.pld.count(k) && dram > 0) {
    const double bytes = 4.0 * 64.0 * (1 << 20);
    const double floor_ms = bytes / (dram * 1e9) * 1e3, pld_ms = d.pld.at(k).s.time_us / 1e3;
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
    if (d.mpi.count(k))
      std::printf("  (Open MPI: %.2f ms -> %.2fx the floor)\n", d.mpi.at(k).s.time_us / 1e3,
                  d.mpi.at(k).s.time_us / 1e3 / floor_ms);
  }
  targets.push_back(t);
  return ceiling;
}

namespace {

// Collective `c`'s busbw >= 1.5x Open MPI's from 1 MiB up: the smallest ratio, with the bare-copy
// context for all_to_all(_v) and the ratio round by round.
Target busbw_target(const Data& d, const std::string& c) {
  Target t{c + " busbw >= 1.5x MPI from 1 MiB up"};
  double worst = 1e30;
  std::uint64_t at = 0;
  for (const Key& k : d.keys)
    if (k.first == c && k.second >= (1ull << 20)) {
      const double r = d.busbw_ratio(k);
      if (r < worst) worst = r, at = k.second;
    }
  if (!at) return t;
  t.measured = true;
  t.pass = worst >= 1.5;
  char buf[96];
  std::snprintf(buf, sizeof buf, "min %.2fx (at %s)", worst, human(at).c_str());
  t.value = buf;
  const Key k{c, at};
  const Best &pb = d.pld.at(k), &mb = d.mpi.at(k);
  // all_to_all(_v) moves what exchange_ceiling copies: Open MPI's time over the bare copy's
  // estimates the largest ratio a runtime could reach at that size here.
  if ((c == "all_to_all" || c == "all_to_all_v") && d.bare.us.count(at)) {
    char bare[160];
    std::snprintf(bare, sizeof bare,
                  "; time over the bare copy: pld %.2fx, Open MPI %.2fx (about the most a runtime "
                  "can gain here)",
                  d.over(d.bare, d.pld, k), d.over(d.bare, d.mpi, k));
    t.value += bare;
  }
  // The same row round by round (pld and Open MPI's chosen configuration ran back to back in
  // each round): how far the noise moves a ratio near its target.
  const std::vector<double> p = pb.times(), m = mb.times();
  if (p.size() > 1 && p.size() == m.size()) {
    t.value += "; per round";
    for (std::size_t i = 0; i < p.size(); ++i) {
      std::snprintf(buf, sizeof buf, " %.2f", p[i] > 0 ? m[i] / p[i] : 0.0);
      t.value += buf;
    }
  }
  return t;
}

}  // namespace

// Every collective but the barrier: busbw >= 1.5x Open MPI's from 1 MiB up.
void add_busbw_targets(const Data& d, std::vector<Target>& targets) {
  for (const std::string& c : kOrder)
    if (c != "barrier") targets.push_back(busbw_target(d, c));
}

// all_to_all(_v) within kOverBare of the bare copy from 1 MiB and at most Open MPI's time at every
// size; broadcast and allreduce at the small sizes against Open MPI.
void add_small_size_targets(const Data& d, std::vector<Target>& targets) {
  auto over_mpi = [&](const Key& k) { return d.time_ratio(k); };
  auto over_bare = [&](const Key& k) { return d.over(d.bare, d.pld, k); };
  for (const char* c : {"all_to_all", "all_to_all_v"}) {
    if (!d.bare.us.empty())
      targets.push_back(max_ratio_target(std::string(c) + " <= " + times(kOverBare) + " its bare copy from 1 MiB",
                                         d.keys, c, 1ull << 20, UINT64_MAX, kOverBare, over_bare));
    targets.push_back(
        max_ratio_target(std::string(c) + " <= 1.0x Open MPI at every size", d.keys, c, 0, UINT64_MAX, 1.0, over_mpi));
  }
  targets.push_back(max_ratio_target("broadcast 4 B - 1 KiB <= 1.5x MPI_Bcast", d.keys, "broadcast", 4,
                                     kSmallBroadcastMax, 1.5, over_mpi));
  targets.push_back(
      max_ratio_target("allreduce 4 B - 256 B <= 0.8x MPI_Allreduce", d.keys, "allreduce", 4, 256, 0.8, over_mpi));
}

std::vector<Target> print_cliff_check(const Data& d) {
  std::printf(
      "\nno-cliff check: steps to 2x the bytes where the time grows more than 3x (the median of the per-round\n"
      "growths; excused when the bare copy with the same working set, bench/mpi/exchange_ceiling, grows more\n"
      "than 3x too; broadcast, allreduce and reduce_scatter of S work in place on 2S: the bare copy of S/2;\n"
      "'onto the bare copy': the larger size takes at most %.2fx the bare copy's time):\n",
      kOverBare);
  const Cliffs pld = print_cliffs("pld", d.pld, d), mpi = print_cliffs("Open MPI", d.mpi, d);
  if (pld.count + mpi.count == 0 && pld.worst <= 3.0 && mpi.worst <= 3.0) std::printf("  none\n");
  std::printf("  largest growth per step: pld %.2fx (%s), Open MPI %.2fx (%s)\n", pld.worst, pld.worst_at.c_str(),
              mpi.worst, mpi.worst_at.c_str());
  Target literal{"no cliff: pld time <= 3x per 2x bytes unless the bare copy's is too"};
  literal.measured = pld.worst > 0;
  literal.pass = pld.count == 0;
  char buf[128];
  std::snprintf(buf, sizeof buf, "%d cliff(s); largest growth %.2fx (%s)", pld.count, pld.worst, pld.worst_at.c_str());
  literal.value = buf;
  // Where a step only leaves a faster-than-bare size for the bare copy's own time, nothing is left
  // to remove but the smaller size's cache luck: the nearest target a runtime can be held to.
  Target onto{"no cliff, or the larger size within " + times(kOverBare) + " of its bare copy"};
  onto.measured = literal.measured;
  onto.pass = pld.count == pld.onto_bare;
  std::snprintf(buf, sizeof buf, "%d cliff(s) above the bare copy; %d onto it", pld.count - pld.onto_bare,
                pld.onto_bare);
  onto.value = buf;
  return {literal, onto};
}

Target print_barrier_p4(const Data& d) {
  Target t{"barrier P=4 <= 1.0x MPI_Barrier"};
  const Key k{"barrier", 0};
  if (!d.pld4.count(k) || !d.mpi4.count(k)) return t;
  const Sample &p = d.pld4.at(k).s, &m = d.mpi4.at(k).s;
  const double r = d.time_ratio(d.pld4.at(k), d.mpi4.at(k));
  t.measured = true;
  t.pass = r <= 1.0;
  char buf[128];
  std::snprintf(buf, sizeof buf, "%.2fx (pld %s us, MPI %s us, %s)", r, us(p.time_us).c_str(), us(m.time_us).c_str(),
                m.config.c_str());
  t.value = buf;
  std::printf("\nP=4 (oversubscribed, 4 ranks on 2 cores): barrier pld %s us, Open MPI %s us (%s)\n",
              us(p.time_us).c_str(), us(m.time_us).c_str(), m.config.c_str());
  return t;
}

// Every row both sides measured next to the busy loops. The broadcasts of up to 1 KiB are shown
// but not judged: pld's root waits for its peer's entry into every call, Open MPI's does not, so
// there the entry rule sets the bound (the broadcast floor above), as without the busy loops.
Target print_contended(const Data& d) {
  Target t{"contended (P=2 next to two busy loops) <= 1.0x Open MPI, broadcast from 2 KiB"};
  if (d.busy_keys.empty()) return t;
  std::printf(
      "\ncontended: P=2 while two busy loops run on the same 2 cores (the broadcasts of up to\n"
      "1 KiB for information: the entry rule bounds them, as above):\n");
  std::printf("  %-16s %10s %12s %12s %9s  %s\n", "collective", "size", "pld us", "MPI us", "pld/MPI", "MPI config");
  double worst = 0;
  Key at;
  for (const Key& k : d.busy_keys) {
    const Sample &p = d.pld_busy.at(k).s, &m = d.mpi_busy.at(k).s;
    const double r = d.time_ratio(d.pld_busy.at(k), d.mpi_busy.at(k));
    const bool judged = !(k.first == "broadcast" && k.second <= kSmallBroadcastMax);
    std::printf("  %-16s %10s %12s %12s %8.2fx  %s%s\n", k.first.c_str(), human(k.second).c_str(),
                us(p.time_us).c_str(), us(m.time_us).c_str(), r, m.config.c_str(), judged ? "" : "  (information)");
    if (judged && r > worst) worst = r, at = k;
  }
  t.measured = worst > 0;
  t.pass = worst <= 1.0;
  char buf[128];
  std::snprintf(buf, sizeof buf, "max %.2fx (%s %s)", worst, at.first.c_str(), human(at.second).c_str());
  t.value = buf;
  return t;
}

json print_targets(const std::vector<Target>& targets, std::int64_t wrong) {
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
  return jt;
}

// PREFIX.dat (busbw per size, one block per collective), PREFIX.body.gp (the panels) and PREFIX.gp
// (draws the panels twice: PNG with pngcairo, and SVG).
void write_plot(const Data& d, const Options& o) {
  if (o.plot_prefix.empty()) return;
  const std::string& prefix = o.plot_prefix;
  std::ofstream dat(prefix + ".dat");
  std::vector<std::string> panels;
  for (const std::string& c : kOrder) {
    if (c == "barrier") continue;
    bool any = false;
    for (const Key& k : d.keys)
      if (k.first == c) {
        if (!any) dat << "# " << c << "\n# size pld_busbw mpi_busbw\n";
        any = true;
        dat << k.second << " " << d.pld.at(k).s.busbw << " " << d.mpi.at(k).s.busbw << "\n";
      }
    if (any) {
      dat << "\n\n";
      panels.push_back(c);
    }
  }
  std::ofstream body(prefix + ".body.gp");
  body << "set multiplot layout 2,3 title 'bus bandwidth vs size, P=" << o.nranks << ", fp32 (" << o.stat
       << " of rounds; higher is better)'\n"
       << "set logscale x 2\nset format x '%.0b%B'\nset xlabel 'size (bytes)'\nset ylabel 'busbw (GB/s)'\n"
       << "set grid\nset key top left\nset yrange [0:*]\n";
  for (std::size_t i = 0; i < panels.size(); ++i)
    body << "set title '" << panels[i] << "' noenhanced\nplot '" << prefix << ".dat' index " << i
         << " using 1:2 with linespoints lw 2 pt 7 title 'pld', '' index " << i
         << " using 1:3 with linespoints lw 2 pt 5 dt 2 title 'Open MPI'\n";
  body << "unset multiplot\n";
  std::ofstream gp(prefix + ".gp");
  gp << "# busbw vs size, pld (composite path) vs Open MPI, P=" << o.nranks << " (bench/compare_mpi.sh)\n"
     << "set terminal pngcairo size 1200,760 font 'sans,10'\nset output '" << prefix << ".png'\n"
     << "load '" << prefix << ".body.gp'\n"
     << "set terminal svg size 1200,760 dynamic font 'sans,11'\nset output '" << prefix << ".svg'\n"
     << "load '" << prefix << ".body.gp'\n";
}

}  // namespace compare
