#!/bin/sh
# The smoke entry of bench_redis (ctest bench_smoke_redis_redis):
#
#   smoke_redis.sh SCRIPTS_DIR BENCH_REDIS
#
# runs `bench_redis --smoke` on $SQLLOCK_BENCH_REDIS_URL when it is set,
# else on a Redis server of its own (scripts/redis.sh, a free port, a
# temporary directory), stopped again at the end. Without redis-server it
# is skipped (77), saying so, unless SQLLOCK_TEST_REQUIRE names redis.
set -eu
scripts=$1 bench=$2

if [ -n "${SQLLOCK_BENCH_REDIS_URL:-}" ]; then
  exec "$bench" --smoke "$SQLLOCK_BENCH_REDIS_URL"
fi
if ! command -v redis-server >/dev/null 2>&1 &&
   [ ! -x /usr/bin/redis-server ]; then
  case ",${SQLLOCK_TEST_REQUIRE:-}," in
    *,redis,*)
      echo "bench_smoke_redis: FAILED: redis-server is not installed, and SQLLOCK_TEST_REQUIRE requires redis" >&2
      exit 1 ;;
  esac
  echo "bench_smoke_redis: SKIPPED: redis-server is not installed (Debian: redis-server; scripts/test.sh does not install it), so bench_redis was not run"
  exit 77
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/sqllock-smoke-redis.XXXXXX")
chmod 755 "$dir"
cleanup() {
  bash "$scripts/redis.sh" stop "$dir/redis" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# A free port, as scripts/bench.sh picks one (scripts/lib.sh).
port=$(bash -c '. "$1/lib.sh"; pick_port SQLLOCK_SMOKE_REDIS_PORT' _ "$scripts")
SQLLOCK_REDIS_PORT=$port bash "$scripts/redis.sh" start "$dir/redis" >/dev/null
. "$dir/redis/env"
"$bench" --smoke "$SQLLOCK_BENCH_REDIS_URL"
