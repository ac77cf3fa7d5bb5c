// entry_floor — what a loop of small broadcasts from a fixed root must cost at P=2 when every rank
// returns only after every peer has entered the call (pld's rule), measured without pld or MPI:
// two fork()ed processes on MAP_SHARED memory, in the layout of pld's LL broadcast
// (src/coll/ll.cc): per call e, the root writes the payload as 64-byte lines (60 data bytes, the
// epoch e in the last 4, stored last with release) into the peer's slot [e & 1] and waits for the
// peer's entry line [e & 1] in its own; the peer writes its entry line into the root's slot, waits
// for the root's lines and copies the payload out. The root's data of call k releases the peer's
// entry into call k + 1 while the root waits for it, so the loop is pipelined: about one one-way
// cache-line trip per call, not a round trip.
//
// Shapes (each timed as calls per loop; the slower side's loop counts):
//   entered      the above, plain release stores: the floor of the rule in pld's layout
//   entered-rmw  the same with each message's last epoch written by a seq_cst exchange, as pld's
//                doorbell does (notify Set on the epoch: it pairs with a sleeping waiter's count)
//   entered-late the same with plain stores and, after the waits, one seq_cst fence (a doorbell
//                checked after the waits: the stores drain while the rank waits)
//   exchange     no root: each side writes its payload lines into the other's slot [e & 1] and
//                waits for the other's (pld's LL allreduce, allgather and all_to_all at P=2,
//                without the reduction): a symmetric exchange, one trip per call
//   eager        the root never waits (Open MPI's fixed-root MPI_Bcast of a small message: an
//                eager send into a ring of 64 slots; the peer returns its read count every 32)
//
// bench/broadcast_floor.sh runs it interleaved with pld-bench and Open MPI's MPI_Bcast and prints
// pld / floor and Open MPI / floor per size (bench/README.md).
//
//   g++ -O2 -std=c++20 bench/mpi/entry_floor.cpp -o entry_floor
//   ./entry_floor [--bytes 8,64,512] [--iters 200000] [--reps 5]
//                 [--shapes entered,entered-rmw,entered-late,exchange,eager] [--pin] [-J FILE]
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FLOOR_PAUSE() _mm_pause()
#else
#define FLOOR_PAUSE() asm volatile("" ::: "memory")
#endif

namespace {

constexpr std::size_t kLine = 64, kLineData = 60, kPage = 4096;
constexpr std::size_t kRing = 64, kCreditEvery = 32;

double now_ns() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

std::size_t lines_of(std::size_t bytes) {
  return bytes == 0 ? 1 : (bytes + kLineData - 1) / kLineData;
}

enum class Shape { Entered, EnteredRmw, EnteredLate, Exchange, Eager };

// The shared memory: the root's inbox (entry lines or, for exchange, data slots; 2 parities), then
// the peer's inbox (data slots, 2 parities, or the eager ring), then the eager ring's read count;
// each on its own pages, as each rank's LL slots live in its own heap.
struct Region {
  std::byte* base;
  std::size_t slot_bytes;  // whole pages
  std::byte* root_inbox() const { return base; }
  std::byte* peer_inbox() const { return base + 2 * slot_bytes; }
  std::atomic_ref<std::uint64_t> credit() const {
    return std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(peer_inbox() + kRing * slot_bytes + kPage));
  }
  std::size_t bytes() const { return 2 * slot_bytes + kRing * slot_bytes + 2 * kPage; }
};

// Writes `lines` lines of `src` tagged with epoch e into `dst`; the epoch word of each line last.
void put_lines(std::byte* dst, const std::byte* src, std::size_t bytes, std::uint32_t e, bool rmw_last) {
  const std::size_t lines = lines_of(bytes);
  for (std::size_t l = 0; l < lines; ++l) {
    std::byte* line = dst + l * kLine;
    const std::size_t at = l * kLineData, n = std::min(kLineData, bytes - std::min(bytes, at));
    std::memcpy(line, src + at, n);
    auto* tail = reinterpret_cast<std::uint32_t*>(line + kLineData);
    if (rmw_last && l + 1 == lines)
      std::atomic_ref<std::uint32_t>(*tail).exchange(e, std::memory_order_seq_cst);
    else
      std::atomic_ref<std::uint32_t>(*tail).store(e, std::memory_order_release);
  }
}

