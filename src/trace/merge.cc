// Host side of the swimlanes: merge one call's per-rank records into a Chrome-trace / Perfetto
// JSON (open it at ui.perfetto.dev or chrome://tracing). Processes are ranks, threads are the
// rank's threads; tasks, waits, collectives and put/get are slices, notifies are instants, and a
// flow arrow runs from each notify to the wait it released: the latest notify to the same cell
// of the same rank that happened before the wait returned.
#include "trace/trace.h"

#include "backend/wait_cmp.h"
#include "core/log.h"

#include <pld/detail/atomic.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace pld::detail::trace {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

json read_json(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return json();
  return json::parse(in, nullptr, false);
}

json slice(const std::string& name, const char* cat, int pid, int tid, double t0, double t1, json args) {
  return {{"name", name},
          {"cat", cat},
          {"ph", "X"},
          {"pid", pid},
          {"tid", tid},
          {"ts", t0},
          {"dur", std::max(0.0, t1 - t0)},
          {"args", std::move(args)}};
}

// One call's merged trace while it is built: the events, and what the flow arrows need.
struct Merged {
  struct Notify {
    double t;
    int pid, tid;
  };
  struct Wait {
    double t0, t1;
    int pid, tid;
    std::uint64_t cell;
  };
  json out = json::array();
  std::map<std::pair<int, std::uint64_t>, std::vector<Notify>> notifies;  // (dest rank, cell) -> notifies
  std::vector<Wait> waits;
  std::set<std::pair<int, int>> threads;
};

// The dispatch slice of rank `pid`'s dispatch k and its tasks (with the deferred part of waiters).
void add_tasks(Merged& m, int pid, std::uint64_t k, const json& lane) {
  m.threads.insert({pid, 0});
  m.out.push_back(slice(fmt::format("dispatch d{} {}", k, lane.value("kernel", "")), "dispatch", pid, 0,
                        lane.value("dispatch_start_us", 0.0), lane.value("dispatch_end_us", 0.0),
                        {{"dispatch", k}, {"ok", lane.value("ok", true)}}));
  for (const json& t : lane["tasks"]) {
    const int tid = t.value("thread", 0);
    m.threads.insert({pid, tid});
    m.out.push_back(slice(t.value("name", ""), "task", pid, tid, t.value("start_time_us", 0.0),
                          t.value("end_time_us", 0.0),
                          {{"task_id", t.value("task_id", 0)},
                           {"scope", t.value("scope", "")},
                           {"dispatch_time_us", t.value("dispatch_time_us", 0.0)},
                           {"finish_time_us", t.value("finish_time_us", 0.0)}}));
    const double end = t.value("end_time_us", 0.0), finish = t.value("finish_time_us", 0.0);
    if (finish > end)  // a deferred waiter: its id completes later than its body
      m.out.push_back(slice(t.value("name", "") + " (deferred)", "deferred", pid, tid, end, finish,
                            {{"task_id", t.value("task_id", 0)}}));
  }
}

// The notify / wait / collective / put / get events of one dispatch of rank `pid`.
void add_events(Merged& m, int pid, const json& ev) {
  for (const json& e : ev["events"]) {
    const std::string kind = e.value("kind", "");
    const int tid = e.value("thread", 0);
    m.threads.insert({pid, tid});
    const double t0 = e.value("t0_us", 0.0), t1 = e.value("t1_us", 0.0);
    if (kind == "notify") {
      m.out.push_back(slice(fmt::format("notify {} -> rank {}", e.value("name", ""), e.value("peer", -1)), "notify",
                            pid, tid, t0, t1,
                            {{"signal", e.value("name", "")},
                             {"peer", e.value("peer", -1)},
                             {"cell", e.value("cell", 0ull)},
                             {"value", e.value("value", 0)},
                             {"op", e.value("op", 0) == 0 ? "AtomicAdd" : "Set"}}));
      m.notifies[{e.value("peer", -1), e.value("cell", 0ull)}].push_back(Merged::Notify{t0, pid, tid});
    } else if (kind == "wait") {
      json args = {{"signal", e.value("name", "")},
                   {"cell", e.value("cell", 0ull)},
                   {"expected", e.value("value", 0)},
                   {"seen", e.value("seen", 0)},
                   {"cmp", to_string(wait_cmp_from(e.value("op", 0)))}};
      // A multi-cell wait (wait_until_any / all / some): `cell` is the first satisfied cell.
      if (e.contains("args") && e["args"].is_object() && !e["args"].empty()) args["cells"] = e["args"];
      m.out.push_back(slice(fmt::format("wait {}", e.value("name", "")), "wait", pid, tid, t0, t1, args));
      m.waits.push_back(Merged::Wait{t0, t1, pid, tid, e.value("cell", 0ull)});
    } else if (kind == "atomic") {
      const char* op = detail::amo_name(static_cast<detail::AmoOp>(e.value("op", 0)));
      m.out.push_back(slice(fmt::format("atomic_{} {} -> rank {}", op, e.value("name", ""), e.value("peer", -1)),
                            "atomic", pid, tid, t0, t1,
                            {{"window", e.value("name", "")},
                             {"peer", e.value("peer", -1)},
                             {"cell", e.value("cell", 0ull)},
                             {"operand", e.value("value", 0ll)},
                             {"old", e.value("seen", 0ll)},
                             {"op", op}}));
    } else {
      json args = e.value("args", json::object());
      if (kind == "put" || kind == "get") args = {{"peer", e.value("peer", -1)}, {"bytes", e.value("value", 0)}};
      m.out.push_back(slice(kind == "collective" ? e.value("name", "") : kind, kind.c_str(), pid, tid, t0, t1, args));
    }
  }
}

