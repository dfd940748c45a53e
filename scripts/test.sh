#!/usr/bin/env bash
# Quick start, command 2: the whole test suite, on SQLite, PostgreSQL and
# MySQL/MariaDB.
#
# Installs what it needs (apt-get, only what is missing), starts a
# throwaway PostgreSQL and MariaDB on loopback with scripts/servers.sh in a
# temporary directory (stopped again on exit, also when a test fails), then
# builds and runs every test three times -- plain, under AddressSanitizer +
# UndefinedBehaviorSanitizer, and under ThreadSanitizer -- checks that a
# consumer builds against the installed package, and runs every plain test
# binary under valgrind. Every one of those runs covers all three
# databases. Any failure stops it with a non-zero exit; at the end it
# prints `drivers tested: ...`, the drivers whose tests really ran.
#
# Environment:
#   SQLLOCK_TEST_PG_URL     a PostgreSQL of your own, e.g.
#                           postgres://u:pw@host:5432/db
#   SQLLOCK_TEST_MYSQL_URL  a MySQL/MariaDB of your own, e.g.
#                           mysql://u:pw@host:3306/db
#                           With either set, no servers are started and only
#                           the URLs given are tested. The user needs CREATE
#                           on its database (for sqllock_init); for the
#                           missing-schema tests also a schema (PostgreSQL)
#                           or database (MySQL) `sqllock_empty` it may drop
#                           and create -- without it those tests skip.
#   SQLLOCK_TEST_URLS       the full, space-separated URL list, overriding
#                           all of the above (no servers are started)
#   SQLLOCK_TEST_REQUIRE    comma-separated drivers that must be tested
#                           (default: every driver with a URL); a required
#                           driver that did not run fails the run
#   CI=true                 sqlite,postgres,mysql are always required
#   SQLLOCK_TEST_QUICK=1    only the plain build and the package check
#   SQLLOCK_PG_PORT, SQLLOCK_MY_PORT
#                           ports for the servers started here (default:
#                           free ports picked at random); a taken port fails
#   SQLLOCK_TEST_SERVERS_DIR, SQLLOCK_TEST_SERVERS_SCRIPT
#                           set by this script (any value you had is
#                           dropped) for test_restart, which crashes and
#                           restarts the servers this script started; with
#                           your own servers test_restart skips (and fails
#                           under CI=true)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. scripts/lib.sh
ensure_packages "${BUILD_PACKAGES[@]}" libcmocka-dev valgrind faketime \
  postgresql mariadb-server libpq-dev default-libmysqlclient-dev

jobs="$(nproc)"
start=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/sqllock-test.XXXXXX")
chmod 755 "$work"
srv=""

cleanup() {
  local rc=$?
  if [ -n "$srv" ]; then
    scripts/servers.sh stop "$srv" || true
    echo "servers stopped"
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------------
# The databases
# ------------------------------------------------------------------

# The mysql driver is built only when its source is there.
cmake_driver_args=()
have_mysql=1
if [ ! -f drivers/mysql/mysql.c ]; then
  have_mysql=0
  cmake_driver_args+=(-DSQLLOCK_WITH_MYSQL=OFF)
  echo "WARNING: drivers/mysql/mysql.c does not exist: the mysql driver is not built or tested" >&2
fi

# test_restart crashes the servers in SQLLOCK_TEST_SERVERS_DIR: only ever
# the ones started below, never servers that someone else may be using.
unset SQLLOCK_TEST_SERVERS_DIR SQLLOCK_TEST_SERVERS_SCRIPT
if [ -n "${SQLLOCK_TEST_URLS:-}" ]; then
  echo "== testing the URLs in SQLLOCK_TEST_URLS (no servers started)"
elif [ -n "${SQLLOCK_TEST_PG_URL:-}" ] || [ -n "${SQLLOCK_TEST_MYSQL_URL:-}" ]; then
  echo "== testing your own servers (SQLLOCK_TEST_PG_URL / SQLLOCK_TEST_MYSQL_URL; none started)"
  SQLLOCK_TEST_URLS="sqlite://$work/locks.db ${SQLLOCK_TEST_PG_URL:-}"
  if [ "$have_mysql" = 1 ]; then
    SQLLOCK_TEST_URLS="$SQLLOCK_TEST_URLS ${SQLLOCK_TEST_MYSQL_URL:-}"
  fi
else
  echo "== starting PostgreSQL and MariaDB in $work/srv"
  pg_port=$(pick_port SQLLOCK_PG_PORT)
  my_port=$(pick_port SQLLOCK_MY_PORT)
  while [ "$my_port" = "$pg_port" ]; do my_port=$(pick_port SQLLOCK_MY_PORT); done
  srv="$work/srv"
  SQLLOCK_PG_PORT=$pg_port SQLLOCK_MY_PORT=$my_port scripts/servers.sh start "$srv"
  # shellcheck disable=SC1091
  . "$srv/env"
  export SQLLOCK_TEST_PG_URL SQLLOCK_TEST_MYSQL_URL SQLLOCK_TEST_PG_ADMIN \
         SQLLOCK_TEST_MYSQL_ADMIN SQLLOCK_TEST_SERVERS_DIR
  export SQLLOCK_TEST_SERVERS_SCRIPT="$root/scripts/servers.sh"
  SQLLOCK_TEST_URLS="sqlite://$work/locks.db $SQLLOCK_TEST_PG_URL"
  if [ "$have_mysql" = 1 ]; then
    SQLLOCK_TEST_URLS="$SQLLOCK_TEST_URLS $SQLLOCK_TEST_MYSQL_URL"
  fi
fi
export SQLLOCK_TEST_URLS

driver_of() {
  case "$1" in
    sqlite:*) echo sqlite ;;
    postgres:*|postgresql:*) echo postgres ;;
    mysql:*|mariadb:*) echo mysql ;;
    *) echo unknown ;;
  esac
}
with_urls=""
for u in $SQLLOCK_TEST_URLS; do with_urls="$with_urls $(driver_of "$u")"; done
if [ -z "${SQLLOCK_TEST_REQUIRE:-}" ]; then
  SQLLOCK_TEST_REQUIRE=$(echo $with_urls | tr ' ' '\n' | sort -u | paste -sd, -)
