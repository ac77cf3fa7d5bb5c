#!/usr/bin/env bash
# bench/mpi_compare.sh — pld's mpi backend against Open MPI's own collectives, side by side in ONE
# run, in the three configurations of the mpi backend's speed targets (docs/performance-mpi.md):
#   tcp   TCP only: 2 nodes x 1 rank in network namespaces (tests/mpi/netns_run.sh; root), or, where
#         namespaces cannot be created, one machine with --mca btl tcp,self --mca osc ucx
#         -x UCX_TLS=tcp,self and PLD_MPI_SHARED=0           target pld / Open MPI <= 1.2
#   node  one node, P=2, Open MPI's defaults                    target <= 1.0
#   2x2   2 nodes x 2 ranks in network namespaces               target <= 1.2 for allreduce and
#         all_to_all at 4 B (the smallest row), 64 KiB and 4 MiB; other rows are printed unjudged
# For every round, configuration and collective (barrier allreduce broadcast allgather
# reduce_scatter all_to_all all_to_all_v; fp32 sum; 4 B .. 4 MiB, x4): mpirun pld-bench
# (PLD_BACKEND=mpi), then mpirun mpi_bench (MPI_Barrier, MPI_Allreduce, ...) on the same sizes.
# Then point to point: tcp — pld-bench --op p2p put 8 B against mpi_bench --op pingpong 8 B one
# way (target 1.5); node — notify->wait and put 8 B under mpirun against the shm backend's own
# (pld-bench -g 2 --op p2p, no mpirun; target 1.3). On node, the broadcast's rows up to 1 KiB
# are also set against the floor of pld's entry rule (bench/mpi/entry_floor.cpp, pinned as mpirun
# binds: case bcast/floor). A loop of calls that each return only after every peer entered cannot
# beat that floor, so a node broadcast row that misses Open MPI is also judged against 1.3x it (the
# tolerance of the on-node point-to-point rows; verdict floor-PASS / floor-FAIL, tallied apart).
# Prints per row the median over the rounds of each side, the ratio, the target and PASS/FAIL.
#
#   bench/mpi_compare.sh                        # 3 interleaved rounds
#   bench/mpi_compare.sh --rounds 1             # a few minutes
#   bench/mpi_compare.sh --configs tcp,2x2 --out DIR    # default: tcp,node,2x2 and build-compare/
#   bench/mpi_compare.sh --no-netns             # tcp on one machine even where namespaces work
#   bench/mpi_compare.sh --configs node --colls barrier,allreduce,p2p --max-bytes 4K --rounds 9
#                                               # a subset (p2p: the point-to-point rows) up to 4 KiB
#
# Builds pld-bench (target pld-bench; Release, own tree OUT/pld, mpi backend on) and mpi_bench
# (mpicxx, bench/mpi/mpi_bench.cpp). PLD_MPI_SHARED and PLD_MPI_NATIVE_COLL, when set, reach every
# rank. Exit status: 0 when every run completed and verified, 1 otherwise (missed targets are
# findings, not failures).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$ROOT/build-compare"
ROUNDS=3
CONFIGS=tcp,node,2x2
USE_NETNS=1
ALL_COLLS=(barrier allreduce broadcast allgather reduce_scatter all_to_all all_to_all_v)
SELECTED=$(IFS=,; echo "${ALL_COLLS[*]},p2p")
MAX_BYTES=4M
FLOOR_TARGET=1.3  # a node broadcast over the entry rule's floor (the on-node point-to-point tolerance)
while (($#)); do
  case "$1" in
    --rounds) ROUNDS="$2"; shift ;;
    --configs) CONFIGS="$2"; shift ;;
    --out) OUT="$2"; shift ;;
    --no-netns) USE_NETNS=0 ;;
    --colls) SELECTED="$2"; shift ;;
    --max-bytes) MAX_BYTES="$2"; shift ;;
    -h|--help) sed -n '2,28p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "mpi_compare.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
for c in ${CONFIGS//,/ }; do
  case "$c" in tcp|node|2x2) ;; *) echo "mpi_compare.sh: unknown configuration '$c' in --configs (tcp, node, 2x2)" >&2; exit 2 ;; esac
done
source "$ROOT/bench/options.sh"
pick_colls mpi_compare.sh "$SELECTED" p2p
check_size mpi_compare.sh "$MAX_BYTES"
P2P_ROWS=0  # p2p selects the point-to-point rows, not a collective
for i in "${!COLLS[@]}"; do
  if [ "${COLLS[i]}" = p2p ]; then P2P_ROWS=1; unset 'COLLS[i]'; fi
