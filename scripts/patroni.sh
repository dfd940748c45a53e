#!/usr/bin/env bash
# A throwaway Patroni cluster on loopback, in one directory, for fault
# tests (issue 30 item 1): etcd (1 or 3 members), three PostgreSQL 15 nodes
# pg1..pg3 managed by Patroni with synchronous_mode, and HAProxy routing to
# the leader by Patroni's REST health check.
#
#   scripts/patroni.sh start DIR [--strict] [--etcd 1|3]
#                       starts etcd (1 member, or 3 with --etcd 3), one TCP
#                       forwarder per node to etcd, three Patronis (pg1..pg3,
#                       one bootstraps with initdb, the others clone it
#                       with pg_basebackup) and HAProxy; waits until a
#                       leader exists, both replicas stream, one of them is
#                       the synchronous standby, and a write through HAProxy
#                       reaches the leader; writes DIR/env. synchronous_mode
#                       is on; --strict adds synchronous_mode_strict (no
#                       commit without a synchronous standby, ever).
#   scripts/patroni.sh stop DIR
#                       stops HAProxy, the Patronis (each stops its
#                       postgres), any postgres a killed Patroni left behind,
#                       the forwarders and etcd (safe to call twice, or
#                       after a failed start). Only processes whose command
#                       line names DIR are signalled.
#   scripts/patroni.sh status DIR       `patronictl list`
#   scripts/patroni.sh leader DIR       the leader's name (pg1..pg3) as etcd
#                                       holds it (fails when there is none)
#   scripts/patroni.sh switchover DIR   `patronictl switchover --force` to
#                                       the synchronous standby; returns once
#                                       the new leader takes a write through
#                                       HAProxy; prints the ms that took,
#                                       then waits until the old leader
#                                       streams again and a synchronous
#                                       standby is named (up to ~7 s more)
#   scripts/patroni.sh kill-postgres DIR
#                       SIGKILL the leader's postmaster. No failover: the
#                       leader's Patroni keeps the leader key, runs crash
#                       recovery in single-user mode, starts postgres as a
#                       read-only standby and promotes it (a new timeline);
#                       writes pass again after about 5 s. Its synchronous
#                       standby is chosen again (maybe the other replica).
#   scripts/patroni.sh kill-patroni DIR
#                       SIGKILL the leader's Patroni. Its postgres keeps
#                       running as a primary (there is no watchdog), and
#                       its synchronous standby keeps streaming from it, so
#                       commits on it succeed until the leader key expires
#                       (ttl) and that standby is promoted. From then on
#                       there are two primaries: the old one, left out by
#                       HAProxy within a second (its REST check fails) but
#                       still read-write on its own port (so first in
#                       SQLLOCK_TEST_PATRONI_HOSTS_URL when it is pg1), takes
#                       sessions and advisory locks, while its commits hang
#                       for good (synchronous_standby_names names a standby
#                       that now follows the new leader; statement_timeout
#                       does not end that wait). `start-node DIR NODE`
#                       restarts that Patroni, which demotes the old primary,
#                       pg_rewinds it and makes it follow -- but first
#                       (Patroni 3.0.2) reloads its configuration with
#                       synchronous_standby_names reset, and for the 0.2-0.5
#                       s until the demotion every commit waiting there, or
#                       sent then, is ACKNOWLEDGED, then rewound away:
#                       test_patroni saw leases, permits and a leader term
#                       granted twice that way. Fence the old primary first
#                       (stop it: what Patroni's watchdog would have done),
#                       as test_patroni does.
#   scripts/patroni.sh isolate DIR
#                       cuts the leader's Patroni off from etcd: kills its
#                       forwarder (and so its open connections to etcd).
#                       After retry_timeout (+ a loop) the leader demotes
#                       itself (postgres stopped in immediate mode: its
#                       sessions end, then it runs read-only); after ttl the
#                       synchronous standby is promoted, so there is a gap of
#                       about ttl - retry_timeout with no primary and none
#                       with two. Only the etcd traffic is cut: replication
#                       and the Patronis' REST APIs still reach each other.
#   scripts/patroni.sh heal DIR         starts the cut node's forwarder
#                                       again; returns when that node streams
#                                       from the leader again and there is
#                                       a synchronous standby
#   scripts/patroni.sh start-node DIR NODE
#                       starts the Patroni of NODE (pg1..pg3) again after
#                       kill-patroni; returns when the node streams from the
#                       leader and there is a synchronous standby
#   scripts/patroni.sh wait-leader DIR [TIMEOUT_S]
#                       waits (default 60 s) until a write through HAProxy
#                       succeeds; prints the ms waited. After kill-patroni or
#                       isolate a write that lands on the old leader does not
#                       count (it is reported on stderr: two primaries).
#   scripts/patroni.sh wait-sync DIR [TIMEOUT_S]
#                       waits (default 60 s) until the leader has a
#                       synchronous standby streaming; prints the ms waited.
#                       Run it between faults: a new leader takes writes a
#                       few seconds before Patroni names its synchronous
#                       standby, and while it has none no replica may be
#                       promoted -- a fault then leaves the cluster without
#                       a leader until the faulted node is back (seen with
#                       an isolate 2 s after a switchover).
#
# kill-postgres, kill-patroni and isolate return at once, after the fault,
# which they record in DIR/fault: run wait-leader next to time the
# recovery (it also says on stderr how long since the fault).
#
# Timing (the dynamic configuration Patroni is bootstrapped with): ttl 10 s,
# loop_wait 1 s, retry_timeout 4 s (SQLLOCK_PATRONI_TTL, _LOOP_WAIT and
# _RETRY_TIMEOUT change them). Patroni's rule loop_wait + 2 * retry_timeout
# <= ttl holds, so a leader cut off from etcd demotes itself (after
# retry_timeout) before its key expires and a replica may take over (after
# ttl); Patroni's defaults (30/10/10) would make every failover wait for a
# 30 s ttl. 6/1/2 worked too (failover in about 6.4 s) on an idle machine;
# 10/1/4 leaves room for a loaded one. failsafe_mode is
# off: with it, a leader that reaches every member's REST API -- which on
# loopback it always does -- stays primary without etcd. The watchdog is off
# (there is no /dev/watchdog here).
#
# Ports, from P = ${SQLLOCK_PATRONI_PORT:-7800} (1024-9936), node i = 1..3,
# etcd member k = 1..3:
#   HAProxy (to the leader)           127.0.0.1:P
#   PostgreSQL of pg<i>               127.0.0.1:P+i       and DIR/pg<i>/.s.PGSQL.*
#   Patroni REST API of pg<i>         127.0.0.1:P+10+i
#   etcd member k, clients / peers    127.0.0.1:P+20+k / P+30+k
#   forwarder of pg<i> to member k    127.0.0.1:P+30+10*i+k  (P+41..P+63)
# (so by default 7800-7863). They stay below 10000: out of Linux's range of
# ports for outgoing connections (32768-60999), and out of the range
# scripts/lib.sh's pick_port draws the other fixtures' ports from
# (10000-32767); galera.sh's default ports are 6101-6133. The
# ports must be free: start fails, saying which, when one is taken.
#
# Files, all in DIR (nothing of /etc/patroni, /etc/haproxy, /etc/postgresql
# or the system's services is used):
#   DIR/etcd<k>/        data, etcd.log, etcd.pid
#   DIR/pg<i>/          patroni.yml, patroni.log (postgres logs there too),
#                       patroni.pid, data/ (postmaster.pid), pgpass, socket
#   DIR/forward.py      the forwarder; DIR/fwd<i>.pid, DIR/fwd<i>.log
#   DIR/haproxy.cfg     haproxy.pid, haproxy.log, haproxy.sock (admin)
#   DIR/patronictl.yml  for `patronictl -c` (reaches etcd directly)
#   DIR/post_bootstrap.sh, DIR/settings (the start options), DIR/fault
#
# The leader has, from the bootstrap, the role `sqllock` (password
# `sqllock-test`) owning database `sqllock_test`, and, in database
# `postgres`, the table patroni_probe the probes of this script write to.
# The superuser `postgres` is trusted on each node's unix socket; TCP
# logins (the superuser, `replicator`, `sqllock`) use scram-sha-256 with
# password `sqllock-test`.
#
# DIR/env holds shell assignments: SQLLOCK_TEST_PATRONI_HAPROXY_URL (through
# HAProxy), SQLLOCK_TEST_PATRONI_HOSTS_URL (the three nodes, libpq's
# target_session_attrs=read-write picks the first read-write one: after
# kill-patroni that may be the old primary),
# SQLLOCK_TEST_PATRONI_URL1..3 (one node each), SQLLOCK_TEST_PATRONI_DIR and
# SQLLOCK_TEST_PATRONI_SCRIPT.
#
# Needs the Debian packages patroni (3.0), python3-etcd, etcd-server (3.4),
# etcd-client, haproxy (2.6) and postgresql-15; start installs the missing
# ones. As root, Patroni and postgres run as the `postgres` user.
set -euo pipefail
# ensure_packages, as_user, running, port_free, ms_now, stop_pid (scripts/lib.sh).
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BASE_PORT=${SQLLOCK_PATRONI_PORT:-7800}
case "$BASE_PORT" in
  ''|*[!0-9]*) echo "patroni.sh: SQLLOCK_PATRONI_PORT must be a port number, not '$BASE_PORT'" >&2; exit 64 ;;
