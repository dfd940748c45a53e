#!/usr/bin/env bash
# tests/checks/order_flow.sh EXAMPLE -- examples/order_flow.c as users
# build it (docs/api.md's row-lock example): 6 copies at once on
# PostgreSQL pay order 1 exactly once (ctest: check_order_flow).
set -euo pipefail
example=$1
. "$(dirname "$0")/common.sh"
if [ -z "${SQLLOCK_TEST_PG_URL:-}" ]; then
  skip_or_fail order_flow "no PostgreSQL (SQLLOCK_TEST_PG_URL)"
fi
url=$SQLLOCK_TEST_PG_URL
out="$check_work/order_flow.out"
: > "$out"
sql() { PGOPTIONS="-c client_min_messages=warning" psql -X -q -A -t -v ON_ERROR_STOP=1 -d "$url" -c "$1"; }
# Issue 29 item 5: the example touches no table but its own. Beside an
# application's `inventory` with rows, and a table named like the
# example's that it did not make, it stops and changes nothing.
sql "DROP TABLE IF EXISTS inventory; DROP TABLE IF EXISTS example_orders;
     CREATE TABLE inventory (id int PRIMARY KEY, qty int, version int);
     INSERT INTO inventory VALUES (1, 7, 3), (2, 0, 1), (3, 12, 9);
     CREATE TABLE example_orders (order_id bigint, paid boolean);
     INSERT INTO example_orders VALUES (1, true), (2, false)"
inv=$(sql "SELECT string_agg(id || ':' || qty || ':' || version, ',' ORDER BY id) FROM inventory")
if "$example" "$url" > "$check_work/foreign.out" 2>&1; then
  cat "$check_work/foreign.out"
  check_fail "order flow: it ran beside an example_orders it did not make"
fi
grep -q "never touched" "$check_work/foreign.out" ||
  check_fail "order flow: no word of the table it left alone: $(cat "$check_work/foreign.out")"
[ "$(sql "SELECT string_agg(order_id || ':' || paid, ',' ORDER BY order_id) FROM example_orders")" = "1:true,2:false" ] ||
  check_fail "order flow: the foreign example_orders changed"
sql "DROP TABLE example_orders"
"$example" "$url" --reset
pids=()
for _ in 1 2 3 4 5 6; do
  "$example" "$url" >> "$out" &
  pids+=($!)
done
wait "${pids[@]}"
paid=$(grep -c "^order 1 paid$" "$out" || true)
if [ "$paid" != 1 ]; then
  cat "$out"
  check_fail "order flow: order 1 was paid $paid times"
fi
"$example" "$url" --drop
[ -z "$(sql "SELECT to_regclass('example_orders')")" ] ||
  check_fail "order flow: --drop left example_orders"
[ "$(sql "SELECT string_agg(id || ':' || qty || ':' || version, ',' ORDER BY id) FROM inventory")" = "$inv" ] ||
  check_fail "order flow: the application's inventory changed"
sql "DROP TABLE inventory"
echo "order flow: paid once, $(grep -c "already paid" "$out") copies found it paid; inventory untouched, its own table dropped"
check_report order_flow postgres