done
for tool in cmake mpicxx mpirun; do
  command -v "$tool" >/dev/null || { echo "mpi_compare.sh: '$tool' not found; run scripts/deps.sh" >&2; exit 2; }
done
mkdir -p "$OUT/mpi-compare"
OUT=$(cd "$OUT" && pwd)
RUNS="$OUT/mpi-compare"

echo "== building pld-bench (with the mpi backend) and mpi_bench into $OUT" >&2
cmake -S "$ROOT" -B "$OUT/pld" -DCMAKE_BUILD_TYPE=Release -DPLD_BUILD_TESTS=OFF -DPLD_BUILD_EXAMPLES=OFF \
  -DPLD_BUILD_BENCH=OFF -DPLD_WITH_MPI=ON >"$OUT/build.log" 2>&1 || { cat "$OUT/build.log" >&2; exit 2; }
cmake --build "$OUT/pld" --target pld-bench -j "$(nproc)" >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log" >&2; exit 2; }
PLD_BENCH="$OUT/pld/tools/pld-bench/pld-bench"
MPI_BENCH="$OUT/mpi_bench"
mpicxx -O3 -std=c++20 -DOMPI_SKIP_MPICXX -I"$ROOT/tools/pld-bench" "$ROOT/bench/mpi/mpi_bench.cpp" -o "$MPI_BENCH"
ENTRY_FLOOR="$OUT/entry_floor"
g++ -O2 -std=c++20 "$ROOT/bench/mpi/entry_floor.cpp" -o "$ENTRY_FLOOR"

if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
NETNS_RUN="$ROOT/tests/mpi/netns_run.sh"
NETNS=0
if ((USE_NETNS)) && [ "$(NODES=2 SLOTS=1 "$NETNS_RUN" true >/dev/null 2>&1; echo $?)" = 0 ]; then NETNS=1; fi
if ((!NETNS)) && [[ ",$CONFIGS," == *,2x2,* ]]; then
  echo "mpi_compare.sh: no network namespaces (--no-netns, or not root with CAP_NET_ADMIN): no 2x2 rows" >&2
  CONFIGS=$(echo ",$CONFIGS," | sed 's/,2x2,/,/; s/^,//; s/,$//')
fi
# pass_env: mpirun -x for the backend and for the mpi backend's path settings that are set, one
# word a line (every rank sees them)
pass_env() {
  local v
  printf '%s\n' -x PLD_BACKEND=mpi
  for v in PLD_MPI_SHARED PLD_MPI_NATIVE_COLL; do [ -z "${!v+x}" ] || printf '%s\n' -x "$v"; done
}
TCP_LOCAL=(--mca btl "tcp,self" --mca osc ucx -x "UCX_TLS=tcp,self")
# launch CONFIG PROGRAM [args...]: PROGRAM on every rank of CONFIG (ended after 10 minutes;
# netns_run.sh ends its runs itself)
# shellcheck disable=SC2317  # (called through run)
launch() {
  local config=$1; shift
  local -a env
  [ "$config" != tcp ] || ((NETNS)) || export PLD_MPI_SHARED=0  # (run's subshell: for this run only)
  mapfile -t env < <(pass_env)
  case "$config" in
    tcp) if ((NETNS)); then NODES=2 SLOTS=1 MPIRUN_ARGS="${env[*]}" "$NETNS_RUN" "$@"
         else timeout 600 mpirun --oversubscribe -n 2 "${env[@]}" "${TCP_LOCAL[@]}" "$@"; fi ;;
    node) timeout 600 mpirun --oversubscribe -n 2 "${env[@]}" "$@" ;;
    2x2) NODES=2 SLOTS=2 MPIRUN_ARGS="${env[*]}" "$NETNS_RUN" "$@" ;;
  esac
}
describe() {
  case "$1" in
    tcp) if ((NETNS)); then echo "2 nodes x 1 rank in network namespaces (tests/mpi/netns.sh), TCP only"
         else echo "one machine, TCP only: mpirun -n 2 ${TCP_LOCAL[*]}, PLD_MPI_SHARED=0"; fi ;;
    node) echo "one node, P=2, Open MPI's defaults: mpirun -n 2" ;;
    2x2) echo "2 nodes x 2 ranks in network namespaces (tests/mpi/netns.sh): vader on a node, TCP between" ;;
  esac
}

