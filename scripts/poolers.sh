#!/usr/bin/env bash
# Connection poolers for the tests (issue 14), on loopback, in one
# directory, in front of the PostgreSQL that scripts/servers.sh started.
#
#   scripts/poolers.sh start DIR SERVERS_DIR
#       start, each with its own config file under DIR:
#       - PgBouncer in transaction mode (pool_size 4),
#       - a second one, alike, for the pooled_* runs of the contract suites
#         (SQLLOCK_TEST_POOLER_URLS), so that test_pooler's restart of the
#         first never cuts them off and both can run at once,
#       - PgBouncer in session mode (pool_size 24; and a database
#         `sqllock_tight` with a pool of 1 and `sqllock_pair` with a pool
#         of 2, for the connection budget),
#       - pgpool-II in raw mode and in streaming-replication mode (one
#         backend: the primary),
#       all for the database sqllock_test as user sqllock (PgBouncer
#       also for any other database, by the same name on the server:
#       the pooled_* tests' own), and write
#       DIR/env (shell assignments of the SQLLOCK_TEST_POOLER_* variables)
#   scripts/poolers.sh restart-pgbouncer DIR [tx|session [DOWN_SECONDS]]
#       stop the transaction-mode PgBouncer (SIGINT: it closes every
#       connection at once), or the session-mode one (SIGTERM), and start
#       it again on the
#       same port, DOWN_SECONDS (0) after the stop; with
#       SQLLOCK_SERVERS_DOWN_FILE set, that file is created once it is down
#   scripts/poolers.sh stop DIR
#       stop them all (safe to call twice, or after a failed start)
#
# Ports are free ones picked at random unless SQLLOCK_PGBOUNCER_PORT
# (transaction; session is the next one) and SQLLOCK_PGPOOL_PORT (raw;
# streaming mode and the two PCP ports follow) are set.
#
# PgBouncer refuses to run as root: as root both run as `postgres`.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

PASSWORD=sqllock-test


# pgbouncer_conf DIR NAME PORT MODE PGPORT EXTRA_DB_LINES
pgbouncer_conf() {
  local dir=$1 name=$2 port=$3 mode=$4 pgport=$5 extra=$6
  cat > "$dir/$name.ini" <<CONF
[databases]
sqllock_test = host=127.0.0.1 port=$pgport dbname=sqllock_test
$extra
; Any other database of the same name on the server: each pooled_* test
; entry works in a database of its own (SQLLOCK_TEST_DB_PER_UNIT).
* = host=127.0.0.1 port=$pgport
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = scram-sha-256
auth_file = $dir/users.txt
pool_mode = $mode
default_pool_size = 4
max_client_conn = 400
logfile = $dir/$name.log
pidfile = $dir/$name.pid
ignore_startup_parameters = extra_float_digits
server_login_retry = 1
CONF
}

run_pgbouncer() {   # run_pgbouncer DIR NAME
  local dir=$1 name=$2 port i
  port=$(awk '$1 == "listen_port" { print $3 }' "$dir/$name.ini")
  as_user postgres pgbouncer -d "$dir/$name.ini" >/dev/null
  for i in $(seq 1 100); do
    port_free "$port" || return 0
    sleep 0.05
  done
  echo "poolers.sh: PgBouncer ($name) did not listen on $port" >&2
  cat "$dir/$name.log" >&2
  return 1
}

stop_pid_file() {   # stop_pid_file FILE SIGNAL: signal, wait up to 10 s
  local f=$1 sig=$2 pid
  [ -f "$f" ] || return 0
  pid=$(tr -cd "0-9" < "$f" 2>/dev/null) || return 0
  [ -n "$pid" ] || return 0
  stop_pid "$pid" "$sig" 10 "poolers.sh: $f" || true
  rm -f "$f"
}

