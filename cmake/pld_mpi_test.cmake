# pld_mpi_test(NAME name RANKS p CONFIG shm|tcp [TIMEOUT s] [EXCLUSIVE] [ENVIRONMENT vars...]
#              [PASS_REGULAR_EXPRESSION res...] [FAIL_REGULAR_EXPRESSION res...] COMMAND exe args...):
# runs `exe args...` under `mpirun -n p` on the mpi backend, as test mpi.<config>.p<p>.<name>
# (label mpi). Without the mpi backend (PLD_HAVE_MPI off) it adds nothing, so callers set every
# property through it, never with set_tests_properties on a test that may not exist.
#   shm  Open MPI's defaults on one machine: the ranks share their windows' memory (one node)
#   tcp  no shared memory anywhere: btl tcp and osc/ucx over TCP, and pld's windows not shared
#        (PLD_MPI_SHARED=0) — the path between nodes
# Open MPI refuses to run as root without the two ALLOW variables (CI containers run as root);
# --oversubscribe lets 3 and 4 ranks share the 2 cores.
# An entry takes one CTest slot: its ranks spend much of their time waiting for each other
# (yielding, polling sockets), so two entries at once keep both cores busier than one (three at
# once are no faster). EXCLUSIVE runs the entry alone, for tests that wait for deadlines on purpose.
set(PLD_MPI_CONFIG_shm "")
set(PLD_MPI_CONFIG_tcp --mca btl tcp,self --mca osc ucx -x UCX_TLS=tcp,self -x PLD_MPI_SHARED=0)
function(pld_mpi_test)
  cmake_parse_arguments(T "EXCLUSIVE" "NAME;RANKS;CONFIG;TIMEOUT"
                        "COMMAND;ENVIRONMENT;PASS_REGULAR_EXPRESSION;FAIL_REGULAR_EXPRESSION" ${ARGN})
  if(NOT PLD_HAVE_MPI)
    return()
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set(name mpi.${T_CONFIG}.p${T_RANKS}.${T_NAME})
  add_test(NAME ${name} COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${T_RANKS} --oversubscribe
                                ${PLD_MPI_CONFIG_${T_CONFIG}} ${T_COMMAND})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS mpi RUN_SERIAL ${T_EXCLUSIVE}
    ENVIRONMENT "PLD_BACKEND=mpi;PLD_WAIT_TIMEOUT=60;OMPI_ALLOW_RUN_AS_ROOT=1;OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1;${T_ENVIRONMENT}")
  # (PASS_REGULAR_EXPRESSION ignores the exit code: a test with one needs a FAIL one too.)
  if(T_PASS_REGULAR_EXPRESSION)
    set_tests_properties(${name} PROPERTIES PASS_REGULAR_EXPRESSION "${T_PASS_REGULAR_EXPRESSION}")
  endif()
  if(T_FAIL_REGULAR_EXPRESSION)
    set_tests_properties(${name} PROPERTIES FAIL_REGULAR_EXPRESSION "${T_FAIL_REGULAR_EXPRESSION}")
  endif()
endfunction()
