// mpi_bench — the Open MPI baseline of bench/compare_mpi.sh: the same collectives, sizes, data and
// timing method as pld-bench, so every ratio compares like with like.
//
//   timing   per row: warm-up calls (not timed), MPI_Barrier, then `iters` calls timed with
//            std::chrono::steady_clock; time per iteration = max over ranks of loop time / iters
//   sizes    nccl-tests rounding, as pld-bench: whole elements, and for the [P, SIZE] collectives
//            a whole number of elements per rank
//   rules    pld-bench's own (tools/pld-bench/rules.hpp, included): auto iterations = budget / size
//            in [20, max]; auto warm-up = iters / 10, at least 5, the first row of the process
//            iters; the time column's digits
//   check    after timing: re-stage, run once, compare with the same small-integer goldens
//   calls    MPI_Barrier, MPI_Allreduce (MPI_IN_PLACE by default, as pld's allreduce is in place),
//            MPI_Bcast, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Alltoall, MPI_Alltoallv;
//            pingpong: MPI_Send + MPI_Recv between ranks 0 and 1 (the others only join the
//            barriers), time = half a round trip (the one-way latency pld-bench's p2p put faces)
//   amo      pld-bench --op amo's two measures with MPI_Fetch_and_op (+ MPI_Win_flush) on int64
//            cells of an MPI_Win_allocate window (passive target, lock_all): the ranks 0 / 1
//            ping-pong (poll with MPI_NO_OP, then MPI_SUM 1; half a round trip) and every rank
//            adding 1 to one cell of rank 0 (aggregate operations per second)
//
// Built by bench/compare_mpi.sh and bench/mpi_compare.sh with mpicxx (not
// part of the CMake build). Prints nccl-tests
// columns; -J writes JSON in pld-bench's schema with the column group "mpi".
#include <mpi.h>

#include "rules.hpp"  // tools/pld-bench/rules.hpp, on the include path

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

enum class Coll { Barrier, Allreduce, Broadcast, Allgather, ReduceScatter, AllToAll, AllToAllV, PingPong };
const std::vector<std::pair<std::string, Coll>> kColls = {{"barrier", Coll::Barrier},
                                                          {"allreduce", Coll::Allreduce},
                                                          {"broadcast", Coll::Broadcast},
                                                          {"allgather", Coll::Allgather},
                                                          {"reduce_scatter", Coll::ReduceScatter},
                                                          {"all_to_all", Coll::AllToAll},
                                                          {"all_to_all_v", Coll::AllToAllV},
                                                          {"pingpong", Coll::PingPong}};

struct Type {
  const char* name;
  MPI_Datatype mpi;
  std::size_t size;
  bool is_float;
  std::int64_t exact_limit;  // integers below this are exact (floats); integers wrap
};
const std::vector<Type> kTypes = {
    {"fp32", MPI_FLOAT, 4, true, 1ll << 24},     {"fp64", MPI_DOUBLE, 8, true, 1ll << 53},
    {"int32", MPI_INT32_T, 4, false, 1ll << 62}, {"int64", MPI_INT64_T, 8, false, 1ll << 62},
    {"int16", MPI_INT16_T, 2, false, 1ll << 62}, {"int8", MPI_INT8_T, 1, false, 1ll << 62},
    {"uint8", MPI_UINT8_T, 1, false, 1ll << 62}};

struct Options {
  std::string op = "allreduce", dtype = "fp32", redop = "sum", json;
  std::string min_b = "8", max_b = "64M", budget = "1G";
  std::uint64_t step_factor = 2;
  std::int64_t iters = 0, warmup = -1, max_iters = 20000, min_iters = 20;
  int check = 1, root = 0;
  bool out_of_place = false;
};

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

