#!/usr/bin/env bash
# Throwaway database servers for the tests, on loopback, in one directory.
#
#   scripts/servers.sh start DIR    start PostgreSQL and MariaDB under DIR and
#                                   write DIR/env (shell assignments of the
#                                   SQLLOCK_TEST_*_URL variables)
#   scripts/servers.sh stop DIR     stop both (safe to call twice, or after a
#                                   failed start)
#   scripts/servers.sh restart-pg DIR [fast|immediate [DOWN_SECONDS]]
#                                   stop PostgreSQL (`pg_ctl stop -m fast`, or
#                                   `-m immediate`: a crash, no checkpoint) and
#                                   start it again on the same port and data,
#                                   DOWN_SECONDS (0) after the stop; with
#                                   SQLLOCK_SERVERS_DOWN_FILE set, that file
#                                   is created once the server is down
#   scripts/servers.sh restart-my DIR [kill|graceful [DOWN_SECONDS]]
#                                   kill -9 mariadbd (a crash; the default),
#                                   or stop it gracefully (SIGTERM, the
#                                   normal shutdown: clients are
#                                   disconnected, InnoDB flushes its log),
#                                   and start it again on the same port and
#                                   data (DOWN_SECONDS and the file as above)
#   scripts/servers.sh grant-rw DIR grant `sqllock_rw` what DESIGN S2 says
#                                   the library needs at run time, on the
#                                   tables `sqllock init` made in
#                                   sqllock_test (run it after that init);
#                                   and `sqllock_norec` the same but only
#                                   SELECT on sqllock_record (an operator
#                                   whose forced release is refused, C5)
#
# PostgreSQL listens on 127.0.0.1:${SQLLOCK_PG_PORT:-54329} and a unix socket
# in DIR/pg; MariaDB on 127.0.0.1:${SQLLOCK_MY_PORT:-33069} and DIR/my/sock.
# Each gets a database `sqllock_test` owned by user `sqllock` with password
# `sqllock-test`, and the superuser stays available on the unix socket for
# the tests that need it (restarting, killing, granting). Each also has an
# empty target with no sqllock tables, for the tests of SQLLOCK_ENOSCHEMA:
# on PostgreSQL the schema `sqllock_empty` in `sqllock_test` (owned by
# `sqllock`; reach it with `?options=-csearch_path%3Dsqllock_empty`), on
# MariaDB the database `sqllock_empty`, on which `sqllock` has all rights.
# For parallel test runs (SQLLOCK_TEST_DB_PER_UNIT, tests/harness/test_util.h),
# where each test unit makes its own databases <tag>_<unit>_sqllock_test
# (and, on MariaDB, <tag>_<unit>_sqllock_empty), `sqllock` may create
# databases: CREATEDB on PostgreSQL; on MariaDB all rights on the
# databases whose names END with _sqllock_test or _sqllock_empty -- never
# on a name with more after it, so that a URL whose database name has SQL
# appended is refused (test_hostile).
# Each also has a least-privilege user `sqllock_rw` (password
# `sqllock-rw-Kq7v`, in DIR/env as SQLLOCK_TEST_*_RW_URL) with no rights
# on anything until `grant-rw` gives it SELECT, INSERT, UPDATE and DELETE
# on the sqllock tables (and USAGE on PostgreSQL's token sequence): the
# grants docs/databases.md documents, nothing more.
#
# The ports must be free: start fails, saying which, when one is taken.
#
# PostgreSQL refuses to run as root: as root the servers run as the
# `postgres` and `mysql` users that Debian's packages create.
set -euo pipefail
# as_user, running, port_free, ms_now, stop_pid, is_ci (scripts/lib.sh).
# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PG_PORT=${SQLLOCK_PG_PORT:-54329}
MY_PORT=${SQLLOCK_MY_PORT:-33069}
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
PASSWORD=sqllock-test
RW_PASSWORD=sqllock-rw-Kq7v
# A role with the lease rights and only SELECT on the record table: an
# operator whose forced release must be refused (DESIGN C5).
NOREC_PASSWORD=sqllock-norec-T5x


