// pld-bench --tune: measures on this machine where some of pld's thresholds switch between two ways
// of moving data, and writes a tuning file that pld reads at start-up from PLD_TUNING_FILE
// (docs/performance-thresholds.md, "Tuning on this machine"). At P = 2, each crossover:
//
//   PLD_STREAMING_BYTES       put + get of one buffer, cached vs streaming stores
//   PLD_PUSH_STREAMING_BYTES  all_to_all (the block per peer), cached vs streaming stores
//   PLD_BROADCAST_PUSH_MAX    broadcast, every rank copying its share vs the root pushing it all
//
// Each setting runs in a fresh process (pld reads its thresholds once per process), the two
// settings of a crossover alternate for a number of rounds, and each size compares the medians
// over the rounds of the per-round ratio. The threshold becomes the size from which (or up to
// which) the alternative wins at every measured size; without such a size inside the measured
// range the derived value is kept, and the table and the file say so. Timing, not correctness, is
// what varies here; the results are still checked.
#pragma once

#include "options.hpp"

namespace pldbench {

/// Measures, prints a table per threshold on stdout and writes o.tune.out. Returns the exit
/// status (0); a failed measurement throws.
int run_tune(const Options& o);

}  // namespace pldbench