esac
if [ "$BASE_PORT" -lt 1024 ] || [ "$BASE_PORT" -gt 9936 ]; then
  echo "patroni.sh: SQLLOCK_PATRONI_PORT must be in 1024-9936 (its ports are P..P+63, below 10000)" >&2
  exit 64
fi
TTL=${SQLLOCK_PATRONI_TTL:-10}
LOOP_WAIT=${SQLLOCK_PATRONI_LOOP_WAIT:-1}
RETRY_TIMEOUT=${SQLLOCK_PATRONI_RETRY_TIMEOUT:-4}
for v in "$TTL" "$LOOP_WAIT" "$RETRY_TIMEOUT"; do
  case "$v" in
    ''|*[!0-9]*|0) echo "patroni.sh: SQLLOCK_PATRONI_TTL, _LOOP_WAIT and _RETRY_TIMEOUT are whole seconds, not '$v'" >&2; exit 64 ;;
  esac
done
PG_BIN=/usr/lib/postgresql/15/bin
PASSWORD=sqllock-test
SCOPE=sqllock
NAMESPACE=/sqllock
NODES="1 2 3"
SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")

die() { echo "patroni.sh: $*" >&2; exit 1; }
say() { echo "patroni: $*"; }

haproxy_port() { echo "$BASE_PORT"; }
pg_port() { echo $((BASE_PORT + $1)); }
rest_port() { echo $((BASE_PORT + 10 + $1)); }
etcd_port() { echo $((BASE_PORT + 20 + $1)); }
peer_port() { echo $((BASE_PORT + 30 + $1)); }
fwd_port() { echo $((BASE_PORT + 30 + 10 * $1 + $2)); }   # fwd_port NODE MEMBER

