// exchange_ceiling — the copy ceiling of all_to_all at P=2, without pld or MPI: two threads (one
// per "rank") each own an input of S bytes ([2, S/2]) and a target of S bytes; per iteration,
// thread t copies row p of its input into row t of thread p's target, for p = t then the peer,
// between two spin barriers — exactly the bytes pld's all_to_all moves (read S, write S per
// rank; nothing to fuse, every row has its own source). Bandwidth = 4S / time (both threads,
// read + write, STREAM's convention): where all_to_all's busbw lies relative to what the machine
// can do (bench/README.md).
//
// bench/compare_mpi.sh runs it in every round, next to pld-bench and mpi_bench (`--kinds
// memcpy-alt,stream-64B-alt,stream -J FILE`, `--huge-pages` as PLD_HUGE_PAGES), and reports each
// side's all_to_all time as a multiple of this bare copy. It is an estimate of the floor, not a
// bound: it is measured like the others, with their noise.
//
// The report's no-cliff check sets each collective's growth from one size to the next against this
// copy's over the same working set (broadcast, allreduce, reduce_scatter of S: this copy at S/2;
// `--sizes 2K,4K,...,64M`: any byte sizes with K / M suffixes).
//
//   build/bench/mpi/pld-exchange-ceiling --mib 1,4,16,64
//   build/bench/mpi/pld-exchange-ceiling --sizes 64K,128K,256K
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <immintrin.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

// The store kinds: memcpy (glibc: ordinary stores at these sizes on a VM reporting a large L3);
// 16-byte streaming stores (SSE2, any x86-64); and memcpy / 64-byte streaming stores (AVX-512)
// with the order alternating per iteration as pld's push collectives copy (src/core/copy.h: odd
// iterations take the rows and their 64 KiB blocks last to first, so a call starts on the lines
// the previous one touched last). memcpy-alt copies in 64 KiB blocks forward too, as pld's
// cached copies do: glibc's memcpy of a MiB or more leaves rep movsb for a slower vector loop on
// AMD. bench/compare_mpi.sh takes the fastest of memcpy-alt, stream-64B-alt and stream (the
// latter stands in for the 64-byte kind without AVX-512).
enum class Kind { Memcpy, MemcpyAlt, Stream, Stream64Alt };
const char* name(Kind k) {
  switch (k) {
    case Kind::Memcpy: return "memcpy";
    case Kind::MemcpyAlt: return "memcpy-alt";
    case Kind::Stream: return "stream";
    case Kind::Stream64Alt: return "stream-64B-alt";
  }
  return "?";
}
bool alternates(Kind k) {
  return k == Kind::MemcpyAlt || k == Kind::Stream64Alt;
}

void stream_copy(char* dst, const char* src, std::size_t n) {
  std::size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  _mm_sfence();
  std::memcpy(dst + i, src + i, n - i);
}

// 64-byte non-temporal stores, one per cache line (main() skips this kind without AVX-512).
__attribute__((target("avx512f"))) void stream64_avx512(char* dst, const char* src, std::size_t n) {
  std::size_t i = 0;
  for (; i + 256 <= n; i += 256) {
    const __m512i a = _mm512_loadu_si512(src + i);
    const __m512i b = _mm512_loadu_si512(src + i + 64);
    const __m512i c = _mm512_loadu_si512(src + i + 128);
    const __m512i d = _mm512_loadu_si512(src + i + 192);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i), a);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 64), b);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 128), c);
    _mm512_stream_si512(reinterpret_cast<__m512i*>(dst + i + 192), d);
  }
  _mm_sfence();
  std::memcpy(dst + i, src + i, n - i);
}

void copy_kind(Kind kind, char* dst, const char* src, std::size_t n) {
  if (kind == Kind::Memcpy || kind == Kind::MemcpyAlt)
    std::memcpy(dst, src, n);
  else if (kind == Kind::Stream64Alt)
    stream64_avx512(dst, src, n);
  else
    stream_copy(dst, src, n);
}

// One row: backward in 64 KiB blocks (each block forward); forward in one piece, or in the same
// blocks for memcpy-alt.
void copy_row(Kind kind, char* dst, const char* src, std::size_t n, bool backward) {
  const std::size_t block = 64 << 10;
  if (!backward && kind == Kind::MemcpyAlt) {
    for (std::size_t at = 0; at < n; at += block) copy_kind(kind, dst + at, src + at, std::min(block, n - at));
    return;
  }
  if (!backward) return copy_kind(kind, dst, src, n);
  for (std::size_t at = n; at > 0;) {
    const std::size_t len = at % block ? at % block : block;
    at -= len;
    copy_kind(kind, dst + at, src + at, len);
  }
}

bool g_huge_pages = true;  // --huge-pages: madvise like pld's heaps (PLD_HUGE_PAGES)

// A shared mapping, pre-faulted, like a pld window: shmem, advised for transparent huge pages
// before any page exists as pld's heaps are (the kernel's shmem_enabled mode decides).
char* shared_buffer(std::size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("mmap failed");
  if (g_huge_pages) madvise(p, bytes, MADV_HUGEPAGE);  // a hint, as in pld
  std::memset(p, 1, bytes);
  return static_cast<char*>(p);
}

