#!/usr/bin/env bash
# Quick start, command 1: install what is missing, build, and run the main
# job -- the oversell demo on an embedded SQLite file.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_packages "${BUILD_PACKAGES[@]}"
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release \
      -DSQLLOCK_BUILD_TESTS=OFF >/dev/null
cmake --build build/release -j"$(nproc)" >/dev/null
echo "== built build/release/tools/sqllock; running the demo"
exec build/release/tools/sqllock demo "$@"
