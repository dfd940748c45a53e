#!/usr/bin/env bash
# A throwaway 3-node MariaDB Galera cluster on loopback, in one directory,
# for tests/test_galera.c (issue 8).
#
#   scripts/galera.sh start DIR         bootstrap node 1, join nodes 2 and 3,
#                                       wait until the cluster has 3 synced
#                                       members, create the test user and
#                                       database, write DIR/env
#   scripts/galera.sh stop DIR          stop every node (safe to call twice,
#                                       or after a failed start)
#   scripts/galera.sh kill-node DIR I   SIGKILL node I (1..3): a crash
#   scripts/galera.sh start-node DIR I  start node I again; it rejoins the
#                                       cluster (IST from a peer's gcache,
#                                       or a full rsync SST) and the command
#                                       returns once it is Synced
#   scripts/galera.sh status DIR        one line per node: pid, cluster
#                                       size, ready, state
#
# Node I (1..3; i = I - 1) listens on
#   SQL                    127.0.0.1:P+i and DIR/nI/sock
#   group communication    127.0.0.1:P+10+i
#   IST                    127.0.0.1:P+20+i
#   SST (rsync)            127.0.0.1:P+30+i
# where P is ${SQLLOCK_GALERA_PORT:-6101} (so by default 6101-6103,
# 6111-6113, 6121-6123, 6131-6133). Every port follows
# SQLLOCK_GALERA_PORT, so two clusters with different values never share
# a port. P is 1024-9966, so that all of them stay below 10000: out of
# Linux's range of ports for outgoing connections (32768-60999), where
# on a machine busy with other tests' connections the local end of one
# of those can hold the port at the moment a joining node binds it (seen
# twice: a joining node's rsync daemon died at once, and a joining node
# that had received its state could not bind its SQL port 33102,
# "Address already in use", when SQL ports were 33101-33103), and out of
# the range scripts/lib.sh's pick_port draws the other fixtures' ports
# from (10000-32767), which may start while the nodes join. Patroni's
# (scripts/patroni.sh) are 7800-7863.
# with its data in DIR/nI/data, its log in DIR/nI/server.log and its whole
# configuration in DIR/nI/my.cnf, read with --defaults-file (so neither
# /etc/mysql nor ~/.my.cnf reach the nodes). The ports must be free: start
# (and start-node) fails, saying which, when one is taken.
#
# Each node has the database `sqllock_test` and the user `sqllock` with
# password `sqllock-test` (DDL and grants replicate). The sqllock schema
# is not created here: the test runs sqllock_init() (or run
# `sqllock init` on SQLLOCK_TEST_GALERA_URL1).
#
# DIR/env holds shell assignments: SQLLOCK_TEST_GALERA_URL1..3 (one node
# each), SQLLOCK_TEST_GALERA_URLS (all three, tried in order),
# SQLLOCK_TEST_GALERA_DIR and SQLLOCK_TEST_GALERA_SCRIPT.
#
# Needs the Debian packages mariadb-server (10.11), galera-4 and rsync. As
# root the nodes run as the `mysql` user that Debian's packages create.
set -euo pipefail
# as_user, running, port_free, ms_now, stop_pid, is_ci (scripts/lib.sh).
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BASE_PORT=${SQLLOCK_GALERA_PORT:-6101}
case "$BASE_PORT" in
  ''|*[!0-9]*) echo "galera.sh: SQLLOCK_GALERA_PORT must be a port number, not '$BASE_PORT'" >&2; exit 64 ;;
esac
if [ "$BASE_PORT" -lt 1024 ] || [ "$BASE_PORT" -gt 9966 ]; then
  echo "galera.sh: SQLLOCK_GALERA_PORT must be in 1024-9966 (the nodes' ports are it to it + 32, all below 10000)" >&2
  exit 64
fi
GCOMM_BASE=$((BASE_PORT + 10))
IST_BASE=$((BASE_PORT + 20))
SST_BASE=$((BASE_PORT + 30))
PROVIDER=/usr/lib/galera/libgalera_smm.so
PASSWORD=sqllock-test
CLUSTER_ADDRESS="gcomm://127.0.0.1:$GCOMM_BASE,127.0.0.1:$((GCOMM_BASE + 1)),127.0.0.1:$((GCOMM_BASE + 2))"
SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")

die() { echo "galera.sh: $*" >&2; exit 1; }



node_ports() {   # node_ports I: "sql gcomm ist sst"
  local i=$(($1 - 1))
  echo "$((BASE_PORT + i)) $((GCOMM_BASE + i)) $((IST_BASE + i)) $((SST_BASE + i))"
}