# pgpool_conf DIR NAME MODE PORT PCPPORT PGPORT
pgpool_conf() {
  local dir=$1 name=$2 mode=$3 port=$4 pcp=$5 pgport=$6
  mkdir -p "$dir/$name"
  cat > "$dir/$name/pgpool.conf" <<CONF
backend_clustering_mode = '$mode'
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir/$name'
pcp_listen_addresses = ''
pcp_port = $pcp
pcp_socket_dir = '$dir/$name'
backend_hostname0 = '127.0.0.1'
backend_port0 = $pgport
backend_weight0 = 1
backend_flag0 = 'ALWAYS_PRIMARY|DISALLOW_TO_FAILOVER'
enable_pool_hba = off
pool_passwd = '$dir/pool_passwd'
num_init_children = 32
max_pool = 1
logdir = '$dir/$name'
pid_file_name = '$dir/$name/pgpool.pid'
health_check_period = 0
sr_check_period = 0
failover_on_backend_error = off
load_balance_mode = off
connection_cache = on
log_destination = 'stderr'
CONF
  : > "$dir/$name/pcp.conf"
}

run_pgpool() {   # run_pgpool DIR NAME
  local dir=$1 name=$2 port i
  port=$(awk -F' = ' '$1 == "port" { print $2 }' "$dir/$name/pgpool.conf")
  as_user postgres pgpool -n -f "$dir/$name/pgpool.conf" -F "$dir/$name/pcp.conf" \
    >"$dir/$name/pgpool.log" 2>&1 </dev/null &
  for i in $(seq 1 200); do
    port_free "$port" || return 0
    sleep 0.05
  done
  echo "poolers.sh: pgpool-II ($name) did not listen on $port" >&2
  cat "$dir/$name/pgpool.log" >&2
  return 1
}

other_port() {   # other_port "TAKEN...": a free port not among them
  local p
  while :; do
    p=$(pick_port SQLLOCK_POOLERS_PORT_UNSET)
    case " $1 " in *" $p "*) ;; *) echo "$p"; return 0 ;; esac
  done
}

start_all() {
  local dir=$1 srv=$2 pgport tx se raw sr pcp1 pcp2 txp base
  [ -f "$srv/pg/port" ] || { echo "poolers.sh: no PostgreSQL in $srv (scripts/servers.sh start first)" >&2; return 1; }
  pgport=$(cat "$srv/pg/port")
  mkdir -p "$dir"; chmod 755 "$dir"
  tx=$(pick_port SQLLOCK_PGBOUNCER_PORT)
  raw=$(pick_port SQLLOCK_PGPOOL_PORT)
  se=$(other_port "$tx $raw")
  sr=$(other_port "$tx $raw $se")
  pcp1=$(other_port "$tx $raw $se $sr")
  pcp2=$(other_port "$tx $raw $se $sr $pcp1")
  txp=$(other_port "$tx $raw $se $sr $pcp1 $pcp2")
  # The password in plain text: PgBouncer and pgpool-II then answer the
  # client's SCRAM themselves and log in to the server with it.
  printf '"sqllock" "%s"\n' "$PASSWORD" > "$dir/users.txt"
  printf 'sqllock:TEXT%s\n' "$PASSWORD" > "$dir/pool_passwd"
  pgbouncer_conf "$dir" pgbouncer-tx "$tx" transaction "$pgport" ""
  pgbouncer_conf "$dir" pgbouncer-pooled "$txp" transaction "$pgport" ""
  pgbouncer_conf "$dir" pgbouncer-session "$se" session "$pgport" \
    "sqllock_tight = host=127.0.0.1 port=$pgport dbname=sqllock_test pool_size=1
sqllock_pair = host=127.0.0.1 port=$pgport dbname=sqllock_test pool_size=2"
  sed -i 's/^default_pool_size = 4$/default_pool_size = 24/' "$dir/pgbouncer-session.ini"
  pgpool_conf "$dir" pgpool-raw raw "$raw" "$pcp1" "$pgport"
  pgpool_conf "$dir" pgpool-sr streaming_replication "$sr" "$pcp2" "$pgport"
  chmod 600 "$dir/users.txt" "$dir/pool_passwd"
  [ "$(id -u)" -eq 0 ] && chown -R postgres: "$dir"
  run_pgbouncer "$dir" pgbouncer-tx
  run_pgbouncer "$dir" pgbouncer-pooled
  run_pgbouncer "$dir" pgbouncer-session
  run_pgpool "$dir" pgpool-raw
  run_pgpool "$dir" pgpool-sr
  base="postgres://sqllock:$PASSWORD@127.0.0.1"
  cat > "$dir/env" <<ENV
SQLLOCK_TEST_POOLERS_DIR='$dir'
SQLLOCK_TEST_PGBOUNCER_TX_URL='$base:$tx/sqllock_test?pooler=transaction&listen_host=127.0.0.1&listen_port=$pgport'
SQLLOCK_TEST_PGBOUNCER_TX_POLL_URL='$base:$tx/sqllock_test?pooler=transaction'
SQLLOCK_TEST_PGBOUNCER_UNDECLARED_URL='$base:$tx/sqllock_test'
SQLLOCK_TEST_PGBOUNCER_SESSION_URL='$base:$se/sqllock_test?pooler=session'
SQLLOCK_TEST_PGBOUNCER_TIGHT_URL='$base:$se/sqllock_tight?pooler=session'
SQLLOCK_TEST_PGBOUNCER_PAIR_URL='$base:$se/sqllock_pair?pooler=session'
SQLLOCK_TEST_PGPOOL_RAW_URL='$base:$raw/sqllock_test'
SQLLOCK_TEST_PGPOOL_SR_URL='$base:$sr/sqllock_test?pooler=pgpool&listen_host=127.0.0.1&listen_port=$pgport'
SQLLOCK_TEST_PGPOOL_SR_POLL_URL='$base:$sr/sqllock_test?pooler=pgpool'
SQLLOCK_TEST_PGPOOL_SR_UNDECLARED_URL='$base:$sr/sqllock_test'
SQLLOCK_TEST_POOLER_URLS='$base:$txp/sqllock_test?pooler=transaction&listen_host=127.0.0.1&listen_port=$pgport $base:$se/sqllock_test?pooler=session'
ENV
  echo "poolers: PgBouncer transaction on $tx (and $txp for the pooled_* runs), session on $se; pgpool-II raw on $raw, streaming on $sr (in $dir)"
}

