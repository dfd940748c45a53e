#!/usr/bin/env bash
# tests/checks/secrets_cli.sh TOOL SERVERS_SCRIPT -- DESIGN C4 through the built tool, on
# PostgreSQL and MariaDB (ctest: check_secrets_cli): no password in the
# tool's output whatever fails, in `run`'s arguments or its command's
# environment, or in the servers' logs; the URL from --db-file and
# $SQLLOCK_DB(_FILE); a MySQL option file's password. tests/test_secrets.c
# does the same from C, with a password that has '@', ':' and '/' in it.
set -euo pipefail
tool=$1 servers=$2
. "$(dirname "$0")/common.sh"
check_need_servers secrets_cli
# The schema, and sqllock_rw's grants (S2), which some cases use.
"$tool" --db "$SQLLOCK_TEST_PG_URL" init >/dev/null
if [ -n "${SQLLOCK_TEST_MYSQL_URL:-}" ]; then
  "$tool" --db "$SQLLOCK_TEST_MYSQL_URL" init >/dev/null
fi
"$servers" grant-rw "$SQLLOCK_TEST_SERVERS_DIR"

# No password in the tool's output (stdout and stderr), whatever fails.
# Each case runs `sqllock` and fails the run when the URL's password
# shows, or when the exit code (or, given, the message) is not the
# expected one.
echo "== passwords stay out of messages, \`sqllock list\` and the server logs"
cli=$tool
leak_pw=Zx9-LeakCheck-Q4w      # a password found nowhere else
owner_pw=sqllock-test          # the owner's (servers.sh)
rw_pw=sqllock-rw-Kq7v          # sqllock_rw's (servers.sh)
closed_port=$(pick_port SQLLOCK_TEST_CLOSED_PORT)   # nothing listens there
leak_n=0
leak_check() {   # leak_check LABEL EXIT TEXT PASSWORD ARGS...
  local label=$1 want=$2 text=$3 pw=$4 rc=0 out="$check_work/leak.out"
  shift 4
  "$cli" "$@" >"$out" 2>&1 </dev/null || rc=$?
  if grep -qF -- "$pw" "$out"; then
    cat "$out"; echo "FAIL: password shown: $label" >&2; exit 1
  fi
  if [ "$rc" != "$want" ]; then
    cat "$out"; echo "FAIL: $label: exit $rc, want $want" >&2; exit 1
  fi
  if [ -n "$text" ] && ! grep -qiE -- "$text" "$out"; then
    cat "$out"; echo "FAIL: $label: no /$text/ in the output" >&2; exit 1
  fi
  leak_n=$((leak_n + 1))
}
for db in pg my; do
  if [ "$db" = pg ]; then
    scheme=postgres port=$check_pg_port
    empty="/sqllock_test?options=-csearch_path%3Dsqllock_empty"
  else
    [ -n "${SQLLOCK_TEST_MYSQL_URL:-}" ] || continue
    scheme=mysql port=$check_my_port empty=/sqllock_empty
  fi
  h="127.0.0.1"
  leak_check "$scheme wrong port" 69 "connect" "$leak_pw" \
    --db "$scheme://sqllock:$leak_pw@$h:$closed_port/sqllock_test" list
  leak_check "$scheme wrong password" 69 "" "$leak_pw" \
    --db "$scheme://sqllock:$leak_pw@$h:$port/sqllock_test" list
  leak_check "$scheme bad port number" 64 "port" "$leak_pw" \
    --db "$scheme://sqllock:$leak_pw@$h:99999/sqllock_test" list
  leak_check "$scheme missing tables" 69 "init" "$owner_pw" \
    --db "$scheme://sqllock:$owner_pw@$h:$port$empty" list
  leak_check "$scheme acquire" 0 "" "$owner_pw" \
    --db "$scheme://sqllock:$owner_pw@$h:$port/sqllock_test" \
    acquire leak-check-$$ --ttl 60s --holder "leak check"
  leak_check "$scheme list" 0 "leak-check-$$" "$owner_pw" \
    --db "$scheme://sqllock:$owner_pw@$h:$port/sqllock_test" list
  leak_check "$scheme list --json" 0 "leak-check-$$" "$owner_pw" \
    --db "$scheme://sqllock:$owner_pw@$h:$port/sqllock_test" list --json
  leak_check "$scheme init (shows the URL)" 0 "schema ready" "$owner_pw" \
    --db "$scheme://sqllock:$owner_pw@$h:$port/sqllock_test" init
  leak_check "$scheme list as sqllock_rw" 0 "leak-check-$$" "$rw_pw" \
    --db "$scheme://sqllock_rw:$rw_pw@$h:$port/sqllock_test" list
  leak_check "$scheme reap as sqllock_rw" 0 "reaped" "$rw_pw" \
    --db "$scheme://sqllock_rw:$rw_pw@$h:$port/sqllock_test" reap
  # init on a current schema only reads its version row: allowed with
  # the run-time grants (an application calls it at every start).
  leak_check "$scheme init as sqllock_rw, schema current" 0 "schema ready" "$rw_pw" \
    --db "$scheme://sqllock_rw:$rw_pw@$h:$port/sqllock_test" init
  # What S2 leaves out is refused: exit 69, the database's reason, no
  # password. (PostgreSQL: the search_path names only a schema the user
  # may not create in; MariaDB: no access to that database.)
  leak_check "$scheme init as sqllock_rw, no schema (refused)" 69 "denied|no schema" "$rw_pw" \
    --db "$scheme://sqllock_rw:$rw_pw@$h:$port$empty" init
  # (PostgreSQL: no USAGE on that schema, so its tables are not found;
  # MariaDB: no access to that database.)
  leak_check "$scheme empty target as sqllock_rw (refused)" 69 "denied|does not exist" "$rw_pw" \
    --db "$scheme://sqllock_rw:$rw_pw@$h:$port$empty" list
