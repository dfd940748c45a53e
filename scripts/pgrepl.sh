#!/usr/bin/env bash
# A throwaway PostgreSQL primary and streaming standby on loopback, in one
# directory, for the failover tests (tests/test_failover.c).
#
#   scripts/pgrepl.sh start DIR sync|async
#                       a fresh primary (initdb, once per DIR: later starts
#                       copy that cluster) on 127.0.0.1:$SQLLOCK_PGREPL_PORT1
#                       (default 54401) with role `sqllock` (password
#                       `sqllock-test`) owning database `sqllock_test`, and a
#                       standby on 127.0.0.1:$SQLLOCK_PGREPL_PORT2 (default
#                       54402) made with `pg_basebackup -R` through a
#                       replication slot. `sync`: the primary waits for the
#                       standby at every commit (synchronous_standby_names
#                       '*', synchronous_commit on); `async`: it does not.
#                       Waits until the standby streams (and, for sync, is
#                       the synchronous one), then writes DIR/env.
#   scripts/pgrepl.sh failover DIR
#                       crashes the primary (`pg_ctl stop -m immediate`) and
#                       promotes the standby, waiting until it takes writes.
#                       A standby whose walreceiver is paused has that
#                       process killed first: the WAL it had not read yet is
#                       lost with its socket, as in a network partition.
#   scripts/pgrepl.sh pause-standby DIR   SIGSTOP the standby's walreceiver
#   scripts/pgrepl.sh resume-standby DIR  SIGCONT it
#   scripts/pgrepl.sh stop DIR
#                       stops both (safe to call twice, or after a failed
#                       start)
#
# DIR/env holds SQLLOCK_TEST_PGREPL_URL, the multi-host URL with
# target_session_attrs=read-write that follows the primary, the per-node
# URLs SQLLOCK_TEST_PGREPL_URL1 and _URL2, and SQLLOCK_TEST_PGREPL_ADMIN1/2
# ('PG_BIN;SOCKET_DIR;PORT': the superuser `postgres` is trusted on each
# node's unix socket). The standby is configured to be a proper primary
# once promoted: it listens on 127.0.0.1, takes the same logins, and has
# no synchronous standby of its own (it would wait forever for one).
#
# The ports must be free: start fails, saying which, when one is taken.
# As root the servers run as the `postgres` user (PostgreSQL refuses root).
set -euo pipefail
# as_user, running, port_free, ms_now, stop_pid, is_ci (scripts/lib.sh).
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PORT1=${SQLLOCK_PGREPL_PORT1:-54401}
PORT2=${SQLLOCK_PGREPL_PORT2:-54402}
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
PASSWORD=sqllock-test
SLOT=sqllock_standby


die() { echo "pgrepl.sh: $*" >&2; exit 1; }


# psql_node DIR N SQL...: runs SQL as the superuser on node N's socket.
psql_node() {
  local dir=$1 n=$2 port; shift 2
  port=$(cat "$dir/node$n/port")
  local args=() s
  for s in "$@"; do args+=(-c "$s"); done
  as_user postgres "$PG_BIN/psql" -X -q -At -h "$dir/node$n" -p "$port" \
    -U postgres -d postgres -v ON_ERROR_STOP=1 "${args[@]}"
}

# run_node DIR N: starts node N (its settings are in its postgresql.conf).
run_node() {
  local dir=$1/node$2
  as_user postgres "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    start >/dev/null || { cat "$dir/server.log" >&2; return 1; }
}

# node_conf DIR N: the settings of node N, whatever the primary's copy says.
node_conf() {
  local dir=$1 n=$2 port; port=$(cat "$dir/node$n/port")
  cat >> "$dir/node$n/data/postgresql.conf" <<CONF

# scripts/pgrepl.sh, node $n
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir/node$n'
max_connections = 100
shared_buffers = 32MB
wal_level = replica
max_wal_senders = 5
max_replication_slots = 5
hot_standby = on
wal_receiver_status_interval = 1s
wal_sender_timeout = 60s
wal_receiver_timeout = 60s
synchronous_standby_names = ''
synchronous_commit = on
fsync = on
CONF
}

