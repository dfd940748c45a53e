#!/bin/sh
# tests/pooled.sh TEST [ARGS...] -- runs a driver-neutral test through the
# connection poolers (issue 14): SQLLOCK_TEST_URLS becomes the pooler URLs
# that scripts/poolers.sh wrote (PgBouncer in transaction mode, with a
# listener past it, and in session mode), read from
# $SQLLOCK_TEST_POOLERS_DIR/env unless SQLLOCK_TEST_POOLER_URLS is set,
# and postgres is the one required driver. Without poolers it skips (exit
# 77, which ctest shows as skipped), and fails under CI (scripts/ci.sh's
# is_ci: CI set and not empty, 0 or false). ctest runs it as
# pooled_<unit> (tests/CMakeLists.txt).
. "$(dirname "$0")/../scripts/ci.sh"
urls=${SQLLOCK_TEST_POOLER_URLS:-}
if [ -z "$urls" ] && [ -n "${SQLLOCK_TEST_POOLERS_DIR:-}" ] &&
   [ -f "$SQLLOCK_TEST_POOLERS_DIR/env" ]; then
  urls=$(sed -n "s/^SQLLOCK_TEST_POOLER_URLS='\(.*\)'$/\1/p" "$SQLLOCK_TEST_POOLERS_DIR/env")
fi
if [ -z "$urls" ]; then
  skip_or_fail pooled "no poolers (SQLLOCK_TEST_POOLERS_DIR; scripts/poolers.sh starts them)"
fi
SQLLOCK_TEST_URLS=$urls SQLLOCK_TEST_REQUIRE=postgres exec "$@"