double now_ns() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// ----- data: pld-bench's patterns (tools/pld-bench/check.hpp) ---------------------------------
std::int64_t copy_value(int r, std::int64_t i) {
  return (7 * r + 3 * i + 1) % 251;
}
std::int64_t reduce_value(const std::string& op, int r, int n, std::int64_t i, std::int64_t range) {
  if (op == "prod") return i % (n + 1) == r ? 2 : 1;
  return (3 * r + 5 * i + 1) % range;
}
std::int64_t fold(const std::string& op, std::int64_t a, std::int64_t b) {
  if (op == "sum") return a + b;
  if (op == "prod") return a * b;
  if (op == "max") return std::max(a, b);
  return std::min(a, b);
}
void store(const Type& t, void* base, std::int64_t i, std::int64_t v) {
  auto* p = static_cast<char*>(base) + i * static_cast<std::int64_t>(t.size);
  if (t.mpi == MPI_FLOAT) {
    float x = static_cast<float>(v);
    std::memcpy(p, &x, 4);
  } else if (t.mpi == MPI_DOUBLE) {
    double x = static_cast<double>(v);
    std::memcpy(p, &x, 8);
  } else if (t.size == 8) {
    std::int64_t x = v;
    std::memcpy(p, &x, 8);
  } else if (t.size == 4) {
    std::int32_t x = static_cast<std::int32_t>(v);
    std::memcpy(p, &x, 4);
  } else if (t.size == 2) {
    std::int16_t x = static_cast<std::int16_t>(v);
    std::memcpy(p, &x, 2);
  } else {
    std::uint8_t x = static_cast<std::uint8_t>(v);
    std::memcpy(p, &x, 1);
  }
}
bool equal(const Type& t, const void* base, std::int64_t i, std::int64_t v) {
  std::vector<char> want(t.size);
  store(t, want.data(), 0, v);
  return std::memcmp(static_cast<const char*>(base) + i * static_cast<std::int64_t>(t.size), want.data(), t.size) == 0;
}

MPI_Op mpi_op(const std::string& op) {
  if (op == "sum") return MPI_SUM;
  if (op == "prod") return MPI_PROD;
  if (op == "max") return MPI_MAX;
  return MPI_MIN;
}

struct Row {
  std::uint64_t bytes = 0;
  std::int64_t count = 0, cols = 0, iters = 0, warmup = 0;
  double time_us = 0;
  std::int64_t wrong = -1;
};

class Bench {
 public:
  Bench(const Options& o, Coll c, const Type& t, int me, int n) : o_(o), c_(c), t_(t), me_(n ? me : 0), n_(n) {
    range_ = std::clamp<std::int64_t>(t.exact_limit / n, 2, 15);
  }