# settings DIR: reads ETCD_N, STRICT and BASE_PORT of the cluster in DIR
# (its ports are those it was started with, whatever the environment says).
ETCD_N=1
settings() {
  [ -f "$1/settings" ] || die "no cluster in $1 (run '$0 start $1' first)"
  # shellcheck disable=SC1091
  . "$1/settings"
}

# own_pid DIR FILE: the pid in FILE when that process runs and its command
# line names DIR (a pid reused by another process is not ours).
own_pid() {
  local pid
  [ -f "$2" ] || return 1
  pid=$(head -n 1 "$2" 2>/dev/null) || return 1
  [ -n "$pid" ] && running "$pid" || return 1
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$1/" || return 1
  echo "$pid"
}

patroni_pid() { own_pid "$1" "$1/pg$2/patroni.pid"; }
postmaster_pid() { own_pid "$1" "$1/pg$2/data/postmaster.pid"; }

etcd_endpoints() {   # etcd_endpoints N: the client URLs of N members
  local k out=""
  for k in $(seq 1 "$1"); do out="$out${out:+,}http://127.0.0.1:$(etcd_port "$k")"; done
  echo "$out"
}

etcdctl_() {   # etcdctl_ DIR ARGS...: etcdctl against the members, directly
  local dir=$1; shift
  ETCDCTL_API=3 etcdctl --endpoints "$(cat "$dir/etcd_endpoints")" \
    --dial-timeout 2s --command-timeout 3s "$@"
}

patronictl_() { local dir=$1; shift; patronictl -c "$dir/patronictl.yml" "$@"; }

# etcd_key DIR KEY: the value of $NAMESPACE/$SCOPE/KEY ("" when absent).
etcd_key() {
  etcdctl_ "$1" get --print-value-only "$NAMESPACE/$SCOPE/$2" 2>/dev/null || true
}

leader_of() { etcd_key "$1" leader; }   # "" when there is none

# sync_standby DIR: the synchronous standby the leader has in etcd ("" when
# there is none, or when the sync key is still the previous leader's).
sync_standby() {
  local v l
  v=$(etcd_key "$1" sync)
  l=$(leader_of "$1")
  [ -n "$l" ] && grep -q "\"leader\": *\"$l\"" <<<"$v" || return 0
  sed -n 's/.*"sync_standby": *"\([^"]*\)".*/\1/p' <<<"$v"
}

node_arg() {   # node_arg pgI|I: prints I
  case "${1:-}" in
    pg1|1) echo 1 ;; pg2|2) echo 2 ;; pg3|3) echo 3 ;;
    *) die "the node is pg1, pg2 or pg3, not '${1:-}'" ;;
  esac
}

node_of_port() {   # node_of_port PORT: pgI
  local n
  for n in $NODES; do
    [ "$(pg_port "$n")" = "$1" ] && { echo "pg$n"; return 0; }
  done
  echo "port-$1"
}

# psql_su DIR I SQL: as the superuser on node I's socket.
psql_su() {
  as_user postgres "$PG_BIN/psql" -X -q -At -h "$1/pg$2" -p "$(pg_port "$2")" \
    -U postgres -d postgres -v ON_ERROR_STOP=1 -c "$3"
}

# probe_write URL: one autocommit INSERT into patroni_probe; prints the
# port of the server that took it. At most about 5 s.
probe_write() {
  PGCONNECT_TIMEOUT=2 timeout -k 1 5 "$PG_BIN/psql" -X -q -At -d "$1" \
    -v ON_ERROR_STOP=1 \
    -c "INSERT INTO patroni_probe (note) VALUES ('probe') RETURNING inet_server_port()" \
    2>/dev/null
}

probe_url() {   # probe_url PORT: the probe table's database on PORT
  echo "postgres://sqllock:$PASSWORD@127.0.0.1:$1/postgres"
}

check_ports() {
  local n k p
  p=$(haproxy_port)
  port_free "$p" || die "port $p on 127.0.0.1 (HAProxy) is taken (a cluster left behind? run '$0 stop DIR'); set SQLLOCK_PATRONI_PORT to move all ports"
  for n in $NODES; do
    for p in "$(pg_port "$n")" "$(rest_port "$n")"; do
      port_free "$p" || die "port $p on 127.0.0.1 (pg$n) is taken (a cluster left behind? run '$0 stop DIR'); set SQLLOCK_PATRONI_PORT to move all ports"
    done
    for k in 1 2 3; do
      p=$(fwd_port "$n" "$k")
      port_free "$p" || die "port $p on 127.0.0.1 (forwarder of pg$n) is taken; set SQLLOCK_PATRONI_PORT to move all ports"
    done
  done
  for k in 1 2 3; do
    for p in "$(etcd_port "$k")" "$(peer_port "$k")"; do
      port_free "$p" || die "port $p on 127.0.0.1 (etcd$k) is taken; set SQLLOCK_PATRONI_PORT to move all ports"
    done
  done
}

