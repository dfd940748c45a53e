#!/bin/sh
# tests/hostile_session.sh [--serializable] TEST [ARGS...] -- runs a
# driver-neutral test on the servers of scripts/hostile.sh, whose session
# defaults are the worst a user could set (issue 26, DESIGN D5):
# SQLLOCK_TEST_URLS becomes their URLs, read from
# $SQLLOCK_TEST_HOSTILE_DIR/hostile.env -- PostgreSQL in repeatable read
# and MariaDB in serializable, each with the rest of its hostile
# defaults; with --serializable, PostgreSQL as the role whose default is
# serializable as well. ctest runs it as test_<unit>_<driver>_hostile
# (tests/CMakeLists.txt), whose SQLLOCK_TEST_DRIVER picks the driver.
# Without those servers it skips (exit 77, which ctest shows as skipped),
# and fails under CI (scripts/ci.sh's is_ci).
. "$(dirname "$0")/../scripts/ci.sh"
ser=0
if [ "${1:-}" = --serializable ]; then
  ser=1
  shift
fi
envfile=${SQLLOCK_TEST_HOSTILE_DIR:+$SQLLOCK_TEST_HOSTILE_DIR/hostile.env}
if [ -z "$envfile" ] || [ ! -f "$envfile" ]; then
  skip_or_fail hostile "no hostile-session servers (SQLLOCK_TEST_HOSTILE_DIR; scripts/hostile.sh starts them)"
fi
get() { sed -n "s/^$1='\(.*\)'$/\1/p" "$envfile"; }
urls=$(get SQLLOCK_TEST_HOSTILE_URLS)
if [ "$ser" = 1 ]; then
  urls="$urls $(get SQLLOCK_TEST_HOSTILE_SER_URLS)"
fi
# The admin access some tests use (the superuser on the unix socket) is
# the hostile servers' own.
SQLLOCK_TEST_PG_ADMIN=$(get SQLLOCK_TEST_HOSTILE_PG_ADMIN)
SQLLOCK_TEST_MYSQL_ADMIN=$(get SQLLOCK_TEST_HOSTILE_MYSQL_ADMIN)
export SQLLOCK_TEST_PG_ADMIN SQLLOCK_TEST_MYSQL_ADMIN
SQLLOCK_TEST_URLS=$urls exec "$@"
