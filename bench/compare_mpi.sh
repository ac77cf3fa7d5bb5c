#!/usr/bin/env bash
# bench/compare_mpi.sh — pld against Open MPI on this machine, side by side in ONE run
# (bench/README.md explains how to read the output).
#
#   bench/compare_mpi.sh            # full: 5 interleaved rounds, 2 Open MPI configurations, ~20 min
#   bench/compare_mpi.sh --quick    # 1 short round (fewer iterations), ~6 min
#
# What it does:
#   1. builds pld-bench and pld-info (CMake, Release, own build tree) and, with mpicxx / g++, the Open MPI
#      baseline bench/mpi/mpi_bench.cpp, the stream ceiling bench/mpi/stream.cpp and the report
#      bench/mpi/compare.cpp (+ compare_report.cpp), all into OUT (default build-compare/);
#   2. measures the streaming copy bandwidth of 2 threads (the memory-bandwidth ceiling);
#   3. for every round and collective: pld-bench, then mpi_bench under each Open MPI configuration,
#      on the same sizes (4 B .. 64 MiB, x2), fp32, P=2 — interleaved, so drifts hit both sides;
#      before all_to_all, the bare copy of the same bytes (bench/mpi/exchange_ceiling.cpp, P=2,
#      2 KiB .. 64 MiB); before broadcast, the floor of pld's entry rule (bench/mpi/entry_floor.cpp,
#      4 B .. 1 KiB: the LL broadcast loop between two bare processes);
#   4. the barrier at P=4 (4 ranks on 2 cores, oversubscribed) the same way;
#   5. barrier, allreduce, broadcast and all_to_all at P=2 while two busy loops share the cores
#      (contended; 4 B .. 1 MiB, x16), the same way;
#   6. prints the ratio table (median over the rounds, both sides alike, ratios the median of the
#      per-round ratios; --stat min for the lowest),
#      the no-cliff check (no time may grow more than 3x for 2x the bytes unless the bare copy's
#      does) and the speed targets, writes OUT/compare.txt, OUT/summary.json and the plot
#      OUT/busbw.png + .svg (gnuplot; OUT/busbw.gp + .dat if gnuplot is missing).
#
# Options: --quick  --rounds N  --stat median|min  --out DIR  --np N (default 2)  --help
#   --colls LIST     a subset of the collectives (comma-separated; the P=4 barrier runs with barrier)
#   --max-bytes SIZE the largest size (default 64M; the memory ceiling runs only at 64M), e.g.
#                    bench/compare_mpi.sh --colls all_to_all,all_to_all_v --max-bytes 4K --rounds 9
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$ROOT/build-compare"
QUICK=0
ROUNDS=""
NP=2
STAT=median
ALL_COLLS=(barrier allreduce broadcast allgather reduce_scatter all_to_all all_to_all_v)
SELECTED=$(IFS=,; echo "${ALL_COLLS[*]}")
MAX_BYTES=64M
while (($#)); do
  case "$1" in
    --quick) QUICK=1 ;;
    --rounds) ROUNDS="$2"; shift ;;
    --out) OUT="$2"; shift ;;
    --np) NP="$2"; shift ;;
    --stat) STAT="$2"; shift ;;
    --colls) SELECTED="$2"; shift ;;
    --max-bytes) MAX_BYTES="$2"; shift ;;
    -h|--help) sed -n '2,30p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare_mpi.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$ROUNDS" ] || ROUNDS=$((QUICK ? 1 : 5))
source "$ROOT/bench/options.sh"
pick_colls compare_mpi.sh "$SELECTED"
check_size compare_mpi.sh "$MAX_BYTES"
bytes_of() { numfmt --from=iec "$1"; }
MAX=$(bytes_of "$MAX_BYTES")
wants() { [[ " ${COLLS[*]} " == *" $1 "* ]]; }
STREAM=0  # the memory ceiling serves the 64 MiB allreduce only
if wants allreduce && ((MAX >= 64 << 20)); then STREAM=1; fi
mkdir -p "$OUT/runs"
OUT=$(cd "$OUT" && pwd)
LOG="$OUT/compare.txt"
: > "$LOG"
say() { echo "$@" | tee -a "$LOG"; }

