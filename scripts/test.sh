#!/usr/bin/env bash
# Quick start, command 2: the whole test suite.
#
# Installs what it needs, then builds and runs every test three times --
# plain, under AddressSanitizer + UndefinedBehaviorSanitizer, and the
# threaded tests under ThreadSanitizer -- and runs the plain test binaries
# under valgrind. Any failure stops it with a non-zero exit.
#
# Environment:
#   SQLLOCK_TEST_URLS     space-separated database URLs to run the lock tests
#                         on (default: a temporary SQLite file per test)
#   SQLLOCK_TEST_REQUIRE  drivers that must be among them (a missing one fails)
#   SQLLOCK_TEST_QUICK=1  only the plain build (for a fast local check)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_packages "${BUILD_PACKAGES[@]}" libcmocka-dev valgrind

export SQLLOCK_TEST_REQUIRE="${SQLLOCK_TEST_REQUIRE:-sqlite}"
jobs="$(nproc)"
start=$(date +%s)

build() {   # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
}

echo "== plain build"
build build/test
(cd build/test && ctest --output-on-failure --no-tests=error -j1)

echo "== install, then build a consumer with find_package(sqllock) and pkg-config"
pkgdir=$(mktemp -d)
trap 'rm -rf "$pkgdir"' EXIT
cmake --install build/test --prefix "$pkgdir/prefix" >/dev/null
cmake -S tests/package -B "$pkgdir/build" -DCMAKE_PREFIX_PATH="$pkgdir/prefix" >/dev/null
cmake --build "$pkgdir/build" >/dev/null
LD_LIBRARY_PATH="$pkgdir/prefix/lib" "$pkgdir/build/consumer_shared" "sqlite://$pkgdir/a.db" >/dev/null
"$pkgdir/build/consumer_static" "sqlite://$pkgdir/a.db" >/dev/null
export PKG_CONFIG_PATH="$pkgdir/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc examples/lease.c $(pkg-config --cflags --libs sqllock) -o "$pkgdir/consumer_pc"
LD_LIBRARY_PATH="$pkgdir/prefix/lib" "$pkgdir/consumer_pc" "sqlite://$pkgdir/a.db" >/dev/null
unset PKG_CONFIG_PATH
echo "package: CMake (shared, static) and pkg-config consumers built and ran"

if [ "${SQLLOCK_TEST_QUICK:-0}" != 1 ]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer"
  build build/asan -DSQLLOCK_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug
  (cd build/asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     ctest --output-on-failure --no-tests=error -j1)

  echo "== ThreadSanitizer"
  build build/tsan -DSQLLOCK_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug
  (cd build/tsan && TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
     ctest --output-on-failure --no-tests=error -j1)

  echo "== valgrind --leak-check=full on the plain test binaries"
  for t in build/test/tests/test_*; do
    [ -x "$t" ] || continue
    log="build/test/valgrind-$(basename "$t").log"; rm -f "$log".*
    if valgrind --leak-check=full --show-leak-kinds=definite,indirect,possible \
         --errors-for-leak-kinds=definite,indirect,possible \
         --error-exitcode=99 --log-file="$log.%p" "$t" >/dev/null 2>&1; then
      echo "valgrind: $(basename "$t"): no errors, no leaks"
    else
      echo "valgrind: $(basename "$t") FAILED"; cat "$log".*; exit 1
    fi
  done
fi

echo "== all tests passed in $(( $(date +%s) - start )) s"
