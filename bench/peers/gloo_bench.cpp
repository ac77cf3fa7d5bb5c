// gloo-bench — C++ Gloo's collectives over loopback TCP, measured as pld-bench measures pld
// (bench/peers/peers.sh compares the two).
//
//   ranks   -g P forked processes rendezvous through a gloo::rendezvous::FileStore in a fresh
//           temporary directory (removed at the end) into a gloo::rendezvous::Context, TCP on 127.0.0.1
//   calls   float32 sum, in place where the collective allows it, set up once per row. --api options
//           (default): gloo::allreduce (algorithm RING: mode "ring"), gloo::broadcast (root 0),
//           gloo::allgather, gloo::barrier, gloo::alltoall; --api algorithm: AllreduceRing,
//           BroadcastOneToAll, AllgatherRing, BarrierAllToAll (and gloo::alltoall). Mode
//           "halving_doubling": AllreduceHalvingDoubling in both
//   sizes   pld-bench's, whole elements: allreduce and broadcast one rank's buffer; allgather and
//           all_to_all the whole gathered / exchanged buffer (size / P per rank); barrier 0 B
//   timing  warm-up calls, a barrier, `iters` calls timed with std::chrono::steady_clock; time per
//           call = max over ranks of loop time / iters; iterations and warm-up by
//           tools/pld-bench/rules.hpp with pld-bench's bounds (1 GiB / size in [20, 20000])
//   check   after timing: re-stage, run once, compare with pld-bench's small-integer goldens
//   output  nccl-tests columns (busbw factors as pld-bench); -J FILE: one JSON line per row
//   exit    0; 1 when a value is wrong; 2 on an error (the other ranks are killed and reaped)
//
//   cmake --build build-release -j2 --target gloo-bench
//   build-release/bench/peers/gloo-bench --op allreduce,broadcast,allgather -g 2 -b 8 -e 64M -f 8 -J g.jsonl
//   build-release/bench/peers/gloo-bench --op all --quick    # 8 B - 4 KiB, at most 200 iterations
#include <gloo/allgather.h>
#include <gloo/allgather_ring.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/broadcast.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/config.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rules.hpp"  // tools/pld-bench/rules.hpp, on the include path

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

enum class Op { Allreduce, Broadcast, Allgather, Barrier, AllToAll };
constexpr const char* kOpNames[] = {"allreduce", "broadcast", "allgather", "barrier", "all_to_all"};
constexpr std::int64_t kMinIters = 20, kMaxIters = 20000, kQuickMaxIters = 200, kMinWarmup = 5;
constexpr std::uint64_t kBudget = 1ull << 30;     // pld-bench's --budget default
constexpr std::chrono::seconds kCallTimeout{60};  // a gloo call that exceeds it throws
constexpr std::int64_t kRange = 15;               // pld-bench's R of fp32 sums at P <= 256

struct Options {
  std::vector<std::string> ops{"allreduce"};
  std::string min_b = "8", max_b = "64M", json, api = "options";
  int ranks = 2;
  std::uint64_t factor = 2;
  std::int64_t iters = 0, warmup = -1;
  bool quick = false;
};
struct Row {
  Op op = Op::Barrier;
  std::string mode;  // allreduce: ring, halving_doubling; else ""
  std::uint64_t bytes = 0;
  std::int64_t count = 0, cols = 0, iters = 0, warmup = 0, wrong = 0;
  double us = 0;
};

const auto op_name = [](Op op) { return kOpNames[static_cast<int>(op)]; };
const auto blocked = [](Op op) { return op == Op::Allgather || op == Op::AllToAll; };
const auto busbw_factor = [](Op op, double n) {  // pld-bench's
  return op == Op::Allreduce ? 2 * (n - 1) / n : op == Op::Broadcast ? 1.0 : op == Op::Barrier ? 0.0 : (n - 1) / n;
};

