// stream — the memory-bandwidth ceiling of bench/compare_mpi.sh: a STREAM-style copy run by
// `--threads` threads at once (2 on the 2-core reference machine, one per rank), each on its own
// src/dst pair. Bandwidth counts bytes read + bytes written (STREAM's convention for copy: 2 x the
// array size), summed over threads: the rate at which the machine as a whole moves data through
// memory, i.e. the denominator of a memory-traffic floor.
//
// Arrays default to 512 MiB per thread and side, far above any last-level cache (the reference VM
// reports a 260 MiB L3), so the number is DRAM bandwidth. `--bytes` smaller than the cache gives
// the cache-resident rate instead (printed as a second row by compare_mpi.sh for context).
// Best of `--reps` timed copies after one untimed copy that faults the pages in.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::uint64_t parse_size(const std::string& t) {
  char* end = nullptr;
  std::uint64_t v = std::strtoull(t.c_str(), &end, 10);
  switch (*end) {
    case 'k':
    case 'K': return v << 10;
    case 'm':
    case 'M': return v << 20;
    case 'g':
    case 'G': return v << 30;
    default: return v;
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, reps = 10;
  std::string bytes_text = "512M", json;
  CLI::App app{"stream: aggregate copy bandwidth (read + write bytes) of N threads"};
  app.add_option("--threads", threads)->check(CLI::Range(1, 256))->capture_default_str();
  app.add_option("--bytes", bytes_text, "array size per thread (src and dst each)")->capture_default_str();
  app.add_option("--reps", reps)->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("-J,--json", json);
  CLI11_PARSE(app, argc, argv);
  const std::size_t bytes = parse_size(bytes_text);

  std::vector<std::vector<char>> src(static_cast<std::size_t>(threads)), dst(src.size());
  std::vector<double> per_rep(static_cast<std::size_t>(reps), 0.0);
  std::barrier sync(threads);
  std::vector<std::thread> pool;
  std::vector<std::vector<double>> times(static_cast<std::size_t>(threads), std::vector<double>(per_rep.size()));
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      auto& s = src[static_cast<std::size_t>(t)];
      auto& d = dst[static_cast<std::size_t>(t)];
      s.assign(bytes, static_cast<char>(t + 1));  // first touch by the thread that copies
      d.assign(bytes, 0);
      std::memcpy(d.data(), s.data(), bytes);
      for (int r = 0; r < reps; ++r) {
        sync.arrive_and_wait();
        const double t0 = now_s();
        std::memcpy(d.data(), s.data(), bytes);
        times[static_cast<std::size_t>(t)][static_cast<std::size_t>(r)] = now_s() - t0;
      }
    });
  for (auto& th : pool) th.join();
  // A rep lasts as long as its slowest thread; the best rep is the ceiling.
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    double slowest = 0;
    for (int t = 0; t < threads; ++t)
      slowest = std::max(slowest, times[static_cast<std::size_t>(t)][static_cast<std::size_t>(r)]);
    best = std::min(best, slowest);
  }
  const double gbps = 2.0 * static_cast<double>(bytes) * threads / best / 1e9;
  std::printf("stream copy: %d threads x %zu bytes: %.2f GB/s (read + write, best of %d)\n", threads, bytes, gbps,
              reps);
  if (!json.empty())
    std::ofstream(json)
        << nlohmann::json{{"threads", threads}, {"bytes", bytes}, {"reps", reps}, {"copy_gbps", gbps}}.dump(2) << "\n";
  return 0;
}