for tool in cmake mpicxx mpirun g++; do
  command -v "$tool" >/dev/null || { echo "compare_mpi.sh: '$tool' not found; run scripts/deps.sh" >&2; exit 2; }
done

# ----- 1. build ------------------------------------------------------------------------------------
echo "== building pld-bench and the MPI baseline into $OUT" >&2
cmake -S "$ROOT" -B "$OUT/pld" -DCMAKE_BUILD_TYPE=Release -DPLD_BUILD_TESTS=OFF -DPLD_BUILD_EXAMPLES=OFF \
  -DPLD_BUILD_BENCH=OFF >"$OUT/build.log" 2>&1 || { cat "$OUT/build.log" >&2; exit 2; }
cmake --build "$OUT/pld" --target pld-bench pld-info -j "$(nproc)" >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log" >&2; exit 2; }
PLD_BENCH="$OUT/pld/tools/pld-bench/pld-bench"
PLD_INFO="$OUT/pld/tools/pld-info"
MPI_FLAGS=(-O3 -std=c++20 -DOMPI_SKIP_MPICXX -I"$ROOT/tools/pld-bench")
mpicxx "${MPI_FLAGS[@]}" "$ROOT/bench/mpi/mpi_bench.cpp" -o "$OUT/mpi_bench"
g++ -O2 -std=c++20 -pthread "$ROOT/bench/mpi/stream.cpp" -o "$OUT/stream"
g++ -O2 -std=c++20 -I"$ROOT/tools/pld-bench" "$ROOT/bench/mpi/compare.cpp" "$ROOT/bench/mpi/compare_report.cpp" \
  "$ROOT/bench/mpi/compare_baselines.cpp" -o "$OUT/compare"
ENTRY=0  # the floor of pld's entry rule for the small broadcasts (bench/mpi/entry_floor.cpp)
if wants broadcast; then
  if g++ -O2 -std=c++20 "$ROOT/bench/mpi/entry_floor.cpp" -o "$OUT/entry_floor" 2>>"$OUT/build.log"; then
    ENTRY=1
  else
    echo "compare_mpi.sh: entry_floor did not build (see $OUT/build.log); no entry-floor rows" >&2
  fi
fi
EXCHANGE=0  # all_to_all's copy ceiling: two threads, x86 intrinsics, the P=2 pattern
if [ "$NP" -eq 2 ] && [ "$(uname -m)" = x86_64 ]; then
  if g++ -O2 -std=c++20 -pthread "$ROOT/bench/mpi/exchange_ceiling.cpp" -o "$OUT/exchange_ceiling" 2>>"$OUT/build.log"; then
    EXCHANGE=1
  else
    echo "compare_mpi.sh: exchange_ceiling did not build (see $OUT/build.log); no bare-copy rows" >&2
  fi
fi

# ----- settings ------------------------------------------------------------------------------------
# mpirun binds each of up to 2 ranks to a core by default; pld's ranks get the same (--pin: rank r
# on CPU r). Unbound, two ranks forked onto one CPU share it until the load balancer moves one,
# which can take the first row of a process tens of milliseconds.
PIN=()
PIN_NOTE=""
if ((NP <= $(nproc))) && ((NP <= 2)); then PIN=(--pin) PIN_NOTE=", pld ranks pinned (--pin) as mpirun binds its ranks"; fi
SIZES=(-b 4 -e "$MAX_BYTES" -f 2)  # x2 steps: the no-cliff check compares each size with the next
EXCHANGE_SIZES=$(for s in 2K 4K 8K 16K 32K 64K 128K 256K 512K 1M 2M 4M 8M 16M 32M 64M; do
                   if (($(bytes_of $s) <= MAX)); then echo "$s"; fi; done | paste -sd,)
[ -n "$EXCHANGE_SIZES" ] || EXCHANGE=0
ENTRY_SIZES=$(s=4; while ((s <= 1024 && s <= MAX)); do echo "$s"; s=$((s * 2)); done | paste -sd,)
if ((QUICK)); then
  ITERS=(--budget 256M --max-iters 5000)
  PLD_PATH=composite
