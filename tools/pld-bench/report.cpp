#include "report.hpp"

#include "rules.hpp"

#include <cstdlib>

#include <pld/pld.hpp>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>
#include <string_view>

namespace pldbench {

namespace {

std::string setting(std::string_view name) {
  for (const auto& s : pld::describe_settings())
    if (s.name == name) return s.value.empty() ? s.default_value : s.value;
  return "?";
}

const char* type_of(const Point& p) {
  return p.coll == Coll::Barrier ? "none" : pld::dtype_name(p.dtype);
}
const char* redop_of(const Point& p) {
  return reduces(p.coll) ? redop_name(p.redop) : "none";
}

std::string table_title(const Table& t) {
  std::string s = coll_name(t.coll);
  if (t.coll == Coll::Allreduce) s += std::string(" (mode ") + mode_name(t.mode) + ")";
  return s;
}

}  // namespace

double algbw(const Point& p, const Measure& m) {
  return m.time_us > 0 ? static_cast<double>(p.bytes) / (m.time_us * 1e3) : 0.0;
}
double busbw(const Point& p, const Measure& m, int nranks) {
  return algbw(p, m) * busbw_factor(p.coll, nranks);
}

void print_header(std::FILE* out, const Options& o, const Plan& plan) {
  const char* env = std::getenv("PLD_BACKEND");
  const bool mpi = pld::has_mpi_backend() && pld::launcher_world_size() > 0 && !(env && std::string(env) == "shm");
  std::fprintf(out, "# pld-bench %s | %d ranks, %s backend, %ld online CPUs | path %s\n", pld::version(), o.nranks,
               mpi ? "mpi" : "shm", sysconf(_SC_NPROCESSORS_ONLN), path_name(o.path));
  std::fprintf(out,
               "# minBytes %llu maxBytes %llu step: %llu(%s) warmup iters: %s iters: %s validation: %d core_num: %d "
               "pin: %d\n",
               static_cast<unsigned long long>(o.min_bytes), static_cast<unsigned long long>(o.max_bytes),
               static_cast<unsigned long long>(o.step_bytes ? o.step_bytes : o.step_factor),
               o.step_bytes ? "bytes" : "factor", o.warmup >= 0 ? std::to_string(o.warmup).c_str() : "auto",
               o.iters > 0 ? std::to_string(o.iters).c_str() : "auto", o.check, o.core_num, o.pin ? 1 : 0);
  std::fprintf(out,
               "# heap_bytes %llu per rank | PLD_WAIT_SPIN=%s PLD_ALLREDUCE_MESH_MAX=%s PLD_REPRODUCIBLE=%s "
               "PLD_COLL_RMA=%s\n",
               static_cast<unsigned long long>(plan.heap_bytes), setting("PLD_WAIT_SPIN").c_str(),
               setting("PLD_ALLREDUCE_MESH_MAX").c_str(), setting("PLD_REPRODUCIBLE").c_str(),
               setting("PLD_COLL_RMA").c_str());
  if (o.path != Path::Builtin)
    std::fprintf(out,
                 "# composite: pld::tensor::* looping inside ONE dispatch per row; time = max over ranks of the "
                 "timed loop / iters (steady_clock, after a barrier, warm-up excluded; auto warm-up: iters / 10, "
                 "the first row iters)\n");
  if (o.path != Path::Composite)
    std::fprintf(out,
                 "# builtin:   pld::Host methods, each iteration ONE dispatch per rank; time = max over ranks of "
                 "the timed dispatches / iters, so it INCLUDES the dispatch overhead\n");
}

void print_table(std::FILE* out, const Options& o, const TableResult& t) {
  bool show[kGroups] = {};
  for (const Row& r : t.rows)
    for (int g = 0; g < kGroups; ++g) show[g] = show[g] || r.group[g].valid;
  std::fprintf(out, "#\n# %s\n", table_title(t.table).c_str());
  if (one_sided(t.table.coll) && o.path == Path::Builtin)
    std::fprintf(out, "# (%s has no host builtin: it is measured in a kernel)\n", coll_name(t.table.coll));
  std::string l1 = "#                                                   ", l2, l3;
  l2 = "#       size         count      type   redop    root";
  l3 = "#        (B)    (elements)                          ";
  for (int g = 0; g < kGroups; ++g) {
    if (!show[g]) continue;
    char head[64];
    std::snprintf(head, sizeof head, "%-33s", (std::string(t.group_names[g]) + " (" + t.group_notes[g] + ")").c_str());
    l1 += "  " + std::string(head);
    l2 += "      time   algbw   busbw #wrong";
    l3 += "      (us)  (GB/s)  (GB/s)       ";
  }
  std::fprintf(out, "%s\n%s\n%s\n", l1.c_str(), l2.c_str(), l3.c_str());
  for (const Row& r : t.rows) {
    const Point& p = r.point;
    std::fprintf(out, "%12llu  %12lld  %8s  %6s  %6d", static_cast<unsigned long long>(p.bytes),
                 static_cast<long long>(p.count), type_of(p), redop_of(p), p.root);
    for (int g = 0; g < kGroups; ++g) {
      if (!show[g]) continue;
      const Measure& m = r.group[g];
      if (!m.valid) {
        std::fprintf(out, "  %8s  %6s  %6s  %5s", "-", "-", "-", "-");
        continue;
      }
      std::fprintf(out, "  %s  %6.2f  %6.2f  %5s", rules::format_us(m.time_us).c_str(), algbw(p, m),
                   busbw(p, m, o.nranks), m.wrong < 0 ? "N/A" : std::to_string(m.wrong).c_str());
    }
    std::fprintf(out, "\n");
  }
  std::int64_t wrong = 0;
  double sum_bw[kGroups] = {};
  int rows[kGroups] = {};
  for (const Row& r : t.rows)
    for (int g = 0; g < kGroups; ++g)
      if (r.group[g].valid) {
        wrong += std::max<std::int64_t>(r.group[g].wrong, 0);
        sum_bw[g] += busbw(r.point, r.group[g], o.nranks);
        ++rows[g];
      }
  std::fprintf(out, "# Out of bounds values : %lld %s\n", static_cast<long long>(wrong),
               o.check ? (wrong ? "FAILED" : "OK") : "(not checked)");
  std::fprintf(out, "# Avg bus bandwidth    :");
  for (int g = 0; g < kGroups; ++g)
    if (show[g]) std::fprintf(out, " %.3f (%s)", rows[g] ? sum_bw[g] / rows[g] : 0.0, t.group_names[g]);
  std::fprintf(out, "\n");
}

void print_footer(std::FILE* out, const Results& r) {
  if (r.latency_us >= 0)
    std::fprintf(out, "#\n# p2p notify->wait latency (half a round trip, rank 0 <-> rank 1, %lld iters): %.4f us\n",
                 static_cast<long long>(r.latency_iters), r.latency_us);
  // The bare ping-pongs: one int32 both ways, and one per direction (the layout of pld's signals).
  auto ratio = [&](double bare) { return bare > 0 ? r.latency_us / bare : 0.0; };
  if (r.bare_one_cell_us >= 0)
    std::fprintf(out,
                 "# bare ping-pong, two fork()ed processes, same iters: one int32 both ways %.4f us (pld %.2fx), "
                 "one int32 per direction %.4f us (pld %.2fx)\n",
                 r.bare_one_cell_us, ratio(r.bare_one_cell_us), r.bare_two_cell_us, ratio(r.bare_two_cell_us));
  std::fprintf(out, "#\n# %s: %lld wrong values, %.1f s\n", r.wrong_total ? "FAILED" : "OK",
               static_cast<long long>(r.wrong_total), r.elapsed_s);
}

void write_json(const std::string& path, const Options& o, const Plan& plan, const Results& r) {
  using nlohmann::json;
  json j;
  j["tool"] = "pld-bench";
  j["version"] = pld::version();
  j["nranks"] = o.nranks;
  j["backend"] = "shm";
  j["online_cpus"] = sysconf(_SC_NPROCESSORS_ONLN);
  j["path"] = path_name(o.path);
  j["heap_bytes"] = plan.heap_bytes;
  j["options"] = {{"minbytes", o.min_bytes},
                  {"maxbytes", o.max_bytes},
                  {"stepfactor", o.step_factor},
                  {"stepbytes", o.step_bytes},
                  {"iters", o.iters},
                  {"warmup_iters", o.warmup},
                  {"check", o.check},
                  {"core_num", o.core_num},
                  {"pin", o.pin},
                  {"root", o.root},
                  {"budget_bytes", o.budget_bytes}};
  json settings = json::object();
  for (const auto& s : pld::describe_settings()) settings[s.name] = s.value.empty() ? s.default_value : s.value;
  j["settings"] = settings;
  j["timing"] = {
      {"composite", "one dispatch per row; max over ranks of in-kernel loop time / iters; warm-up excluded"},
      {"builtin", "one dispatch per rank per iteration; max over ranks of (stamp after - stamp before) / iters"}};
  json tables = json::array();
  for (const TableResult& t : r.tables) {
    json jt;
    jt["collective"] = coll_name(t.table.coll);
    if (t.table.coll == Coll::Allreduce) jt["mode"] = mode_name(t.table.mode);
    jt["busbw_factor"] = busbw_factor(t.table.coll, o.nranks);
    json rows = json::array();
    for (const Row& row : t.rows) {
      const Point& p = row.point;
      json jr = {{"size", p.bytes}, {"count", p.count}, {"type", type_of(p)}, {"redop", redop_of(p)}, {"root", p.root}};
      for (int g = 0; g < kGroups; ++g) {
        const Measure& m = row.group[g];
        if (!m.valid) continue;
        jr[t.group_names[g]] = {{"time_us", m.time_us}, {"algbw", algbw(p, m)},   {"busbw", busbw(p, m, o.nranks)},
                                {"wrong", m.wrong},     {"iters", m.iters.iters}, {"warmup", m.iters.warmup}};
      }
      rows.push_back(jr);
    }
    jt["rows"] = rows;
    tables.push_back(jt);
  }
  j["tables"] = tables;
  if (r.latency_us >= 0) {
    j["p2p_latency"] = {{"notify_wait_us", r.latency_us}, {"iters", r.latency_iters}};
    if (r.bare_one_cell_us >= 0) {
      j["p2p_latency"]["bare_one_cell_us"] = r.bare_one_cell_us;
      j["p2p_latency"]["bare_two_cell_us"] = r.bare_two_cell_us;
    }
  }
  j["wrong_total"] = r.wrong_total;
  j["elapsed_s"] = r.elapsed_s;
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  f << j.dump(2) << "\n";
  if (!f) throw std::runtime_error("cannot write " + path);
}

}  // namespace pldbench