start_pg() {
  local dir=$1/pg
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
  printf '%s\n' "$PASSWORD" > "$1/pgpass.tmp"
  chmod 644 "$1/pgpass.tmp"
  as_user postgres "$PG_BIN/initdb" -D "$dir/data" -U postgres \
    --auth-local=trust --auth-host=scram-sha-256 --pwfile="$1/pgpass.tmp" \
    -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log"; return 1; }
  rm -f "$1/pgpass.tmp"
  echo "$PG_PORT" > "$dir/port"
  run_pg "$1"
  as_user postgres "$PG_BIN/psql" -X -q -h "$dir" -p "$PG_PORT" -U postgres -d postgres \
    -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE sqllock LOGIN CREATEDB PASSWORD '$PASSWORD'" \
    -c "CREATE ROLE sqllock_rw LOGIN PASSWORD '$RW_PASSWORD'" \
    -c "CREATE ROLE sqllock_norec LOGIN PASSWORD '$NOREC_PASSWORD'" \
    -c "CREATE DATABASE sqllock_test OWNER sqllock" >/dev/null
  as_user postgres "$PG_BIN/psql" -X -q -h "$dir" -p "$PG_PORT" -U postgres -d sqllock_test \
    -v ON_ERROR_STOP=1 \
    -c "CREATE SCHEMA sqllock_empty AUTHORIZATION sqllock" >/dev/null
}

# run_pg DIR: starts the PostgreSQL server whose data is in DIR/pg.
run_pg() {
  local dir=$1/pg port; port=$(cat "$1/pg/port")
  as_user postgres "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=400 -c shared_buffers=64MB" \
    start >/dev/null || { cat "$dir/server.log"; return 1; }
}

restart_pg() {   # restart_pg DIR [immediate [DOWN_SECONDS]]
  local dir=$1 mode=${2:-fast} down=${3:-0}
  [ -f "$dir/pg/port" ] || { echo "servers.sh: no PostgreSQL in $dir" >&2; return 1; }
  if [ -f "$dir/pg/data/postmaster.pid" ]; then
    as_user postgres "$PG_BIN/pg_ctl" -D "$dir/pg/data" -m "$mode" -w -t 60 stop >/dev/null
  fi
  # Stopped: tell whoever waits for that ($SQLLOCK_SERVERS_DOWN_FILE).
  if [ -n "${SQLLOCK_SERVERS_DOWN_FILE:-}" ]; then : > "$SQLLOCK_SERVERS_DOWN_FILE"; fi
  sleep "$down"
  run_pg "$dir"
}