check_ports() {  # check_ports I...: fails naming the first taken port
  local n p
  for n in "$@"; do
    for p in $(node_ports "$n"); do
      port_free "$p" || die "port $p on 127.0.0.1 (node $n) is taken (a node left behind? run '$0 stop DIR'); set SQLLOCK_GALERA_PORT to move all of them"
    done
  done
}


node_pid() {     # node_pid DIR I: the pid of a running node, or fails
  local f=$1/n$2/mariadbd.pid pid
  [ -f "$f" ] || return 1
  pid=$(cat "$f" 2>/dev/null) || return 1
  [ -n "$pid" ] && running "$pid" && echo "$pid"
}

# sql DIR I STATEMENTS: runs statements as the superuser on node I's socket.
sql() {
  local dir=$1 n=$2; shift 2
  mariadb --no-defaults -S "$dir/n$n/sock" -u "$(id -un)" -N -B -e "$*"
}

# wsrep DIR I VAR: one wsrep status variable of node I ("" when down).
wsrep() {
  sql "$1" "$2" "SHOW GLOBAL STATUS LIKE '$3'" 2>/dev/null | awk '{ print $2 }'
}

write_cnf() {    # write_cnf DIR I
  local dir=$1 n=$2 nd=$1/n$2 user_line="" sqlp gcp istp sstp
  read -r sqlp gcp istp sstp <<<"$(node_ports "$n")"
  [ "$(id -u)" -eq 0 ] && user_line="user = mysql"
  cat > "$nd/my.cnf" <<CNF
# Node $n of the sqllock test cluster (scripts/galera.sh). Read alone, with
# --defaults-file: nothing of /etc/mysql applies.
[mariadbd]
$user_line
datadir = $nd/data
tmpdir = $nd/tmp
socket = $nd/sock
port = $sqlp
bind-address = 127.0.0.1
pid-file = $nd/mariadbd.pid
log-error = $nd/server.log
skip-name-resolve
max-connections = 200
innodb-buffer-pool-size = 32M
innodb-log-file-size = 16M
default-storage-engine = InnoDB
binlog-format = ROW
innodb-autoinc-lock-mode = 2
wsrep-on = ON
wsrep-provider = $PROVIDER
wsrep-cluster-name = sqllock_test
wsrep-cluster-address = $CLUSTER_ADDRESS
wsrep-node-name = n$n
wsrep-node-address = 127.0.0.1:$gcp
wsrep-node-incoming-address = 127.0.0.1:$sqlp
wsrep-sst-method = rsync
wsrep-sst-receive-address = 127.0.0.1:$sstp
# Small gcache; a dead peer is declared so within about 3 s (the
# defaults take 5-15 s), so that a killed node costs the others a short
# pause only.
wsrep-provider-options = "gmcast.listen_addr=tcp://127.0.0.1:$gcp;ist.recv_addr=127.0.0.1:$istp;gcache.size=32M;gcache.page_size=16M;evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S;evs.suspect_timeout=PT2S;evs.inactive_timeout=PT3S;evs.install_timeout=PT3S;evs.join_retrans_period=PT0.5S;pc.announce_timeout=PT1S"

[client]
socket = $nd/sock
CNF
}

# run_node DIR I [--wsrep-new-cluster]: starts node I in the background.
run_node() {
  local dir=$1 n=$2; shift 2
  rm -f "$dir/n$n/mariadbd.pid"
  mariadbd --defaults-file="$dir/n$n/my.cnf" "$@" >>"$dir/n$n/stdout.log" 2>&1 </dev/null &
  echo $! > "$dir/n$n/launch.pid"
}

