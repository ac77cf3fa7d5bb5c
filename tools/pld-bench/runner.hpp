// pld-bench: runs a Plan in ONE pld::run (heap sized from the largest row) and turns the per-rank
// numbers the kernels wrote into per-row results.
#pragma once

#include "options.hpp"
#include "sweep.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace pldbench {

/// Column groups per row: composite / builtin, or put / get / memcpy for p2p (put_signal: four).
inline constexpr int kGroups = 4;

/// One column group of a row.
struct Measure {
  bool valid = false;
  double time_us = 0;       // per iteration: max over ranks of loop time / iterations
  std::int64_t wrong = -1;  // -1: not checked
  Iters iters;
};

struct Row {
  Point point;
  Measure group[kGroups];
};

struct TableResult {
  Table table;
  const char* group_names[kGroups] = {"composite", "builtin", "", ""};
  const char* group_notes[kGroups] = {"", "", "", ""};
  std::vector<Row> rows;
};

struct Results {
  std::vector<TableResult> tables;
  double latency_us = -1;  // p2p notify->wait, half a round trip (-1: not measured)
  std::int64_t latency_iters = 0;
  double bare_one_cell_us = -1;  // p2p baselines: bare ping-pong on one int32 (-1: not measured)
  double bare_two_cell_us = -1;  // ... on one int32 per direction, each on its own page
  std::int64_t wrong_total = 0;
  double elapsed_s = 0;
};

Results run_plan(const Options& o, const Plan& plan);

}  // namespace pldbench