done
# libpq also takes the password as a query parameter, '@' and all, and
# decodes the parameter's name. (The bad port makes the message quote
# the URL: tests/fuzz/regress/url has these redaction bugs.)
leak_check "postgres password= with '@' in the query" 64 "port" "LeakCheck" \
  --db "postgres://sqllock@127.0.0.1:99999/sqllock_test?password=Zx9@LeakCheck" list
leak_check "postgres pass%77ord= in the query" 64 "port" "$leak_pw" \
  --db "postgres://sqllock@127.0.0.1:99999/sqllock_test?pass%77ord=$leak_pw" list
leak_check "postgres password= in the query, wrong password" 69 "" "$leak_pw" \
  --db "postgres://sqllock@127.0.0.1:$check_pg_port/sqllock_test?password=$leak_pw" list
leak_check "unknown scheme" 64 "scheme" "$leak_pw" \
  --db "nosuch://sqllock:$leak_pw@127.0.0.1/x" list
# The servers saw these passwords too: their logs must not keep them.
if grep -rqF -e "$leak_pw" -e "LeakCheck" "$SQLLOCK_TEST_SERVERS_DIR/pg/server.log" "$SQLLOCK_TEST_SERVERS_DIR/my/server.log" 2>/dev/null; then
  echo "FAIL: a password is in the servers' logs" >&2; exit 1
fi
echo "passwords: $leak_n cases, no password in the tool's output or the server logs"

