#!/usr/bin/env bash
# pld's main job: install what is missing, build, and run the quickstart — a 4-rank allreduce
# written with notify/wait/remote_load on the embedded shm backend (no launcher, no setup).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset default >/dev/null
cmake --build --preset default --target quickstart
./build/examples/quickstart
