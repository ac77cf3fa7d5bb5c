// pld-bench: the command line. Flags follow nccl-tests (-b -e -f -i -n -w -c -o -d -r -J), plus
// pld's own: -g/--ranks, --op (which benchmark), --mode (allreduce schedule), --path, --core-num,
// --pin and --progress. options.cpp documents every flag in its --help text.
#pragma once

#include <pld/collectives.hpp>
#include <pld/types.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace pldbench {

/// The benchmarks: one per collective, plus p2p (put/get bandwidth, notify->wait latency, each next
/// to its bare baseline), put_signal (next to put and to put + notify) and nbi (put_nbi of 64
/// chunks + quiet, next to 64 blocking puts).
enum class Coll { Barrier, Allreduce, Broadcast, Allgather, ReduceScatter, AllToAll, AllToAllV, P2P, PutSignal, Nbi };

/// The one-sided benchmarks: rank 0 -> rank 1 (the others only join the barriers), uint8 rows, no
/// host builtin, three loops side by side.
inline bool one_sided(Coll c) {
  return c == Coll::P2P || c == Coll::PutSignal || c == Coll::Nbi;
}

/// nbi: a row of `size` bytes moves as this many chunks of size / kNbiChunks.
inline constexpr int kNbiChunks = 64;

/// composite: pld::tensor::* inside one kernel that loops; builtin: pld::Host methods, one dispatch
/// per rank per iteration; both: two column groups side by side.
enum class Path { Composite, Builtin, Both };

enum class Progress { Auto, Always, Never };

/// pld-bench --tune (tune.hpp): measure the crossovers of pld's thresholds on this machine and
/// write a tuning file.
struct TuneOptions {
  bool enabled = false;                 // --tune
  std::string out = "pld-tuning.json";  // --tune-out FILE
  bool quick = false;                   // --quick: fewer sizes, rounds and iterations
  int rounds = 0;                       // --rounds; 0: 9 (--quick: 3)
};

struct Options {
  std::vector<Coll> colls{Coll::Allreduce};
  std::uint64_t min_bytes = 8;
  std::uint64_t max_bytes = 64ull << 20;
  std::uint64_t step_factor = 2;  // geometric sweep
  std::uint64_t step_bytes = 0;   // linear sweep when set (-i), as nccl-tests
  std::int64_t iters = 0;         // 0 = auto: budget_bytes / size, in [min_iters, max_iters]
  std::int64_t warmup = -1;       // -1 = auto: iters / 10, at least 5; the first row: iters (rules.hpp)
  std::int64_t min_iters = 20;
  std::int64_t max_iters = 20000;
  std::int64_t max_builtin_iters = 1000;  // each builtin iteration is a recorded dispatch per rank
  std::uint64_t budget_bytes = 1ull << 30;
  int check = 1;  // 0: no correctness check
  std::vector<pld::ReduceOp> redops{pld::ReduceOp::Sum};
  std::vector<pld::DType> dtypes{pld::DType::FP32};
  std::vector<pld::AllreduceMode> modes{pld::AllreduceMode::Auto};
  int root = 0;
  int nranks = 2;
  Path path = Path::Composite;
  int core_num = 1;
  bool pin = false;
  Progress progress = Progress::Auto;
  std::string json;  // -J FILE
  bool amo = false;  // --op amo: the atomics benchmark (amo.hpp), run after the tables of `colls`
  TuneOptions tune;  // --tune: instead of the benchmarks
};

/// Parses argv; prints help / errors and exits like CLI11 does. Checks combinations.
Options parse_options(int argc, char** argv);

const char* coll_name(Coll c);
const char* path_name(Path p);
/// "sum", "prod", "max", "min" (nccl-tests spelling).
const char* redop_name(pld::ReduceOp op);
/// "auto", "mesh", "ring", "twoshot".
const char* mode_name(pld::AllreduceMode mode);

}  // namespace pldbench