start_my() {
  local dir=$1/my user_opt=()
  # A temporary directory of its own: a MariaDB server deletes every
  # '#sql*' file in its tmpdir when it starts, and with the shared /tmp one
  # starting beside another's mariadb-install-db broke that bootstrap
  # ("Error on delete of '/tmp/#sql-temptable-...'").
  mkdir -p "$dir/tmp"
  if [ "$(id -u)" -eq 0 ]; then chown mysql: "$dir" "$dir/tmp"; user_opt=(--user=mysql); fi
  mariadb-install-db --no-defaults "${user_opt[@]}" --datadir="$dir/data" \
    --tmpdir="$dir/tmp" \
    --auth-root-authentication-method=socket --skip-test-db >"$dir/install.log" 2>&1 \
    || { cat "$dir/install.log"; return 1; }
  echo "$MY_PORT" > "$dir/port"
  run_my "$1"
  mariadb --no-defaults -S "$dir/sock" -u "$(id -un)" -e "
    CREATE DATABASE sqllock_test;
    CREATE DATABASE sqllock_empty;
    CREATE USER 'sqllock'@'127.0.0.1' IDENTIFIED BY '$PASSWORD';
    CREATE USER 'sqllock'@'localhost' IDENTIFIED BY '$PASSWORD';
    CREATE USER 'sqllock_rw'@'127.0.0.1' IDENTIFIED BY '$RW_PASSWORD';
    CREATE USER 'sqllock_rw'@'localhost' IDENTIFIED BY '$RW_PASSWORD';
    CREATE USER 'sqllock_norec'@'127.0.0.1' IDENTIFIED BY '$NOREC_PASSWORD';
    CREATE USER 'sqllock_norec'@'localhost' IDENTIFIED BY '$NOREC_PASSWORD';
    GRANT ALL ON sqllock_test.* TO 'sqllock'@'127.0.0.1';
    GRANT ALL ON sqllock_test.* TO 'sqllock'@'localhost';
    GRANT ALL ON sqllock_empty.* TO 'sqllock'@'127.0.0.1';
    GRANT ALL ON sqllock_empty.* TO 'sqllock'@'localhost';
    GRANT ALL ON \`%\_sqllock\_test\`.* TO 'sqllock'@'127.0.0.1';
    GRANT ALL ON \`%\_sqllock\_test\`.* TO 'sqllock'@'localhost';
    GRANT ALL ON \`%\_sqllock\_empty\`.* TO 'sqllock'@'127.0.0.1';
    GRANT ALL ON \`%\_sqllock\_empty\`.* TO 'sqllock'@'localhost';" \
    || { cat "$dir/server.log"; return 1; }
}

# run_my DIR: starts the MariaDB server whose data is in DIR/my, and waits
# until it answers.
run_my() {
  local dir=$1/my user_opt=() port i
  port=$(cat "$dir/port")
  [ "$(id -u)" -eq 0 ] && user_opt=(--user=mysql)
  mariadbd --no-defaults "${user_opt[@]}" --datadir="$dir/data" \
    --tmpdir="$dir/tmp" --socket="$dir/sock" --port="$port" --bind-address=127.0.0.1 \
    --pid-file="$dir/mariadbd.pid" --log-error="$dir/server.log" \
    --innodb-buffer-pool-size=64M --max-connections=400 \
    --skip-name-resolve >/dev/null 2>&1 </dev/null &
  for i in $(seq 1 600); do
    if mariadb-admin --no-defaults -S "$dir/sock" -u "$(id -un)" ping >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.1
  done
  echo "servers.sh: MariaDB did not start in 60 s" >&2
  cat "$dir/server.log" >&2
  return 1
}


# restart_my DIR [kill|graceful]: a crash (kill -9, the default) or a
# graceful stop (SIGTERM: mariadbd's normal shutdown, which ends the
# client connections, flushes InnoDB and removes its pid file), then a
# start. A graceful stop that does not finish in 60 s is a failure: the
# server is then killed, so that the data is not left half-stopped, and
# the command exits non-zero rather than pass a crash off as a graceful
# restart.
restart_my() {   # restart_my DIR [kill|graceful [DOWN_SECONDS]]
  local dir=$1 mode=${2:-kill} down=${3:-0} pid i
  [ -f "$dir/my/port" ] || { echo "servers.sh: no MariaDB in $dir" >&2; return 1; }
  case "$mode" in
    kill|graceful) ;;
    *) echo "servers.sh: restart-my: unknown mode '$mode' (kill or graceful)" >&2; return 64 ;;
  esac
  if [ -f "$dir/my/mariadbd.pid" ]; then
    pid=$(cat "$dir/my/mariadbd.pid")
    if [ "$mode" = graceful ]; then
      if ! stop_pid "$pid" TERM 60 "servers.sh: MariaDB"; then
        rm -f "$dir/my/mariadbd.pid"
        return 1
      fi
    else
      kill -9 "$pid" 2>/dev/null || true
      for i in $(seq 1 100); do running "$pid" || break; sleep 0.1; done
    fi
    rm -f "$dir/my/mariadbd.pid"
  fi
  # Stopped: tell whoever waits for that ($SQLLOCK_SERVERS_DOWN_FILE).
  if [ -n "${SQLLOCK_SERVERS_DOWN_FILE:-}" ]; then : > "$SQLLOCK_SERVERS_DOWN_FILE"; fi
  sleep "$down"
  run_my "$dir"
}

# grant_rw DIR: the run-time grants of DESIGN S2 (docs/databases.md)
# to sqllock_rw, on the tables that `sqllock init` created in sqllock_test.
# Also on sqllock_test_counter, a table of the tests, when it is there.
grant_rw() {
  local dir=$1 port t h
  [ -f "$dir/pg/port" ] || { echo "servers.sh: no PostgreSQL in $dir" >&2; return 1; }
  port=$(cat "$dir/pg/port")
  as_user postgres "$PG_BIN/psql" -X -q -h "$dir/pg" -p "$port" -U postgres -d sqllock_test \
    -v ON_ERROR_STOP=1 \
    -c "GRANT SELECT, INSERT, UPDATE, DELETE ON sqllock_meta, sqllock_lease, sqllock_record, sqllock_row TO sqllock_rw" \
    -c "GRANT USAGE ON SEQUENCE sqllock_token_seq TO sqllock_rw" \
    -c "GRANT SELECT, INSERT, UPDATE, DELETE ON sqllock_meta, sqllock_lease, sqllock_row TO sqllock_norec" \
    -c "GRANT SELECT ON sqllock_record TO sqllock_norec" \
    -c "GRANT USAGE ON SEQUENCE sqllock_token_seq TO sqllock_norec" \
    -c "DO \$\$ BEGIN IF to_regclass('sqllock_test_counter') IS NOT NULL THEN
          GRANT SELECT, INSERT, UPDATE, DELETE ON sqllock_test_counter TO sqllock_rw;
        END IF; END \$\$" >/dev/null
  for t in sqllock_meta sqllock_lease sqllock_token sqllock_record sqllock_row; do
    for h in 127.0.0.1 localhost; do
      mariadb --no-defaults -S "$dir/my/sock" -u "$(id -un)" -e \
        "GRANT SELECT, INSERT, UPDATE, DELETE ON sqllock_test.$t TO 'sqllock_rw'@'$h'"
      if [ "$t" = sqllock_record ]; then
        mariadb --no-defaults -S "$dir/my/sock" -u "$(id -un)" -e \
          "GRANT SELECT ON sqllock_test.$t TO 'sqllock_norec'@'$h'"
      else
        mariadb --no-defaults -S "$dir/my/sock" -u "$(id -un)" -e \
          "GRANT SELECT, INSERT, UPDATE, DELETE ON sqllock_test.$t TO 'sqllock_norec'@'$h'"
      fi
    done
  done
}


stop_all() {
  local dir=$1
  if [ -f "$dir/pg/data/postmaster.pid" ]; then
    as_user postgres "$PG_BIN/pg_ctl" -D "$dir/pg/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  if [ -f "$dir/my/mariadbd.pid" ]; then
    stop_pid "$(cat "$dir/my/mariadbd.pid")" TERM 30 "servers.sh: MariaDB" || true
  fi
}

# DIR may be relative (abs_path, scripts/lib.sh).
[ -z "${2:-}" ] || set -- "$1" "$(abs_path "$2")" "${@:3}"
case "${1:-}" in
  start)
    dir=${2:?usage: servers.sh start DIR}
    mkdir -p "$dir"; chmod 755 "$dir"
    [ -n "$PG_BIN" ] || { echo "servers.sh: PostgreSQL server binaries not found" >&2; exit 1; }
    for p in "$PG_PORT" "$MY_PORT"; do
      port_free "$p" || { echo "servers.sh: port $p on 127.0.0.1 is taken (a server left behind?); set SQLLOCK_PG_PORT / SQLLOCK_MY_PORT to free ports" >&2; exit 1; }
    done
    start_pg "$dir"
    start_my "$dir"
    cat > "$dir/env" <<ENV
SQLLOCK_TEST_PG_URL='postgres://sqllock:$PASSWORD@127.0.0.1:$PG_PORT/sqllock_test'
SQLLOCK_TEST_MYSQL_URL='mysql://sqllock:$PASSWORD@127.0.0.1:$MY_PORT/sqllock_test'
SQLLOCK_TEST_PG_RW_URL='postgres://sqllock_rw:$RW_PASSWORD@127.0.0.1:$PG_PORT/sqllock_test'
SQLLOCK_TEST_MYSQL_RW_URL='mysql://sqllock_rw:$RW_PASSWORD@127.0.0.1:$MY_PORT/sqllock_test'
SQLLOCK_TEST_PG_NOREC_URL='postgres://sqllock_norec:$NOREC_PASSWORD@127.0.0.1:$PG_PORT/sqllock_test'
SQLLOCK_TEST_MYSQL_NOREC_URL='mysql://sqllock_norec:$NOREC_PASSWORD@127.0.0.1:$MY_PORT/sqllock_test'
SQLLOCK_TEST_PG_ADMIN='$PG_BIN;$dir/pg;$PG_PORT'
SQLLOCK_TEST_MYSQL_ADMIN='$dir/my/sock'
SQLLOCK_TEST_SERVERS_DIR='$dir'
ENV
    echo "servers: PostgreSQL on 127.0.0.1:$PG_PORT, MariaDB on 127.0.0.1:$MY_PORT (in $dir)"
    ;;
  stop)
    stop_all "${2:?usage: servers.sh stop DIR}"
    ;;
  restart-pg)
    restart_pg "${2:?usage: servers.sh restart-pg DIR [immediate [DOWN_SECONDS]]}" "${3:-fast}" "${4:-0}"
    ;;
  restart-my)
    restart_my "${2:?usage: servers.sh restart-my DIR [kill|graceful [DOWN_SECONDS]]}" "${3:-kill}" "${4:-0}"
    ;;
  grant-rw)
    grant_rw "${2:?usage: servers.sh grant-rw DIR}"
    ;;
  *)
    echo "usage: servers.sh start|stop|restart-pg|restart-my|grant-rw DIR" >&2; exit 64 ;;
esac