SIZES=(-b 4 -e "$MAX_BYTES" -f 4)
# Iterations (the same rule for both sides): budget / size in [20, max]. Over TCP a small call
# takes 5-10 us, so small rows take up to 1000 calls (a few milliseconds, not one: a single stall
# of the VM's scheduling then moves a row less); a large one takes milliseconds, so the network
# configurations have a smaller budget, and they warm up with 100
# calls per row: the first calls of a new message size pay TCP's ramp-up once (a stall
# of 10-40 ms, a tail loss probe in nstat's counters; MPI_Bcast of 32 KiB after 16 KiB with the
# default warm-up of iters / 10: 127 us per call instead of 13), which lands on either side by
# the luck of the row order.
iters() {
  case "$1" in
    node) echo --budget 256M --max-iters 2000 ;;
    *) echo --budget 64M --max-iters 1000 --warmup_iters 100 ;;
  esac
}
echo "# bench/mpi_compare.sh — $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# CPU: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(mpirun --version 2>/dev/null | head -1); rounds $ROUNDS; sizes ${SIZES[*]}; fp32 sum"
echo "# settings passed to the ranks: $(pass_env | paste -sd' ')"
for c in ${CONFIGS//,/ }; do echo "# $c: $(describe "$c"); iterations $(iters "$c")"; done

FAILED=0
# run TAG command...: output into RUNS/TAG.txt; a failure is noted and the run goes on
run() {
  local tag=$1; shift
  if ! ("$@") >"$RUNS/$tag.txt" 2>&1; then
    echo "# FAILED ($(tail -1 "$RUNS/$tag.txt" | cut -c1-120)): $*" >&2
    FAILED=1
  fi
}
# rows KEY FILE: "KEY size time" for every data row of a pld-bench / mpi_bench table (first group)
rows() { awk -v k="$1" '/^ *[0-9]+ +[0-9]+ +[a-z0-9]+ / {print k, $1, $6}' "$2"; }
latency() { sed -n 's/.*notify->wait latency.*: \([0-9.]*\) us.*/\1/p' "$1"; }
: > "$RUNS/all.txt"
for ((r = 1; r <= ROUNDS; r++)); do
  for c in ${CONFIGS//,/ }; do
    read -r -a ITERS <<< "$(iters "$c")"
    for coll in ${COLLS[@]+"${COLLS[@]}"}; do
      echo "== round $r/$ROUNDS $c $coll" >&2
      tag="$c.$coll.r$r"
      run "pld.$tag" launch "$c" "$PLD_BENCH" --op "$coll" "${SIZES[@]}" "${ITERS[@]}" -d fp32 -o sum --progress never
      run "ompi.$tag" launch "$c" "$MPI_BENCH" --op "$coll" "${SIZES[@]}" "${ITERS[@]}" -d fp32 -o sum
      rows "$c $coll pld" "$RUNS/pld.$tag.txt" >> "$RUNS/all.txt"
      rows "$c $coll ref" "$RUNS/ompi.$tag.txt" >> "$RUNS/all.txt"
      if [ "$c" = node ] && [ "$coll" = broadcast ]; then  # pld's broadcast over the rule's floor
        bytes=$(rows x "$RUNS/pld.$tag.txt" | awk '$2 <= 1024 {print $2}' | paste -sd,)
        [ -n "$bytes" ] || continue
        run "floor.$tag" "$ENTRY_FLOOR" --bytes "$bytes" --shapes entered --reps 3 --iters 100000 --pin \
          -J "$RUNS/floor.$tag.json"
        rows "$c bcast/floor pld" "$RUNS/pld.$tag.txt" | awk '$4 <= 1024' >> "$RUNS/all.txt"
        sed -n 's/.*"bytes": \([0-9]*\), "time_us": \([0-9.]*\).*/\1 \2/p' "$RUNS/floor.$tag.json" |
          awk -v k="$c bcast/floor ref" '{print k, $1, $2}' >> "$RUNS/all.txt"
      fi
    done
    P2P=(--op p2p -b 8 -e 8 "${ITERS[@]}" --progress never)
    ((P2P_ROWS)) || continue
    case "$c" in
      tcp)
        echo "== round $r/$ROUNDS $c p2p" >&2
        run "pld.$c.p2p.r$r" launch "$c" "$PLD_BENCH" "${P2P[@]}"
        run "ompi.$c.pingpong.r$r" launch "$c" "$MPI_BENCH" --op pingpong -b 8 -e 8 "${ITERS[@]}" -d uint8
        rows "$c put_8B pld" "$RUNS/pld.$c.p2p.r$r.txt" >> "$RUNS/all.txt"
        rows "$c put_8B ref" "$RUNS/ompi.$c.pingpong.r$r.txt" >> "$RUNS/all.txt" ;;
      node)
        echo "== round $r/$ROUNDS $c p2p" >&2
        run "pld.$c.p2p.r$r" launch "$c" "$PLD_BENCH" "${P2P[@]}"
        run "shm.$c.p2p.r$r" timeout 600 env -u PLD_BACKEND "$PLD_BENCH" -g 2 "${P2P[@]}"
        for side in pld shm; do
          f="$RUNS/$side.$c.p2p.r$r.txt"
          rows "$c put_8B $( [ $side = pld ] && echo pld || echo ref)" "$f" >> "$RUNS/all.txt"
          t=$(latency "$f")
          [ -z "$t" ] || echo "$c notify_wait $( [ $side = pld ] && echo pld || echo ref) 0 $t" >> "$RUNS/all.txt"
        done ;;
    esac
  done