# wait_synced DIR I SECONDS [SIZE]: waits until node I answers, is ready
# and Synced (and, with SIZE, sees a cluster of SIZE). Fails with its log.
wait_synced() {
  local dir=$1 n=$2 secs=$3 size=${4:-} i st ready csize
  for i in $(seq 1 $((secs * 10))); do
    st=$(sql "$dir" "$n" "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state_comment', 'wsrep_cluster_size', 'wsrep_cluster_status')" 2>/dev/null || true)
    ready=$(awk '$1 == "wsrep_ready" { print $2 }' <<<"$st")
    csize=$(awk '$1 == "wsrep_cluster_size" { print $2 }' <<<"$st")
    if [ "$ready" = ON ] && grep -q "wsrep_local_state_comment.Synced" <<<"$st" &&
       grep -q "wsrep_cluster_status.Primary" <<<"$st" &&
       { [ -z "$size" ] || [ "$csize" = "$size" ]; }; then
      return 0
    fi
    # A node that went away (its start failed) is not waited for.
    if ! running "$(cat "$dir/n$n/launch.pid" 2>/dev/null || echo 0)"; then
      echo "galera.sh: node $n exited during its start; its log:" >&2
      tail -n 40 "$dir/n$n/server.log" >&2 || true
      return 1
    fi
    sleep 0.1
  done
  echo "galera.sh: node $n was not Synced${size:+ in a cluster of $size} within $secs s; its state:" >&2
  echo "$st" >&2
  tail -n 40 "$dir/n$n/server.log" >&2 || true
  return 1
}

start_cluster() {
  local dir=$1 n t0 t1 user_opt=()
  t0=$(ms_now)
  [ -x "$PROVIDER" ] || [ -f "$PROVIDER" ] || die "$PROVIDER not found (install galera-4)"
  command -v mariadbd >/dev/null || die "mariadbd not found (install mariadb-server)"
  command -v rsync >/dev/null || die "rsync not found (install rsync; it is the SST method)"
  for n in 1 2 3; do
    node_pid "$dir" "$n" >/dev/null && die "node $n already runs in $dir (stop it first)"
  done
  check_ports 1 2 3
  mkdir -p "$dir"; chmod 755 "$dir"
  for n in 1 2 3; do
    rm -rf "$dir/n$n"
    mkdir -p "$dir/n$n/data" "$dir/n$n/tmp" || return 1
    write_cnf "$dir" "$n" || return 1
    if [ "$(id -u)" -eq 0 ]; then chown -R mysql: "$dir/n$n"; fi
  done
  [ "$(id -u)" -eq 0 ] && user_opt=(--user=mysql)
  # Only node 1 gets a data directory; 2 and 3 receive theirs by SST.
  mariadb-install-db --no-defaults "${user_opt[@]}" --datadir="$dir/n1/data" \
    --tmpdir="$dir/n1/tmp" \
    --auth-root-authentication-method=socket --skip-test-db \
    >"$dir/n1/install.log" 2>&1 || { cat "$dir/n1/install.log" >&2; return 1; }
  # Each step says `|| return 1`: start_cluster runs on the left of ||,
  # where set -e does not stop it (a node that never joined was reported
  # as a started cluster).
  run_node "$dir" 1 --wsrep-new-cluster || return 1
  wait_synced "$dir" 1 60 1 || return 1
  sql "$dir" 1 "
    CREATE DATABASE sqllock_test;
    CREATE USER 'sqllock'@'127.0.0.1' IDENTIFIED BY '$PASSWORD';
    CREATE USER 'sqllock'@'localhost' IDENTIFIED BY '$PASSWORD';
    GRANT ALL ON sqllock_test.* TO 'sqllock'@'127.0.0.1';
    GRANT ALL ON sqllock_test.* TO 'sqllock'@'localhost';" \
    || { tail -n 40 "$dir/n1/server.log" >&2; return 1; }
  t1=$(ms_now)
  echo "galera: node 1 bootstrapped in $((t1 - t0)) ms"
  # One joiner at a time: node 1 is the only donor until node 2 is synced.
  run_node "$dir" 2 || return 1
  wait_synced "$dir" 2 120 2 || return 1
  run_node "$dir" 3 || return 1
  wait_synced "$dir" 3 120 3 || return 1
  for n in 1 2 3; do wait_synced "$dir" "$n" 30 3 || return 1; done
  local u="sqllock:$PASSWORD@127.0.0.1"
  cat > "$dir/env" <<ENV
SQLLOCK_TEST_GALERA_URL1='mysql://$u:$BASE_PORT/sqllock_test'
SQLLOCK_TEST_GALERA_URL2='mysql://$u:$((BASE_PORT + 1))/sqllock_test'
SQLLOCK_TEST_GALERA_URL3='mysql://$u:$((BASE_PORT + 2))/sqllock_test'
SQLLOCK_TEST_GALERA_URLS='mysql://$u:$BASE_PORT,127.0.0.1:$((BASE_PORT + 1)),127.0.0.1:$((BASE_PORT + 2))/sqllock_test'
SQLLOCK_TEST_GALERA_DIR='$dir'
SQLLOCK_TEST_GALERA_SCRIPT='$SELF'
ENV
  echo "$(( $(ms_now) - t0 ))" > "$dir/start_ms"
  echo "galera: 3 nodes synced on 127.0.0.1:$BASE_PORT-$((BASE_PORT + 2)) in $(cat "$dir/start_ms") ms (in $dir)"
}