start_all() {
  local dir=$1 mode=$2 i n
  case "$mode" in sync|async) ;; *) die "start: mode must be sync or async, not '$mode'" ;; esac
  [ -n "$PG_BIN" ] || die "PostgreSQL server binaries not found"
  for p in "$PORT1" "$PORT2"; do
    port_free "$p" || die "port $p on 127.0.0.1 is taken (a server left behind? try 'pgrepl.sh stop DIR'); set SQLLOCK_PGREPL_PORT1 / SQLLOCK_PGREPL_PORT2 to free ports"
  done
  # What an earlier run left (stopped: the ports are free) goes.
  for n in 1 2; do
    if [ -f "$dir/node$n/data/postmaster.pid" ] &&
       as_user postgres "$PG_BIN/pg_ctl" -D "$dir/node$n/data" status >/dev/null 2>&1; then
      die "a server still runs in $dir/node$n: run 'pgrepl.sh stop $dir' first"
    fi
    rm -rf "$dir/node$n"
  done
  rm -f "$dir/env" "$dir/paused" "$dir/mode"
  mkdir -p "$dir/node1" "$dir/node2"; chmod 755 "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir/node1" "$dir/node2"
  echo "$PORT1" > "$dir/node1/port"
  echo "$PORT2" > "$dir/node2/port"
  echo "$mode" > "$dir/mode"
  # initdb runs once per DIR, server binaries and options: later starts
  # copy that cluster, never started, which is what initdb would make
  # again. (test_failover starts a fresh pair per scenario, and initdb
  # was about a third of each start.)
  local initdb_args=(-U postgres --auth-local=trust --auth-host=scram-sha-256
                     -E UTF8 --locale=C.UTF-8 --no-sync)
  local initdb_key="$PG_BIN ${initdb_args[*]} $PASSWORD"
  if [ "$(cat "$dir/initdb/key" 2>/dev/null)" != "$initdb_key" ]; then
    rm -rf "$dir/initdb"
    mkdir -p "$dir/initdb"
    [ "$(id -u)" -eq 0 ] && chown postgres: "$dir/initdb"
    printf '%s\n' "$PASSWORD" > "$dir/pgpass.tmp"
    chmod 644 "$dir/pgpass.tmp"
    as_user postgres "$PG_BIN/initdb" -D "$dir/initdb/data" "${initdb_args[@]}" \
      --pwfile="$dir/pgpass.tmp" >"$dir/initdb/initdb.log" 2>&1 \
      || { rm -f "$dir/pgpass.tmp"; cat "$dir/initdb/initdb.log" >&2; rm -rf "$dir/initdb"; return 1; }
    rm -f "$dir/pgpass.tmp"
    echo "$initdb_key" > "$dir/initdb/key"
  fi
  as_user postgres cp -a "$dir/initdb/data" "$dir/node1/data"
  node_conf "$dir" 1
  run_node "$dir" 1
  psql_node "$dir" 1 \
    "CREATE ROLE sqllock LOGIN PASSWORD '$PASSWORD'" \
    "CREATE DATABASE sqllock_test OWNER sqllock" \
    "SELECT pg_create_physical_replication_slot('$SLOT')" >/dev/null
  # The standby: a copy through the slot; -R writes primary_conninfo (with
  # the password) and standby.signal. Its own settings go after the
  # primary's in postgresql.conf, so they win.
  as_user postgres "$PG_BIN/pg_basebackup" -D "$dir/node2/data" \
    -d "host=127.0.0.1 port=$PORT1 user=postgres password=$PASSWORD application_name=sqllock_standby" \
    -R -S "$SLOT" -X stream -c fast --no-sync >"$dir/node2/basebackup.log" 2>&1 \
    || { cat "$dir/node2/basebackup.log" >&2; return 1; }
  node_conf "$dir" 2
  run_node "$dir" 2
  if [ "$mode" = sync ]; then
    psql_node "$dir" 1 "ALTER SYSTEM SET synchronous_standby_names = '*'" \
      "SELECT pg_reload_conf()" >/dev/null
  fi
  # Wait until the standby streams (and, for sync, is synchronous).
  local want="streaming|async"; [ "$mode" = sync ] && want="streaming|sync"
  for i in $(seq 1 300); do
    if [ "$(psql_node "$dir" 1 "SELECT state || '|' || sync_state FROM pg_stat_replication WHERE application_name = 'sqllock_standby'" 2>/dev/null)" = "$want" ]; then
      break
    fi
    sleep 0.05
  done
  [ "$(psql_node "$dir" 1 "SELECT state || '|' || sync_state FROM pg_stat_replication WHERE application_name = 'sqllock_standby'")" = "$want" ] \
    || { cat "$dir/node2/server.log" >&2; die "the standby did not reach '$want' in 15 s"; }
  cat > "$dir/env" <<ENV
