#!/usr/bin/env bash
# Formats every C++ file of the project with clang-format (.clang-format); the CTest format.check
# (part of the test command) fails on a file that differs.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cmake -DROOT="$PWD" -DCLANG_FORMAT="${CLANG_FORMAT:-clang-format}" -DFIX=ON -P cmake/clang_format.cmake