void spin_epoch(const std::byte* line, std::uint32_t e) {
  auto* tail = reinterpret_cast<std::uint32_t*>(const_cast<std::byte*>(line) + kLineData);
  while (std::atomic_ref<std::uint32_t>(*tail).load(std::memory_order_acquire) != e) FLOOR_PAUSE();
}

// Reads the lines of epoch e from `src` into `out`: the last line first, then every line.
void get_lines(const std::byte* src, std::byte* out, std::size_t bytes, std::uint32_t e) {
  const std::size_t lines = lines_of(bytes);
  spin_epoch(src + (lines - 1) * kLine, e);
  for (std::size_t l = 0; l * kLineData < bytes; ++l) {
    spin_epoch(src + l * kLine, e);
    std::memcpy(out + l * kLineData, src + l * kLine, std::min(kLineData, bytes - l * kLineData));
  }
}

// One call of the loop on `side` (0 root, 1 peer), call number e >= 1.
void call(const Region& r, Shape shape, int side, std::uint32_t e, std::byte* buf, std::size_t bytes) {
  const std::size_t parity = e & 1;
  if (shape == Shape::Eager) {
    const std::size_t slot = e % kRing;
    if (side == 0) {
      while (e - r.credit().load(std::memory_order_acquire) >= kRing) FLOOR_PAUSE();
      put_lines(r.peer_inbox() + slot * r.slot_bytes, buf, bytes, e, false);
    } else {
      get_lines(r.peer_inbox() + slot * r.slot_bytes, buf, bytes, e);
      if (e % kCreditEvery == 0) r.credit().store(e, std::memory_order_release);
    }
    return;
  }
  if (shape == Shape::Exchange) {
    std::byte* root_slot = r.root_inbox() + parity * r.slot_bytes;
    std::byte* peer_slot = r.peer_inbox() + parity * r.slot_bytes;
    put_lines(side == 0 ? peer_slot : root_slot, buf, bytes, e, false);
    get_lines(side == 0 ? root_slot : peer_slot, buf, bytes, e);
    return;
  }
  const bool rmw = shape == Shape::EnteredRmw;
  std::byte* entry = r.root_inbox() + parity * kLine;
  std::byte* data = r.peer_inbox() + parity * r.slot_bytes;
  if (side == 0) {
    put_lines(data, buf, bytes, e, rmw);
    spin_epoch(entry, e);
  } else {
    put_lines(entry, buf, 0, e, rmw);
    get_lines(data, buf, bytes, e);
  }
  if (shape == Shape::EnteredLate) std::atomic_thread_fence(std::memory_order_seq_cst);
}

void pin_self(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)), &set);
  sched_setaffinity(0, sizeof set, &set);
}

