#!/usr/bin/env bash
# upgrade.sh -- a database set up by the previous version of sqllock is
# upgraded in place by this one while a client of the previous version
# holds a lease through it (contract S1; issue 19: "a database
# initialised by today's version upgrades in place while clients of the
# old version keep their leases").
#
# usage: tests/upgrade.sh OLD_CLI NEW_CLI WORKDIR URL...
#   OLD_CLI  the `sqllock` tool of the previous version
#   NEW_CLI  this version's
#   URL      one per driver: a SQLite file URL, a PostgreSQL and a MySQL
#            URL whose user may create databases. PostgreSQL and MySQL
#            run in a database of their own, created here ("upgrade_" +
#            the URL's database name) and dropped at the end. The drivers
#            run at the same time.
#
# Per driver, in order:
#   1. the old tool creates the schema (`init`);
#   2. an old `sqllock run` takes a lease with a 2 s ttl and holds it for
#      6 s, renewed by its watchdog every 2/3 s;
#   3. the new tool's `init` upgrades the schema while it holds;
#   4. the old tool's `init` still succeeds on the upgraded database (an
#      old client restarting during a rolling upgrade);
#   5. old and new tools take and release leases there, and the new one
#      runs each of this version's primitives once (EXTRA_NEW_RUNS below);
#   6. the old run exits 0: its lease was held without a break from the
#      grant until its command ended (rule X2 makes it 76 otherwise).
# Exit 0 when every driver passed; 1 with the reason otherwise.
set -euo pipefail

if [ $# -lt 4 ]; then
  echo "usage: $0 OLD_CLI NEW_CLI WORKDIR URL..." >&2
  exit 2
fi
old=$1 new=$2 dir=$3
shift 3
mkdir -p "$dir"

fail() { echo "FAIL (upgrade, $drv): $*" >&2; exit 1; }

# The runs of the new tool that use what this version added; each must
# exit 0 on the upgraded database.
new_runs() {
  local url=$1
  "$new" --db "$url" run upgrade-new --ttl 5s -- true ||
    fail "a new run on the upgraded database"
  if [ "$drv" != galera ]; then
    "$new" --db "$url" run upgrade-rw --shared --ttl 5s -- true ||
      fail "a new shared run (M2) on the upgraded database"
    "$new" --db "$url" run upgrade-rw --exclusive --ttl 5s -- true ||
      fail "a new exclusive run (M2) on the upgraded database"
  fi
  "$new" --db "$url" run upgrade-leader --leader --ttl 5s -- true ||
    fail "a new leader run (M4) on the upgraded database"
  "$new" --db "$url" run upgrade-fair --fair --wait 5s --ttl 5s -- true ||
    fail "a new fair run (M3) on the upgraded database"
  "$new" --db "$url" run upgrade-sem --permits 2 --ttl 5s -- true ||
    fail "a new semaphore run (M1) on the upgraded database"
}

# URL with its database name replaced by NAME (postgres, mysql).
url_with_db() {
  local url=$1 name=$2 base query=""
  case $url in *\?*) query="?${url#*\?}"; url=${url%%\?*} ;; esac
  base=${url%/*}
  printf '%s/%s%s' "$base" "$name" "$query"
}

db_of() { local u=${1%%\?*}; printf '%s' "${u##*/}"; }

# Runs SQL on the server of URL, in its database (postgres: psql, mysql:
# the mariadb client, with the URL's credentials).
admin_sql() {
  local url=$1 sql=$2
  case $url in
    postgres://*|postgresql://*)
      PGOPTIONS=--client-min-messages=warning \
        psql -q -v ON_ERROR_STOP=1 "${url%%\?*}" -c "$sql" >/dev/null ;;
    mysql://*|mariadb://*)
      local rest=${url#*://} auth hostport user pass host port db
      rest=${rest%%\?*}
      auth=${rest%@*}; hostport=${rest##*@}; hostport=${hostport%%/*}
      db=${rest##*/}
      user=${auth%%:*}; pass=${auth#*:}
      host=${hostport%:*}; port=${hostport##*:}
      MYSQL_PWD=$pass mariadb -h "$host" -P "$port" -u "$user" "$db" \
        -e "$sql" ;;
  esac
}

# One driver's steps; run in a subshell of its own.
upgrade_one() {
  local url=$1 drv u name run_pid held rc
  case $url in
    sqlite:*) drv=sqlite
      u="sqlite://$dir/upgrade.db"
      rm -f "$dir"/upgrade.db* ;;
    postgres://*|postgresql://*) drv=postgres
      name="upgrade_$(db_of "$url")"
      admin_sql "$url" "DROP DATABASE IF EXISTS $name"
      admin_sql "$url" "CREATE DATABASE $name"
      u=$(url_with_db "$url" "$name") ;;
    mysql://*|mariadb://*) drv=mysql
      name="upgrade_$(db_of "$url")"
      admin_sql "$url" "DROP DATABASE IF EXISTS \`$name\`"
      admin_sql "$url" "CREATE DATABASE \`$name\`"
      u=$(url_with_db "$url" "$name") ;;
    *) drv=unknown; fail "unknown URL scheme" ;;
  esac

  "$old" --db "$u" init >/dev/null || fail "the old init"
  "$old" --db "$u" run upgrade-old --ttl 2s -- sleep 6 \
    >"$dir/old-run-$drv.out" 2>&1 &
  run_pid=$!
  # Wait until the old run holds.
  held=0
  for _ in $(seq 1 100); do
    if "$new" --db "$u" show upgrade-old >/dev/null 2>&1; then
      held=1
      break
    fi
    sleep 0.1
  done
  [ "$held" = 1 ] || fail "the old run never held its lease"

  "$new" --db "$u" init >"$dir/new-init-$drv.out" 2>&1 ||
    { cat "$dir/new-init-$drv.out" >&2; fail "the new init (upgrade)"; }
  "$old" --db "$u" init >"$dir/old-init-$drv.out" 2>&1 ||
    { cat "$dir/old-init-$drv.out" >&2
      fail "the old init after the upgrade"; }

  # Old and new clients side by side on the upgraded database.
  eval "$("$old" --db "$u" acquire upgrade-pair --ttl 30s --quiet)" ||
    fail "an old acquire after the upgrade"
  rc=0
  "$new" --db "$u" run upgrade-pair --ttl 5s --quiet -- true || rc=$?
  [ "$rc" = 75 ] ||
    fail "a new run on a name an old client holds exited $rc, not 75 (busy)"
  "$old" --db "$u" release upgrade-pair --owner "$SQLLOCK_OWNER" \
    --token "$SQLLOCK_TOKEN" >/dev/null || fail "the old release"
  new_runs "$u"

  rc=0
  wait "$run_pid" || rc=$?
  if [ "$rc" != 0 ]; then
    cat "$dir/old-run-$drv.out" >&2
    fail "the old run exited $rc: its lease did not survive the upgrade"
  fi
  "$new" --db "$u" list --json | grep -q upgrade-old &&
    fail "the old run's lease row is still there after it released"
  echo "upgrade ($drv): schema of the previous version upgraded in place; " \
       "an old client held its lease through it (exit 0), old init, " \
       "acquire and release still work"
  case $drv in
    postgres) admin_sql "$url" "DROP DATABASE IF EXISTS $name" ;;
    mysql) admin_sql "$url" "DROP DATABASE IF EXISTS \`$name\`" ;;
  esac
}

pids=()
for url in "$@"; do
  upgrade_one "$url" &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do
  wait "$p" || status=1
done
exit "$status"