// "8", "64K", "1M", "2G" (powers of 1024; an optional B or iB after the letter, as pld-bench).
std::uint64_t parse_size(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  std::string rest = end;
  for (char& c : rest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::size_t unit = rest.empty() ? std::string::npos : std::string("kmg").find(rest[0]);
  if (unit != std::string::npos) rest = rest.substr(1) == "ib" ? "b" : rest.substr(1);
  if (end == text.c_str() || !(rest.empty() || rest == "b"))
    throw CLI::ValidationError(flag,
                               "'" + text + "' is not a size: give bytes with an optional K, M or G suffix (64K)");
  return static_cast<std::uint64_t>(v) << (unit == std::string::npos ? 0 : 10 * (unit + 1));
}

// The rows of every table (allreduce: one per algorithm): pld-bench's sizes and iterations.
std::vector<Row> make_plan(const Options& o) {
  std::vector<Row> rows;
  const std::uint64_t lo = parse_size("--minbytes", o.min_b), hi = parse_size("--maxbytes", o.max_b);
  if (lo > hi) throw CLI::ValidationError("--minbytes", o.min_b + " exceeds --maxbytes " + o.max_b + ": swap them");
  auto add = [&](Op op, const char* mode, std::uint64_t bytes, std::int64_t count, std::int64_t cols) {
    Row r{op, mode, bytes, count, cols};
    r.iters = o.iters > 0
                  ? o.iters
                  : pldbench::rules::auto_iters(kBudget, bytes, kMinIters, o.quick ? kQuickMaxIters : kMaxIters);
    r.warmup = pldbench::rules::warmup_iters(o.warmup, r.iters, kMinWarmup, rows.empty());
    rows.push_back(r);
  };
  std::vector<Op> ops;  // --op's order, each once
  for (const std::string& name : o.ops)
    for (int k = 0; k < 5; ++k)
      if ((name == kOpNames[k] || name == "all") && std::find(ops.begin(), ops.end(), Op(k)) == ops.end())
        ops.push_back(Op(k));
  for (Op op : ops) {
    for (const char* mode : {"ring", "halving_doubling"}) {
      if (op != Op::Allreduce) mode = "";
      if (op == Op::Barrier) add(op, mode, 0, 0, 0);
      const std::uint64_t unit = sizeof(float) * (blocked(op) ? static_cast<std::uint64_t>(o.ranks) : 1);
      for (std::uint64_t s = lo, last = ~0ull; s <= hi && op != Op::Barrier; s = s ? s * o.factor : 1) {
        const std::uint64_t bytes = std::max(unit, s / unit * unit);
        const auto count = static_cast<std::int64_t>(bytes / sizeof(float));
        if (bytes != last) add(op, mode, bytes, count, blocked(op) ? count / o.ranks : count);
        last = bytes;
        if (s > hi / o.factor) break;  // the next size would pass -e (or overflow)
      }
      if (op != Op::Allreduce) break;
    }
  }
  return rows;
}

// ----- data: pld-bench's patterns (tools/pld-bench/check.hpp) ---------------------------------
const auto copy_value = [](int r, std::int64_t i) { return static_cast<float>((7 * r + 3 * i + 1) % 251); };
const auto reduce_value = [](int r, std::int64_t i) { return static_cast<float>((3 * r + 5 * i + 1) % kRange); };

template <class T>
void sum_fn(void* c, const void* a, const void* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) static_cast<T*>(c)[i] = static_cast<const T*>(a)[i] + static_cast<const T*>(b)[i];
}
void max_fn(void* c, const void* a, const void* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    static_cast<double*>(c)[i] = std::max(static_cast<const double*>(a)[i], static_cast<const double*>(b)[i]);
}

const auto now_ns = [] {
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now().time_since_epoch()).count();
};

// The call of a row: [op][--api algorithm].
constexpr const char* kCalls[][2] = {{"gloo::allreduce, algorithm RING", "gloo::AllreduceRing"},
                                     {"gloo::broadcast, root 0", "gloo::BroadcastOneToAll, root 0"},
                                     {"gloo::allgather", "gloo::AllgatherRing"},
                                     {"gloo::barrier", "gloo::BarrierAllToAll"},
                                     {"gloo::alltoall", "gloo::alltoall"}};
std::string call_name(const Options& o, const Row& r) {
  return r.mode == "halving_doubling" ? "gloo::AllreduceHalvingDoubling" : kCalls[int(r.op)][o.api == "algorithm"];
}

