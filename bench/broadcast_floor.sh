#!/usr/bin/env bash
# bench/broadcast_floor.sh — small broadcasts at P=2 against the floor of pld's rule, side by side
# in ONE run: every rank returns from a collective only after every peer has entered it, so a loop
# of broadcasts from a fixed root costs at least what bench/mpi/entry_floor.cpp measures (two bare
# processes, pld's LL layout, no runtime), while Open MPI's root returns once its eager send is
# queued (entry_floor's `eager` shape is that loop without the rule).
#
#   bench/broadcast_floor.sh                       # 5 interleaved rounds, 4 B .. 1 KiB
#   bench/broadcast_floor.sh --rounds 9 --max-bytes 256 --no-node
#
# Per round: entry_floor (shapes entered, entered-rmw, entered-late, eager), pld-bench --op broadcast -g 2 (shm),
# mpirun -n 2 pld-bench (PLD_BACKEND=mpi: one node, pld's schedules on shared windows; skipped with
# --no-node) and mpirun -n 2 mpi_bench --op broadcast (MPI_Bcast, Open MPI's defaults). Prints per
# size the median over the rounds of each and each side over the floor. Builds into OUT (default
# build-compare/: pld-bench with the mpi backend in OUT/pld, as bench/mpi_compare.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$ROOT/build-compare"
ROUNDS=5
MAX_BYTES=1K
NODE=1
while (($#)); do
  case "$1" in
    --rounds) ROUNDS="$2"; shift ;;
    --out) OUT="$2"; shift ;;
    --max-bytes) MAX_BYTES="$2"; shift ;;
    --no-node) NODE=0 ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "broadcast_floor.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
case "$MAX_BYTES" in
  *K) MAX=$((${MAX_BYTES%K} * 1024)) ;;
  *[!0-9]*|'') echo "broadcast_floor.sh: --max-bytes '$MAX_BYTES' is not a size (e.g. 256 or 1K)" >&2; exit 2 ;;
  *) MAX=$MAX_BYTES ;;
esac
((MAX >= 4 && MAX <= 4096)) || { echo "broadcast_floor.sh: --max-bytes must be in [4, 4K]" >&2; exit 2; }
for tool in cmake mpicxx mpirun g++ python3; do
  command -v "$tool" >/dev/null || { echo "broadcast_floor.sh: '$tool' not found; run scripts/deps.sh" >&2; exit 2; }
