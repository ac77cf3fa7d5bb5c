#!/usr/bin/env bash
# Fact 5: the environment variables a process started by mpirun sees (BackendKind::Auto).
# Usage: bench/mpi-probe/env_probe.sh   (runs itself under mpirun -n 2)
if [ -z "${OMPI_COMM_WORLD_RANK:-}${PMIX_RANK:-}" ] && [ "${1:-}" != --inner ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  echo "# outside mpirun:"; env | grep -E '^(OMPI_COMM_WORLD|PMIX_RANK|PMIX_NAMESPACE|OMPI_MCA_ess|PMI_RANK|PMI_SIZE)' | sort || true
  echo "# (nothing above = not set)"
  exec mpirun -n 2 --oversubscribe "$0" --inner
fi
echo "# rank ${OMPI_COMM_WORLD_RANK:-?}:"
env | grep -E '^(OMPI_COMM_WORLD_|OMPI_UNIVERSE_SIZE|PMIX_RANK|PMIX_NAMESPACE|PMIX_SERVER_URI|OMPI_MCA_ess|OMPI_MCA_orte_ess_num_procs|OMPI_APP_CTX_NUM_PROCS|OMPI_FIRST_RANKS|PMI_)' | sed 's/=.*PMIX_SERVER_URI.*//' | sort | sed 's/^/  /'
