#!/usr/bin/env bash
# bench/peers/peers.sh — pld against the tools its users would pick instead, side by side in ONE
# run, one ratio table (bench/peers/peers_report.py):
#   python   pld's Python package vs mpi4py's buffer API (mpirun) and torch.distributed with gloo,
#            P = 2 and 4, float32, 4 B - 64 MiB (bench/peers/python_peers.py)
#   shmem    pld's SHMEM primitives and collectives vs Open MPI's OpenSHMEM (oshrun), P = 2 and 4
#            (bench/peers/shmem_pld.cpp, bench/peers/shmem_oshmem.c)
#   gloo     pld-bench vs C++ Gloo over loopback TCP, P = 2 and 4, 8 B - 64 MiB (gloo-bench)
# Rounds interleave the sides; the table holds medians over rounds. The scale comparison with
# Open MPI from 2 to 64 ranks is bench/peers/scale.sh.
#
#   bench/peers/peers.sh                          # every suite, 3 rounds
#   bench/peers/peers.sh --suites gloo --rounds 1
#   bench/peers/peers.sh --quick --build build-ci # a smoke run: a few sizes of each peer
#   Options: --suites LIST (python,shmem,gloo)  --rounds N  --ranks LIST (default 2,4)
#            --quick  --build DIR (a configured pld build tree; default build-release, Release)
#            --no-build (use DIR's binaries as they are: the CTest smoke)
#            --out DIR (default build-peers)
#
# Exit 0 whatever the ratios are; 2 when a side fails.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE="$ROOT/bench/peers"
OUT="$ROOT/build-peers"
BUILD="$ROOT/build-release"
SUITES=python,shmem,gloo
ROUNDS=3
RANKS=2,4
QUICK=0
NO_BUILD=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --suites) SUITES=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --build) BUILD=$2; shift 2 ;;
    --no-build) NO_BUILD=1; shift ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "peers.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$SUITES" =~ ^(python|shmem|gloo)(,(python|shmem|gloo))*$ ]] ||
  { echo "peers.sh: --suites '$SUITES': give a comma-separated list of python, shmem, gloo" >&2; exit 2; }
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "peers.sh: --rounds '$ROUNDS': give a positive count" >&2; exit 2; }
[[ "$RANKS" =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "peers.sh: --ranks '$RANKS': give a comma-separated list, e.g. 2,4" >&2; exit 2; }
((QUICK)) && { ROUNDS=1; RANKS=2; }
has() { [[ ",$SUITES," == *",$1,"* ]]; }
PY=/usr/bin/python3
for tool in cmake mpirun $PY; do
  command -v "$tool" >/dev/null || { echo "peers.sh: '$tool' not found; run scripts/deps.sh" >&2; exit 2; }
done
if has shmem; then
  for tool in oshcc oshrun; do
    command -v "$tool" >/dev/null || { echo "peers.sh: '$tool' not found (Open MPI's OpenSHMEM); run scripts/deps.sh" >&2; exit 2; }
  done
fi

mkdir -p "$OUT/runs"
OUT=$(cd "$OUT" && pwd)
rm -f "$OUT"/runs/*
targets=(pld-bench)
has python && targets+=(_pld)
has shmem && targets+=(pld-bench-shmem)
has gloo && targets+=(gloo-bench)
if ((NO_BUILD)); then
  [[ -f "$BUILD/CMakeCache.txt" ]] || { echo "peers.sh: --no-build: '$BUILD' is not a build tree" >&2; exit 2; }
  BUILD=$(cd "$BUILD" && pwd)
else
  if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
    echo "== configuring a Release build in $BUILD" >&2
    cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPLD_BUILD_TESTS=OFF >"$OUT/build.log" 2>&1 ||
      { cat "$OUT/build.log" >&2; exit 2; }
  fi
  BUILD=$(cd "$BUILD" && pwd)
  echo "== building ${targets[*]} in $BUILD" >&2
  cmake --build "$BUILD" -j "$(nproc)" --target "${targets[@]}" >>"$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log" >&2; echo "peers.sh: the build failed (gloo-bench needs libgloo-dev: scripts/deps.sh)" >&2; exit 2; }
fi
PLD_BENCH="$BUILD/tools/pld-bench/pld-bench"
SHMEM_PLD="$BUILD/bench/peers/pld-bench-shmem"
GLOO_BENCH="$BUILD/bench/peers/gloo-bench"
if has shmem; then
  echo "== building bench/peers/shmem_oshmem.c with oshcc" >&2
  oshcc -O3 "$HERE/shmem_oshmem.c" -o "$OUT/shmem_oshmem"
fi
# --mca memory ^patcher: see shmem_oshmem.c. --oversubscribe (Open MPI then yields when idle, as
# pld's waits do when ranks outnumber cores) only where the ranks outnumber the cores.
oshrun_at() {
  local p=$1
  OSHRUN=(oshrun --allow-run-as-root --mca memory ^patcher -n "$p")
  if ((p > $(nproc))); then OSHRUN+=(--oversubscribe); fi
}

fail=0
# run NAME CMD...: one side's measurement; its stderr is kept and shown when it fails.
run() {
  local name=$1
  shift
  echo "== $name" >&2
  if ! "$@" >"$OUT/runs/$name.out" 2>"$OUT/runs/$name.err"; then
    echo "peers.sh: $name failed:" >&2
    tail -8 "$OUT/runs/$name.err" >&2
    fail=1
  fi
}

SIZES=(-b 8 -e 64M -f 8)
SHMEM_SIZES=(-b 8 -e 1M -f 8)
quick=()
if ((QUICK)); then
  SIZES=(-b 4K -e 4K)
  SHMEM_SIZES=()
  quick=(--quick)
fi
for ((r = 1; r <= ROUNDS; r++)); do
  for p in ${RANKS//,/ }; do
    if has python; then
      # torch-gloo's calls take 0.2-8 ms here, 100x mpi4py's: it runs in the first round only.
      sides=pld,pld-host,mpi4py
      ((r == 1)) && sides+=,torch-gloo
      run "python.$p.r$r" env PYTHONPATH="$BUILD/python" $PY "$HERE/python_peers.py" --ranks "$p" --sides "$sides" \
        ${quick[@]+"${quick[@]}"} --out "$OUT/runs/python.$p.r$r.jsonl"
    fi
    if has shmem; then
      ops=put,get,put_bw,get_bw,fetch_add,compare_swap,put_signal,barrier_all,allreduce,broadcast,allgather,all_to_all
      ((p > 2)) && ops=barrier_all,allreduce,broadcast,allgather,all_to_all
      run "shmem-pld.$p.r$r" "$SHMEM_PLD" -g "$p" --ops "$ops" ${SHMEM_SIZES[@]+"${SHMEM_SIZES[@]}"} ${quick[@]+"${quick[@]}"} \
        -J "$OUT/runs/shmem-pld.$p.r$r.jsonl"
      oshrun_at "$p"
      run "shmem-oshmem.$p.r$r" "${OSHRUN[@]}" "$OUT/shmem_oshmem" --ops "$ops" ${SHMEM_SIZES[@]+"${SHMEM_SIZES[@]}"} \
        ${quick[@]+"${quick[@]}"} -J "$OUT/runs/shmem-oshmem.$p.r$r.jsonl"
    fi
    if has gloo; then
      run "gloo.$p.r$r" "$GLOO_BENCH" -g "$p" --op allreduce,broadcast,allgather,barrier,all_to_all "${SIZES[@]}" \
        ${quick[@]+"${quick[@]}"} -J "$OUT/runs/gloo.$p.r$r.jsonl"
      run "pld-bench.gloo.$p.r$r" "$PLD_BENCH" -g "$p" --op allreduce,broadcast,allgather,barrier,all_to_all \
        "${SIZES[@]}" --progress never -J "$OUT/runs/pld-bench.gloo.$p.r$r.json"
    fi
  done
done
$PY "$HERE/peers_report.py" "$OUT/runs" | tee "$OUT/peers.txt"
exit $((fail ? 2 : 0))