else
  ITERS=(--budget 1G --max-iters 20000)
  PLD_PATH=both
fi
# Open MPI: vader (shared memory) is the transport for one machine. Its single-copy mechanism is
# CMA (process_vm_readv) by default; 'none' copies through the shared fragments instead, which is
# faster here for mid sizes. Every configuration runs every row; the report keeps MPI's best per row.
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)
MPI_CONFIG_NAMES=(vader-cma vader-copy)
MPI_CONFIG_ARGS=("--mca btl self,vader --mca btl_vader_single_copy_mechanism cma"
                 "--mca btl self,vader --mca btl_vader_single_copy_mechanism none")
# --quick keeps both: with one of them only, Open MPI loses rows it would win and ratios flatter pld.
# P=4 is oversubscribed: Open MPI's own default there (yield when idle), and bound vs unbound.
MPI4_CONFIG_NAMES=(vader-np4 vader-np4-unbound)
MPI4_CONFIG_ARGS=("--mca btl self,vader --mca mpi_yield_when_idle 1"
                  "--mca btl self,vader --mca mpi_yield_when_idle 1 --bind-to none")
# Next to two busy loops (P=2, section 5): Open MPI's defaults. With mpi_yield_when_idle 1 each
# yield hands the core to a busy loop for its time slice: one allreduce row took over 8 minutes.
MPI_BUSY_ARGS=(--mca btl self,vader)

# ----- header --------------------------------------------------------------------------------------
say "# bench/compare_mpi.sh $( ((QUICK)) && echo --quick) — $(date -u '+%Y-%m-%d %H:%M UTC')"
say "# machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) CPUs, $(uname -r)"
say "# $(mpirun --version 2>/dev/null | head -1); pld $("$PLD_BENCH" --help >/dev/null && echo built from "$ROOT")"
# The machine as pld sees it (CPU model, caches) and the size thresholds in force, with their
# sources: a table from any machine reads on its own.
"$PLD_INFO" --thresholds 2>&1 | sed 's/^/# /' | tee -a "$LOG" || true
say "# P=$NP, rounds $ROUNDS, collectives ${COLLS[*]}, sizes ${SIZES[*]}, iterations ${ITERS[*]}, warm-up iterations / 10" \
  "(the first row of each process: iterations; tools/pld-bench/rules.hpp, the same for both sides), pld path $PLD_PATH$PIN_NOTE"
for i in "${!MPI_CONFIG_NAMES[@]}"; do say "# Open MPI config ${MPI_CONFIG_NAMES[$i]}: ${MPIRUN[*]} -np $NP ${MPI_CONFIG_ARGS[$i]}"; done
for i in "${!MPI4_CONFIG_NAMES[@]}"; do say "# Open MPI config ${MPI4_CONFIG_NAMES[$i]} (P=4): ${MPIRUN[*]} -np 4 ${MPI4_CONFIG_ARGS[$i]}"; done
say "# Open MPI config vader-busy (P=2, busy loops): ${MPIRUN[*]} -np 2 ${MPI_BUSY_ARGS[*]}"
thp() { local f=/sys/kernel/mm/transparent_hugepage/$1; [ -r "$f" ] && sed 's/.*\[\(.*\)\].*/\1/' "$f" || echo n/a; }
say "# transparent huge pages: enabled=$(thp enabled) shmem_enabled=$(thp shmem_enabled), PLD_HUGE_PAGES=${PLD_HUGE_PAGES:-1}" \
  "(pld's heaps get 2 MiB pages only when shmem_enabled is advise, within_size, always or force)"
say "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
busy=$(ps -eo pcpu=,comm= --sort=-pcpu | awk '$1 > 20 {print $2"("$1"%)"}' | head -5 | tr '\n' ' ')
[ -z "$busy" ] || say "# WARNING: other busy processes: $busy— timings will be noisy (more --rounds help the medians)"

FAILED=0
run() {  # run LABEL command...: appends stdout to the log of runs, notes a failure, keeps going
  local label="$1"; shift
  if ! timeout 900 "$@" >>"$OUT/runs/output.txt" 2>&1; then
    say "# FAILED: $label (exit $?): $*"
    FAILED=1
  fi
}
: > "$OUT/runs/output.txt"