done

echo
echo "# median time per call (us) over $ROUNDS round(s); ratio = pld / reference, the median of the per-round ratios (each round"
echo "# ran both sides back to back; from the printed times, 4 decimals below 1 us); PASS when ratio <= target"
echo "# reference: Open MPI's own collective in the same configuration; put_8B: tcp — MPI ping-pong one way,"
echo "# node — the shm backend (pld-bench -g 2, no mpirun); notify_wait: node — the shm backend"
printf "%-6s %-15s %9s %12s %12s %8s %7s %s\n" config case bytes pld reference ratio target verdict
awk -v floor_target="$FLOOR_TARGET" '{k = $1" "$2" "$4; v[$3" "k] = v[$3" "k]" "$5; keys[k] = 1
      if (!(($1" "$2) in lo) || $4 + 0 < lo[$1" "$2]) lo[$1" "$2] = $4 + 0}
     function us(t) { return sprintf(t < 1 ? "%.4f" : t < 100 ? "%.3f" : "%.2f", t) }  # the digits pld-bench prints
     function med(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
                                     return n ? a[int((n + 1) / 2)] : -1 }
     # pld / reference: the median of the per-round ratios when both sides have every round, else of the medians
     function ratio_of(ps, ms,   a, b, n, i, r, p, m) { n = split(ps, a, " "); if (n != split(ms, b, " ")) n = 0
       for (i = 1; i <= n; i++) { if (a[i] <= 0 || b[i] <= 0) { n = 0; break }; r = r " " a[i] / b[i] }
       if (n) return med(r)
       p = med(ps); m = med(ms); return (p > 0 && m > 0) ? p / m : -1 }
     function target(c, what, size) {
       if (what == "put_8B") return c == "tcp" ? 1.5 : 1.3
       if (what == "notify_wait") return 1.3
       if (what == "bcast/floor") return floor_target
       if (c == "node") return 1.0
       if (c == "tcp") return 1.2
       if ((what == "allreduce" || what == "all_to_all") && (size == lo[c" "what] || size == 65536 || size == 4194304)) return 1.2
       return 0 }
     END { for (k in keys) { split(k, f, " "); p = med(v["pld " k]); m = med(v["ref " k]); t = target(f[1], f[2], f[3])
             ratio = ratio_of(v["pld " k], v["ref " k])
             verdict = t == 0 ? "-" : (ratio < 0 ? "n/a" : (ratio <= t ? "PASS" : "FAIL"))
             if (f[2] == "bcast/floor") verdict = "floor-" verdict  # judged against the rule floor, tallied apart
             printf "%-6s %-15s %9s %12s %12s %8s %7s %s\n", f[1], f[2], f[3],
                    (p < 0 ? "n/a" : us(p)), (m < 0 ? "n/a" : us(m)),
                    (ratio < 0 ? "n/a" : sprintf("%.2f", ratio)), (t == 0 ? "-" : sprintf("%.1f", t)), verdict } }' \
  "$RUNS/all.txt" | sort -k1,1 -k2,2 -k3,3n | awk -v order="$CONFIGS" '
  BEGIN { n = split(order, o, ","); for (i = 1; i <= n; i++) rank[o[i]] = i }
  { print rank[$1], $0 }' | sort -s -k1,1n | cut -d' ' -f2- | tee "$RUNS/table.txt"
echo
awk -v floor_target="$FLOOR_TARGET" '$8 == "PASS" {p++} $8 == "FAIL" {f++; failed[$1" "$2" "$3] = 1} $2 == "bcast/floor" {floor[$1" "$3] = $8}
     END {printf "# targets: %d PASS, %d FAIL\n", p, f
          for (k in failed) { split(k, a, " "); if (a[2] == "broadcast" && floor[a[1]" "a[3]] == "floor-PASS") e++ }
          if (e) printf "# of the FAILs, %d broadcast row(s) take <= %sx the entry rule'"'"'s floor (bcast/floor: a loop that\n" \
                        "# returns only after every peer entered cannot be faster; its nearest honest target)\n", e, floor_target }' \
  "$RUNS/table.txt"
echo "# every run's output: $RUNS/; $SECONDS s in all"
exit "$FAILED"