// One rank: stages, calls, times and checks every row on its gloo context.
class Rank {
 public:
  Rank(std::shared_ptr<gloo::Context> ctx, const Options& o) : ctx_(std::move(ctx)), o_(o), me_(ctx_->rank) {}

  void barrier() {
    gloo::BarrierOptions opts(ctx_);
    gloo::barrier(opts);
  }

  // A double reduced over the ranks: max or sum.
  double reduce(double v, bool take_max) {
    gloo::AllreduceOptions opts(ctx_);
    opts.setOutput(&v, 1);
    opts.setReduceFunction(take_max ? &max_fn : &sum_fn<double>);
    gloo::allreduce(opts);
    return v;
  }

  void measure(Row& r) {
    a_.assign(static_cast<std::size_t>(std::max<std::int64_t>(r.count, 1)), 0.0f);
    b_.assign(a_.size(), 0.0f);
    const std::function<void()> call = make_call(r);
    // Stage, then a barrier: the algorithm classes' peers write into a buffer as soon as they run.
    stage(r);
    barrier();
    for (std::int64_t i = 0; i < r.warmup; ++i) call();
    barrier();
    const double t0 = now_ns();
    for (std::int64_t i = 0; i < r.iters; ++i) call();
    const double loop = now_ns() - t0;
    r.us = reduce(loop, true) / static_cast<double>(r.iters) / 1e3;
    stage(r);
    barrier();
    call();
    r.wrong = static_cast<std::int64_t>(reduce(static_cast<double>(verify(r)), false));
  }

 private:
  template <class A, class... Args>
  std::function<void()> algorithm(Args&&... args) {
    auto alg = std::make_shared<A>(ctx_, std::forward<Args>(args)...);
    return [alg] { alg->run(); };
  }
  // An options object, set up by `setup`, then passed to `call` on every run.
  template <class O, class S, class F>
  std::function<void()> options(S setup, F call) {
    auto opts = std::make_shared<O>(ctx_);
    setup(*opts);
    return [opts, call] { call(*opts); };
  }

  std::function<void()> make_call(const Row& t) {
    float* a = a_.data();
    float* b = b_.data();
    const auto count = static_cast<std::size_t>(t.count), cols = static_cast<std::size_t>(t.cols);
    const int n = static_cast<int>(t.count);
    const bool classes = o_.api == "algorithm";
    if (t.op == Op::Allreduce && t.mode == "halving_doubling")
      return algorithm<gloo::AllreduceHalvingDoubling<float>>(std::vector<float*>{a}, n);
    if (t.op == Op::Allreduce && classes) return algorithm<gloo::AllreduceRing<float>>(std::vector<float*>{a}, n);
    if (t.op == Op::Broadcast && classes)
      return algorithm<gloo::BroadcastOneToAll<float>>(std::vector<float*>{a}, count);
    if (t.op == Op::Allgather && classes)
      return algorithm<gloo::AllgatherRing<float>>(std::vector<const float*>{a}, b, static_cast<int>(t.cols));
    if (t.op == Op::Barrier && classes) return algorithm<gloo::BarrierAllToAll>();
    switch (t.op) {
      case Op::Allreduce:
        return options<gloo::AllreduceOptions>(
            [&](auto& x) {
              x.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
              x.setOutput(a, count);
              x.setReduceFunction(&sum_fn<float>);
            },
            [](auto& x) { gloo::allreduce(x); });
      case Op::Broadcast:
        return options<gloo::BroadcastOptions>([&](auto& x) { x.setRoot(0), x.setOutput(a, count); },
                                               [](auto& x) { gloo::broadcast(x); });
      case Op::Allgather:
        return options<gloo::AllgatherOptions>([&](auto& x) { x.setInput(a, cols), x.setOutput(b, count); },
                                               [](auto& x) { gloo::allgather(x); });
      case Op::Barrier: return options<gloo::BarrierOptions>([](auto&) {}, [](auto& x) { gloo::barrier(x); });
      case Op::AllToAll:
        return options<gloo::AlltoallOptions>([&](auto& x) { x.setInput(a, count), x.setOutput(b, count); },
                                              [](auto& x) { gloo::alltoall(x); });
    }
    throw std::logic_error("unknown collective");
  }

