// Swimlanes: per rank and dispatch files (task records, dependency edges, scope statistics,
// events) and one merged Chrome trace per call with a flow from each notify to the wait it
// released. The files must parse and follow the documented schema (docs/04-debugging.md).
#include "support.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace pld::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read(const fs::path& p) {
  std::ifstream in(p);
  EXPECT_TRUE(in.good()) << p;
  return json::parse(in);
}

// Ping-pong (two user waits), a 3-task graph and an allreduce.
void traced_kernel(DistributedTensor<float> v, DistributedTensor<std::int32_t> sig,
                   DistributedTensor<std::int32_t> csig) {
  const int me = rank(get_comm_ctx(v));
  if (me == 0) {
    system::notify(sig, 1, {0, 0}, 1, NotifyOp::AtomicAdd);
    system::wait(sig, {1, 0}, 1, WaitCmp::Ge);
  } else {
    system::wait(sig, {0, 0}, 1, WaitCmp::Ge);
    system::notify(sig, 0, {1, 0}, 1, NotifyOp::Set);
  }
  TaskGraph g(2, "work");
  auto a = g.add("load", [] {});
  auto b = g.add("compute", [] {}, {a});
  g.add("store", [] {}, {a, b});
  g.run();
  tensor::allreduce(v, csig);
}
void traced(Host& h) {
  auto v = h.window<float>(h.alloc_window_buffer({64}, DType::FP32, "v"), {64});
  auto sig = h.window<std::int32_t>(h.alloc_window_buffer({2, 16}, DType::INT32, "sig"), {2, 16});
  auto csig = h.window<std::int32_t>(h.alloc_window_buffer({2, 16}, DType::INT32, "csig"), {2, 16});
  for (int r = 0; r < 2; ++r) h.dispatch(r, traced_kernel, v, sig, csig);
}

fs::path fresh_dir(const char* name) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("pld-{}-{}", name, getpid());
  fs::remove_all(dir);
  return dir;
}

TEST(Swimlane, FilesFollowTheSchemaAndTheTraceHasOneFlowPerWait) {
  const fs::path dir = fresh_dir("swimlane");
  DistributedConfig c = ranks(2);
  c.swimlane = true;
  c.dfx_dir = dir.string();
  pld::run(c, traced);

  for (int r = 0; r < 2; ++r) {
    const fs::path d = dir / fmt::format("rank{}", r) / "d0";
    const json lane = read(d / "swimlane.json");
    EXPECT_EQ(lane["rank"], r);
    EXPECT_EQ(lane["dispatch"], 0);
    ASSERT_EQ(lane["tasks"].size(), 3u);
    for (const json& t : lane["tasks"]) {
      for (const char* key : {"task_id", "name", "scope", "thread", "dispatch_time_us", "start_time_us", "end_time_us",
                              "finish_time_us", "duration_us"})
        EXPECT_TRUE(t.contains(key)) << key;
      EXPECT_LE(t["dispatch_time_us"].get<double>(), t["start_time_us"].get<double>());
      EXPECT_LE(t["start_time_us"].get<double>(), t["end_time_us"].get<double>());
      EXPECT_LE(t["end_time_us"].get<double>(), t["finish_time_us"].get<double>());
      EXPECT_EQ(t["scope"], "work");
    }
    const json deps = read(d / "deps.json");
    EXPECT_EQ(deps["tasks"].size(), 3u);
    EXPECT_EQ(deps["edges"].size(), 3u);  // load->compute, load->store, compute->store
    std::ifstream stats(d / "scope_stats.jsonl");
    std::string line;
    std::vector<json> lines;
    while (std::getline(stats, line)) lines.push_back(json::parse(line));
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[0]["rank"], r);
    EXPECT_TRUE(lines[0].contains("pid"));
    EXPECT_EQ(lines[1]["scope"], "work");
    EXPECT_EQ(lines[1]["tasks"], 3);
    EXPECT_GE(lines[1]["peak_running"].get<int>(), 1);
  }

  const json trace = read(dir / "trace_call0.json");
  ASSERT_TRUE(trace["traceEvents"].is_array());
  int starts = 0, finishes = 0, waits = 0, collectives = 0, tasks = 0;
  for (const json& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name"));
    const std::string ph = e["ph"], cat = e.value("cat", "");
    if (ph == "s") ++starts;
    if (ph == "f") ++finishes;
    if (ph == "X") {
      EXPECT_TRUE(e.contains("ts") && e.contains("dur") && e.contains("tid"));
      if (cat == "wait") ++waits;
      if (cat == "task") ++tasks;
      if (cat == "collective") {
        ++collectives;
        EXPECT_EQ(e["name"], "allreduce");
        EXPECT_EQ(e["args"]["op"], "sum");
        EXPECT_EQ(e["args"]["count"], 64);
      }
    }
  }
  EXPECT_EQ(waits, 2);
  EXPECT_EQ(starts, 2) << "one flow per notify/wait pair";
  EXPECT_EQ(finishes, 2);
  EXPECT_EQ(collectives, 2);
  EXPECT_EQ(tasks, 6);
  fs::remove_all(dir);
}

void empty_kernel() {}
void two_dispatches(Host& h) {
  for (int r = 0; r < h.world_size(); ++r) {
    h.dispatch(r, empty_kernel);
    h.dispatch(r, empty_kernel);
  }
}

TEST(Swimlane, OneDirectoryPerDispatchAndOneTracePerCall) {
  const fs::path dir = fresh_dir("swimlane-worker");
  DistributedConfig c = ranks(2);
  c.swimlane = true;
  c.dfx_dir = dir.string();
  DistributedWorker rt(c, two_dispatches);
  rt();
  rt();
  rt.close();
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 4; ++k)
      EXPECT_TRUE(fs::exists(dir / fmt::format("rank{}", r) / fmt::format("d{}", k) / "swimlane.json"));
  EXPECT_TRUE(fs::exists(dir / "trace_call0.json"));
  EXPECT_TRUE(fs::exists(dir / "trace_call1.json"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pld::test
