// pld-bench-tasks — cost of the per-rank task model, with swimlanes off and on, in ONE run:
// a TaskGraph of N empty tasks (a chain, and N independent tasks on `threads` threads) timed
// inside a kernel; per task = graph time / N. With swimlanes on, every task is also recorded and
// the dispatch's files are written after the timed part (docs/performance.md).
//
//   pld-bench-tasks                 # 1000 tasks, 1 and 2 threads, 5 repeats
#include <pld/pld.hpp>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

void graph_kernel(pld::Tensor<double> out, int tasks, int threads, int chain) {
  pld::TaskGraph g(threads, chain ? "chain" : "independent");
  pld::TaskId prev;
  for (int i = 0; i < tasks; ++i) {
    if (chain && i > 0)
      prev = g.add("t", [] {}, {prev});
    else
      prev = g.add("t", [] {});
  }
  const auto t0 = Clock::now();
  g.run();
  out(0) = std::chrono::duration<double, std::nano>(Clock::now() - t0).count() / tasks;
}
void graph_program(pld::Host& h, pld::HostTensor<double>& out, int tasks, int threads, int chain) {
  h.dispatch(0, graph_kernel, out[0], tasks, threads, chain);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int tasks = 1000, repeats = 5;
  CLI::App app{"pld-bench-tasks: per-task cost of TaskGraph, swimlanes off and on"};
  app.add_option("--tasks", tasks, "tasks per graph")->check(CLI::Range(1, 1000000))->capture_default_str();
  app.add_option("--repeats", repeats, "interleaved repeats (median shown)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    const std::string dir =
        (std::filesystem::temp_directory_path() / fmt::format("pld-bench-tasks-{}", getpid())).string();
    fmt::print("pld-bench-tasks: {} empty tasks per graph, median of {} (ns per task)\n\n", tasks, repeats);
    fmt::print("{:<24} {:>8} {:>14} {:>14} {:>12}\n", "graph", "threads", "swimlane off", "swimlane on", "overhead");
    for (int chain : {1, 0})
      for (int threads : {1, 2}) {
        std::vector<double> off, on;
        for (int r = 0; r < repeats; ++r)
          for (bool swim : {false, true}) {
            pld::DistributedConfig c;
            c.device_ids = {0};
            c.heap_bytes = 1 << 20;
            c.swimlane = swim;
            c.dfx_dir = dir;
            auto out = pld::HostTensor<double>::zeros({1, 1});
            pld::run(c, graph_program, out, tasks, threads, chain);
            (swim ? on : off).push_back(out(0, 0));
          }
        const double a = median(off), b = median(on);
        fmt::print("{:<24} {:>8} {:>14.0f} {:>14.0f} {:>9.0f} ns\n", chain ? "chain" : "independent", threads, a, b,
                   b - a);
      }
    std::filesystem::remove_all(dir);
  } catch (const std::exception& e) {
    fmt::print(stderr, "pld-bench-tasks: {}\n", e.what());
    return 2;
  }
  return 0;
}
