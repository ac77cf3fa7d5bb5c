// pld-bench: runs a Plan in ONE pld::run (heap sized from the largest row) and turns the per-rank
// numbers the kernels wrote into per-row results.
#pragma once

#include "options.hpp"
#include "sweep.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace pldbench {

/// One column group of a row (composite / builtin, or put / get for p2p).
struct Measure {
  bool valid = false;
  double time_us = 0;  // per iteration: max over ranks of loop time / iterations
  std::int64_t wrong = -1;  // -1: not checked
  Iters iters;
};

struct Row {
  Point point;
  Measure group[2];
};

struct TableResult {
  Table table;
  const char* group_names[2] = {"composite", "builtin"};
  const char* group_notes[2] = {"", ""};
  std::vector<Row> rows;
};

struct Results {
  std::vector<TableResult> tables;
  double latency_us = -1;  // p2p notify->wait, half a round trip (-1: not measured)
  std::int64_t latency_iters = 0;
  std::int64_t wrong_total = 0;
  double elapsed_s = 0;
};

Results run_plan(const Options& o, const Plan& plan);

}  // namespace pldbench
