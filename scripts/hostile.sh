#!/usr/bin/env bash
# A PostgreSQL and a MariaDB whose session defaults are the worst a user
# could set (issue 26, DESIGN D5), for the *_hostile test entries
# (tests/hostile_session.sh).
#
#   scripts/hostile.sh start DIR   start both (scripts/servers.sh start DIR,
#                                  on SQLLOCK_HOSTILE_PG_PORT and
#                                  SQLLOCK_HOSTILE_MY_PORT, default: free
#                                  ports), make their defaults hostile, and
#                                  write DIR/env
#   scripts/hostile.sh stop DIR    stop both
#
# The servers are scripts/servers.sh's (users, passwords, the per-unit
# database rights), with these defaults for every session that does not
# set its own:
#
# PostgreSQL (ALTER SYSTEM, so every database and role has them):
#   default_transaction_isolation  'repeatable read' (the role sqllock_ser,
#                                  whose URL is the second one: serializable)
#   search_path                    "$user", public, sqllock_shadow, pg_catalog:
#                                  the schema sqllock_shadow, in template1 and
#                                  so in every database made from it, has a
#                                  function of the name and arguments of each
#                                  pg_catalog function the library calls;
#                                  each raises "sqllock_shadow.F() called".
#                                  Listed before pg_catalog, it wins over it
#                                  for every name not written with its schema
#   timezone                       'Pacific/Chatham' (+12:45 / +13:45)
#   DateStyle, IntervalStyle       'SQL, DMY', 'sql_standard'
#   synchronous_commit             off
#   lock_timeout, statement_timeout 50 ms, 2 s
#   bytea_output                   escape
#   client_encoding                LATIN1 (the database's is UTF8)
#   standard_conforming_strings    off
#   extra_float_digits             -15
#
# MariaDB (SET GLOBAL, for every new session):
#   transaction_isolation          SERIALIZABLE
#   sql_mode                       ORACLE (MariaDB's: ANSI_QUOTES,
#                                  PIPES_AS_CONCAT, IGNORE_SPACE,
#                                  SIMULTANEOUS_ASSIGNMENT and the syntax
#                                  of Oracle's PL/SQL for routines),
#                                  NO_BACKSLASH_ESCAPES,
#                                  HIGH_NOT_PRECEDENCE, REAL_AS_FLOAT,
#                                  ONLY_FULL_GROUP_BY, STRICT_ALL_TABLES,
#                                  NO_ZERO_DATE, NO_ZERO_IN_DATE,
#                                  ERROR_FOR_DIVISION_BY_ZERO,
#                                  NO_AUTO_VALUE_ON_ZERO,
#                                  NO_UNSIGNED_SUBTRACTION
#   time_zone                      '+05:45'
#   autocommit                     0
#   character_set_server, collation latin1, latin1_swedish_ci (the client
#                                  library's default character set then
#                                  applies to a connection that names none)
#   innodb_lock_wait_timeout       1
#
# DIR/env has SQLLOCK_TEST_HOSTILE_URLS (PostgreSQL in repeatable read,
# MariaDB), SQLLOCK_TEST_HOSTILE_SER_URLS (PostgreSQL as sqllock_ser, in
# serializable) and the admin access of scripts/servers.sh
# (SQLLOCK_TEST_HOSTILE_PG_ADMIN, SQLLOCK_TEST_HOSTILE_MYSQL_ADMIN).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=scripts/lib.sh
. "$here/lib.sh"

PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
PASSWORD=sqllock-test

# The pg_catalog functions the library's PostgreSQL statements, functions
# and schema call, with their argument types: the shadow schema has one
# of each.
SHADOWED=(
  "now()" "clock_timestamp()" "statement_timestamp()"
  "set_config(text, text, boolean)" "current_setting(text)"
  "current_setting(text, boolean)" "hashtext(text)"
  "pg_advisory_xact_lock(integer, integer)"
  "pg_advisory_xact_lock_shared(integer, integer)"
  "pg_advisory_xact_lock(bigint)" "pg_try_advisory_xact_lock(integer, integer)"
  "nextval(regclass)" "pg_notify(text, text)" "jsonb_array_elements(jsonb)"
  "string_to_array(text, text)" "cardinality(anyarray)"
  "to_regprocedure(text)" "to_regclass(text)" "pg_backend_pid()"
  "pg_cancel_backend(integer)" "txid_current()"
)

pg_sql() {   # pg_sql DIR DB SQL...: psql as the superuser
  local dir=$1 db=$2 port; shift 2
  port=$(cat "$dir/pg/port")
  as_user postgres "$PG_BIN/psql" -X -q -h "$dir/pg" -p "$port" -U postgres \
    -d "$db" -v ON_ERROR_STOP=1 "$@" >/dev/null
}

