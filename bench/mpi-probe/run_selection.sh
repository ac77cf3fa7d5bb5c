#!/usr/bin/env bash
# Which osc component MPI_Win_allocate on MPI_COMM_WORLD gets, per configuration and P.
# Usage: bench/mpi-probe/run_selection.sh [BUILD_DIR]   (fact 1 of README.md)
set -u
B=${1:-/tmp/mpi-probe}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
run() {  # label, np, thread, mpirun args...
  local label=$1 np=$2 thread=$3; shift 3
  local out
  out=$(timeout 40 mpirun -n "$np" --oversubscribe "$@" "$B/notify_wait" --poll iprobe --iters 20 --thread "$thread" 2>&1)
  local rc=$?
  local line
  line=$(grep -E "OK|HANG" <<<"$out" | head -1)
  [ -z "$line" ] && line="FAIL rc=$rc: $(grep -E 'MPI_ERR|not support|No component|Signal:|error' <<<"$out" | head -2 | tr '\n' ' ')"
  printf '%-52s n=%d thread=%-8s %s\n' "$label" "$np" "$thread" "$(sed -E 's/^n=[0-9]+ thread=[0-9]+ //' <<<"$line")"
}
for np in 2 3 4; do run "default" $np multiple; done
run "default" 2 single
run "--mca btl tcp,self" 2 multiple --mca btl tcp,self
run "--mca btl tcp,self --mca osc ^sm" 2 multiple --mca btl tcp,self --mca osc ^sm
run "--mca osc sm" 2 multiple --mca osc sm
run "--mca osc rdma" 2 multiple --mca osc rdma
run "--mca osc rdma --mca btl tcp,self" 2 multiple --mca osc rdma --mca btl tcp,self
run "--mca osc rdma --mca btl tcp,self" 2 single --mca osc rdma --mca btl tcp,self
run "--mca osc pt2pt" 2 multiple --mca osc pt2pt
run "--mca osc pt2pt" 2 single --mca osc pt2pt
run "--mca osc pt2pt --mca btl tcp,self" 2 single --mca osc pt2pt --mca btl tcp,self
run "--mca osc pt2pt --mca btl tcp,self" 3 single --mca osc pt2pt --mca btl tcp,self
run "--mca osc ucx" 2 multiple --mca osc ucx
run "--mca btl tcp,self --mca osc ucx -x UCX_TLS=tcp,self" 2 multiple --mca btl tcp,self --mca osc ucx -x UCX_TLS=tcp,self
run "--mca btl tcp,self --mca osc ucx -x UCX_TLS=tcp,self" 4 multiple --mca btl tcp,self --mca osc ucx -x UCX_TLS=tcp,self
