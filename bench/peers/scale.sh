#!/usr/bin/env bash
# bench/peers/scale.sh — pld against Open MPI from 2 to 64 ranks on this machine, side by side in
# ONE run (interleaved rounds, medians): barrier, allreduce 8 B and 1 MiB, all_to_all with one
# fp32 per peer and 64 KiB per rank (pld-bench's and nccl-tests' size: the bytes of one rank's
# buffer). Ranks beyond the cores are oversubscribed the same way on both sides (Open MPI:
# --oversubscribe, which yields when idle; pld: waits yield at once when ranks outnumber cores).
# Also reports pld's peak RSS (the largest process, host or rank: wait4's maxrss) and its shared
# memory (P x heap_bytes of pld-bench's JSON, plus the control block, which is small).
#
#   bench/peers/scale.sh                      # P = 2 4 8 16 32 64, 3 rounds
#   bench/peers/scale.sh --ranks 2,4 --rounds 1 --iters 20     # the CTest smoke
#   Options: --ranks LIST  --rounds N  --iters N (0: pld-bench's auto)  --out DIR (default build-scale)
#            --pld-bench PATH (use this pld-bench instead of building one)
#
# Prints one row per (P, collective, size): pld us, Open MPI us, pld/MPI, then per P the RSS and
# /dev/shm columns and the growth of barrier and allreduce 8 B with P. Exit 0 whatever the
# ratios are; 2 when a side fails.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT="$ROOT/build-scale"
RANKS=2,4,8,16,32,64
ROUNDS=3
ITERS=0
PLD_BENCH=
while [[ $# -gt 0 ]]; do
  case "$1" in
    --ranks) RANKS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --pld-bench) PLD_BENCH=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "scale.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$RANKS" =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "scale.sh: --ranks '$RANKS': give a comma-separated list, e.g. 2,4,64" >&2; exit 2; }
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || { echo "scale.sh: --rounds '$ROUNDS': give a positive count" >&2; exit 2; }
[[ "$ITERS" =~ ^[0-9]+$ ]] || { echo "scale.sh: --iters '$ITERS': give a count (0: auto)" >&2; exit 2; }
for tool in cmake mpicxx mpirun python3; do
  command -v "$tool" >/dev/null || { echo "scale.sh: '$tool' not found; run scripts/deps.sh" >&2; exit 2; }
done
TIME=/usr/bin/time
[[ -x $TIME ]] || { echo "scale.sh: /usr/bin/time not found (apt-get install -y time)" >&2; exit 2; }

mkdir -p "$OUT/runs"
OUT=$(cd "$OUT" && pwd)
if [[ -z "$PLD_BENCH" ]]; then
  echo "== building pld-bench (Release) into $OUT" >&2
  cmake -S "$ROOT" -B "$OUT/pld" -DCMAKE_BUILD_TYPE=Release -DPLD_BUILD_TESTS=OFF -DPLD_BUILD_EXAMPLES=OFF \
    -DPLD_BUILD_BENCH=OFF >"$OUT/build.log" 2>&1 || { cat "$OUT/build.log" >&2; exit 2; }
  cmake --build "$OUT/pld" --target pld-bench -j "$(nproc)" >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log" >&2; exit 2; }
  PLD_BENCH="$OUT/pld/tools/pld-bench/pld-bench"
fi
[[ -x "$PLD_BENCH" ]] || { echo "scale.sh: --pld-bench '$PLD_BENCH' is not an executable" >&2; exit 2; }
echo "== building bench/mpi/mpi_bench.cpp into $OUT" >&2
mpicxx -O3 -std=c++20 -DOMPI_SKIP_MPICXX -I"$ROOT/tools/pld-bench" "$ROOT/bench/mpi/mpi_bench.cpp" -o "$OUT/mpi_bench"
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --mca btl self,vader)
rm -f "$OUT"/runs/*.json "$OUT"/runs/*.rss

# One row set per collective: pld-bench / mpi_bench size arguments.
declare -A SIZES=([barrier]="-b 8 -e 8" [allreduce]="-b 8 -e 1M -f 131072" [all_to_all]="-b 8 -e 64K -f 8192")
ITER_ARGS=()
((ITERS > 0)) && ITER_ARGS=(-n "$ITERS")

fail=0
for ((r = 1; r <= ROUNDS; r++)); do
  for p in ${RANKS//,/ }; do
    for coll in barrier allreduce all_to_all; do
      echo "== round $r/$ROUNDS: P=$p $coll" >&2
      # shellcheck disable=SC2086
      if ! "$TIME" -f "%M" -o "$OUT/runs/pld.$p.$coll.r$r.rss" "$PLD_BENCH" --op "$coll" -g "$p" ${SIZES[$coll]} \
          ${ITER_ARGS[@]+"${ITER_ARGS[@]}"} --progress never -J "$OUT/runs/pld.$p.$coll.r$r.json" >/dev/null 2>"$OUT/runs/err.txt"; then
        echo "scale.sh: pld-bench failed at P=$p ($coll):" >&2; tail -5 "$OUT/runs/err.txt" >&2; fail=1
      fi
      # shellcheck disable=SC2086
      if ! "${MPIRUN[@]}" -np "$p" "$OUT/mpi_bench" --op "$coll" ${SIZES[$coll]} ${ITER_ARGS[@]+"${ITER_ARGS[@]}"} \
          -J "$OUT/runs/mpi.$p.$coll.r$r.json" >/dev/null 2>"$OUT/runs/err.txt"; then
        echo "scale.sh: mpi_bench failed at P=$p ($coll):" >&2; tail -5 "$OUT/runs/err.txt" >&2; fail=1
      fi
    done
  done
done
python3 "$ROOT/bench/peers/scale_report.py" "$OUT/runs" | tee "$OUT/scale.txt"
exit $((fail ? 2 : 0))
