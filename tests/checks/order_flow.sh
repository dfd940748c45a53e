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
out="$check_work/order_flow.out"
: > "$out"
"$example" "$SQLLOCK_TEST_PG_URL" --reset
pids=()
for _ in 1 2 3 4 5 6; do
  "$example" "$SQLLOCK_TEST_PG_URL" >> "$out" &
  pids+=($!)
done
wait "${pids[@]}"
paid=$(grep -c "^order 1 paid$" "$out" || true)
if [ "$paid" != 1 ]; then
  cat "$out"
  check_fail "order flow: order 1 was paid $paid times"
fi
echo "order flow: paid once, $(grep -c "already paid" "$out") copies found it paid"
check_report order_flow postgres