  void stage(const Row& r) {
    for (std::size_t i = 0; i < static_cast<std::size_t>(r.count); ++i)
      a_[i] = r.op == Op::Allreduce ? reduce_value(me_, i) : copy_value(me_, i);
    std::fill(b_.begin(), b_.end(), 253.0f);
  }

  // Elements off their golden value: allreduce the sum over ranks, broadcast rank 0's data,
  // allgather block s = rank s's data, all_to_all block s = rank s's block for this rank.
  std::int64_t verify(const Row& r) const {
    const Op op = r.op;
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < r.count && op != Op::Barrier; ++i) {
      const int s = static_cast<int>(i / r.cols);
      float want = 0;
      for (int k = 0; k < ctx_->size && op == Op::Allreduce; ++k) want += reduce_value(k, i);
      if (op == Op::Broadcast) want = copy_value(0, i);
      if (op == Op::Allgather) want = copy_value(s, i % r.cols);
      if (op == Op::AllToAll) want = copy_value(s, me_ * r.cols + i % r.cols);
      const float got = (op == Op::Allreduce || op == Op::Broadcast ? a_ : b_)[static_cast<std::size_t>(i)];
      wrong += std::memcmp(&want, &got, sizeof want) != 0;
    }
    return wrong;
  }

  std::shared_ptr<gloo::Context> ctx_;
  const Options& o_;
  int me_;
  std::vector<float> a_, b_;
};

// ----- output (rank 0) ----------------------------------------------------------------------
void print_header(const Options& o) {
  std::printf("# gloo-bench | Gloo %d.%d.%d, TCP transport on 127.0.0.1 | %d ranks (forked processes) | api %s\n",
              GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH, o.ranks, o.api.c_str());
  std::printf("# minBytes %s maxBytes %s step: %llu(factor) warmup iters: %s iters: %s%s\n", o.min_b.c_str(),
              o.max_b.c_str(), static_cast<unsigned long long>(o.factor),
              o.warmup >= 0 ? std::to_string(o.warmup).c_str() : "auto",
              o.iters > 0 ? std::to_string(o.iters).c_str() : "auto", o.quick ? " (--quick)" : "");
  std::printf("# time = max over ranks of the timed loop / iters (steady_clock, after a barrier, warm-up excluded)\n");
}

void print_row(const Options& o, const Row& r, bool first, bool last, std::int64_t wrong_table) {
  if (first) {
    std::printf("#\n# %s %s(%s)\n", op_name(r.op), r.mode.empty() ? "" : (r.mode + " ").c_str(),
                call_name(o, r).c_str());
    std::printf("#       size         count      type   redop    root      time   algbw   busbw #wrong   iters\n");
    std::printf("#        (B)    (elements)                                (us)  (GB/s)  (GB/s)               \n");
  }
  const double alg = r.us > 0 ? static_cast<double>(r.bytes) / (r.us * 1e3) : 0.0;
  std::printf("%12llu  %12lld  %8s  %6s  %6d  %s  %6.2f  %6.2f  %5lld  %6lld\n",
              static_cast<unsigned long long>(r.bytes), static_cast<long long>(r.count),
              r.op == Op::Barrier ? "none" : "float", r.op == Op::Allreduce ? "sum" : "none",
              r.op == Op::Broadcast ? 0 : -1, pldbench::rules::format_us(r.us).c_str(), alg,
              alg * busbw_factor(r.op, o.ranks), static_cast<long long>(r.wrong), static_cast<long long>(r.iters));
  if (last)
    std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrong_table),
                wrong_table ? "FAILED" : "OK");
  std::fflush(stdout);
}