fi
if [ "${CI:-}" = true ]; then
  SQLLOCK_TEST_REQUIRE="$SQLLOCK_TEST_REQUIRE,sqlite,postgres,mysql"
fi
SQLLOCK_TEST_REQUIRE=$(echo "$SQLLOCK_TEST_REQUIRE" | tr ', ' '\n\n' | grep -v '^$' | sort -u | paste -sd, -)
export SQLLOCK_TEST_REQUIRE
echo "required drivers: $SQLLOCK_TEST_REQUIRE"
for d in ${SQLLOCK_TEST_REQUIRE//,/ }; do
  case " $with_urls " in
    *" $d "*) ;;
    *) echo "FAIL: driver $d is required (SQLLOCK_TEST_REQUIRE${CI:+, CI=$CI}) but has no URL to test" >&2; exit 1 ;;
  esac
done

# check_report FILE LABEL: every required driver passed the
# driver-neutral tests (test_conformance writes FILE through
# SQLLOCK_TEST_REPORT); prints which drivers were tested.
check_report() {
  local file=$1 label=$2 tested d
  tested=$(awk '$1 == "conformance" { print $2 }' "$file" 2>/dev/null | sort -u | paste -sd' ' -)
  for d in ${SQLLOCK_TEST_REQUIRE//,/ }; do
    case " $tested " in
      *" $d "*) ;;
      *) echo "FAIL ($label): required driver $d was not tested (tested: ${tested:-none})" >&2; exit 1 ;;
    esac
  done
  echo "drivers tested ($label): $tested"
  last_tested=$tested
}

build() {   # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cmake_driver_args[@]}" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
}

run_ctest() {   # run_ctest DIR LABEL: ctest in DIR, then the driver check
  local dir=$1 label=$2
  export SQLLOCK_TEST_REPORT="$work/report-$label"
  rm -f "$SQLLOCK_TEST_REPORT"
  (cd "$dir" && ctest --output-on-failure --no-tests=error -j1)
  check_report "$SQLLOCK_TEST_REPORT" "$label"
}

echo "== plain build"
build build/test
run_ctest build/test plain

if [ -n "${SQLLOCK_TEST_PG_URL:-}" ] && [ -x build/test/examples/example_order_flow ]; then
  echo "== examples/order_flow.c: 6 copies at once pay order 1 exactly once"
  flow_out="$work/order_flow.out"
  : > "$flow_out"
  build/test/examples/example_order_flow "$SQLLOCK_TEST_PG_URL" --reset
  for _ in 1 2 3 4 5 6; do
    build/test/examples/example_order_flow "$SQLLOCK_TEST_PG_URL" >> "$flow_out" &
  done
  wait
  paid=$(grep -c "^order 1 paid$" "$flow_out" || true)
  if [ "$paid" != 1 ]; then
    echo "order flow: order 1 was paid $paid times"; cat "$flow_out"; exit 1
  fi
  echo "order flow: paid once, $(grep -c "already paid" "$flow_out") copies found it paid"
fi

echo "== install, then build a consumer with find_package(sqllock) and pkg-config"
pkgdir="$work/pkg"
mkdir -p "$pkgdir"
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
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest build/asan asan

  echo "== ThreadSanitizer"
  build build/tsan -DSQLLOCK_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    run_ctest build/tsan tsan

  echo "== valgrind --leak-check=full on the plain test binaries"
  export SQLLOCK_TEST_REPORT="$work/report-valgrind"
  rm -f "$SQLLOCK_TEST_REPORT"
  for t in build/test/tests/test_*; do
    [ -x "$t" ] || continue
    log="build/test/valgrind-$(basename "$t").log"; rm -f "$log".*
    if valgrind --leak-check=full --show-leak-kinds=definite,indirect,possible \
         --errors-for-leak-kinds=definite,indirect,possible \
         --error-exitcode=99 --log-file="$log.%p" "$t" >"$log.out" 2>&1; then
      echo "valgrind: $(basename "$t"): no errors, no leaks"
    else
      echo "valgrind: $(basename "$t") FAILED"; cat "$log".*; exit 1
    fi
  done
  check_report "$SQLLOCK_TEST_REPORT" valgrind
fi

echo "drivers tested: $last_tested"
echo "== all tests passed in $(( $(date +%s) - start )) s"
