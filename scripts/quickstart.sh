#!/usr/bin/env bash
# pld's main job: install what is missing, build, and run the quickstart — a 4-rank allreduce
# written with notify/wait/remote_load on the embedded shm backend (no launcher, no setup) — in
# C++, then the same program in Python (examples/python/quickstart.py).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target quickstart
./build/examples/quickstart

# The Python package is built when CMake found Python with NumPy, its headers and pybind11
# (scripts/deps.sh installs them); run the Python quickstart with the interpreter it was built for.
targets=$(cmake --build --preset default --target help)
if ! grep -q '_pld' <<<"$targets"; then
  echo "quickstart: the pld Python package is not built (see the CMake output); skipping the Python quickstart" >&2
  exit 0
fi
python=$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' build/CMakeCache.txt)
cmake --build --preset default --target _pld
PYTHONPATH=build/python "$python" examples/python/quickstart.py
