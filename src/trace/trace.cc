// Swimlane recording on the rank side: events and task records of the current dispatch, written
// to <dir>/rank{r}/d{k}/ when the dispatch ends (trace.h).
#include "trace/trace.h"

#include "core/log.h"
#include "rank/runtime.h"

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <utility>

namespace pld::detail::trace {

namespace fs = std::filesystem;
using nlohmann::json;

std::atomic<bool> g_on{false};

namespace {

Config& config_slot() {
  static Config c;
  return c;
}

struct Current {
  std::mutex mutex;
  int rank = 0;
  std::uint64_t index = 0;
  std::string kernel;
  std::int64_t begin = 0;
  std::vector<Event> events;
  std::vector<ScopeRecord> scopes;
};
Current& current() {
  static Current* c = new Current();  // lives as long as the rank process
  return *c;
}

std::atomic<int> g_threads{0};

double us(std::int64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::Notify: return "notify";
    case Kind::Wait: return "wait";
    case Kind::Collective: return "collective";
    case Kind::Put: return "put";
    case Kind::Get: return "get";
    case Kind::Task: return "task";
    case Kind::Atomic: return "atomic";
  }
  return "?";
}

void write_json(const fs::path& path, const json& j) {
  std::ofstream out(path);
  out << j.dump(1) << "\n";
}

}  // namespace

void configure(const Config& c) {
  config_slot() = c;
}
const Config& config() {
  return config_slot();
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int thread_index() {
  thread_local int index = g_threads.fetch_add(1);
  return index;
}

void record(Event event) {
  Current& c = current();
  std::lock_guard lock(c.mutex);
  c.events.push_back(std::move(event));
}

void record_scope(ScopeRecord scope) {
  Current& c = current();
  std::lock_guard lock(c.mutex);
  c.scopes.push_back(std::move(scope));
}

void dispatch_begin(int world_rank, std::uint64_t index, const std::string& kernel) {
  if (!config().enabled) return;
  Current& c = current();
  {
    std::lock_guard lock(c.mutex);
    c.rank = world_rank;
    c.index = index;
    c.kernel = kernel;
    c.events.clear();
    c.scopes.clear();
    c.begin = now_ns();
  }
  (void)thread_index();  // the main thread is thread 0
  g_on.store(true, std::memory_order_relaxed);
}

void dispatch_end(bool ok) {
  if (!config().enabled) return;
  g_on.store(false, std::memory_order_relaxed);
  Current& c = current();
  std::lock_guard lock(c.mutex);
  const std::int64_t end = now_ns();
  try {
    const fs::path dir = fs::path(config().dir) / fmt::format("rank{}", c.rank) / fmt::format("d{}", c.index);
    fs::create_directories(dir);

    json tasks = json::array(), nodes = json::array(), edges = json::array();
    for (const ScopeRecord& s : c.scopes)
      for (const TaskRecord& t : s.tasks) {
        tasks.push_back({{"task_id", t.id},
                         {"name", t.name},
                         {"scope", t.scope},
                         {"thread", t.thread},
                         {"dispatch_time_us", us(t.ready)},
                         {"start_time_us", us(t.start)},
                         {"end_time_us", us(t.end)},
                         {"finish_time_us", us(t.finish)},
                         {"duration_us", us(t.end - t.start)}});
        nodes.push_back({{"task_id", t.id}, {"name", t.name}, {"scope", t.scope}});
        for (int d : t.deps) edges.push_back({{"from", d}, {"to", t.id}, {"scope", t.scope}});
      }
    write_json(dir / "swimlane.json", {{"rank", c.rank},
                                       {"dispatch", c.index},
                                       {"kernel", c.kernel},
                                       {"ok", ok},
                                       {"dispatch_start_us", us(c.begin)},
                                       {"dispatch_end_us", us(end)},
                                       {"tasks", tasks}});
    write_json(dir / "deps.json", {{"tasks", nodes}, {"edges", edges}});

    std::ofstream stats(dir / "scope_stats.jsonl");
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    stats << json{{"rank", c.rank},  {"dispatch", c.index},       {"kernel", c.kernel},      {"host", host},
                  {"pid", getpid()}, {"scopes", c.scopes.size()}, {"start_us", us(c.begin)}, {"end_us", us(end)}}
                 .dump()
          << "\n";
    for (const ScopeRecord& s : c.scopes)
      stats << json{{"scope", s.name},
                    {"tasks", s.tasks.size()},
                    {"threads", s.threads},
                    {"peak_ready", s.peak_ready},
                    {"peak_running", s.peak_running},
                    {"peak_deferred", s.peak_deferred},
                    {"peak_conditions", s.peak_conditions}}
                   .dump()
            << "\n";

    json events = json::array();
    for (const Event& e : c.events)
      events.push_back({{"kind", kind_name(e.kind)},
                        {"t0_us", us(e.t0)},
                        {"t1_us", us(e.t1)},
                        {"thread", e.thread},
                        {"name", e.name},
                        {"peer", e.peer},
                        {"cell", e.cell},
                        {"value", e.value},
                        {"seen", e.seen},
                        {"op", e.op},
                        {"args", e.args.empty() ? json::object() : json::parse(e.args)}});
    write_json(dir / "events.json", {{"rank", c.rank}, {"dispatch", c.index}, {"events", events}});
  } catch (const std::exception& e) {
    log(LogLevel::Warn, "swimlane: cannot write the records of dispatch {}: {}", c.index, e.what());
  }
  c.events.clear();
  c.scopes.clear();
}

void clear_outputs() {
  std::error_code ec;
  const fs::path dir = config().dir;
  if (!fs::exists(dir, ec)) return;
  for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("rank", 0) == 0 || name.rfind("trace_call", 0) == 0) fs::remove_all(it->path(), ec);
  }
}

}  // namespace pld::detail::trace

// ----- collective spans -----------------------------------------------------------------------

namespace pld::detail::trace {

struct CollSpan::Open {
  const char* name;
  std::int64_t t0;
  std::string args;
};

void CollSpan::begin(const char* name, const WindowDesc& target, int root, int op) {
  nlohmann::json args = {
      {"dtype", dtype_name(target.dtype)}, {"shape", target.shape.str()}, {"count", target.shape.numel()}};
  if (target.state) {
    args["domain"] = target.state->label;
    args["buffer"] = target.state->buffer_name(target.ref.buffer);
    args["nranks"] = target.state->nranks();
  }
  if (root >= 0) args["root"] = root;
  static const char* const kOps[] = {"sum", "max", "min", "prod"};
  if (op >= 0 && op < 4) args["op"] = kOps[op];
  open_ = new Open{name, now_ns(), args.dump()};
}

void CollSpan::end() {
  const std::unique_ptr<Open> o(std::exchange(open_, nullptr));
  record(Event{Kind::Collective, o->t0, now_ns(), thread_index(), o->name, -1, 0, 0, 0, 0, std::move(o->args)});
}

}  // namespace pld::detail::trace