// ----- a rank process -----------------------------------------------------------------------
// Connects rank `me` and runs every row; returns the exit status (0, 1 wrong, 2 error).
int run_rank(const Options& o, std::vector<Row> rows, int me, const std::string& dir) {
  std::string step = "gloo::transport::tcp::CreateDevice on 127.0.0.1";
  std::string fix = "check that the loopback interface is up (ip addr show lo)";
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    step = "the rendezvous (FileStore " + dir + ", TCP full mesh on 127.0.0.1)";
    fix = "check that TMPDIR is writable and every rank started; another rank's message may name the first failure";
    gloo::rendezvous::FileStore store(dir);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(me, o.ranks);
    ctx->setTimeout(kCallTimeout);
    ctx->connectFullMesh(store, dev);
    Rank rank(ctx, o);
    std::ofstream json;
    if (me == 0) print_header(o);
    if (me == 0 && !o.json.empty()) json.open(o.json, std::ios::app);
    fix = "another rank failed first (see its message), or a call took over " + std::to_string(kCallTimeout.count()) +
          " s: rerun with a smaller -e or fewer ranks (-g)";
    std::int64_t wrong_total = 0, wrong_table = 0;
    for (std::size_t k = 0; k < rows.size(); ++k) {
      Row& r = rows[k];
      const bool first = k == 0 || rows[k - 1].op != r.op || rows[k - 1].mode != r.mode;
      const bool last = k + 1 == rows.size() || rows[k + 1].op != r.op || rows[k + 1].mode != r.mode;
      step = call_name(o, r) + " of " + std::to_string(r.bytes) + " B";
      rank.measure(r);
      wrong_table = (first ? 0 : wrong_table) + r.wrong;
      wrong_total += r.wrong;
      if (me != 0) continue;
      print_row(o, r, first, last, wrong_table);
      const nlohmann::ordered_json j = {{"suite", "gloo"}, {"side", "gloo"},   {"op", op_name(r.op)},
                                        {"mode", r.mode},  {"bytes", r.bytes}, {"ranks", o.ranks},
                                        {"us", r.us},      {"iters", r.iters}};
      if (json.is_open()) json << j.dump() << std::endl;
    }
    step = "the final barrier";
    rank.barrier();
    if (me == 0 && json.is_open() && !json)
      throw std::runtime_error("writing -J " + o.json + " failed (fix: give a writable path with free space)");
    return wrong_total ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo-bench: rank %d: %s failed: %s\n  fix: %s\n", me, step.c_str(), e.what(), fix.c_str());
    return 2;
  }
}

// ----- the parent: forks, reaps, cleans up ---------------------------------------------------
volatile std::sig_atomic_t g_stop = 0;
void on_signal(int sig) {
  g_stop = sig;
}

// Waits for every child; when one fails (exit 2 or a signal) or the parent is interrupted, kills
// the others. Returns 0, 1 (a wrong value) or 2.
int reap(std::vector<pid_t>& pids) {
  int rc = 0;
  bool killed = false;
  auto kill_rest = [&] {
    for (pid_t p : pids)
      if (p > 0 && !killed) kill(p, SIGKILL);
    killed = true;
    rc = 2;
  };
  if (g_stop) kill_rest();
  for (std::size_t alive = std::count_if(pids.begin(), pids.end(), [](pid_t p) { return p > 0; }); alive > 0;) {
    int st = 0;
    const pid_t pid = waitpid(-1, &st, 0);
    const int err = errno;
    if (pid < 0 && err == EINTR && g_stop && !killed) {
      std::fprintf(stderr, "gloo-bench: interrupted by signal %d; stopping the ranks\n", static_cast<int>(g_stop));
      kill_rest();
    }
    if (pid < 0 && err != EINTR) break;  // ECHILD: nothing left
    const auto it = std::find(pids.begin(), pids.end(), pid);
    if (pid < 0 || it == pids.end()) continue;
    const int me = static_cast<int>(it - pids.begin());
    *it = -1;
    --alive;
    if (WIFEXITED(st) && WEXITSTATUS(st) <= 1) {
      rc = std::max(rc, WEXITSTATUS(st));
      continue;
    }
    const std::string how = WIFSIGNALED(st) ? std::string("died of signal ") + strsignal(WTERMSIG(st))
                                            : "failed (exit " + std::to_string(WEXITSTATUS(st)) + ")";
    if (!killed) std::fprintf(stderr, "gloo-bench: rank %d %s; stopping the other ranks\n", me, how.c_str());
    kill_rest();
  }
  return rc;
}

