#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test: unit tests, multi-process
# tests (forked ranks, P up to 8), tutorials at 2/3/4/8 ranks, benchmark smoke runs and the
# find_package install check. Each test has a timeout (no test can hang).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset default
cmake --build --preset default
ctest --preset default