SQLLOCK_TEST_PGREPL_URL='postgres://sqllock:$PASSWORD@127.0.0.1:$PORT1,127.0.0.1:$PORT2/sqllock_test?target_session_attrs=read-write'
SQLLOCK_TEST_PGREPL_URL1='postgres://sqllock:$PASSWORD@127.0.0.1:$PORT1/sqllock_test'
SQLLOCK_TEST_PGREPL_URL2='postgres://sqllock:$PASSWORD@127.0.0.1:$PORT2/sqllock_test'
SQLLOCK_TEST_PGREPL_ADMIN1='$PG_BIN;$dir/node1;$PORT1'
SQLLOCK_TEST_PGREPL_ADMIN2='$PG_BIN;$dir/node2;$PORT2'
SQLLOCK_TEST_PGREPL_MODE='$mode'
SQLLOCK_TEST_PGREPL_DIR='$dir'
ENV
  echo "pgrepl: primary 127.0.0.1:$PORT1, $mode standby 127.0.0.1:$PORT2 (in $dir)"
}

# walreceiver_pid DIR: the standby's walreceiver, or nothing.
walreceiver_pid() {
  local pm
  [ -f "$1/node2/data/postmaster.pid" ] || return 0
  pm=$(head -n 1 "$1/node2/data/postmaster.pid")
  pgrep -P "$pm" -f 'walreceiver' 2>/dev/null | head -n 1 || true
}

pause_standby() {
  local dir=$1 pid i
  for i in $(seq 1 100); do
    pid=$(walreceiver_pid "$dir")
    [ -n "$pid" ] && break
    sleep 0.05
  done
  [ -n "$pid" ] || die "pause-standby: no walreceiver on the standby"
  kill -STOP "$pid"
  echo "$pid" > "$dir/paused"
}

resume_standby() {
  local dir=$1
  [ -f "$dir/paused" ] || return 0
  kill -CONT "$(cat "$dir/paused")" 2>/dev/null || true
  rm -f "$dir/paused"
}

failover() {
  local dir=$1 i
  [ -f "$dir/node2/port" ] || die "failover: no standby in $dir"
  if [ -f "$dir/node1/data/postmaster.pid" ]; then
    as_user postgres "$PG_BIN/pg_ctl" -D "$dir/node1/data" -m immediate -w -t 60 \
      stop >/dev/null
  fi
  if [ -f "$dir/paused" ]; then
    # SIGKILL works on a stopped process; the postmaster then restarts
    # the standby's processes (crash recovery from its own WAL, which ends
    # where the walreceiver stopped writing), and the startup process
    # promotes it below.
    kill -KILL "$(cat "$dir/paused")" 2>/dev/null || true
    rm -f "$dir/paused"
    for i in $(seq 1 600); do
      as_user postgres "$PG_BIN/pg_isready" -q -h "$dir/node2" -p "$PORT2" && break
      sleep 0.05
    done
  fi
  as_user postgres "$PG_BIN/pg_ctl" -D "$dir/node2/data" -w -t 60 promote >/dev/null
  for i in $(seq 1 600); do
    [ "$(psql_node "$dir" 2 "SELECT pg_is_in_recovery()" 2>/dev/null)" = f ] && return 0
    sleep 0.02
  done
  cat "$dir/node2/server.log" >&2
  die "failover: the standby did not take writes within 12 s of its promotion"
}

stop_all() {
  local dir=$1 n
  resume_standby "$dir" 2>/dev/null || true
  for n in 2 1; do
    if [ -f "$dir/node$n/data/postmaster.pid" ]; then
      as_user postgres "$PG_BIN/pg_ctl" -D "$dir/node$n/data" -m immediate -w -t 30 \
        stop >/dev/null 2>&1 || true
    fi
  done
}

# DIR may be relative (abs_path, scripts/lib.sh).
[ -z "${2:-}" ] || set -- "$1" "$(abs_path "$2")" "${@:3}"
case "${1:-}" in
  start)
    start_all "${2:?usage: pgrepl.sh start DIR sync|async}" "${3:?usage: pgrepl.sh start DIR sync|async}" ;;
  failover)
    failover "${2:?usage: pgrepl.sh failover DIR}" ;;
  pause-standby)
    pause_standby "${2:?usage: pgrepl.sh pause-standby DIR}" ;;
  resume-standby)
    resume_standby "${2:?usage: pgrepl.sh resume-standby DIR}" ;;
  stop)
    stop_all "${2:?usage: pgrepl.sh stop DIR}" ;;
  *)
    echo "usage: pgrepl.sh start DIR sync|async | failover DIR | pause-standby DIR | resume-standby DIR | stop DIR" >&2
    exit 64 ;;
esac