stop_all() {
  local dir=$1
  stop_pid_file "$dir/pgbouncer-tx.pid" INT
  stop_pid_file "$dir/pgbouncer-pooled.pid" INT
  stop_pid_file "$dir/pgbouncer-session.pid" INT
  stop_pid_file "$dir/pgpool-raw/pgpool.pid" INT
  stop_pid_file "$dir/pgpool-sr/pgpool.pid" INT
}

# DIR and SERVERS_DIR may be relative (abs_path, scripts/lib.sh).
[ -z "${2:-}" ] || set -- "$1" "$(abs_path "$2")" "${@:3}"
if [ "${1:-}" = start ] && [ -n "${3:-}" ]; then
  set -- "$1" "$2" "$(abs_path "$3")" "${@:4}"
fi
case "${1:-}" in
  start)
    start_all "${2:?usage: poolers.sh start DIR SERVERS_DIR}" \
              "${3:?usage: poolers.sh start DIR SERVERS_DIR}" ;;
  restart-pgbouncer)
    dir=${2:?usage: poolers.sh restart-pgbouncer DIR [tx|session [DOWN_SECONDS]]}
    # SIGINT shuts a transaction pooler down once its transactions end;
    # a session pooler would wait for its sessions: SIGTERM, at once.
    case "${3:-tx}" in
      tx) which=pgbouncer-tx sig=INT ;;
      session) which=pgbouncer-session sig=TERM ;;
      *) echo "poolers.sh: restart-pgbouncer: tx or session, not '$3'" >&2; exit 64 ;;
    esac
    stop_pid_file "$dir/$which.pid" "$sig"
    if [ -n "${SQLLOCK_SERVERS_DOWN_FILE:-}" ]; then : > "$SQLLOCK_SERVERS_DOWN_FILE"; fi
    sleep "${4:-0}"
    run_pgbouncer "$dir" "$which" ;;
  stop)
    stop_all "${2:?usage: poolers.sh stop DIR}" ;;
  *)
    echo "usage: poolers.sh start DIR SERVERS_DIR | restart-pgbouncer DIR [tx|session [DOWN_SECONDS]] | stop DIR" >&2
    exit 64 ;;
esac