# wait_port PORT SECONDS PID: until something listens on PORT; fails when
# PID ends first.
wait_port() {
  local i
  for i in $(seq 1 $(($2 * 20))); do
    port_free "$1" || return 0
    running "$3" || return 1
    sleep 0.05
  done
  return 1
}

start_etcd() {
  local dir=$1 n=$2 k cluster="" pid
  for k in $(seq 1 "$n"); do
    cluster="$cluster${cluster:+,}etcd$k=http://127.0.0.1:$(peer_port "$k")"
  done
  for k in $(seq 1 "$n"); do
    mkdir -p "$dir/etcd$k"
    etcd --name "etcd$k" --data-dir "$dir/etcd$k/data" \
      --listen-client-urls "http://127.0.0.1:$(etcd_port "$k")" \
      --advertise-client-urls "http://127.0.0.1:$(etcd_port "$k")" \
      --listen-peer-urls "http://127.0.0.1:$(peer_port "$k")" \
      --initial-advertise-peer-urls "http://127.0.0.1:$(peer_port "$k")" \
      --initial-cluster "$cluster" --initial-cluster-state new \
      --initial-cluster-token "sqllock-$BASE_PORT" \
      --logger zap --log-level warn \
      >>"$dir/etcd$k/etcd.log" 2>&1 </dev/null &
    echo $! > "$dir/etcd$k/etcd.pid"
  done
  etcd_endpoints "$n" > "$dir/etcd_endpoints"
  for k in $(seq 1 "$n"); do
    pid=$(cat "$dir/etcd$k/etcd.pid")
    wait_port "$(etcd_port "$k")" 30 "$pid" \
      || { tail -n 20 "$dir/etcd$k/etcd.log" >&2; echo "patroni.sh: etcd$k did not start" >&2; return 1; }
  done
  local i
  for i in $(seq 1 300); do
    etcdctl_ "$dir" endpoint health >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  etcdctl_ "$dir" endpoint health >&2 || true
  echo "patroni.sh: etcd is not healthy after 30 s" >&2
  return 1
}

write_forwarder() {
  cat > "$1/forward.py" <<'PY'
# TCP forwarder of scripts/patroni.sh: forward.py PIDFILE LISTEN:TARGET...
# (127.0.0.1 ports). Killing it cuts every connection it carries.
import asyncio, os, sys

async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except Exception:
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass

async def handle(reader, writer, target):
    try:
        treader, twriter = await asyncio.open_connection('127.0.0.1', target)
    except OSError:
        writer.close()
        return
    await asyncio.gather(pipe(reader, twriter), pipe(treader, writer))

async def main(pairs):
    servers = []
    for listen, target in pairs:
        servers.append(await asyncio.start_server(
            lambda r, w, t=target: handle(r, w, t), '127.0.0.1', listen,
            reuse_address=True))
    with open(sys.argv[1], 'w') as f:
        f.write('%d\n' % os.getpid())
    await asyncio.gather(*(s.serve_forever() for s in servers))

asyncio.run(main([tuple(int(x) for x in a.split(':')) for a in sys.argv[2:]]))
PY
}

# start_forwarder DIR I: node I's forwarder to every etcd member.
start_forwarder() {
  local dir=$1 n=$2 k pairs=() i
  settings "$dir"
  for k in $(seq 1 "$ETCD_N"); do pairs+=("$(fwd_port "$n" "$k"):$(etcd_port "$k")"); done
  rm -f "$dir/fwd$n.pid"
  python3 "$dir/forward.py" "$dir/fwd$n.pid" "${pairs[@]}" >>"$dir/fwd$n.log" 2>&1 </dev/null &
  local launch=$!
  for i in $(seq 1 200); do
    if [ -s "$dir/fwd$n.pid" ]; then return 0; fi
    running "$launch" || break
    sleep 0.05
  done
  cat "$dir/fwd$n.log" >&2
  echo "patroni.sh: the forwarder of pg$n did not start" >&2
  return 1
}

