#!/bin/sh
# Runs the Go binding's whole suite -- the unit tests (module mode) and
# the guard tests through database/sql (GOPATH mode over Debian's
# /usr/share/gocode) -- with the race detector, offline, against the
# database in SQLLOCK_TEST_URL (a temporary SQLite file when unset).
#
#   bindings/go/run_tests.sh [--build-only] BUILD_DIR
#
# BUILD_DIR keeps the Go build cache and GOPATH, so that later runs reuse
# the -race compile; --build-only fills that cache (both test binaries
# compiled, nothing run: the build's sqllock_go_interop target does it,
# so that the ctest entries start warm). PKG_CONFIG_PATH must find
# sqllock.pc (or the build tree's sqllock-uninstalled.pc). Exits non-zero
# on any failure.
set -eu
build_only=
if [ "${1:-}" = --build-only ]; then
    build_only=1
    shift
fi
if [ $# -ne 1 ]; then
    echo "usage: $0 [--build-only] BUILD_DIR" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
build=$(cd "$1" && pwd)
if ! pkg-config --exists sqllock; then
    echo "$0: pkg-config cannot find sqllock: set PKG_CONFIG_PATH to the" \
         "directory of sqllock.pc or sqllock-uninstalled.pc" >&2
    exit 1
fi
export GOCACHE="$build/gocache" GOPROXY=off GOFLAGS= GOENV=off GOTOOLCHAIN=local
export CGO_ENABLED=1
# The guard tests build in GOPATH mode, the binding linked in as
# sqllock.dev/sqllock. Several runs (one per database) may start at once:
# make the link once.
mkdir -p "$build/gopath/src/sqllock.dev"
[ -L "$build/gopath/src/sqllock.dev/sqllock" ] ||
    ln -s "$here" "$build/gopath/src/sqllock.dev/sqllock" 2>/dev/null || true

unit() {
    (cd "$here" && GO111MODULE=on GOPATH="$build/gopath-mod" go test -race "$@")
}
guard() {
    (cd "$build/gopath/src/sqllock.dev/sqllock" && GO111MODULE=off \
        GOPATH="$build/gopath:/usr/share/gocode" \
        go test -race -tags sqllock_guard "$@" sqllock.dev/sqllock/guardtest)
}

if [ -n "$build_only" ]; then
    unit -c -o "$build/unit.test" .
    guard -c -o "$build/guard.test"
    exit 0
fi
# The test binaries --build-only compiled, when no source of the binding
# is newer: `go test` would link them again (its cache keeps the
# packages, not the linked binaries), a -race link of the guard's with
# pgx taking most of a minute of CPU per run on a loaded machine.
fresh() {
    [ -x "$1" ] && [ -z "$(find "$here" -newer "$1" \( -name '*.go' \
        -o -name '*.c' -o -name '*.h' -o -name go.mod \) -print | head -n 1)" ]
}
echo "== go unit tests (module sqllock.dev/sqllock, -race)"
if fresh "$build/unit.test"; then
    (cd "$here" && "$build/unit.test" -test.count=1)
else
    unit -count=1 ./...
fi
echo "== go guard tests (database/sql: pgx, go-sql-driver/mysql, go-sqlite3; -race)"
if fresh "$build/guard.test"; then
    (cd "$here/guardtest" && "$build/guard.test" -test.count=1)
else
    guard -count=1
fi
echo "== go: all passed"
