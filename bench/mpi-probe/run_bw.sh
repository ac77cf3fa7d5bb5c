#!/usr/bin/env bash
# Fact 7: put/get bandwidth and RMA-built allreduce/allgather next to Open MPI's collectives.
# Usage: bench/mpi-probe/run_bw.sh [BUILD_DIR] [NP]
set -u
B=${1:-/tmp/mpi-probe}
NP=${2:-2}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun -n $NP --oversubscribe"
echo "## default (osc rdma over btl vader)"; timeout 300 $M "$B/bw" --reps ${REPS:-10}
echo "## --mca osc sm"; timeout 300 $M --mca osc sm "$B/bw" --reps ${REPS:-10}
echo "## TCP only: --mca btl tcp,self --mca osc ucx -x UCX_TLS=tcp,self"
timeout 600 $M --mca btl tcp,self --mca osc ucx -x UCX_TLS=tcp,self "$B/bw" --reps 3 --max 4194304
echo "## TCP only: --mca btl tcp,self --mca osc pt2pt (MPI_THREAD_SERIALIZED)"
timeout 600 $M --mca btl tcp,self --mca osc pt2pt "$B/bw" --reps 3 --max 4194304 --thread serialized