# kill_node DIR I: SIGKILL, then waits until the process is gone and its
# ports are closed.
kill_node() {
  local dir=$1 n=$2 pid i t0
  t0=$(ms_now)
  pid=$(node_pid "$dir" "$n") || die "node $n does not run in $dir"
  kill -9 "$pid"
  for i in $(seq 1 200); do running "$pid" || break; sleep 0.05; done
  running "$pid" && die "node $n (pid $pid) still runs 10 s after SIGKILL"
  rm -f "$dir/n$n/mariadbd.pid"
  kill_sst_helpers "$dir" "$n"
  echo "galera: node $n (pid $pid) killed in $(( $(ms_now) - t0 )) ms"
}

# An rsync daemon that an SST left behind on node I (its pid file is in
# the node's data directory).
kill_sst_helpers() {
  local f pid
  for f in "$1/n$2/data/rsync_sst.pid"; do
    [ -f "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    if [ -n "$pid" ] && running "$pid" &&
       grep -q rsync "/proc/$pid/comm" 2>/dev/null; then
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
}

start_node() {
  local dir=$1 n=$2 t0 i p
  [ -f "$dir/n$n/my.cnf" ] || die "no node $n in $dir (run start first)"
  node_pid "$dir" "$n" >/dev/null && die "node $n already runs"
  t0=$(ms_now)
  # Right after a kill the kernel may still hold the ports for a moment.
  for i in $(seq 1 100); do
    local busy=""
    for p in $(node_ports "$n"); do port_free "$p" || busy=$p; done
    [ -z "$busy" ] && break
    sleep 0.1
  done
  check_ports "$n"
  run_node "$dir" "$n"
  wait_synced "$dir" "$n" 120
  echo "galera: node $n rejoined (Synced, cluster size $(wsrep "$dir" "$n" wsrep_cluster_size)) in $(( $(ms_now) - t0 )) ms"
}

stop_cluster() {
  local dir=$1 n pid
  for n in 3 2 1; do
    [ -f "$dir/n$n/mariadbd.pid" ] || { kill_sst_helpers "$dir" "$n"; continue; }
    pid=$(cat "$dir/n$n/mariadbd.pid" 2>/dev/null || true)
    stop_pid "$pid" TERM 30 "galera.sh: node $n" || true
    rm -f "$dir/n$n/mariadbd.pid"
    kill_sst_helpers "$dir" "$n"
  done
}

status() {
  local dir=$1 n pid
  for n in 1 2 3; do
    if pid=$(node_pid "$dir" "$n"); then
      printf 'node %d: pid %s, port %s, cluster size %s, ready %s, %s, %s\n' \
        "$n" "$pid" "$((BASE_PORT + n - 1))" \
        "$(wsrep "$dir" "$n" wsrep_cluster_size)" \
        "$(wsrep "$dir" "$n" wsrep_ready)" \
        "$(wsrep "$dir" "$n" wsrep_cluster_status)" \
        "$(wsrep "$dir" "$n" wsrep_local_state_comment)"
    else
      printf 'node %d: down\n' "$n"
    fi
  done
}

node_arg() {
  case "${1:-}" in 1|2|3) ;; *) die "the node is 1, 2 or 3, not '${1:-}'" ;; esac
}

# DIR may be relative (abs_path, scripts/lib.sh).
[ -z "${2:-}" ] || set -- "$1" "$(abs_path "$2")" "${@:3}"
case "${1:-}" in
  start)
    dir=${2:?usage: galera.sh start DIR}
    start_cluster "$dir" || { echo "galera.sh: start failed; stopping what started" >&2; stop_cluster "$dir"; exit 1; }
    ;;
  stop)
    stop_cluster "${2:?usage: galera.sh stop DIR}"
    ;;
  kill-node)
    node_arg "${3:-}"
    kill_node "${2:?usage: galera.sh kill-node DIR I}" "$3"
    ;;
  start-node)
    node_arg "${3:-}"
    start_node "${2:?usage: galera.sh start-node DIR I}" "$3"
    ;;
  status)
    status "${2:?usage: galera.sh status DIR}"
    ;;
  *)
    echo "usage: galera.sh start|stop|status DIR | kill-node|start-node DIR I" >&2; exit 64 ;;
esac
