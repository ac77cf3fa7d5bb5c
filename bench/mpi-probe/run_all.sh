#!/usr/bin/env bash
# Builds every probe into BUILD_DIR (default /tmp/mpi-probe) and runs the fact scripts.
# Usage: bench/mpi-probe/run_all.sh [BUILD_DIR]      (root: exports OMPI_ALLOW_RUN_AS_ROOT*)
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
B=${1:-/tmp/mpi-probe}
mkdir -p "$B"
for p in notify_wait atomics bw pingpong threads die shared alloc progress_probe third_party; do
  mpicxx -O2 -march=native -std=c++20 -Wall -pthread -o "$B/$p" "$HERE/$p.cc"
done
echo "### 1. selection";  "$HERE/run_selection.sh" "$B"
echo "### 2/3. progress"; "$HERE/run_progress.sh" "$B" 2
echo "### 2. latency";    "$HERE/run_latency.sh" "$B" 2
echo "### 4. atomics";    "$HERE/run_atomics.sh" "$B" 3
echo "### 5. env";        "$HERE/env_probe.sh"
echo "### 7. bandwidth";  "$HERE/run_bw.sh" "$B" 2
