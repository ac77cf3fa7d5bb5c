#!/usr/bin/env bash
# Installs what is missing, then builds and tests pld in its two configurations, warnings as
# errors, every test with a timeout (no test can hang):
#   ci     (build-ci)    with the mpi backend when Open MPI is installed: the tests under mpirun
#                        (label mpi), the benchmark smoke runs (bench), the find_package install
#                        check and the docs check;
#   nompi  (build-nompi) without MPI (PLD_WITH_MPI=OFF): the library, unit tests, multi-process
#                        tests (forked ranks, P up to 8), the tutorials at 2/3/4/8 ranks, the
#                        install and docs checks.
# Together they run every test once, and the quick subset runs on both; the nompi build's
# multi-process tests and tutorials run a second time with the race detector on (PLD_DEBUG=race). ccache (when installed) lets the second build reuse the
# first one's test and tutorial objects.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
if command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
fi
for preset in ci nompi; do
  cmake --preset "$preset"
  cmake --build --preset "$preset"
  ctest --preset "$preset"
done
# The quick subset once more on the ci build: the shm path of a library that also carries MPI.
ctest --preset ci-quick
# The multi-process tests and the tutorials with the race detector on: correct programs report nothing.
ctest --preset race