  void measure(Row& row) {
    const std::int64_t cols = row.cols;
    const std::size_t esz = t_.size;
    const std::size_t total = static_cast<std::size_t>(row.count) * esz;
    // Buffers (first-touched here, so page faults stay out of the loop).
    a_.assign(std::max<std::size_t>(total, 64), 0);
    b_.assign(std::max<std::size_t>(total, 64), 0);
    counts_.assign(static_cast<std::size_t>(n_), static_cast<int>(cols));
    displs_.resize(static_cast<std::size_t>(n_));
    for (int p = 0; p < n_; ++p) displs_[static_cast<std::size_t>(p)] = p * static_cast<int>(cols);
    stage(row);
    for (std::int64_t i = 0; i < row.warmup; ++i) run(row);
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = now_ns();
    for (std::int64_t i = 0; i < row.iters; ++i) run(row);
    double loop = now_ns() - t0, max_loop = 0;
    MPI_Allreduce(&loop, &max_loop, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    row.time_us = row.iters ? max_loop / static_cast<double>(row.iters) / 1e3 : 0;
    if (c_ == Coll::PingPong) row.time_us /= 2;  // one way: half a round trip
    if (o_.check) {
      MPI_Barrier(MPI_COMM_WORLD);
      stage(row);
      run(row);
      std::int64_t wrong = verify(row), sum = 0;
      MPI_Allreduce(&wrong, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
      row.wrong = sum;
    }
  }

 private:
  void stage(const Row& row) {
    const std::int64_t cols = row.cols;
    switch (c_) {
      case Coll::Barrier: break;
      case Coll::Allreduce:
        for (std::int64_t i = 0; i < row.count; ++i)
          store(t_, a_.data(), i, reduce_value(o_.redop, me_, n_, i, range_));
        break;
      case Coll::Broadcast:
      case Coll::PingPong:
        for (std::int64_t i = 0; i < row.count; ++i) store(t_, a_.data(), i, copy_value(me_, i));
        break;
      case Coll::Allgather:
        for (std::int64_t i = 0; i < cols; ++i) store(t_, a_.data(), i, copy_value(me_, i));
        for (std::int64_t i = 0; i < row.count; ++i) store(t_, b_.data(), i, 253);
        break;
      case Coll::ReduceScatter:
        for (std::int64_t i = 0; i < row.count; ++i)
          store(t_, a_.data(), i, reduce_value(o_.redop, me_, n_, i, range_));
        break;
      case Coll::AllToAll:
      case Coll::AllToAllV:
        for (std::int64_t i = 0; i < row.count; ++i) store(t_, a_.data(), i, copy_value(me_, i));
        for (std::int64_t i = 0; i < row.count; ++i) store(t_, b_.data(), i, 253);
        break;
    }
  }

  void run(const Row& row) {
    const int count = static_cast<int>(row.count), cols = static_cast<int>(row.cols);
    switch (c_) {
      case Coll::Barrier: MPI_Barrier(MPI_COMM_WORLD); break;
      case Coll::Allreduce:
        if (o_.out_of_place)
          MPI_Allreduce(a_.data(), b_.data(), count, t_.mpi, mpi_op(o_.redop), MPI_COMM_WORLD);
        else
          MPI_Allreduce(MPI_IN_PLACE, a_.data(), count, t_.mpi, mpi_op(o_.redop), MPI_COMM_WORLD);
        break;
      case Coll::Broadcast: MPI_Bcast(a_.data(), count, t_.mpi, o_.root, MPI_COMM_WORLD); break;
      case Coll::Allgather: MPI_Allgather(a_.data(), cols, t_.mpi, b_.data(), cols, t_.mpi, MPI_COMM_WORLD); break;
      case Coll::ReduceScatter:
        MPI_Reduce_scatter_block(a_.data(), b_.data(), cols, t_.mpi, mpi_op(o_.redop), MPI_COMM_WORLD);
        break;
      case Coll::AllToAll: MPI_Alltoall(a_.data(), cols, t_.mpi, b_.data(), cols, t_.mpi, MPI_COMM_WORLD); break;
      case Coll::AllToAllV:
        MPI_Alltoallv(a_.data(), counts_.data(), displs_.data(), t_.mpi, b_.data(), counts_.data(), displs_.data(),
                      t_.mpi, MPI_COMM_WORLD);
        break;
      case Coll::PingPong:
        if (me_ == 0) {
          MPI_Send(a_.data(), count, t_.mpi, 1, 0, MPI_COMM_WORLD);
          MPI_Recv(b_.data(), count, t_.mpi, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (me_ == 1) {
          MPI_Recv(b_.data(), count, t_.mpi, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          MPI_Send(a_.data(), count, t_.mpi, 0, 0, MPI_COMM_WORLD);
        }
        break;
    }
  }

  std::int64_t golden(std::int64_t i) const {
    std::int64_t acc = reduce_value(o_.redop, 0, n_, i, range_);
    for (int r = 1; r < n_; ++r) acc = fold(o_.redop, acc, reduce_value(o_.redop, r, n_, i, range_));
    return acc;
  }

  std::int64_t verify(const Row& row) const {
    std::int64_t wrong = 0;
    const std::int64_t cols = row.cols;
    switch (c_) {
      case Coll::Barrier: break;
      case Coll::Allreduce: {
        const void* res = o_.out_of_place ? b_.data() : a_.data();
        for (std::int64_t i = 0; i < row.count; ++i) wrong += !equal(t_, res, i, golden(i));
        break;
      }
      case Coll::Broadcast:
        for (std::int64_t i = 0; i < row.count; ++i) wrong += !equal(t_, a_.data(), i, copy_value(o_.root, i));
        break;
      case Coll::Allgather:
        for (int s = 0; s < n_; ++s)
          for (std::int64_t i = 0; i < cols; ++i) wrong += !equal(t_, b_.data(), s * cols + i, copy_value(s, i));
        break;
      case Coll::ReduceScatter:
        for (std::int64_t i = 0; i < cols; ++i) wrong += !equal(t_, b_.data(), i, golden(me_ * cols + i));
        break;
      case Coll::AllToAll:
      case Coll::AllToAllV:
        for (int s = 0; s < n_; ++s)
          for (std::int64_t i = 0; i < cols; ++i)
            wrong += !equal(t_, b_.data(), s * cols + i, copy_value(s, me_ * cols + i));
        break;
      case Coll::PingPong:  // each of ranks 0 and 1 holds the other's data
        if (me_ < 2)
          for (std::int64_t i = 0; i < row.count; ++i) wrong += !equal(t_, b_.data(), i, copy_value(1 - me_, i));
        break;
    }
    return wrong;
  }

  const Options& o_;
  Coll c_;
  const Type& t_;
  int me_, n_;
  std::int64_t range_;
  std::vector<char> a_, b_;
  std::vector<int> counts_, displs_;
};

// --op amo (see the header). Returns the number of wrong results (cells off their totals).
std::int64_t run_amo(const Options& o, int me, int n) {
  const std::int64_t iters = o.iters > 0 ? o.iters : 100000;
  const std::int64_t warmup = o.warmup >= 0 ? o.warmup : std::max<std::int64_t>(5, iters / 10);
  const std::int64_t total = warmup + iters, one = 1;
  std::int64_t* base = nullptr;
  MPI_Win win;
  MPI_Win_allocate(2 * sizeof(std::int64_t), sizeof(std::int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
  base[0] = base[1] = 0;
  MPI_Win_lock_all(0, win);
  MPI_Win_sync(win);
  MPI_Barrier(MPI_COMM_WORLD);
  auto fetch_op = [&](int rank, MPI_Aint cell, MPI_Op op) {
    std::int64_t old = 0;
    MPI_Fetch_and_op(&one, &old, MPI_INT64_T, rank, cell, op, win);
    MPI_Win_flush(rank, win);
    return old;
  };
  std::int64_t wrong = 0;
  double lat_ns = 0;
  if (n >= 2 && me < 2) {  // turns 2i (rank 0) and 2i+1 (rank 1) on cell 0 of rank 1
    double t0 = now_ns();
    for (std::int64_t i = 0; i < total; ++i) {
      if (i == warmup) t0 = now_ns();
      while (fetch_op(1, 0, MPI_NO_OP) != 2 * i + me) {
      }
      wrong += fetch_op(1, 0, MPI_SUM) != 2 * i + me;
    }
    lat_ns = now_ns() - t0;
  }
  for (std::int64_t i = 0; i < warmup; ++i) fetch_op(0, 1, MPI_SUM);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = now_ns();
  for (std::int64_t i = 0; i < iters; ++i) fetch_op(0, 1, MPI_SUM);
  const double loop = now_ns() - t0;
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) wrong += std::llabs(fetch_op(0, 1, MPI_NO_OP) - n * total);
  if (me == 1) wrong += std::llabs(fetch_op(1, 0, MPI_NO_OP) - 2 * total);
  double slowest = 0;
  std::int64_t wrong_total = 0;
  MPI_Allreduce(&loop, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&wrong, &wrong_total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Win_unlock_all(win);
  MPI_Win_free(&win);
  if (me == 0) {
    std::printf("# mpi_bench | %d ranks | amo: MPI_Fetch_and_op + MPI_Win_flush on int64 cells, %lld iterations\n", n,
                static_cast<long long>(iters));
    if (n >= 2)
      std::printf("   latency (half round trip, P=2 ping-pong) %9.3f us\n",
                  lat_ns / static_cast<double>(iters) / 2 / 1e3);
    std::printf("   throughput (every rank, one cell)        %9.2f M/s\n",
                slowest > 0 ? static_cast<double>(n) * static_cast<double>(iters) / slowest * 1e3 : 0.0);
    std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrong_total),
                wrong_total ? "FAILED" : "OK");
  }
  return wrong_total;
}

bool row_blocked(Coll c) {
  return c == Coll::Allgather || c == Coll::ReduceScatter || c == Coll::AllToAll || c == Coll::AllToAllV;
}
double busbw_factor(Coll c, int n) {
  if (c == Coll::Allreduce) return 2.0 * (n - 1) / n;
  if (c == Coll::Broadcast || c == Coll::PingPong) return 1.0;
  if (c == Coll::Barrier) return 0.0;
  return static_cast<double>(n - 1) / n;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);

  Options o;
  CLI::App app{"mpi_bench: Open MPI baseline for pld-bench (same sizes, data and timing)"};
  app.add_option("--op", o.op,
                 "barrier, allreduce, broadcast, allgather, reduce_scatter, all_to_all, all_to_all_v, pingpong, amo");
  app.add_option("-b,--minbytes", o.min_b);
  app.add_option("-e,--maxbytes", o.max_b);
  app.add_option("-f,--stepfactor", o.step_factor);
  app.add_option("-n,--iters", o.iters, "0 = auto (budget / size in [20, max-iters])");
  app.add_option("-w,--warmup_iters", o.warmup, "-1 = auto (iters / 10, >= 5; the first size: iters)");
  app.add_option("-c,--check", o.check);
  app.add_option("-o,--redop", o.redop, "sum, prod, max, min");
  app.add_option("-d,--dtype", o.dtype, "fp32, fp64, int32, int64, int16, int8, uint8");
  app.add_option("-r,--root", o.root);
  app.add_option("--budget", o.budget);
  app.add_option("--max-iters", o.max_iters);
  app.add_flag("--out-of-place", o.out_of_place, "allreduce into a second buffer instead of MPI_IN_PLACE");
  app.add_option("-J,--output_file,--json", o.json);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = me == 0 ? app.exit(e) : 1;
    MPI_Finalize();
    return rc;
  }
  if (o.op == "amo") {
    const std::int64_t wrong = run_amo(o, me, n);
    MPI_Finalize();
    return wrong ? 1 : 0;
  }
  const auto coll_it = std::find_if(kColls.begin(), kColls.end(), [&](const auto& e) { return e.first == o.op; });
  const auto type_it = std::find_if(kTypes.begin(), kTypes.end(), [&](const Type& t) { return t.name == o.dtype; });
  if (coll_it == kColls.end() || type_it == kTypes.end()) {
    if (me == 0) std::fprintf(stderr, "mpi_bench: unknown --op '%s' or --dtype '%s'\n", o.op.c_str(), o.dtype.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const Coll c = coll_it->second;
  const Type& t = *type_it;
  if (c == Coll::PingPong && n < 2) {
    if (me == 0) std::fprintf(stderr, "mpi_bench: --op pingpong needs 2 or more ranks, mpirun started %d\n", n);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  std::vector<Row> rows;
  if (c == Coll::Barrier) {
    rows.push_back(Row{});
  } else {
    const std::uint64_t unit = row_blocked(c) ? t.size * static_cast<std::uint64_t>(n) : t.size;
    std::uint64_t last = ~0ull;
    for (std::uint64_t s = parse_size(o.min_b); s <= parse_size(o.max_b); s *= o.step_factor) {
      const std::uint64_t bytes = std::max(unit, s / unit * unit);
      if (bytes != last) {
        Row r;
        r.bytes = bytes;
        r.count = static_cast<std::int64_t>(bytes / t.size);
        r.cols = row_blocked(c) ? r.count / n : r.count;
        rows.push_back(r);
      }
      last = bytes;
      if (s == 0) break;
    }
  }
  const std::uint64_t budget = parse_size(o.budget);
  Bench bench(o, c, t, me, n);
  for (Row& r : rows) {
    r.iters = o.iters > 0 ? o.iters : pldbench::rules::auto_iters(budget, r.bytes, o.min_iters, o.max_iters);
    r.warmup = pldbench::rules::warmup_iters(o.warmup, r.iters, 5, &r == &rows.front());
    bench.measure(r);
  }

  std::int64_t wrong_total = 0;
  for (const Row& r : rows) wrong_total += std::max<std::int64_t>(r.wrong, 0);
  if (me == 0) {
    const bool red = c == Coll::Allreduce || c == Coll::ReduceScatter;
    const char* form = c == Coll::Allreduce  ? (o.out_of_place ? " (out of place)" : " (MPI_IN_PLACE)")
                       : c == Coll::PingPong ? " (rank 0 <-> rank 1, time = half a round trip)"
                                             : "";
    std::printf("# mpi_bench | %d ranks | %s%s\n#\n# %s\n", n, o.op.c_str(), form, o.op.c_str());
    std::printf("#       size         count      type   redop    root      time   algbw   busbw #wrong\n");
    std::printf("#        (B)    (elements)                                (us)  (GB/s)  (GB/s)       \n");
    nlohmann::json jrows = nlohmann::json::array();
    for (const Row& r : rows) {
      const double alg = r.time_us > 0 ? static_cast<double>(r.bytes) / (r.time_us * 1e3) : 0.0;
      const double bus = alg * busbw_factor(c, n);
      const char* type = c == Coll::Barrier ? "none" : t.name;
      const char* redop = red ? o.redop.c_str() : "none";
      const int root = c == Coll::Broadcast ? o.root : -1;
      std::printf("%12llu  %12lld  %8s  %6s  %6d  %s  %6.2f  %6.2f  %5lld\n", static_cast<unsigned long long>(r.bytes),
                  static_cast<long long>(r.count), type, redop, root, pldbench::rules::format_us(r.time_us).c_str(),
                  alg, bus, static_cast<long long>(r.wrong));
      jrows.push_back({{"size", r.bytes},
                       {"count", r.count},
                       {"type", type},
                       {"redop", redop},
                       {"root", root},
                       {"mpi",
                        {{"time_us", r.time_us},
                         {"algbw", alg},
                         {"busbw", bus},
                         {"wrong", r.wrong},
                         {"iters", r.iters},
                         {"warmup", r.warmup}}}});
    }
    std::printf("# Out of bounds values : %lld %s\n", static_cast<long long>(wrong_total),
                wrong_total ? "FAILED" : "OK");
    if (!o.json.empty()) {
      nlohmann::json j = {{"tool", "mpi_bench"},
                          {"nranks", n},
                          {"in_place", !o.out_of_place},
                          {"tables", {{{"collective", o.op}, {"busbw_factor", busbw_factor(c, n)}, {"rows", jrows}}}},
                          {"wrong_total", wrong_total}};
      std::ofstream(o.json) << j.dump(2) << "\n";
    }
  }
  MPI_Finalize();
  return wrong_total ? 1 : 0;
}
