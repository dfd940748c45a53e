# shellcheck shell=bash
# tests/checks/common.sh -- what the checks of tests/checks share (sourced
# by each): they test the built `sqllock` tool and programs against the
# servers of scripts/servers.sh, as ctest entries (label `check`; issue
# 28: they were stages of scripts/test.sh that no one could run alone).
#
# Each needs SQLLOCK_TEST_SERVERS_DIR (servers.sh start writes DIR/env:
# the owner's, sqllock_rw's and sqllock_norec's URLs, the admin access);
# without it a check skips (exit 77) and, under CI, fails. check_report
# UNIT DRIVER notes a driver as tested for scripts/test.sh's report.
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib.sh"

check_fail() {   # check_fail MESSAGE: the check failed
  echo "FAIL: $*" >&2
  exit 1
}

check_need_servers() {   # check_need_servers WHAT
  if [ -z "${SQLLOCK_TEST_SERVERS_DIR:-}" ] || [ ! -f "$SQLLOCK_TEST_SERVERS_DIR/env" ]; then
    skip_or_fail "$1" "no servers of scripts/servers.sh (SQLLOCK_TEST_SERVERS_DIR)"
  fi
  # shellcheck disable=SC1091
  . "$SQLLOCK_TEST_SERVERS_DIR/env"
  check_pg_port=${SQLLOCK_TEST_PG_URL##*@127.0.0.1:}
  check_pg_port=${check_pg_port%%/*}
  check_my_port=${SQLLOCK_TEST_MYSQL_URL##*@127.0.0.1:}
  check_my_port=${check_my_port%%/*}
  check_drivers=postgres
  if [ -n "${SQLLOCK_TEST_MYSQL_URL:-}" ]; then
    check_drivers="postgres mysql"
  fi
}

check_report() {   # check_report UNIT DRIVER
  [ -z "${SQLLOCK_TEST_REPORT:-}" ] || echo "$1 $2" >> "$SQLLOCK_TEST_REPORT"
}

# A directory for the check's files, removed on exit.
check_work=$(mktemp -d "${TMPDIR:-/tmp}/sqllock-check.XXXXXX")
trap 'rm -rf "$check_work"' EXIT
