#!/usr/bin/env bash
# tests/checks/least_privilege.sh TOOL TEST_CONFORMANCE SERVERS_SCRIPT --
# DESIGN S2 and C5 with the least rights, on PostgreSQL and MariaDB
# (ctest: check_least_privilege).
#
# S2: at run time the library needs only SELECT, INSERT, UPDATE and
# DELETE on its tables (and, on PostgreSQL, USAGE on the token sequence).
# The owner creates the tables; servers.sh grant-rw gives sqllock_rw
# exactly the grants docs/databases.md lists, and the conformance suite
# runs as that user (sqllock_init() on the current schema must succeed).
# The S1 cases -- one needs an empty schema to create tables in, the
# other drops and re-creates MySQL's acquire routine -- are left out by
# name (SQLLOCK_TEST_SKIP_CASES), not skipped: S2 gives sqllock_rw no
# right to do either, and a skip fails under CI. Without EXECUTE on that
# routine, sqllock_rw's acquires take the statements of the transaction
# instead: this check runs them.
#
# C5: a forced release and its audit record commit together.
# sqllock_norec may delete leases but only read the record table: its
# forced release is refused (69, naming the right it lacks), and the
# lease is still held after it.
set -euo pipefail
tool=$1 conformance=$2 servers=$3
. "$(dirname "$0")/common.sh"
check_need_servers least_privilege
rw_urls=$SQLLOCK_TEST_PG_RW_URL
if [ -n "${SQLLOCK_TEST_MYSQL_URL:-}" ]; then
  rw_urls="$rw_urls $SQLLOCK_TEST_MYSQL_RW_URL"
fi
"$tool" --db "$SQLLOCK_TEST_PG_URL" init >/dev/null
if [ -n "${SQLLOCK_TEST_MYSQL_URL:-}" ]; then
  "$tool" --db "$SQLLOCK_TEST_MYSQL_URL" init >/dev/null
fi
"$servers" grant-rw "$SQLLOCK_TEST_SERVERS_DIR"

echo "== S2: test_conformance as sqllock_rw on $check_drivers"
# In the database the grants are for, not one of the unit's own.
if ! env -u SQLLOCK_TEST_DB_PER_UNIT SQLLOCK_TEST_URLS="$rw_urls" \
     SQLLOCK_TEST_SKIP_CASES="test_conformance_S1_*" \
     SQLLOCK_TEST_REQUIRE="${check_drivers// /,}" \
     SQLLOCK_TEST_REPORT="$check_work/report" \
     "$conformance" >"$check_work/conformance.log" 2>&1; then
  cat "$check_work/conformance.log"
  check_fail "the conformance suite failed as sqllock_rw (least privilege)"
fi
for d in $check_drivers; do
  # (Its report names the unit of this entry, least_privilege.)
  grep -q " $d\$" "$check_work/report" ||
    { cat "$check_work/conformance.log"; check_fail "$d was not tested as sqllock_rw"; }
done
echo "least privilege: conformance passed as sqllock_rw on $check_drivers"

echo "== C5: a forced release by a role that cannot write the record"
for d in $check_drivers; do
  if [ "$d" = postgres ]; then
    own_url=$SQLLOCK_TEST_PG_URL norec_url=$SQLLOCK_TEST_PG_NOREC_URL
  else
    own_url=$SQLLOCK_TEST_MYSQL_URL norec_url=$SQLLOCK_TEST_MYSQL_NOREC_URL
  fi
  name="c5-norec-$$"
  "$tool" --db "$own_url" acquire "$name" --ttl 60s >/dev/null
  rc=0
  "$tool" --db "$norec_url" release "$name" --force --force \
    >"$check_work/c5.out" 2>&1 || rc=$?
  if [ "$rc" != 69 ] || ! grep -q "sqllock_record" "$check_work/c5.out"; then
    cat "$check_work/c5.out"
    check_fail "C5 on $d: a forced release by a role that cannot write the record exited $rc (want 69, naming sqllock_record)"
  fi
  "$tool" --db "$own_url" show "$name" | grep -q "state:    held" ||
    check_fail "C5 on $d: the refused forced release freed the lease anyway"
  "$tool" --db "$own_url" release "$name" --force --force >/dev/null
  "$tool" --db "$own_url" history "$name" --clear-all >/dev/null
  check_report least_privilege "$d"
done
echo "C5: a forced release by a role without the record's rights was refused on $check_drivers, the lease kept"