done
mkdir -p "$OUT/broadcast-floor"
OUT=$(cd "$OUT" && pwd)
RUNS="$OUT/broadcast-floor"
rm -f "$RUNS"/*.json

echo "== building pld-bench (with the mpi backend), mpi_bench and entry_floor into $OUT" >&2
cmake -S "$ROOT" -B "$OUT/pld" -DCMAKE_BUILD_TYPE=Release -DPLD_BUILD_TESTS=OFF -DPLD_BUILD_EXAMPLES=OFF \
  -DPLD_BUILD_BENCH=OFF -DPLD_WITH_MPI=ON >"$OUT/build.log" 2>&1 || { cat "$OUT/build.log" >&2; exit 2; }
cmake --build "$OUT/pld" --target pld-bench -j "$(nproc)" >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log" >&2; exit 2; }
PLD_BENCH="$OUT/pld/tools/pld-bench/pld-bench"
mpicxx -O3 -std=c++20 -DOMPI_SKIP_MPICXX -I"$ROOT/tools/pld-bench" "$ROOT/bench/mpi/mpi_bench.cpp" -o "$OUT/mpi_bench"
g++ -O2 -std=c++20 "$ROOT/bench/mpi/entry_floor.cpp" -o "$OUT/entry_floor"
if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi

SIZES=(-b 4 -e "$MAX" -f 2)
BYTES=$(s=4; l=""; while ((s <= MAX)); do l="$l${l:+,}$s"; s=$((s * 2)); done; echo "$l")
ITERS=(-n 20000)
echo "# bench/broadcast_floor.sh — $(date -u '+%Y-%m-%d %H:%M UTC'); $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# rounds $ROUNDS, sizes $BYTES, ${ITERS[*]} calls per row (both sides), root 0, fp32"

FAILED=0
run() {  # run LABEL command...: a failure is noted, the run goes on
  local label=$1; shift
  if ! timeout 600 "$@" >>"$RUNS/output.txt" 2>&1; then echo "# FAILED: $label" >&2; FAILED=1; fi
}
: > "$RUNS/output.txt"
for ((r = 1; r <= ROUNDS; r++)); do
  echo "== round $r/$ROUNDS" >&2
  run "entry_floor" "$OUT/entry_floor" --bytes "$BYTES" --reps 3 --iters 100000 -J "$RUNS/floor.r$r.json"
  run "pld-bench shm" "$PLD_BENCH" --op broadcast -g 2 "${SIZES[@]}" "${ITERS[@]}" -d fp32 --path composite \
    --progress never -J "$RUNS/shm.r$r.json"
  if ((NODE)); then
    run "pld-bench node" mpirun --oversubscribe -n 2 -x PLD_BACKEND=mpi "$PLD_BENCH" --op broadcast "${SIZES[@]}" \
      "${ITERS[@]}" -d fp32 --path composite --progress never -J "$RUNS/node.r$r.json"
  fi
  run "mpi_bench" mpirun --oversubscribe -n 2 "$OUT/mpi_bench" --op broadcast "${SIZES[@]}" "${ITERS[@]}" -d fp32 \
    -J "$RUNS/mpi.r$r.json"
done

python3 - "$RUNS" "$ROUNDS" <<'PY'
import glob, json, statistics, sys
runs, rounds = sys.argv[1], int(sys.argv[2])
cols = {}  # column -> size -> [us per round]
def add(col, size, us):
    cols.setdefault(col, {}).setdefault(int(size), []).append(us)
for f in glob.glob(f"{runs}/floor.r*.json"):
    for r in json.load(open(f))["rows"]:
        add(r["shape"], r["bytes"], r["time_us"])
for side, group in (("shm", "composite"), ("node", "composite"), ("mpi", "mpi")):
    for f in glob.glob(f"{runs}/{side}.r*.json"):
        for t in json.load(open(f))["tables"]:
            for r in t["rows"]:
                if group in r:
                    add(side, r["size"], r[group]["time_us"])
med = {c: {s: statistics.median(v) for s, v in d.items()} for c, d in cols.items()}
names = [("entered", "floor"), ("entered-rmw", "floor+rmw"), ("entered-late", "floor+late"), ("eager", "eager"), ("shm", "pld shm"),
         ("node", "pld node"), ("mpi", "Open MPI")]
names = [(c, n) for c, n in names if c in med]
ratios = [(c, f"{c}/floor") for c in ("shm", "node", "mpi") if c in med and "entered" in med]
print(f"# median us per call over {rounds} round(s); floor = entry_floor 'entered' (pld's rule, its LL layout,")
print("# no runtime); eager = the same loop without the rule (the root never waits, as MPI_Bcast's root)")
print(f"{'bytes':>6}" + "".join(f"{n:>11}" for _, n in names) + "".join(f"{n:>12}" for _, n in ratios)
      + f"{'MPI/eager':>11}")
for size in sorted(med.get("shm", med.get("mpi", {}))):
    def get(c):
        return med.get(c, {}).get(size)
    cells = "".join(f"{get(c):>11.3f}" if get(c) is not None else f"{'-':>11}" for c, _ in names)
    rs = "".join(f"{get(c) / get('entered'):>12.2f}" if get(c) and get("entered") else f"{'-':>12}" for c, _ in ratios)
    eager = f"{get('mpi') / get('eager'):>11.2f}" if get("mpi") and get("eager") else f"{'-':>11}"
    print(f"{size:>6}{cells}{rs}{eager}")
PY
echo "# every run's output: $RUNS/output.txt" >&2
exit "$FAILED"