shadow_ddl() {
  local f name
  echo "CREATE SCHEMA IF NOT EXISTS sqllock_shadow;"
  echo "GRANT USAGE ON SCHEMA sqllock_shadow TO PUBLIC;"
  for f in "${SHADOWED[@]}"; do
    name=${f%%(*}
    # The return type does not matter: the function only raises. A
    # polymorphic argument needs a polymorphic result.
    case "$f" in
      *anyarray*) ret=anyelement ;;
      *) ret=integer ;;
    esac
    # (Without a polymorphic argument `anyelement` is not allowed.)
    echo "CREATE OR REPLACE FUNCTION sqllock_shadow.$f RETURNS $ret
          LANGUAGE plpgsql AS \$f\$ BEGIN RAISE EXCEPTION
          'sqllock_shadow.$name() called: a function was found through the search_path, not in pg_catalog'; END \$f\$;"
  done
}

start_hostile() {
  local dir=$1 pg_port my_port
  pg_port=$(pick_port SQLLOCK_HOSTILE_PG_PORT)
  my_port=$(pick_port SQLLOCK_HOSTILE_MY_PORT)
  while [ "$my_port" = "$pg_port" ]; do my_port=$(pick_port SQLLOCK_HOSTILE_MY_PORT_UNSET); done
  SQLLOCK_PG_PORT=$pg_port SQLLOCK_MY_PORT=$my_port "$here/servers.sh" start "$dir" >/dev/null

  # PostgreSQL. The shadow schema goes into template1 (the per-unit
  # databases are made from it) and into sqllock_test.
  shadow_ddl > "$dir/shadow.sql"
  chmod 644 "$dir/shadow.sql"
  pg_sql "$dir" template1 -f "$dir/shadow.sql"
  pg_sql "$dir" sqllock_test -f "$dir/shadow.sql"
  pg_sql "$dir" postgres \
    -c "CREATE ROLE sqllock_ser LOGIN CREATEDB PASSWORD '$PASSWORD'" \
    -c "CREATE DATABASE sqllock_ser_test OWNER sqllock_ser" \
    -c "ALTER ROLE sqllock_ser SET default_transaction_isolation = 'serializable'" \
    -c "ALTER SYSTEM SET default_transaction_isolation = 'repeatable read'" \
    -c "ALTER SYSTEM SET search_path = \"\$user\", public, sqllock_shadow, pg_catalog" \
    -c "ALTER SYSTEM SET timezone = 'Pacific/Chatham'" \
    -c "ALTER SYSTEM SET datestyle = 'SQL, DMY'" \
    -c "ALTER SYSTEM SET intervalstyle = 'sql_standard'" \
    -c "ALTER SYSTEM SET synchronous_commit = off" \
    -c "ALTER SYSTEM SET lock_timeout = '50ms'" \
    -c "ALTER SYSTEM SET statement_timeout = '2s'" \
    -c "ALTER SYSTEM SET bytea_output = 'escape'" \
    -c "ALTER SYSTEM SET client_encoding = 'LATIN1'" \
    -c "ALTER SYSTEM SET standard_conforming_strings = off" \
    -c "ALTER SYSTEM SET extra_float_digits = -15" \
    -c "SELECT pg_reload_conf()"

  # MariaDB: the defaults of every session that starts from now on.
  mariadb --no-defaults -S "$dir/my/sock" -u "$(id -un)" -e "
    SET GLOBAL tx_isolation = 'SERIALIZABLE';
    SET GLOBAL sql_mode = 'ORACLE,NO_BACKSLASH_ESCAPES,HIGH_NOT_PRECEDENCE,REAL_AS_FLOAT,ONLY_FULL_GROUP_BY,STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_VALUE_ON_ZERO,NO_UNSIGNED_SUBTRACTION';
    SET GLOBAL time_zone = '+05:45';
    SET GLOBAL autocommit = 0;
    SET GLOBAL character_set_server = 'latin1';
    SET GLOBAL collation_server = 'latin1_swedish_ci';
    SET GLOBAL innodb_lock_wait_timeout = 1;"

  cat > "$dir/hostile.env" <<ENV
SQLLOCK_TEST_HOSTILE_URLS='postgres://sqllock:$PASSWORD@127.0.0.1:$pg_port/sqllock_test mysql://sqllock:$PASSWORD@127.0.0.1:$my_port/sqllock_test'
SQLLOCK_TEST_HOSTILE_SER_URLS='postgres://sqllock_ser:$PASSWORD@127.0.0.1:$pg_port/sqllock_ser_test'
SQLLOCK_TEST_HOSTILE_PG_ADMIN='$PG_BIN;$dir/pg;$pg_port'
SQLLOCK_TEST_HOSTILE_MYSQL_ADMIN='$dir/my/sock'
ENV
  echo "hostile servers: PostgreSQL on 127.0.0.1:$pg_port, MariaDB on 127.0.0.1:$my_port (in $dir)"
}

# DIR may be relative (abs_path, scripts/lib.sh).
[ -z "${2:-}" ] || set -- "$1" "$(abs_path "$2")" "${@:3}"
case "${1:-}" in
  start) start_hostile "${2:?usage: hostile.sh start DIR}" ;;
  stop) "$here/servers.sh" stop "${2:?usage: hostile.sh stop DIR}" ;;
  *) echo "usage: hostile.sh start|stop DIR" >&2; exit 64 ;;
esac