# ----- 2. memory-bandwidth ceiling -------------------------------------------------------------------
STREAM_ARGS=()
if ((STREAM)); then
  echo "== stream ceiling" >&2
  "$OUT/stream" --threads 2 --bytes 512M --reps $((QUICK ? 5 : 10)) -J "$OUT/runs/stream.json" | tee -a "$LOG"
  "$OUT/stream" --threads 2 --bytes 32M --reps 20 -J "$OUT/runs/stream_footprint.json" | tee -a "$LOG"
  STREAM_ARGS=(--stream "$OUT/runs/stream.json" --stream-cache "$OUT/runs/stream_footprint.json")
fi

# ----- 3. P=2, interleaved rounds --------------------------------------------------------------------
PLD_JSON=(); MPI_JSON=(); EXCHANGE_JSON=(); ENTRY_JSON=()
for ((r = 1; r <= ROUNDS; r++)); do
  for coll in "${COLLS[@]}"; do
    echo "== round $r/$ROUNDS: $coll" >&2
    if ((EXCHANGE)) && { [ "$coll" = all_to_all ] || { [ "$coll" = all_to_all_v ] && ! wants all_to_all; }; }; then
      f="$OUT/runs/exchange.r$r.json"
      rm -f "$f"
      run "exchange_ceiling" "$OUT/exchange_ceiling" --sizes "$EXCHANGE_SIZES" --kinds memcpy-alt,stream-64B-alt,stream \
        --huge-pages "$( [ "${PLD_HUGE_PAGES:-1}" = 0 ] && echo 0 || echo 1)" -J "$f"
      [ -f "$f" ] && EXCHANGE_JSON+=("$f")
    fi
    if ((ENTRY)) && [ "$coll" = broadcast ]; then
      f="$OUT/runs/entry_floor.r$r.json"
      rm -f "$f"
      run "entry_floor" "$OUT/entry_floor" --bytes "$ENTRY_SIZES" --shapes entered --reps 3 --iters 100000 \
        ${PIN[@]+"${PIN[@]}"} -J "$f"
      [ -f "$f" ] && ENTRY_JSON+=("$f")
    fi
    f="$OUT/runs/pld.$coll.r$r.json"
    rm -f "$f"  # a failed run must not leave an older run's file to be read
    run "pld-bench $coll" "$PLD_BENCH" --op "$coll" -g "$NP" "${SIZES[@]}" "${ITERS[@]}" -d fp32 -o sum \
      --path "$PLD_PATH" "${PIN[@]}" --progress never -J "$f"
    [ -f "$f" ] && PLD_JSON+=("$f")
    for i in "${!MPI_CONFIG_NAMES[@]}"; do
      name=${MPI_CONFIG_NAMES[$i]}
      f="$OUT/runs/mpi.$name.$coll.r$r.json"
      rm -f "$f"
      # shellcheck disable=SC2206
      args=(${MPI_CONFIG_ARGS[$i]})
      run "mpi_bench $coll ($name)" "${MPIRUN[@]}" -np "$NP" "${args[@]}" "$OUT/mpi_bench" --op "$coll" "${SIZES[@]}" \
        "${ITERS[@]}" -d fp32 -o sum -J "$f"
      [ -f "$f" ] && MPI_JSON+=("$name=$f")
    done
  done
done

# ----- 4. P=4 barrier ------------------------------------------------------------------------------
PLD4_JSON=(); MPI4_JSON=()
for ((r = 1; r <= ROUNDS; r++)); do
  wants barrier || break
  echo "== round $r/$ROUNDS: barrier at P=4" >&2
  f="$OUT/runs/pld4.barrier.r$r.json"
  rm -f "$f"
  run "pld-bench barrier P=4" "$PLD_BENCH" --op barrier -g 4 "${ITERS[@]}" --progress never -J "$f"
  [ -f "$f" ] && PLD4_JSON+=("$f")
  for i in "${!MPI4_CONFIG_NAMES[@]}"; do
    name=${MPI4_CONFIG_NAMES[$i]}
    f="$OUT/runs/mpi4.$name.barrier.r$r.json"
    rm -f "$f"
    # shellcheck disable=SC2206
    args=(${MPI4_CONFIG_ARGS[$i]})
    run "mpi_bench barrier P=4 ($name)" "${MPIRUN[@]}" -np 4 "${args[@]}" "$OUT/mpi_bench" --op barrier "${ITERS[@]}" -J "$f"
    [ -f "$f" ] && MPI4_JSON+=("$name=$f")
  done
