// pld-bench-p2p — the core point-to-point benchmark, pld side by side with bare baselines in ONE
// run (docs/performance.md):
//
//   latency    pld notify->wait ping-pong between two ranks   vs  a bare int32 ping-pong between two
//                                                                 fork()ed processes (MAP_SHARED); also
//                                                                 vs one int32 per direction (info)
//   bandwidth  pld tensor::put / tensor::get, rank 0 <-> rank 1 vs  memcpy in one process
//
// Targets (from the issue): latency <= 2x the bare ping-pong; 64 MiB put/get >= 80% of memcpy.
// It is a benchmark, not a test: it exits 0 whether or not a target is met (a missed target is
// printed), and non-zero only if data arrived wrong or the run failed.
//
//   pld-bench-p2p                         # defaults: 64 KiB, 1 MiB, 64 MiB
//   pld-bench-p2p --sizes 4K,64K,1M,64M --pin --json out.json
#include "common.hpp"

#include <fmt/format.h>
#include <sys/mman.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <stdexcept>

namespace {

// Source buffer of the memcpy baseline (private anonymous memory, filled, so pre-faulted).
struct Mapping {
  explicit Mapping(std::uint64_t bytes) : bytes(bytes) {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error(fmt::format("mmap({} bytes): {}", bytes, std::strerror(errno)));
    data = static_cast<std::uint8_t*>(p);
  }
  ~Mapping() { munmap(data, bytes); }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  std::uint64_t bytes;
  std::uint8_t* data;
};

}  // namespace

int main(int argc, char** argv) {
  bench::Options o;
  CLI::App app{
      "pld-bench-p2p: notify/wait latency and put/get bandwidth between two pld ranks, side by side "
      "with a bare shared-memory ping-pong and memcpy"};
  app.add_option("--rounds", o.rounds, "measure everything this many times; the table shows medians")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--lat-iters", o.lat_iters, "timed ping-pong round trips")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--lat-warmup", o.lat_warmup, "untimed round trips first")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--sizes", o.sizes,
                 "bandwidth message sizes, comma separated, K/M/G = KiB/MiB/GiB (default 64K,1M,64M)")
      ->delimiter(',')
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::PositiveNumber);
  app.add_option("--bw-bytes", o.bw_bytes, "bytes moved per bandwidth measurement; iterations = bw-bytes / size")
      ->transform(CLI::AsSizeValue(false))
      ->capture_default_str();
  app.add_option("--iters", o.iters, "bandwidth iterations for every size (0 = from --bw-bytes)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--warmup", o.warmup, "bandwidth warm-up iterations (0 = iters/10, at least 2)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--min-iters", o.min_iters, "lower clamp of the computed iterations")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max-iters", o.max_iters, "upper clamp of the computed iterations")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--heap-bytes", o.heap_bytes, "pld window heap per rank (0 = max(256M, size + 2M))")
      ->transform(CLI::AsSizeValue(false));
  app.add_flag("--pin", o.pin, "pin rank / process r to CPU r (pld ranks pin themselves inside the kernel)");
  app.add_option("--json", o.json, "also write the results to this JSON file");
  CLI11_PARSE(app, argc, argv);
  if (o.sizes.empty()) {
    fmt::print(stderr, "pld-bench-p2p: --sizes is empty; give at least one size\n");
    return 2;
  }

  try {
    bench::print_header(o);
    std::uint64_t max_bytes = 0;
    for (std::uint64_t s : o.sizes) max_bytes = std::max(max_bytes, s);
    Mapping src(max_bytes);  // source of the memcpy baseline
    bench::fill_pattern(src.data, max_bytes);

    bench::Results r;
    for (int round = 0; round < o.rounds; ++round) {
      // Each pld measurement right after its baseline (a fresh pld::run each, so fresh windows).
      bench::Round rd;
      rd.lat_bare = bench::bare_pingpong(o, false);
      rd.lat_bare2 = bench::bare_pingpong(o, true);
      rd.lat_pld = bench::pld_latency(o);
      for (std::uint64_t s : o.sizes) {
        rd.memcpy_.push_back(bench::memcpy_bw(o, s, src.data));
        const bench::PutGet pg = bench::pld_bandwidth(o, s);
        rd.put.push_back(pg.put);
        rd.get.push_back(pg.get);
      }
      r.push_back(std::move(rd));
      fmt::print("# round {}/{} done\n", round + 1, o.rounds);
      std::fflush(stdout);
    }
    fmt::print("#\n");

    bench::print_table(o, r);  // missed targets are reported, not an exit status
    if (!o.json.empty()) bench::write_json(o, r, o.json);

    std::int64_t wrong = 0;
    for (const bench::Round& rd : r)
      for (const auto* v : {&rd.put, &rd.get, &rd.memcpy_})
        for (const bench::BwResult& b : *v) wrong += b.wrong;
    if (wrong) {
      fmt::print(stderr, "pld-bench-p2p: {} bytes arrived wrong\n", wrong);
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "pld-bench-p2p: {}\n", e.what());
    return 2;
  }
}
