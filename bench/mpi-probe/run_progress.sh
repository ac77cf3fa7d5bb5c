#!/usr/bin/env bash
# Facts 2 and 3: notify visibility per osc configuration and waiter polling mode, latency, and
# the payload check after the notify. Usage: bench/mpi-probe/run_progress.sh [BUILD_DIR] [NP]
set -u
B=${1:-/tmp/mpi-probe}
NP=${2:-2}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
configs=(
  "default|multiple|"
  "osc-sm|multiple|--mca osc sm"
  "osc-ucx|multiple|--mca osc ucx"
  "osc-ucx-tcp|multiple|--mca btl tcp,self --mca osc ucx -x UCX_TLS=tcp,self"
  "osc-pt2pt|single|--mca osc pt2pt"
  "osc-pt2pt-tcp|single|--mca btl tcp,self --mca osc pt2pt"
)
for c in "${configs[@]}"; do
  IFS='|' read -r label thread args <<<"$c"
  for poll in load winsync iprobe flushlocal test; do
    for how in acc fop; do
      [ "$how" = fop ] && [ "$poll" != load ] && [ "$poll" != iprobe ] && continue
      # shellcheck disable=SC2086
      line=$(timeout 60 mpirun -n "$NP" --oversubscribe $args "$B/notify_wait" --poll $poll --notify $how \
               --iters ${ITERS:-1000} --bytes ${BYTES:-4096} --timeout 2 --thread "$thread" 2>&1 | grep -E "OK|HANG" | head -1)
      printf '%-14s %s\n' "$label" "${line:-FAIL}"
    done
  done
done