write_patroni_yml() {
  local dir=$1 n=$2 strict=$3 k hosts=""
  settings "$dir"
  for k in $(seq 1 "$ETCD_N"); do hosts="$hosts${hosts:+,}127.0.0.1:$(fwd_port "$n" "$k")"; done
  cat > "$dir/pg$n/patroni.yml" <<YML
# Node pg$n of the sqllock test cluster (scripts/patroni.sh).
scope: $SCOPE
namespace: $NAMESPACE
name: pg$n
restapi:
  listen: 127.0.0.1:$(rest_port "$n")
  connect_address: 127.0.0.1:$(rest_port "$n")
etcd3:
  # This node's forwarder to the etcd members (isolate kills it), taken
  # as proxies: Patroni does not look up the members' own addresses.
  hosts: $hosts
  use_proxies: true
bootstrap:
  dcs:
    ttl: $TTL
    loop_wait: $LOOP_WAIT
    retry_timeout: $RETRY_TIMEOUT
    maximum_lag_on_failover: 1048576
    synchronous_mode: true
    synchronous_mode_strict: $strict
    synchronous_node_count: 1
    failsafe_mode: false
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        max_connections: 200
        shared_buffers: 32MB
        wal_level: replica
        hot_standby: "on"
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 128MB
        wal_receiver_status_interval: 1s
        wal_sender_timeout: 10s
        wal_receiver_timeout: 10s
        synchronous_commit: "on"
  initdb:
    - encoding: UTF8
    - locale: C.UTF-8
    - auth-local: trust
    - auth-host: scram-sha-256
    - no-sync
  post_bootstrap: $dir/post_bootstrap.sh
postgresql:
  listen: 127.0.0.1:$(pg_port "$n")
  connect_address: 127.0.0.1:$(pg_port "$n")
  data_dir: $dir/pg$n/data
  bin_dir: $PG_BIN
  pgpass: $dir/pg$n/pgpass
  use_unix_socket: true
  authentication:
    superuser:
      username: postgres
      password: $PASSWORD
    replication:
      username: replicator
      password: $PASSWORD
    rewind:
      username: postgres
      password: $PASSWORD
  parameters:
    unix_socket_directories: $dir/pg$n
  pg_hba:
    - local all all trust
    - host replication replicator 127.0.0.1/32 scram-sha-256
    - host all all 127.0.0.1/32 scram-sha-256
  basebackup:
    - checkpoint: fast
watchdog:
  mode: "off"
tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
  nosync: false
YML
}

write_post_bootstrap() {
  cat > "$1/post_bootstrap.sh" <<SH
#!/bin/sh
# Run by Patroni on the new leader after initdb, with its connection URL.
set -e
exec "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -d "\$1" \\
  -c "SET statement_timeout = 0" \\
  -c "CREATE ROLE sqllock LOGIN PASSWORD '$PASSWORD'" \\
  -c "CREATE DATABASE sqllock_test OWNER sqllock" \\
  -c "CREATE TABLE patroni_probe (id bigserial PRIMARY KEY, note text, at timestamptz NOT NULL DEFAULT now())" \\
  -c "GRANT SELECT, INSERT ON patroni_probe TO sqllock" \\
  -c "GRANT USAGE ON SEQUENCE patroni_probe_id_seq TO sqllock"
SH
  chmod 755 "$1/post_bootstrap.sh"
}

# start_patroni DIR I: node I's Patroni, as postgres, in the background.
start_patroni() {
  local dir=$1 n=$2
  rm -f "$dir/pg$n/patroni.pid"
  # sh records its own pid, then becomes Patroni: patroni.pid is Patroni's.
  # shellcheck disable=SC2016  # $$, $1, $2 are the inner sh's
  (cd "$dir/pg$n" && as_user postgres sh -c 'echo $$ > "$1"; exec patroni "$2"' \
     sh "$dir/pg$n/patroni.pid" "$dir/pg$n/patroni.yml") \
    >>"$dir/pg$n/patroni.log" 2>&1 </dev/null &
}

write_haproxy_cfg() {
  local dir=$1 n
  {
    cat <<CFG
# HAProxy of the sqllock test cluster (scripts/patroni.sh): port
# $(haproxy_port) goes to the node whose Patroni answers 200 on /primary.
global
    maxconn 1000
    log stderr format raw local0 notice
    stats socket $dir/haproxy.sock mode 600 level admin
defaults
    log global
    mode tcp
    retries 2
    timeout connect 2s
    timeout client 30m
    timeout server 30m
    timeout check 1s
listen primary
    bind 127.0.0.1:$(haproxy_port)
    option httpchk GET /primary
    http-check expect status 200
    # A check every 500 ms; 2 failures mark a node down and cut its
    # sessions, 1 success marks it up.
    default-server inter 500ms fastinter 250ms downinter 500ms fall 2 rise 1 on-marked-down shutdown-sessions
CFG
    for n in $NODES; do
      echo "    server pg$n 127.0.0.1:$(pg_port "$n") maxconn 300 check port $(rest_port "$n")"
    done
  } > "$dir/haproxy.cfg"
}

start_haproxy() {
  local dir=$1
  haproxy -c -q -f "$dir/haproxy.cfg" >&2 || return 1
  haproxy -db -f "$dir/haproxy.cfg" >>"$dir/haproxy.log" 2>&1 </dev/null &
  echo $! > "$dir/haproxy.pid"
  wait_port "$(haproxy_port)" 10 "$!" || { cat "$dir/haproxy.log" >&2; return 1; }
}

