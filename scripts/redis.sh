#!/usr/bin/env bash
# A throwaway Redis server for the peer benchmarks, on loopback, in one
# directory.
#
#   scripts/redis.sh start DIR    start redis-server with its files in DIR and
#                                 write DIR/env (SQLLOCK_BENCH_REDIS_URL)
#   scripts/redis.sh stop DIR     stop it and wait until it is gone (safe to
#                                 call twice, or after a failed start)
#
# It listens on 127.0.0.1:${SQLLOCK_REDIS_PORT:-63799} only (no unix socket,
# no password: protected mode stays on, and only loopback can reach it). The
# port must be free: start fails, saying so, when it is taken.
#
# Persistence is Redis's default, on purpose, because that is what the usual
# "SET NX PX + Lua" lock runs on: RDB snapshots (save 3600 1 300 100 60
# 10000) and no append-only file. A lock lives in memory; a crash or kill -9
# loses every SET since the last snapshot (up to an hour of them when writes
# are few), so a restarted server can grant a lock that was held before the
# crash. A lock therefore has no durability across a server crash for
# recent writes. (appendonly yes with appendfsync everysec would still lose
# up to a second; appendfsync always would pay one fsync per write, as a
# database commit does. Replicas are asynchronous either way.) Only the
# snapshot on a clean shutdown, which `stop` triggers, keeps them. Under a
# benchmark's write rate the "60 10000" rule forks a background save about
# once a minute: that is part of what the default costs, and of what is
# measured.
#
# As root the server runs as the `redis` user that Debian's package
# creates, and DIR is given to that user.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"          # ensure_packages, port_free

PORT=${SQLLOCK_REDIS_PORT:-63799}

# running DIR: 0 when the server whose pid file is in DIR is alive.
running() {
  [ -f "$1/redis.pid" ] && kill -0 "$(cat "$1/redis.pid")" 2>/dev/null
}

start_redis() {
  local dir=$1
  ensure_packages redis-server
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if running "$dir"; then
    echo "redis.sh: a server from $dir is still running (pid $(cat "$dir/redis.pid")); stop it first" >&2
    exit 1
  fi
  port_free "$PORT" || { echo "redis.sh: port $PORT on 127.0.0.1 is taken (a server left behind?); set SQLLOCK_REDIS_PORT to a free port" >&2; exit 1; }
  rm -f "$dir/redis.pid"
  # Only what differs from the compiled-in defaults: where it listens and
  # where its files go. The persistence settings are left at their
  # defaults (see above). daemonize writes the pid file after the fork.
  cat > "$dir/redis.conf" <<CONF
bind 127.0.0.1
port $PORT
protected-mode yes
daemonize yes
pidfile $dir/redis.pid
logfile $dir/redis.log
dir $dir
CONF
  local run=(redis-server "$dir/redis.conf")
  if [ "$(id -u)" -eq 0 ]; then
    chown -R redis: "$dir"
    run=(runuser -u redis -- "${run[@]}")
  fi
  "${run[@]}" || { cat "$dir/redis.log" >&2 2>/dev/null; exit 1; }
  for _ in $(seq 1 60); do
    if [ "$(redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null)" = PONG ] && [ -s "$dir/redis.pid" ]; then
      cat > "$dir/env" <<ENV
SQLLOCK_BENCH_REDIS_URL='redis://127.0.0.1:$PORT'
ENV
      echo "redis: Redis $(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p') on 127.0.0.1:$PORT (in $dir, pid $(cat "$dir/redis.pid"))"
      return 0
    fi
    sleep 0.5
  done
  echo "redis.sh: Redis did not answer on 127.0.0.1:$PORT in 30 s" >&2
  cat "$dir/redis.log" >&2 2>/dev/null || true
  exit 1
}

stop_redis() {
  local dir=$1 pid
  [ -f "$dir/redis.pid" ] || return 0
  pid=$(cat "$dir/redis.pid")
  # SIGTERM: Redis saves its snapshot and exits (it removes the pid file).
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "redis.sh: Redis (pid $pid) did not stop in 30 s; killing it" >&2
    kill -9 "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  fi
  rm -f "$dir/redis.pid"
}

# DIR may be relative (abs_path, scripts/lib.sh).
[ -z "${2:-}" ] || set -- "$1" "$(abs_path "$2")" "${@:3}"
case "${1:-}" in
  start)
    start_redis "${2:?usage: redis.sh start DIR}"
    ;;
  stop)
    stop_redis "${2:?usage: redis.sh stop DIR}"
    ;;
  *)
    echo "usage: redis.sh start|stop DIR" >&2; exit 64 ;;
esac