// Median, mean (pld-bench's and mpi_bench's statistic) and minimum per-iteration time, seconds,
// of the exchange of S bytes per thread.
struct Times {
  double median, mean, min;
};
Times run(std::size_t s, Kind kind, int iters) {
  char* in[2] = {shared_buffer(s), shared_buffer(s)};
  char* tgt[2] = {shared_buffer(s), shared_buffer(s)};
  const std::size_t row = s / 2;
  std::atomic<int> arrived{0};
  auto barrier = [&](int generation) {
    arrived.fetch_add(1);
    while (arrived.load() < 2 * generation) _mm_pause();
  };
  std::vector<double> times;
  auto rank = [&](int t) {
    for (int it = 0; it < iters + 3; ++it) {  // 3 untimed warm-up iterations
      barrier(2 * it + 1);
      const auto t0 = std::chrono::steady_clock::now();
      const bool backward = alternates(kind) && it % 2 == 1;
      for (int i = 0; i < 2; ++i) {
        const int p = (t + (backward ? 1 - i : i)) % 2;
        copy_row(kind, tgt[p] + static_cast<std::size_t>(t) * row, in[t] + static_cast<std::size_t>(p) * row, row,
                 backward);
      }
      barrier(2 * it + 2);
      if (t == 0 && it >= 3)
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  };
  std::thread peer(rank, 1);
  rank(0);
  peer.join();
  for (char* p : {in[0], in[1], tgt[0], tgt[1]}) munmap(p, s);
  std::sort(times.begin(), times.end());
  double sum = 0;
  for (double t : times) sum += t;
  return {times[times.size() / 2], sum / static_cast<double>(times.size()), times.front()};
}

// "64K" -> 65536, "2M" -> 2 MiB, "4096" -> 4096.
std::size_t parse_size(const std::string& text) {
  std::size_t used = 0;
  const unsigned long long v = std::stoull(text, &used);
  const std::string unit = text.substr(used);
  if (unit.empty()) return v;
  if (unit == "K") return v << 10;
  if (unit == "M") return v << 20;
  if (unit == "G") return v << 30;
  throw std::invalid_argument("exchange_ceiling: '" + text + "' is not a size; write e.g. 4096, 64K or 2M");
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<Kind> all = {Kind::Memcpy, Kind::MemcpyAlt, Kind::Stream, Kind::Stream64Alt};
  std::vector<int> mib = {1, 4, 16, 64};
  std::vector<std::string> size_names, kind_names;
  std::string json_path;
  CLI::App app{"exchange_ceiling: the all_to_all copy pattern at P=2 with two threads, no runtime"};
  app.add_option("--mib", mib, "input bytes per rank, in MiB (the pld-bench size)")->delimiter(',');
  app.add_option("--sizes", size_names, "input bytes per rank with K / M suffixes (replaces --mib)")->delimiter(',');
  std::vector<std::string> names;
  for (Kind k : all) names.push_back(name(k));
  app.add_option("--kinds", kind_names, "store kinds to run (default: all)")
      ->delimiter(',')
      ->check(CLI::IsMember(names));
  app.add_option("-J,--json", json_path, "also write the results as JSON to this file");
  app.add_option("--huge-pages", g_huge_pages,
                 "1: madvise the buffers for transparent huge pages, as pld does "
                 "(PLD_HUGE_PAGES); 0: do not");
  CLI11_PARSE(app, argc, argv);
  std::vector<Kind> kinds;
  for (Kind k : all)
    if (kind_names.empty() || std::find(kind_names.begin(), kind_names.end(), name(k)) != kind_names.end())
      kinds.push_back(k);
  nlohmann::json rows = nlohmann::json::array();
  std::printf("%9s  %-15s %10s %10s %10s %8s\n", "size", "stores", "median us", "mean us", "min us", "GB/s");
  std::vector<std::size_t> sizes;
  for (int m : mib) sizes.push_back(static_cast<std::size_t>(m) << 20);
  if (!size_names.empty()) sizes.clear();
  for (const std::string& n : size_names) sizes.push_back(parse_size(n));
  for (std::size_t s : sizes) {
    s = std::max<std::size_t>(s / 128 * 128, 128);  // whole cache lines per row
    const int iters = static_cast<int>(std::clamp<std::size_t>((2048ull << 20) / s, 20, 100000));
    const std::string label = s % (1u << 20) == 0 ? std::to_string(s >> 20) + " MiB"
                              : s % 1024 == 0     ? std::to_string(s >> 10) + " KiB"
                                                  : std::to_string(s) + " B";
    for (Kind k : kinds) {
      if (k == Kind::Stream64Alt && !__builtin_cpu_supports("avx512f")) {
        std::printf("%9s  %-15s (no AVX-512 on this CPU)\n", label.c_str(), name(k));
        continue;
      }
      const Times t = run(s, k, iters);  // GB/s: 4S bytes (both threads, read + write) per median
      std::printf("%9s  %-15s %10.1f %10.1f %10.1f %8.1f\n", label.c_str(), name(k), t.median * 1e6, t.mean * 1e6,
                  t.min * 1e6, 4.0 * static_cast<double>(s) / t.median / 1e9);
      rows.push_back({{"size", s},
                      {"kind", name(k)},
                      {"iters", iters},
                      {"median_us", t.median * 1e6},
                      {"mean_us", t.mean * 1e6},
                      {"min_us", t.min * 1e6}});
    }
  }
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << nlohmann::json{{"tool", "exchange_ceiling"}, {"nranks", 2}, {"huge_pages", g_huge_pages}, {"rows", rows}}
               .dump(2)
        << "\n";
    if (!out) {
      std::fprintf(stderr, "exchange_ceiling: cannot write %s\n", json_path.c_str());
      return 2;
    }
  }
  return 0;
}