# wait_healthy DIR SECONDS REPLICAS [START]: until there is a leader with
# REPLICAS (1 or 2) replicas streaming from it, one of them its synchronous
# standby (etcd's sync key and pg_stat_replication agree). With START, a
# Patroni that exits fails it at once.
wait_healthy() {
  local dir=$1 secs=$2 want=$3 start=${4:-} i l s n st="" streaming
  for i in $(seq 1 $((secs * 5))); do
    l=$(leader_of "$dir")
    s=$(sync_standby "$dir")
    if [ -n "$l" ] && [ -n "$s" ]; then
      n=${l#pg}
      st=$(psql_su "$dir" "$n" "SELECT string_agg(application_name || ':' || state || ':' || sync_state, ' ' ORDER BY application_name) FROM pg_stat_replication" 2>/dev/null || true)
      streaming=$(tr ' ' '\n' <<<"$st" | grep -c ':streaming:' || true)
      if [ "$streaming" -ge "$want" ] && grep -qw -e "$s:streaming:sync" <<<"$st"; then
        return 0
      fi
    fi
    if [ -n "$start" ]; then
      for n in $NODES; do
        [ -f "$dir/pg$n/patroni.pid" ] && ! patroni_pid "$dir" "$n" >/dev/null && {
          tail -n 30 "$dir/pg$n/patroni.log" >&2
          echo "patroni.sh: the Patroni of pg$n exited" >&2
          return 1
        }
      done
    fi
    sleep 0.2
  done
  echo "patroni.sh: no leader with $want streaming replica(s), one synchronous, after $secs s (leader '${l:-}', sync standby '${s:-}', replication: ${st:-none})" >&2
  patronictl_ "$dir" list >&2 || true
  return 1
}

# wait_write DIR SECONDS [EXCLUDE]: until a write through HAProxy succeeds
# on a node other than EXCLUDE; prints that node. A write EXCLUDE takes
# is reported on stderr (once).
wait_write() {
  local dir=$1 secs=$2 excl=${3:-} t_end port node seen=""
  t_end=$(( $(ms_now) + secs * 1000 ))
  while [ "$(ms_now)" -lt "$t_end" ]; do
    if port=$(probe_write "$(probe_url "$(haproxy_port)")") && [ -n "$port" ]; then
      node=$(node_of_port "$port")
      if [ "$node" != "$excl" ]; then echo "$node"; return 0; fi
      if [ -z "$seen" ]; then
        echo "patroni.sh: $excl (the faulted leader) still took a write through HAProxy" >&2
        seen=1
      fi
    fi
    sleep 0.1
  done
  return 1
}

start_cluster() {
  local dir=$1 strict=$2 etcd_n=$3 n t0 l
  t0=$(ms_now)
  ensure_packages patroni python3-etcd etcd-server etcd-client haproxy postgresql-15 || return 1
  for n in $NODES; do
    patroni_pid "$dir" "$n" >/dev/null && die "pg$n already runs in $dir (stop it first)"
  done
  check_ports
  mkdir -p "$dir"; chmod 755 "$dir"
  rm -rf "$dir"/pg[123] "$dir"/etcd[123] "$dir/env" "$dir/fault" "$dir/isolated" \
    "$dir"/fwd[123].* "$dir"/haproxy.* "$dir/start_ms"
  printf 'ETCD_N=%s\nSTRICT=%s\nBASE_PORT=%s\n' "$etcd_n" "$strict" "$BASE_PORT" > "$dir/settings"
  start_etcd "$dir" "$etcd_n" || return 1
  write_forwarder "$dir"
  for n in $NODES; do start_forwarder "$dir" "$n" || return 1; done
  write_post_bootstrap "$dir"
  cat > "$dir/patronictl.yml" <<YML
# patronictl -c this file (scripts/patroni.sh): etcd reached directly.
scope: $SCOPE
namespace: $NAMESPACE
etcd3:
  hosts: $(sed 's,http://,,g' "$dir/etcd_endpoints")
YML
  for n in $NODES; do
    mkdir -p "$dir/pg$n"
    write_patroni_yml "$dir" "$n" "$strict"
    if [ "$(id -u)" -eq 0 ]; then chown -R postgres: "$dir/pg$n"; fi
  done
  for n in $NODES; do start_patroni "$dir" "$n"; done
  wait_healthy "$dir" 180 2 start || return 1
  l=$(leader_of "$dir")
  say "$l leads, $(sync_standby "$dir") is its synchronous standby ($(( $(ms_now) - t0 )) ms)"
  write_haproxy_cfg "$dir"
  start_haproxy "$dir" || return 1
  n=$(wait_write "$dir" 30) || { cat "$dir/haproxy.log" >&2; echo "patroni.sh: no write through HAProxy within 30 s" >&2; return 1; }
  [ "$n" = "$(leader_of "$dir")" ] || { echo "patroni.sh: HAProxy routed a write to $n, not to the leader" >&2; return 1; }
  patronictl_ "$dir" list 2>/dev/null | grep -q "Sync Standby" \
    || { patronictl_ "$dir" list >&2; echo "patroni.sh: patronictl list shows no Sync Standby" >&2; return 1; }
  local u="sqllock:$PASSWORD@127.0.0.1"
  cat > "$dir/env" <<ENV
SQLLOCK_TEST_PATRONI_HAPROXY_URL='postgres://$u:$(haproxy_port)/sqllock_test'
SQLLOCK_TEST_PATRONI_HOSTS_URL='postgresql://$u:$(pg_port 1),127.0.0.1:$(pg_port 2),127.0.0.1:$(pg_port 3)/sqllock_test?target_session_attrs=read-write'
SQLLOCK_TEST_PATRONI_URL1='postgres://$u:$(pg_port 1)/sqllock_test'
SQLLOCK_TEST_PATRONI_URL2='postgres://$u:$(pg_port 2)/sqllock_test'
SQLLOCK_TEST_PATRONI_URL3='postgres://$u:$(pg_port 3)/sqllock_test'
SQLLOCK_TEST_PATRONI_DIR='$dir'
SQLLOCK_TEST_PATRONI_SCRIPT='$SELF'
ENV
  echo "$(( $(ms_now) - t0 ))" > "$dir/start_ms"
  local mode="synchronous_mode"; [ "$strict" = true ] && mode="synchronous_mode_strict"
  say "3 nodes ($mode, $etcd_n etcd member(s)) on 127.0.0.1:$(pg_port 1)-$(pg_port 3), HAProxy 127.0.0.1:$(haproxy_port), leader $n, in $(cat "$dir/start_ms") ms (in $dir)"
}

stop_cluster() {
  local dir=$1 n k pid pids=()
  if pid=$(own_pid "$dir" "$dir/haproxy.pid"); then stop_pid "$pid" TERM 10 "haproxy" || true; fi
  # Every Patroni at once: stopped one by one, the others would fail over.
  for n in $NODES; do
    if pid=$(patroni_pid "$dir" "$n"); then kill -TERM "$pid" 2>/dev/null || true; pids+=("$n:$pid"); fi
  done
  for k in "${pids[@]}"; do
    stop_pid "${k#*:}" TERM 60 "patroni.sh: the Patroni of pg${k%%:*}" || true
  done
  # A postgres whose Patroni was killed (kill-patroni) runs on.
  for n in $NODES; do
    if pid=$(postmaster_pid "$dir" "$n"); then
      stop_pid "$pid" QUIT 20 "patroni.sh: the postgres of pg$n" || true
    fi
  done
  for n in $NODES; do
    if pid=$(own_pid "$dir" "$dir/fwd$n.pid"); then stop_pid "$pid" TERM 10 "forwarder $n" || true; fi
  done
  for k in 1 2 3; do
    if pid=$(own_pid "$dir" "$dir/etcd$k/etcd.pid"); then stop_pid "$pid" TERM 20 "etcd$k" || true; fi
  done
  rm -f "$dir/isolated" "$dir/fault"
}

# record_fault DIR KIND NODE: what wait-leader reads.
record_fault() { echo "$2 $3 $(ms_now)" > "$1/fault"; }

the_leader() {   # the_leader DIR: I of the leader, or dies
  local l
  l=$(leader_of "$1")
  [ -n "$l" ] || die "no leader in $1"
  # Without one, no replica may be promoted (synchronous_mode): the fault
  # leaves the cluster without a leader until the node comes back.
  [ -n "$(sync_standby "$1")" ] ||
    echo "patroni.sh: warning: $l has no synchronous standby now (run wait-sync first); no replica can take over" >&2
  echo "${l#pg}"
}

kill_postgres() {
  local dir=$1 n pid
  n=$(the_leader "$dir")
  pid=$(postmaster_pid "$dir" "$n") || die "the postgres of pg$n does not run"
  kill -KILL "$pid"
  record_fault "$dir" kill-postgres "pg$n"
  say "killed the postmaster of the leader pg$n (pid $pid)"
}

kill_patroni() {
  local dir=$1 n pid
  n=$(the_leader "$dir")
  pid=$(patroni_pid "$dir" "$n") || die "the Patroni of pg$n does not run"
  kill -KILL "$pid"
  record_fault "$dir" kill-patroni "pg$n"
  say "killed the Patroni of the leader pg$n (pid $pid); its postgres runs on"
}

isolate() {
  local dir=$1 n pid
  n=$(the_leader "$dir")
  pid=$(own_pid "$dir" "$dir/fwd$n.pid") || die "the forwarder of pg$n does not run (isolated already?)"
  kill -KILL "$pid"
  for _ in $(seq 1 100); do running "$pid" || break; sleep 0.02; done
  echo "pg$n" > "$dir/isolated"
  record_fault "$dir" isolate "pg$n"
  say "cut the leader pg$n off from etcd"
}

# wait_follows DIR I SECONDS: until node I streams from the leader.
wait_follows() {
  local dir=$1 n=$2 secs=$3 i l
  for i in $(seq 1 $((secs * 5))); do
    l=$(leader_of "$dir")
    if [ -n "$l" ] && [ "$l" != "pg$n" ] &&
       [ "$(psql_su "$dir" "${l#pg}" "SELECT state FROM pg_stat_replication WHERE application_name = 'pg$n'" 2>/dev/null)" = streaming ]; then
      return 0
    fi
    sleep 0.2
  done
  patronictl_ "$dir" list >&2 || true
  die "pg$n does not stream from the leader after $secs s"
}

heal() {
  local dir=$1 node t0
  [ -f "$dir/isolated" ] || { say "no node is cut off"; return 0; }
  node=$(cat "$dir/isolated")
  t0=$(ms_now)
  start_forwarder "$dir" "${node#pg}" || die "the forwarder of $node did not start"
  rm -f "$dir/isolated"
  wait_follows "$dir" "${node#pg}" 120
  wait_healthy "$dir" 60 2 || die "heal: no synchronous standby within 60 s"
  say "$node reaches etcd again and follows $(leader_of "$dir") ($(( $(ms_now) - t0 )) ms)"
}

start_node() {
  local dir=$1 n=$2 t0
  patroni_pid "$dir" "$n" >/dev/null && die "the Patroni of pg$n runs already"
  t0=$(ms_now)
  start_patroni "$dir" "$n"
  wait_follows "$dir" "$n" 120
  wait_healthy "$dir" 60 2 || die "start-node: no synchronous standby within 60 s"
  say "pg$n runs again and follows $(leader_of "$dir") ($(( $(ms_now) - t0 )) ms)"
}

wait_leader() {
  local dir=$1 secs=${2:-60} t0 excl="" kind="" fnode="" fms="" node
  t0=$(ms_now)
  if [ -f "$dir/fault" ]; then
    read -r kind fnode fms < "$dir/fault"
    case "$kind" in kill-patroni|isolate) excl=$fnode ;; esac
  fi
  node=$(wait_write "$dir" "$secs" "$excl") || die "no write through HAProxy within $secs s${excl:+ (not counting $excl)}"
  local t1; t1=$(ms_now)
  rm -f "$dir/fault"
  echo "patroni: $node takes writes through HAProxy after $((t1 - t0)) ms${kind:+, $((t1 - fms)) ms after $kind of $fnode}" >&2
  echo "$((t1 - t0))"
}

switchover() {
  local dir=$1 l s t0 t1 node
  l=$(leader_of "$dir"); s=$(sync_standby "$dir")
  [ -n "$l" ] || die "no leader"
  [ -n "$s" ] || die "the leader $l has no synchronous standby"
  t0=$(ms_now)
  patronictl_ "$dir" switchover --leader "$l" --candidate "$s" --force "$SCOPE" >"$dir/switchover.log" 2>&1 \
    || { cat "$dir/switchover.log" >&2; die "patronictl switchover failed"; }
  node=$(wait_write "$dir" 60 "$l") || die "no write through HAProxy on a new leader within 60 s"
  t1=$(ms_now)
  # Not done before the old leader streams again and a synchronous standby
  # is back: until then no node may be promoted, and a fault would leave
  # the cluster without a leader.
  wait_healthy "$dir" 60 2 || die "switchover: the cluster did not recover its replicas within 60 s"
  echo "patroni: switched over from $l to $node: writes after $((t1 - t0)) ms, synchronous standby $(sync_standby "$dir") and both replicas streaming after $(( $(ms_now) - t0 )) ms" >&2
  echo "$((t1 - t0))"
}

wait_sync() {
  local dir=$1 secs=${2:-60} t0
  t0=$(ms_now)
  wait_healthy "$dir" "$secs" 1 || die "no leader with a synchronous standby within $secs s"
  echo "patroni: $(leader_of "$dir") leads with synchronous standby $(sync_standby "$dir") after $(( $(ms_now) - t0 )) ms" >&2
  echo "$(( $(ms_now) - t0 ))"
}

usage() {
  echo "usage: patroni.sh start DIR [--strict] [--etcd 1|3] | stop|status|leader|switchover DIR" >&2
  echo "       | kill-postgres|kill-patroni|isolate|heal DIR | start-node DIR NODE | wait-leader|wait-sync DIR [TIMEOUT_S]" >&2
  exit 64
}

# DIR may be relative (abs_path, scripts/lib.sh).
[ -z "${2:-}" ] || set -- "$1" "$(abs_path "$2")" "${@:3}"
case "${1:-}" in
  start)
    dir=${2:?usage: patroni.sh start DIR [--strict] [--etcd 1|3]}
    shift 2
    strict=false; etcd_n=1
    while [ $# -gt 0 ]; do
      case "$1" in
        --strict) strict=true ;;
        --etcd) etcd_n=${2:-}; shift
                case "$etcd_n" in 1|3) ;; *) die "--etcd takes 1 or 3, not '$etcd_n'" ;; esac ;;
        *) usage ;;
      esac
      shift
    done
    start_cluster "$dir" "$strict" "$etcd_n" \
      || { echo "patroni.sh: start failed; stopping what started" >&2; stop_cluster "$dir"; exit 1; }
    ;;
  stop)
    stop_cluster "${2:?usage: patroni.sh stop DIR}" ;;
  status)
    settings "${2:?usage: patroni.sh status DIR}"; patronictl_ "$2" list ;;
  leader)
    settings "${2:?usage: patroni.sh leader DIR}"
    l=$(leader_of "$2"); [ -n "$l" ] || die "no leader"; echo "$l" ;;
  switchover)
    settings "${2:?usage: patroni.sh switchover DIR}"; switchover "$2" ;;
  kill-postgres)
    settings "${2:?usage: patroni.sh kill-postgres DIR}"; kill_postgres "$2" ;;
  kill-patroni)
    settings "${2:?usage: patroni.sh kill-patroni DIR}"; kill_patroni "$2" ;;
  isolate)
    settings "${2:?usage: patroni.sh isolate DIR}"; isolate "$2" ;;
  heal)
    settings "${2:?usage: patroni.sh heal DIR}"; heal "$2" ;;
  start-node)
    settings "${2:?usage: patroni.sh start-node DIR NODE}"
    n=$(node_arg "${3:-}")
    start_node "$2" "$n" ;;
  wait-leader)
    settings "${2:?usage: patroni.sh wait-leader DIR [TIMEOUT_S]}"
    wait_leader "$2" "${3:-60}" ;;
  wait-sync)
    settings "${2:?usage: patroni.sh wait-sync DIR [TIMEOUT_S]}"
    wait_sync "$2" "${3:-60}" ;;
  *) usage ;;
esac