// Flows: each wait from the latest notify to its cell that started before the wait returned.
// Returns the number of flows.
std::uint64_t add_flows(Merged& m) {
  std::uint64_t flow = 0;
  for (const Merged::Wait& w : m.waits) {
    auto it = m.notifies.find({w.pid, w.cell});
    if (it == m.notifies.end()) continue;
    const Merged::Notify* best = nullptr;
    for (const Merged::Notify& n : it->second)
      if (n.t <= w.t1 && (!best || n.t > best->t)) best = &n;
    if (!best) continue;
    ++flow;
    m.out.push_back({{"name", "release"},
                     {"cat", "flow"},
                     {"ph", "s"},
                     {"id", flow},
                     {"pid", best->pid},
                     {"tid", best->tid},
                     {"ts", best->t}});
    m.out.push_back({{"name", "release"},
                     {"cat", "flow"},
                     {"ph", "f"},
                     {"bp", "e"},
                     {"id", flow},
                     {"pid", w.pid},
                     {"tid", w.tid},
                     {"ts", w.t1}});
  }
  return flow;
}

// The names of the processes (ranks) and of their threads.
void add_names(Merged& m, std::size_t nranks) {
  for (std::size_t r = 0; r < nranks; ++r)
    m.out.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", r}, {"args", {{"name", fmt::format("rank {}", r)}}}});
  for (const auto& [pid, tid] : m.threads)
    m.out.push_back({{"name", "thread_name"},
                     {"ph", "M"},
                     {"pid", pid},
                     {"tid", tid},
                     {"args", {{"name", tid == 0 ? std::string("main") : fmt::format("thread {}", tid)}}}});
}

}  // namespace

std::string merge_call(std::uint64_t call, const std::vector<std::uint64_t>& first,
                       const std::vector<std::uint64_t>& last) {
  const fs::path dir = config().dir;
  Merged m;
  for (std::size_t r = 0; r < first.size(); ++r) {
    const int pid = static_cast<int>(r);
    for (std::uint64_t k = first[r]; k < last[r]; ++k) {
      const fs::path d = dir / fmt::format("rank{}", r) / fmt::format("d{}", k);
      const json lane = read_json(d / "swimlane.json");
      if (lane.is_discarded() || lane.is_null()) continue;
      add_tasks(m, pid, k, lane);
      const json ev = read_json(d / "events.json");
      if (ev.is_discarded() || ev.is_null()) continue;
      add_events(m, pid, ev);
    }
  }
  if (m.out.empty()) return "";
  const std::uint64_t flow = add_flows(m);
  add_names(m, first.size());
  const fs::path path = dir / fmt::format("trace_call{}.json", call);
  try {
    std::ofstream(path) << json{{"traceEvents", m.out},
                                {"displayTimeUnit", "ns"},
                                {"otherData", {{"call", call}, {"flows", flow}}}}
                               .dump()
                        << "\n";
  } catch (const std::exception& e) {
    log(LogLevel::Warn, "swimlane: cannot write {}: {}", path.string(), e.what());
    return "";
  }
  return path.string();
}

}  // namespace pld::detail::trace