# ---- Issue 14 (credentials kept secret, DESIGN C4) -------------------
# The URL from --db-file and $SQLLOCK_DB(_FILE), hostile URLs, and what
# `run` shows: its command prints its own environment and sqllock's
# arguments (/proc/$PPID/cmdline), which must not hold the password.
# Each tool starts with `env -i`, so that the test URLs this script
# exports are not mistaken for a leak. tests/test_secrets.c does the
# same from C, with a password that has '@', ':' and '/' in it.
echo "== credentials: --db-file, \$SQLLOCK_DB, run's arguments and its command's environment"
creds_n=0
creds_check() {   # creds_check LABEL EXIT PASSWORD CMD...
  local label=$1 want=$2 pw=$3 rc=0 out="$check_work/creds.out"
  shift 3
  "$@" >"$out" 2>&1 </dev/null || rc=$?
  if grep -qF -- "$pw" "$out"; then
    cat "$out"; echo "FAIL: password shown: $label" >&2; exit 1
  fi
  if [ "$rc" != "$want" ]; then
    cat "$out"; echo "FAIL: $label: exit $rc, want $want" >&2; exit 1
  fi
  creds_n=$((creds_n + 1))
}
clean=(env -i "PATH=$PATH")
show='env; tr "\0" " " < /proc/$PPID/cmdline'
# A directory whose name cannot hold the owner's password, sqllock-test
# (scripts/test.sh's own directory, sqllock-test.XXXXXX, would): the
# path shows in the command line.
creds_dir=$(mktemp -d "${TMPDIR:-/tmp}/c4.XXXXXX")
creds_file="$creds_dir/creds.url"
leak_file="$creds_dir/creds-leak.url"
for db in pg my; do
  if [ "$db" = pg ]; then
    scheme=postgres port=$check_pg_port
  else
    [ -n "${SQLLOCK_TEST_MYSQL_URL:-}" ] || continue
    scheme=mysql port=$check_my_port
  fi
  url="$scheme://sqllock:$owner_pw@127.0.0.1:$port/sqllock_test"
  (umask 077; printf '\n  %s\n' "$url" > "$creds_file")
  (umask 077; printf '%s\n' "$scheme://sqllock:$leak_pw@127.0.0.1:$port/sqllock_test" > "$leak_file")
  creds_check "$scheme run --db: argv, environment" 0 "$owner_pw" \
    "${clean[@]}" "$cli" --db "$url" run "creds-$$" --ttl 10s -- sh -c "$show"
  creds_check "$scheme run --db= after run" 0 "$owner_pw" \
    "${clean[@]}" "$cli" run "creds-$$" "--db=$url" --ttl 10s -- sh -c "$show"
  creds_check "$scheme run \$SQLLOCK_DB" 0 "$owner_pw" \
    "${clean[@]}" "SQLLOCK_DB=$url" "$cli" run "creds-$$" --ttl 10s -- sh -c "$show"
  creds_check "$scheme run --db-file" 0 "$owner_pw" \
    "${clean[@]}" "$cli" --db-file "$creds_file" run "creds-$$" --ttl 10s -- sh -c "$show"
  creds_check "$scheme run \$SQLLOCK_DB_FILE" 0 "$owner_pw" \
    "${clean[@]}" "SQLLOCK_DB_FILE=$creds_file" "$cli" run "creds-$$" --ttl 10s -- sh -c "$show"
  creds_check "$scheme --db-file, wrong password" 69 "$leak_pw" \
    "${clean[@]}" "$cli" --db-file "$leak_file" list
  creds_check "$scheme \$SQLLOCK_DB, wrong password" 69 "$leak_pw" \
    "${clean[@]}" "SQLLOCK_DB=$scheme://sqllock:$leak_pw@127.0.0.1:$port/sqllock_test" "$cli" list
  creds_check "$scheme unescaped '@' in the password" 69 "LeakCheck" \
    "${clean[@]}" "$cli" --db "$scheme://sqllock:Zx9@LeakCheck-Q4w@127.0.0.1:$port/sqllock_test" list
  creds_check "$scheme ?pwd= (unknown parameter)" 64 "$leak_pw" \
    "${clean[@]}" "$cli" --db "$scheme://sqllock@127.0.0.1:$port/sqllock_test?pwd=$leak_pw" list
  creds_check "$scheme ?secret= (unknown parameter)" 64 "$leak_pw" \
    "${clean[@]}" "$cli" --db "$scheme://sqllock@127.0.0.1:$port/sqllock_test?secret=$leak_pw" list
  # --export-db hands the URL over: the check that fails the other way.
  if ! "${clean[@]}" "$cli" --db "$url" run "creds-$$" --ttl 10s --export-db \
       -- sh -c 'printf "%s\n" "$SQLLOCK_DB"' 2>&1 | grep -qxF -- "$url"; then
    echo "FAIL: $scheme run --export-db: the command did not get SQLLOCK_DB" >&2; exit 1
  fi
  creds_n=$((creds_n + 1))
done
rm -rf "$creds_dir"
echo "credentials: $creds_n cases, no password in run's arguments, its command's environment or the tool's output"

# ------------------------------------------------------------------
# Issue 14: a password from a MySQL option file stays out of the tool's
# output and the server's log as well (leak_check, above).
# ------------------------------------------------------------------
if [ -n "${SQLLOCK_TEST_MYSQL_URL:-}" ]; then
  opt_pw=Zx9-OptFileLeak-P3c     # a password found nowhere else
  printf '[client]\nuser = sqllock\npassword = "%s"\n' "$opt_pw" > "$check_work/leak.cnf"
  printf 'password = %s\n[client]\n' "$opt_pw" > "$check_work/leak-bad.cnf"
  chmod 600 "$check_work/leak.cnf" "$check_work/leak-bad.cnf"
  leak_n=0
  leak_check "mysql option file, wrong password" 69 "denied" "$opt_pw" \
    --db "mysql://127.0.0.1:$check_my_port/sqllock_test?option_file=$check_work/leak.cnf" list
  leak_check "mysql option file, option before [client]" 64 "line 1" "$opt_pw" \
    --db "mysql://127.0.0.1:$check_my_port/sqllock_test?option_file=$check_work/leak-bad.cnf" list
  if grep -qF -e "$opt_pw" "$SQLLOCK_TEST_SERVERS_DIR/my/server.log" 2>/dev/null; then
    echo "FAIL: an option file's password is in the server's log" >&2; exit 1
fi
echo "option files: $leak_n cases, no password in the tool's output or the server log"
fi

for d in $check_drivers; do check_report secrets_cli "$d"; done