done

# ----- 5. P=2 next to two busy loops ----------------------------------------------------------------
# Each round starts two shell loops that spin on the same cores for the length of the round (killed
# on exit): every rank shares its core with a busy process. Sizes x16 up to 1 MiB.
BUSY_COLLS=()
for coll in barrier allreduce broadcast all_to_all; do if wants "$coll"; then BUSY_COLLS+=("$coll"); fi; done
BUSY_MAX=$((MAX < 1 << 20 ? MAX : 1 << 20))
BUSY_PIDS=()
stop_busy() {
  if ((${#BUSY_PIDS[@]})); then kill "${BUSY_PIDS[@]}" 2>/dev/null || true; wait "${BUSY_PIDS[@]}" 2>/dev/null || true; fi
  BUSY_PIDS=()
}
trap stop_busy EXIT
PLD_BUSY_JSON=(); MPI_BUSY_JSON=()
for ((r = 1; r <= ROUNDS && NP == 2 && ${#BUSY_COLLS[@]}; r++)); do
  echo "== round $r/$ROUNDS: P=2 next to two busy loops" >&2
  for _ in 1 2; do (while :; do :; done) & BUSY_PIDS+=($!); done
  for coll in "${BUSY_COLLS[@]}"; do
    f="$OUT/runs/pld-busy.$coll.r$r.json"
    rm -f "$f"
    run "pld-bench $coll (busy)" "$PLD_BENCH" --op "$coll" -g 2 -b 4 -e "$BUSY_MAX" -f 16 "${ITERS[@]}" -d fp32 -o sum \
      ${PIN[@]+"${PIN[@]}"} --progress never -J "$f"
    [ -f "$f" ] && PLD_BUSY_JSON+=("$f")
    f="$OUT/runs/mpi-busy.$coll.r$r.json"
    rm -f "$f"
    run "mpi_bench $coll (busy)" "${MPIRUN[@]}" -np 2 "${MPI_BUSY_ARGS[@]}" "$OUT/mpi_bench" --op "$coll" -b 4 \
      -e "$BUSY_MAX" -f 16 "${ITERS[@]}" -d fp32 -o sum -J "$f"
    [ -f "$f" ] && MPI_BUSY_JSON+=("vader-busy=$f")
  done
  stop_busy
done

# ----- 6. report -----------------------------------------------------------------------------------
say ""
"$OUT/compare" --nranks "$NP" --stat "$STAT" --pld "${PLD_JSON[@]}" --mpi "${MPI_JSON[@]}" \
  ${PLD4_JSON[@]+--pld4 "${PLD4_JSON[@]}"} ${MPI4_JSON[@]+--mpi4 "${MPI4_JSON[@]}"} \
  ${PLD_BUSY_JSON[@]+--pld-busy "${PLD_BUSY_JSON[@]}"} ${MPI_BUSY_JSON[@]+--mpi-busy "${MPI_BUSY_JSON[@]}"} ${STREAM_ARGS[@]+"${STREAM_ARGS[@]}"} \
  ${EXCHANGE_JSON[@]+--exchange "${EXCHANGE_JSON[@]}"} ${ENTRY_JSON[@]+--entry-floor "${ENTRY_JSON[@]}"} --plot "$OUT/busbw" --summary "$OUT/summary.json" | tee -a "$LOG" || FAILED=1
if command -v gnuplot >/dev/null; then
  gnuplot "$OUT/busbw.gp" && say "# plot: $OUT/busbw.png and $OUT/busbw.svg"
else
  say "# plot: gnuplot not installed (scripts/deps.sh installs gnuplot-nox); data and script in $OUT/busbw.{dat,gp}"
fi
say "# full output of every run: $OUT/runs/output.txt; this report: $LOG"
exit "$FAILED"
