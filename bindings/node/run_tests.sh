#!/bin/sh
# The Node.js binding's test suite, for ctest (one entry per database):
#   SQLLOCK_LIB_DIR=build SQLLOCK_TEST_URL=postgres://... \
#       sh bindings/node/run_tests.sh BUILD_DIR
# builds the addon into BUILD_DIR (build.sh), installs the test
# dependencies (pg, mysql2) from package-lock.json with `npm ci` into
# BUILD_DIR/npm (once; again when the lock file changes), and runs
# `node --test` on test/*.test.js against $SQLLOCK_TEST_URL (a temporary
# SQLite file when unset). Exit status: node's (non-zero on a failure).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: run_tests.sh BUILD_DIR}
mkdir -p "$build/npm"
build=$(cd "$build" && pwd)

if [ -n "${SQLLOCK_NODE_ADDON:-}" ] && [ -f "$SQLLOCK_NODE_ADDON" ]; then
  : # built by CMake (target sqllock_node)
else
  sh "$here/build.sh" "$build"
  SQLLOCK_NODE_ADDON=$build/sqllock.node
fi
export SQLLOCK_NODE_ADDON

# Under a lock: the entries of several databases may share BUILD_DIR and
# run at once.
install_deps() {
  if ! cmp -s "$here/package-lock.json" "$build/npm/package-lock.json" ||
     [ ! -d "$build/npm/node_modules/pg" ] || [ ! -d "$build/npm/node_modules/mysql2" ]; then
    cp "$here/package.json" "$here/package-lock.json" "$build/npm/"
    (cd "$build/npm" && npm ci --prefer-offline --no-audit --no-fund \
       --ignore-scripts --loglevel=error) >&2
  fi
}
if command -v flock >/dev/null 2>&1; then
  exec 9>"$build/npm.lock"
  flock 9
  install_deps
  flock -u 9
else
  install_deps
fi
export NODE_PATH="$build/npm/node_modules"

cd "$here"
exec node --test --test-concurrency=2 test/*.test.js