// Runs warm-up + iters calls on both sides; returns ns per call of the slower side.
double measure(Shape shape, std::size_t bytes, long iters, bool pin) {
  const std::size_t slot_bytes = (lines_of(bytes) * kLine + kPage - 1) / kPage * kPage;
  Region r{nullptr, slot_bytes};
  void* p = mmap(nullptr, r.bytes(), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::perror("entry_floor: mmap");
    std::exit(2);
  }
  r.base = static_cast<std::byte*>(p);
  auto* times = reinterpret_cast<double*>(r.base + r.bytes() - kPage / 2);  // one per side
  const long warmup = std::max(1000L, iters / 10);
  const pid_t child = fork();
  if (child < 0) {
    std::perror("entry_floor: fork");
    std::exit(2);
  }
  const int side = child == 0 ? 1 : 0;
  if (pin) pin_self(side);
  std::vector<std::byte> buf(std::max<std::size_t>(bytes, 1), std::byte{7});
  double t0 = 0;
  for (long i = 0; i < warmup + iters; ++i) {
    if (i == warmup) t0 = now_ns();
    call(r, shape, side, static_cast<std::uint32_t>(i + 1), buf.data(), bytes);
  }
  times[side] = now_ns() - t0;
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  const double ns = std::max(times[0], times[1]) / static_cast<double>(iters);
  munmap(p, r.bytes());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "entry_floor: the peer process failed\n");
    std::exit(2);
  }
  return ns;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t at = 0; at <= s.size();) {
    const std::size_t comma = std::min(s.find(',', at), s.size());
    if (comma > at) out.push_back(s.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

std::size_t parse_size(const std::string& s) {
  char* end = nullptr;
  std::size_t v = std::strtoull(s.c_str(), &end, 10);
  if (*end == 'K') v *= 1024;
  if (v > 4096) {
    std::fprintf(stderr, "entry_floor: --bytes %s: at most 4K\n", s.c_str());
    std::exit(2);
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::string sizes = "4,8,64,256,512", shapes_arg = "entered,entered-rmw,entered-late,eager", json;
  long iters = 200000;
  int reps = 5;
  bool pin = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "entry_floor: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--bytes")
      sizes = value();
    else if (a == "--iters")
      iters = std::atol(value().c_str());
    else if (a == "--reps")
      reps = std::atoi(value().c_str());
    else if (a == "--shapes")
      shapes_arg = value();
    else if (a == "--pin")
      pin = true;
    else if (a == "-J")
      json = value();
    else {
      std::fprintf(stderr,
                   "usage: entry_floor [--bytes 4,8,64,256,512] [--iters N] [--reps N] "
                   "[--shapes entered,entered-rmw,entered-late,exchange,eager] [--pin] [-J FILE]\n");
      return a == "-h" || a == "--help" ? 0 : 2;
    }
  }
  std::vector<std::pair<std::string, Shape>> shapes;
  for (const std::string& s : split(shapes_arg)) {
    if (s == "entered")
      shapes.emplace_back(s, Shape::Entered);
    else if (s == "entered-rmw")
      shapes.emplace_back(s, Shape::EnteredRmw);
    else if (s == "entered-late")
      shapes.emplace_back(s, Shape::EnteredLate);
    else if (s == "exchange")
      shapes.emplace_back(s, Shape::Exchange);
    else if (s == "eager")
      shapes.emplace_back(s, Shape::Eager);
    else {
      std::fprintf(stderr, "entry_floor: unknown shape '%s' (entered, entered-rmw, entered-late, exchange, eager)\n",
                   s.c_str());
      return 2;
    }
  }
  std::vector<std::size_t> bytes;
  for (const std::string& s : split(sizes)) bytes.push_back(parse_size(s));
  // results[shape][size] over the repetitions, the shapes interleaved within each repetition.
  std::vector<std::vector<std::vector<double>>> ns(shapes.size(), std::vector<std::vector<double>>(bytes.size()));
  for (int rep = 0; rep < reps; ++rep)
    for (std::size_t b = 0; b < bytes.size(); ++b)
      for (std::size_t s = 0; s < shapes.size(); ++s)
        ns[s][b].push_back(measure(shapes[s].second, bytes[b], iters, pin));
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  std::printf("# entry_floor: P=2, fixed root, ns per call (median of %d repetitions of %ld calls)\n", reps, iters);
  std::printf("%-14s", "shape");
  for (std::size_t b : bytes) std::printf("%10zu B", b);
  std::printf("\n");
  for (std::size_t s = 0; s < shapes.size(); ++s) {
    std::printf("%-14s", shapes[s].first.c_str());
    for (std::size_t b = 0; b < bytes.size(); ++b) std::printf("%12.1f", median(ns[s][b]));
    std::printf("\n");
  }
  if (!json.empty()) {
    FILE* f = std::fopen(json.c_str(), "w");
    if (!f) {
      std::perror("entry_floor: -J");
      return 2;
    }
    std::fprintf(f, "{\"benchmark\": \"entry_floor\", \"reps\": %d, \"iters\": %ld, \"rows\": [", reps, iters);
    const char* sep = "";
    for (std::size_t s = 0; s < shapes.size(); ++s)
      for (std::size_t b = 0; b < bytes.size(); ++b) {
        std::fprintf(f, "%s\n  {\"shape\": \"%s\", \"bytes\": %zu, \"time_us\": %.5f}", sep, shapes[s].first.c_str(),
                     bytes[b], median(ns[s][b]) / 1e3);
        sep = ",";
      }
    std::fprintf(f, "\n]}\n");
    std::fclose(f);
  }
  return 0;
}