int run(const Options& o, const std::vector<Row>& rows) {
  std::error_code ec;
  std::string dir = (std::filesystem::temp_directory_path(ec) / "gloo-bench.XXXXXX").string();
  if (ec || !mkdtemp(dir.data())) {
    std::fprintf(stderr,
                 "gloo-bench: creating the rendezvous directory %s failed: %s (fix: point TMPDIR at a "
                 "writable directory)\n",
                 dir.c_str(), ec ? ec.message().c_str() : std::strerror(errno));
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;  // no SA_RESTART: waitpid returns EINTR
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  std::fflush(nullptr);  // nothing buffered is written twice
  const pid_t parent = getpid();
  std::vector<pid_t> pids(static_cast<std::size_t>(o.ranks), -1);
  for (int me = 0; me < o.ranks && !g_stop; ++me) {
    const pid_t pid = fork();
    if (pid == 0) {
      for (int sig : {SIGINT, SIGTERM, SIGHUP}) std::signal(sig, SIG_DFL);
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // the parent gone: so are the ranks
      const int code = getppid() == parent ? run_rank(o, rows, me, dir) : 2;
      std::fflush(nullptr);
      _exit(code);
    }
    if (pid < 0) {
      std::fprintf(stderr, "gloo-bench: fork of rank %d failed: %s (fix: fewer ranks (-g) or raise ulimit -u)\n", me,
                   std::strerror(errno));
      g_stop = SIGKILL;  // reap() kills the ranks started so far
      break;
    }
    pids[static_cast<std::size_t>(me)] = pid;
  }
  const int rc = std::max(reap(pids), g_stop ? 2 : 0);
  std::filesystem::remove_all(dir, ec);
  if (ec)
    std::fprintf(stderr, "gloo-bench: removing %s failed: %s (fix: remove it by hand)\n", dir.c_str(),
                 ec.message().c_str());
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "gloo-bench: C++ Gloo's collectives (float32 sum) over loopback TCP between -g forked ranks, timed as\n"
      "pld-bench times pld (nccl-tests columns; -J: one JSON line per row). Exit status 1 if any result is\n"
      "wrong, 2 on an error.",
      "gloo-bench"};
  app.add_option("--op", o.ops, "comma-separated: allreduce, broadcast, allgather, barrier, all_to_all; or all")
      ->delimiter(',')
      ->check(CLI::IsMember({"allreduce", "broadcast", "allgather", "barrier", "all_to_all", "all"}))
      ->capture_default_str();
  app.add_option("-g,--ranks", o.ranks, "number of ranks (forked processes), at least 2")
      ->check(CLI::Range(2, 256))
      ->capture_default_str();
  app.add_option("-b,--minbytes", o.min_b, "smallest size in bytes (K/M/G suffixes)")->capture_default_str();
  app.add_option("-e,--maxbytes", o.max_b, "largest size in bytes")->capture_default_str();
  app.add_option("-f,--stepfactor", o.factor, "multiply the size by this between points")
      ->check(CLI::Range(2ull, 1ull << 30))
      ->capture_default_str();
  app.add_option("-n,--iters", o.iters, "timed iterations per size; 0 = auto (1 GiB / size in [20, 20000])")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("-w,--warmup_iters", o.warmup, "warm-up iterations per size; -1 = auto (iters / 10, >= 5)")
      ->check(CLI::Range(-1ll, 1ll << 40))
      ->capture_default_str();
  app.add_option("--api", o.api, "options (gloo::allreduce, ...) or algorithm (AllreduceRing, ...)")
      ->check(CLI::IsMember({"options", "algorithm"}))
      ->capture_default_str();
  app.add_option("-J,--output_file,--json", o.json, "write one JSON line per row to this file");
  app.add_flag("--quick", o.quick, "a smoke run, seconds: at most 200 iterations; 8 B - 4 KiB unless -e or -f given");
  std::vector<Row> rows;
  try {
    app.parse(argc, argv);
    if (o.quick && app.count("-e") == 0) o.max_b = "4K";
    if (o.quick && app.count("-f") == 0) o.factor = 8;
    rows = make_plan(o);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!o.json.empty() && !std::ofstream(o.json, std::ios::trunc)) {
    std::fprintf(stderr, "gloo-bench: opening -J %s failed: %s (fix: give a writable path)\n", o.json.c_str(),
                 std::strerror(errno));
    return 2;
  }
  return run(o, rows);
}
