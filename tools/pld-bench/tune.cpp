#include "tune.hpp"

#include "runner.hpp"
#include "sweep.hpp"

#include <pld/info.hpp>

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace pldbench {

namespace {

constexpr std::uint64_t KiB = 1ull << 10, MiB = 1ull << 20;

/// One crossover: the threshold, the benchmark whose time shows it, and its two ways.
struct Crossover {
  const char* name;   // the threshold's variable
  const char* bench;  // what is timed, for the table
  const char* a;      // the way below the threshold (b_above) or above it (!b_above)
  const char* b;      // the alternative
  Coll coll;
  std::uint64_t min_bytes, max_bytes, quick_min, quick_max;  // rows (nccl-tests' size)
  // true: the threshold is the smallest size from which b wins at every larger measured size;
  // false: the largest size up to which b wins at every smaller one.
  bool b_above;
  std::uint64_t per_row;  // the threshold counts a row's bytes / per_row (all_to_all: the block per peer)
};

constexpr Crossover kCrossovers[] = {
    {"PLD_STREAMING_BYTES", "put + get of one buffer, rank 0 <-> rank 1", "cached", "streaming", Coll::P2P, 256 * KiB,
     64 * MiB, 1 * MiB, 4 * MiB, true, 1},
    {"PLD_PUSH_STREAMING_BYTES", "all_to_all, size = the block per peer (half the row)", "cached", "streaming",
     Coll::AllToAll, 512 * KiB, 64 * MiB, 1 * MiB, 4 * MiB, true, 2},
    {"PLD_BROADCAST_PUSH_MAX", "broadcast, ranks copying their shares or the root pushing it all", "copied", "pushed",
     Coll::Broadcast, 128, 64 * KiB, 128, 1 * KiB, false, 1},
};

/// The sweep of one crossover: its benchmark at P = 2, its sizes, timed (and checked) only.
Options sweep_options(const Options& o, const Crossover& c) {
  Options s;
  s.colls = {c.coll};
  s.nranks = 2;
  s.min_bytes = o.tune.quick ? c.quick_min : c.min_bytes;
  s.max_bytes = o.tune.quick ? c.quick_max : c.max_bytes;
  s.budget_bytes = o.tune.quick ? 16 * MiB : 256 * MiB;
  s.min_iters = o.tune.quick ? 3 : 10;
  s.max_iters = o.tune.quick ? 200 : 20000;
  s.pin = o.pin;
  s.progress = Progress::Never;
  return s;
}

void write_all(int fd, const std::string& data) {
  for (std::size_t at = 0; at < data.size();) {
    const ssize_t n = write(fd, data.data() + at, data.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    at += static_cast<std::size_t>(n);
  }
}

std::string read_all(int fd) {
  std::string data;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return data;
    data.append(buf, static_cast<std::size_t>(n));
  }
}

/// The time (µs) of every row of `sweep` with `var`=`value`: the sweep runs in a child process,
/// since pld reads its thresholds once per process (this one never runs pld).
std::vector<double> measure(const Options& sweep, std::size_t rows, const char* var, const std::string& value) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error(fmt::format("--tune: pipe failed: {}", std::strerror(errno)));
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(fmt::format("--tune: fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    int code = 0;
    try {
      setenv(var, value.c_str(), 1);
      const Results r = run_plan(sweep, make_plan(sweep));
      for (const TableResult& t : r.tables)
        for (const Row& row : t.rows) {
          const double us = row.group[0].time_us + (one_sided(t.table.coll) ? row.group[1].time_us : 0.0);
          out.append(reinterpret_cast<const char*>(&us), sizeof us);
        }
      if (r.wrong_total) out = "wrong results", code = 1;
    } catch (const std::exception& e) {
      out = e.what(), code = 2;
    }
    write_all(fds[1], out);
    _exit(code);
  }
  close(fds[1]);
  const std::string data = read_all(fds[0]);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || data.size() != rows * sizeof(double))
    throw std::runtime_error(fmt::format("--tune: the measurement with {}={} failed: {}", var, value,
                                         WIFEXITED(status) ? data : std::string("the process was killed")));
  std::vector<double> us(rows);
  std::memcpy(us.data(), data.data(), data.size());
  return us;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// One size of a crossover: the medians over the rounds.
struct Sample {
  std::uint64_t bytes = 0;  // the threshold's measure of the row
  double a_us = 0, b_us = 0;
  double ratio = 0;  // median of b / a over the rounds (each round measures both)
  bool b_wins() const { return ratio < 1.0; }
};

/// Times both ways of `c` in `rounds` alternating rounds (a first in even rounds, b first in odd
/// ones) and returns the medians per size.
std::vector<Sample> measure_crossover(const Options& o, const Crossover& c, int rounds) {
  const Options sweep = sweep_options(o, c);
  const Plan plan = make_plan(sweep);
  std::vector<std::uint64_t> units;
  for (const Table& t : plan.tables)
    for (const Point& p : t.rows) units.push_back(p.bytes / c.per_row);
  // a: the threshold above every row (b_above) or 0; b: at the smallest row or above the largest.
  const std::string a_value = std::to_string(c.b_above ? 2 * units.back() : 0);
  const std::string b_value = std::to_string(c.b_above ? units.front() : units.back());
  std::vector<std::vector<double>> a(units.size()), b(units.size()), ratio(units.size());
  for (int r = 0; r < rounds; ++r) {
    std::vector<double> ta, tb;
    if (r % 2 == 0) ta = measure(sweep, units.size(), c.name, a_value);
    tb = measure(sweep, units.size(), c.name, b_value);
    if (r % 2 == 1) ta = measure(sweep, units.size(), c.name, a_value);
    for (std::size_t i = 0; i < units.size(); ++i) {
      a[i].push_back(ta[i]);
      b[i].push_back(tb[i]);
      ratio[i].push_back(ta[i] > 0 ? tb[i] / ta[i] : 1.0);
    }
    if (isatty(2)) std::fprintf(stderr, "\r%s: round %d of %d", c.name, r + 1, rounds);
  }
  if (isatty(2)) std::fprintf(stderr, "\r\033[K");
  std::vector<Sample> out;
  for (std::size_t i = 0; i < units.size(); ++i)
    out.push_back({units[i], median(a[i]), median(b[i]), median(ratio[i])});
  return out;
}

/// The row the threshold comes from, or -1 when the range holds no crossover (b wins at every
/// size, or at none on the side where it should).
int crossover_row(const std::vector<Sample>& s, bool b_above) {
  const int n = static_cast<int>(s.size());
  if (b_above) {
    int i = n;  // the first row of the run of b's wins that reaches the largest size
    while (i > 0 && s[static_cast<std::size_t>(i - 1)].b_wins()) --i;
    return i == n || i == 0 ? -1 : i;
  }
  int i = 0;  // the first row b loses, in the run of its wins from the smallest size
  while (i < n && s[static_cast<std::size_t>(i)].b_wins()) ++i;
  return i == 0 || i == n ? -1 : i - 1;
}

std::string human(std::uint64_t b) {
  if (b >= MiB && b % MiB == 0) return fmt::format("{} MiB", b / MiB);
  if (b >= KiB && b % KiB == 0) return fmt::format("{} KiB", b / KiB);
  return fmt::format("{} B", b);
}

/// Prints the table of `c` and returns the value the file gets (measured, or `derived`).
pld::TunedThreshold decide(const Crossover& c, const std::vector<Sample>& s, std::uint64_t derived, int rounds) {
  std::printf("\n# %s: %s, P = 2; medians of %d round%s\n", c.name, c.bench, rounds, rounds == 1 ? "" : "s");
  std::printf("# %12s %14s %14s %9s  %s\n", "size", fmt::format("{} (us)", c.a).c_str(),
              fmt::format("{} (us)", c.b).c_str(), "ratio", "faster");
  for (const Sample& x : s)
    std::printf("  %12llu %14.2f %14.2f %9.3f  %s\n", static_cast<unsigned long long>(x.bytes), x.a_us, x.b_us, x.ratio,
                x.b_wins() ? c.b : c.a);
  const int row = crossover_row(s, c.b_above);
  const std::string range = fmt::format("sizes {} to {}", human(s.front().bytes), human(s.back().bytes));
  pld::TunedThreshold t{c.name, derived, ""};
  if (row < 0) {
    const bool everywhere = std::all_of(s.begin(), s.end(), [](const Sample& x) { return x.b_wins(); });
    t.note =
        fmt::format("no crossover in {}: {} was {}faster than {} at {} size; the derived value", range, c.b,
                    everywhere ? "" : "not ", c.a, everywhere ? "every" : (c.b_above ? "the largest" : "the smallest"));
  } else {
    t.bytes = s[static_cast<std::size_t>(row)].bytes;
    t.note = fmt::format("{} is faster than {} {} {} ({}, P = 2, {}; medians of {} round{}); derived: {}", c.b, c.a,
                         c.b_above ? "from" : "up to", human(t.bytes), c.bench, range, rounds, rounds == 1 ? "" : "s",
                         human(derived));
  }
  std::printf("# %s = %llu (%s): %s\n", c.name, static_cast<unsigned long long>(t.bytes), human(t.bytes).c_str(),
              t.note.c_str());
  return t;
}

/// The tune measures the machine as pld derives it: the threshold variables and a tuning file in
/// the environment are set aside (and named).
void clear_threshold_environment() {
  std::vector<std::string> names{"PLD_TUNING_FILE"};
  for (const auto& t : pld::describe_thresholds()) names.push_back(t.name);
  for (const std::string& name : names)
    if (const char* v = std::getenv(name.c_str()); v && *v) {
      std::printf("# %s=%s set aside: --tune measures the thresholds derived from the caches\n", name.c_str(), v);
      unsetenv(name.c_str());
    }
}

}  // namespace

int run_tune(const Options& o) {
  const int rounds = o.tune.rounds > 0 ? o.tune.rounds : (o.tune.quick ? 3 : 9);
  std::printf("# pld-bench --tune: crossovers of pld's thresholds on this machine, P = 2\n");
  std::printf("# machine: %s\n", pld::describe_machine().c_str());
  std::printf("# Measure on a quiet machine: other busy processes make the crossovers noise.\n");
  clear_threshold_environment();
  std::vector<pld::TunedThreshold> values;
  const auto derived = pld::describe_thresholds();
  for (const Crossover& c : kCrossovers) {
    const auto it = std::find_if(derived.begin(), derived.end(), [&](const auto& d) { return d.name == c.name; });
    if (it == derived.end()) throw std::runtime_error(fmt::format("--tune: pld has no threshold {}", c.name));
    values.push_back(decide(c, measure_crossover(o, c, rounds), it->bytes, rounds));
    std::fflush(stdout);
  }
  const std::string text = pld::tuning_file_text(values, fmt::format("pld-bench --tune (pld {})", pld::version()));
  std::ofstream out(o.tune.out);
  if (!(out << text) || !out.flush())
    throw std::runtime_error(fmt::format("--tune-out {}: cannot write it", o.tune.out));
  std::printf("\n# wrote %s; pld reads it with PLD_TUNING_FILE=%s (pld-info --thresholds shows its values)\n",
              o.tune.out.c_str(), o.tune.out.c_str());
  return 0;
}

}  // namespace pldbench
