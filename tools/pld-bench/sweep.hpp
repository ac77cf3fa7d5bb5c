// pld-bench: what to measure. A sweep is a list of tables (one per benchmark and allreduce mode);
// a table's rows are sizes x dtypes x reduction ops in nccl-tests' order. Sizes are rounded the
// way nccl-tests rounds them: to a whole number of elements, and for the [P, SIZE] collectives to a
// whole number of elements per rank.
#pragma once

#include "options.hpp"

#include <pld/types.hpp>

#include <cstdint>
#include <vector>

namespace pldbench {

/// Iteration counts of one measurement.
struct Iters {
  std::int64_t warmup = 0;
  std::int64_t iters = 0;
};

/// One row of a table.
struct Point {
  int index = 0;  // row of the results tensor (over the whole sweep)
  Coll coll = Coll::Allreduce;
  pld::DType dtype = pld::DType::FP32;
  pld::ReduceOp redop = pld::ReduceOp::Sum;
  pld::AllreduceMode mode = pld::AllreduceMode::Auto;
  int root = -1;             // broadcast root; -1 for the others (as nccl-tests prints)
  std::uint64_t bytes = 0;   // nccl-tests "size": the per-rank buffer (allgather: the gathered result)
  pld::Index count = 0;      // nccl-tests "count": elements in `bytes`
  pld::Index cols = 0;       // elements per rank block of the [P, SIZE] collectives (SIZE)
  Iters composite, builtin;  // builtin is unused for p2p (no host builtin)
};

struct Table {
  Coll coll = Coll::Allreduce;
  pld::AllreduceMode mode = pld::AllreduceMode::Auto;  // allreduce only
  std::vector<Point> rows;
};

struct Plan {
  std::vector<Table> tables;
  int npoints = 0;
  std::uint64_t heap_bytes = 0;  // DistributedConfig::heap_bytes: from the largest size
  std::uint64_t data_bytes = 0;  // the largest target operand
  std::uint64_t aux_bytes = 0;   // the largest second operand (allgather local, all_to_all input, p2p)
};

Plan make_plan(const Options& o);

/// nccl-tests' bus bandwidth factors: allreduce 2(n-1)/n; reduce_scatter, allgather, all_to_all
/// (n-1)/n; broadcast and p2p 1; barrier moves no data.
double busbw_factor(Coll c, int nranks);
/// Whether a reduction op applies (allreduce, reduce_scatter).
bool reduces(Coll c);
/// Whether the collective works on [P, SIZE] operands.
bool row_blocked(Coll c);

}  // namespace pldbench
