#!/usr/bin/env bash
# Fact 4: compare_and_swap / fetch_and_op / accumulate correctness per osc configuration, each
# test in its own job (a crash names the test). Usage: bench/mpi-probe/run_atomics.sh [BUILD_DIR] [NP]
set -u
B=${1:-/tmp/mpi-probe}
NP=${2:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
configs=(
  "default|multiple|"
  "osc-sm|multiple|--mca osc sm"
  "osc-ucx|multiple|--mca osc ucx"
  "osc-ucx-tcp|multiple|--mca btl tcp,self --mca osc ucx -x UCX_TLS=tcp,self"
  "osc-pt2pt-tcp|single|--mca btl tcp,self --mca osc pt2pt"
)
for c in "${configs[@]}"; do
  IFS='|' read -r label thread args <<<"$c"
  for t in fop32 cas32 cas64 float int8 int16 int32 bf16 lock16; do
    # shellcheck disable=SC2086
    out=$(timeout 120 mpirun -n "$NP" --oversubscribe $args "$B/atomics" --only $t --reps ${REPS:-100} --thread "$thread" 2>&1)
    rc=$?
    line=$(grep -E "^  " <<<"$out" | head -1)
    [ -z "$line" ] && line="  $t: CRASH rc=$rc $(grep -E 'Signal:|\[ [1-3]\]|MPI_ERR' <<<"$out" | head -3 | sed -E 's/^\[vm:[0-9]+\] //' | tr '\n' ' ')"
    printf '%-14s n=%s %s\n' "$label" "$NP" "$line"
  done
done
