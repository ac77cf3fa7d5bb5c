#!/usr/bin/env bash
# bench/mpi_backend.sh — pld's mpi backend next to its shm backend and next to Open MPI's own
# collectives, in ONE run (docs/performance.md, "The mpi backend").
#
#   bench/mpi_backend.sh              # P=2 and P=4, 3 interleaved rounds, ~5 min
#   bench/mpi_backend.sh --rounds 1   # quicker
#
# For every round, P and collective (allreduce, allgather; fp32; 64 KiB .. 16 MiB, x4), one after
# the other on the same sizes:
#   shm  pld-bench -g P                                   (forked ranks, direct schedules)
#   mpi  mpirun -n P pld-bench                            (pld's mpi backend: RMA schedules)
#   ompi mpirun -n P mpi_bench                            (MPI_Allreduce / MPI_Allgather)
# all three on Open MPI's one-machine transports (osc/rdma and btl/vader over shared memory). Then
# the notify->wait latency of both backends (pld-bench --op p2p, P=2). Prints per size the median
# time of each and the ratio mpi / ompi (target: <= 2 from 64 KiB up).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT="$ROOT/build-compare"
ROUNDS=3
while (($#)); do
  case "$1" in
    --rounds) ROUNDS="$2"; shift ;;
    --out) OUT="$2"; shift ;;
    -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "mpi_backend.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$OUT/mpi-backend"
OUT=$(cd "$OUT" && pwd)
RUNS="$OUT/mpi-backend"

echo "== building pld-bench (with the mpi backend) and mpi_bench into $OUT" >&2
cmake -S "$ROOT" -B "$OUT/pld" -DCMAKE_BUILD_TYPE=Release -DPLD_BUILD_TESTS=OFF -DPLD_BUILD_EXAMPLES=OFF \
  -DPLD_BUILD_BENCH=OFF -DPLD_WITH_MPI=ON >"$OUT/build.log" 2>&1 || { cat "$OUT/build.log" >&2; exit 2; }
cmake --build "$OUT/pld" --target pld-bench -j "$(nproc)" >>"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log" >&2; exit 2; }
PLD_BENCH="$OUT/pld/tools/pld-bench/pld-bench"
mpicxx -O3 -std=c++20 -DOMPI_SKIP_MPICXX "$ROOT/bench/mpi/mpi_bench.cpp" -o "$OUT/mpi_bench"

if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
MPIRUN=(mpirun --oversubscribe --mca btl self,vader)
SIZES=(-b 64K -e 16M -f 4)
ITERS=(--budget 512M --max-iters 2000)

echo "# bench/mpi_backend.sh — $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# $(mpirun --version 2>/dev/null | head -1); rounds $ROUNDS; sizes ${SIZES[*]}; fp32 sum"
# rows NAME FILE: "size time" for every data row of a pld-bench / mpi_bench table
rows() { awk '/^ *[0-9]+ +[0-9]+ +[a-z0-9]+ / {print $1, $6}' "$2" | sed "s/^/$1 /"; }
: > "$RUNS/all.txt"
for ((r = 1; r <= ROUNDS; r++)); do
  for np in 2 4; do
    for coll in allreduce allgather; do
      echo "== round $r/$ROUNDS P=$np $coll" >&2
      tag="$coll.p$np.r$r"
      "$PLD_BENCH" --op "$coll" -g "$np" "${SIZES[@]}" "${ITERS[@]}" --progress never > "$RUNS/shm.$tag.txt" 2>&1 || true
      "${MPIRUN[@]}" -n "$np" "$PLD_BENCH" --op "$coll" "${SIZES[@]}" "${ITERS[@]}" --progress never \
        > "$RUNS/mpi.$tag.txt" 2>&1 || true
      "${MPIRUN[@]}" -n "$np" "$OUT/mpi_bench" --op "$coll" "${SIZES[@]}" "${ITERS[@]}" > "$RUNS/ompi.$tag.txt" 2>&1 || true
      for side in shm mpi ompi; do rows "$side $coll $np" "$RUNS/$side.$tag.txt" >> "$RUNS/all.txt"; done
    done
  done
done

echo
echo "# median time per call (us) over $ROUNDS rounds; mpi/ompi = pld's mpi backend over Open MPI's collective"
printf "%-10s %3s %10s %10s %10s %10s %9s %9s\n" coll P bytes shm mpi ompi mpi/ompi mpi/shm
awk '{k=$2" "$3" "$4; v[$1" "k]=v[$1" "k]" "$5; keys[k]=1}
     function med(s,   a, n, i, j, t) { n = split(s, a, " "); for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
                                     return n ? a[int((n + 1) / 2)] : 0 }
     END { for (k in keys) { s = med(v["shm " k]); m = med(v["mpi " k]); o = med(v["ompi " k]); split(k, f, " ")
             printf "%-10s %3s %10s %10.1f %10.1f %10.1f %9.2f %9.2f\n", f[1], f[2], f[3], s, m, o, (o > 0 ? m / o : 0), (s > 0 ? m / s : 0) } }' \
  "$RUNS/all.txt" | sort -k1,1 -k2,2n -k3,3n

echo
echo "# notify->wait latency and put/get bandwidth (pld-bench --op p2p, P=2)"
echo "## shm backend"
"$PLD_BENCH" --op p2p -g 2 -b 8 -e 1M -f 32 --progress never 2>&1 | grep -E '^ +[0-9]|latency|backend' || true
echo "## mpi backend (osc/rdma over shared memory)"
"${MPIRUN[@]}" -n 2 "$PLD_BENCH" --op p2p -b 8 -e 1M -f 32 --progress never 2>&1 | grep -E '^ +[0-9]|latency|backend' || true
echo "## mpi backend over TCP (osc/ucx, btl tcp)"
mpirun --oversubscribe --mca btl tcp,self --mca osc ucx -x UCX_TLS=tcp,self -n 2 "$PLD_BENCH" --op p2p -b 8 -e 1M -f 32 \
  --progress never 2>&1 | grep -E '^ +[0-9]|latency|backend' || true
