#!/usr/bin/env bash
# Quick start, command 2: the whole test suite, on SQLite, PostgreSQL and
# MySQL/MariaDB.
#
# Installs what it needs (apt-get, only what is missing), starts a
# throwaway PostgreSQL and MariaDB on loopback with scripts/servers.sh in a
# temporary directory (stopped again on exit, also when a test fails), then
# builds three trees and runs the tests with ctest, in parallel (-j
# SQLLOCK_TEST_JOBS; each test entry in a database of its own,
# SQLLOCK_TEST_DB_PER_UNIT): every test plain and under AddressSanitizer +
# UndefinedBehaviorSanitizer, the tests in which threads run (ctest label
# `threads`) under ThreadSanitizer, and every test binary of the plain
# build under valgrind (label `valgrind`); it checks that a consumer
# builds against the installed package. Every one of those runs covers
# all three databases. At the end (also after a failure) it prints each
# stage's time. For the replication tests it also starts a 3-node MariaDB
# Galera cluster (scripts/galera.sh) and lets test_failover build a
# PostgreSQL primary and synchronous standby (scripts/pgrepl.sh), all on
# loopback in the same temporary directory. Among the ctest entries are
# the checks of tests/checks (the conformance suite as a user with only
# SELECT/INSERT/UPDATE/DELETE on the sqllock tables, DESIGN S2; no
# password in the tool's output, C4); and it runs the libFuzzer targets
# of tests/fuzz (built with clang) for a bounded time each. Any failure stops it with a non-zero
# exit; at the end it prints `drivers tested: ...`, the drivers whose
# tests really ran.
#
# Environment:
#   SQLLOCK_TEST_PG_URL     a PostgreSQL of your own, e.g.
#                           postgres://u:pw@host:5432/db
#   SQLLOCK_TEST_MYSQL_URL  a MySQL/MariaDB of your own, e.g.
#                           mysql://u:pw@host:3306/db
#                           With either set, no servers are started and only
#                           the URLs given are tested. The user needs CREATE
#                           on its database (for sqllock_init); for the
#                           missing-schema tests also a schema (PostgreSQL)
#                           or database (MySQL) `sqllock_empty` it may drop
#                           and create -- without it those tests skip.
#   SQLLOCK_TEST_URLS       the full, space-separated URL list, overriding
#                           all of the above (no servers are started)
#   SQLLOCK_TEST_REQUIRE    comma-separated drivers that must be tested
#                           (default: every driver with a URL); a required
#                           driver that did not run fails the run
#   CI                      set and not empty, 0 or false (CI=true, CI=1;
#                           scripts/ci.sh's is_ci, the tests' tu_ci()):
#                           sqlite,postgres,mysql are always required, and
#                           a test that cannot run here fails instead of
#                           skipping
#   SQLLOCK_TEST_QUICK=1    only the plain build and its tests (the checks
#                           of tests/checks among them) and the package
#                           check
#   SQLLOCK_UPGRADE_FROM    the commit whose tool sets up the database of
#                           the upgrade-in-place stage (tests/upgrade.sh;
#                           default f6f7f58, the last before issue 19)
#   SQLLOCK_FUZZ_SECONDS    seconds each libFuzzer target runs (default 30;
#                           0 builds them and replays their corpus only)
#   SQLLOCK_TEST_JOBS       tests ctest runs at once (default: 3 per core,
#                           for the tests mostly wait on the databases and
#                           their own timers); 1 with your own servers,
#                           unless SQLLOCK_TEST_DB_PER_UNIT is set
#   SQLLOCK_TEST_DB_PER_UNIT
#                           1: each test entry uses a database of its own,
#                           made on demand (tests/harness/test_util.h);
#                           always so with the servers started here. With your own
#                           servers the user then needs CREATEDB
#                           (PostgreSQL) or CREATE on `<db>\_%` (MySQL).
#   SQLLOCK_PG_PORT, SQLLOCK_MY_PORT
#                           ports for the servers started here (default:
#                           free ports picked at random); a taken port fails
#   SQLLOCK_TEST_SERVERS_DIR, SQLLOCK_TEST_SERVERS_SCRIPT
#                           set by this script (any value you had is
#                           dropped): the servers it started, whose
#                           superuser test_secrets uses; with your own
#                           servers test_restart skips (and fails under
#                           CI)
#   SQLLOCK_TEST_OWN_SERVERS_DIR
#                           set by this script: a second PostgreSQL and
#                           MariaDB (scripts/servers.sh) on which the
#                           tests that crash their server (test_restart,
#                           test_runfault's C3) run, through
#                           tests/own_servers.sh, so that the others run
#                           meanwhile
#   SQLLOCK_TEST_PGREPL_DIR, SQLLOCK_TEST_PGREPL_SCRIPT,
#   SQLLOCK_TEST_GALERA_DIR, SQLLOCK_TEST_GALERA_SCRIPT
#                           the same for test_failover and test_galera
#   SQLLOCK_TEST_HOSTILE_DIR
#                           set by this script: the hostile-session
#                           PostgreSQL and MariaDB (scripts/hostile.sh)
#                           of the *_hostile entries; with your own
#                           servers they skip (and fail under CI)
#   SQLLOCK_TEST_POOLERS_DIR, SQLLOCK_TEST_POOLERS_SCRIPT
#                           the same for test_pooler and the pooled_* runs
#                           (scripts/poolers.sh: PgBouncer and pgpool-II in
#                           front of the PostgreSQL started here); with
#                           your own servers they skip (and fail under
#                           CI)
#   SQLLOCK_PGREPL_PORT1, SQLLOCK_PGREPL_PORT2, SQLLOCK_GALERA_PORT
#                           ports of the replicated fixtures (default: free
#                           ports for PostgreSQL; 6101-6133 for Galera,
#                           SQL on SQLLOCK_GALERA_PORT and the 2 above,
#                           replication 10, 20 and 30 above those)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. scripts/lib.sh
. scripts/stages.sh
stages_tmp=$(mktemp "${TMPDIR:-/tmp}/sqllock-stages.XXXXXX")
stages_init "$stages_tmp"
# Until cleanup() takes over (below, once there is something to stop):
# the stage table on any exit, also when installing fails.
early_exit() {
  local rc=$?
  if [ "$rc" = 0 ]; then stage_end; else stage_end "FAILED($rc)"; fi
  stages_table
  rm -f "$stages_tmp"
  exit "$rc"
}
trap early_exit EXIT
cat <<'SAY'
== scripts/test.sh: what it does to this machine
   installs with apt-get (through sudo when not root) what is missing of
   the build tools and client libraries, PostgreSQL 15, MariaDB and
   galera-4, PgBouncer, pgpool-II, Patroni, etcd, HAProxy, Redis,
   valgrind, clang, Python 3 with pytest and the database clients
   (docs/testing.md lists them; Debian starts the services of the server
   packages it installs, as it always does -- the tests never use them);
   starts its own servers on 127.0.0.1, each in a temporary directory with
   its own configuration (PostgreSQL, MariaDB, a 3-node Galera cluster,
   PgBouncer, pgpool-II, TLS servers; Redis for the benchmark's smoke
   run; test_patroni its Patroni cluster with etcd and HAProxy, and
   test_galnet its Galera clusters in network namespaces of its own,
   10.213.7.0/24), and stops them when it exits.
SAY
stage "install packages"
ensure_packages "${BUILD_PACKAGES[@]}" libcmocka-dev valgrind faketime jq \
  postgresql mariadb-server galera-4 rsync iproute2 libpq-dev \
  default-libmysqlclient-dev pgbouncer pgpool2 man-db \
  libhiredis-dev redis-server python3 python3-pytest \
  python3-psycopg2 python3-psycopg python3-mysqldb python3-venv dpkg-dev \
  python3-prometheus-client \
  patroni python3-etcd etcd-server etcd-client haproxy
# The Go binding (bindings/go): Debian's Go and the database/sql drivers
# its guard tests use, offline. The Node.js one (bindings/node): node, npm
# (the registry, for pg and mysql2) and the N-API headers -- NodeSource's
# nodejs has all three; Debian's splits them.
ensure_packages golang-go pkg-config golang-github-jackc-pgx-v4-dev \
  golang-github-go-sql-driver-mysql-dev golang-github-mattn-go-sqlite3-dev
command -v node >/dev/null || ensure_packages nodejs
command -v npm >/dev/null || ensure_packages npm
[ -f /usr/include/node/node_api.h ] || ensure_packages libnode-dev
if [ "${SQLLOCK_TEST_QUICK:-0}" != 1 ]; then
  # The fuzz stage: clang with libFuzzer and the sanitizer runtimes.
  ensure_packages clang libclang-rt-dev
fi

jobs="$(nproc)"
start=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/sqllock-test.XXXXXX")
chmod 755 "$work"
srv=""
srv_own=""
galera=""
pgrepl=""
poolers=""
tls=""
hostile=""

# Background jobs (fixtures that start while the trees build): bg NAME
# CMD... runs CMD with its output in $work/NAME.log and its time in the
# stage table; bg_wait NAME waits for it and fails the run, showing the
# log, when it failed. The job writes its exit status to $work/NAME.rc,
# and bg_wait reads it from there: bash forgets a finished job's status
# once it forks a child that gets the same pid, and with pid_max 32768 a
# run of 25 minutes wraps the pids (CI once saw "wait: pid ... is not a
# child of this shell" for the fuzz job, 1300 s after it ended).
declare -A bg_pids=()
bg() {
  local name=$1; shift
  rm -f "$work/$name.rc"
  # CMD in a subshell of its own: a function that fails with `exit`
  # (run_ctest) must end CMD, not this job before it writes its status.
  ( stage_bg_begin "$name"; rc=0; ( "$@" ) >"$work/$name.log" 2>&1 || rc=$?
    stage_bg_end "$name" "$rc"; echo "$rc" >"$work/$name.rc.tmp"
    mv "$work/$name.rc.tmp" "$work/$name.rc"; exit "$rc" ) &
  bg_pids[$name]=$!
}
# Waits until job NAME has written its status (or is gone without one).
bg_done() {
  local name=$1 pid=${bg_pids[$1]}
  wait "$pid" 2>/dev/null || true
  while [ ! -e "$work/$name.rc" ] && kill -0 "$pid" 2>/dev/null; do
    sleep 1
  done
}
# bg_unnice NAME: job NAME and all it has started back at the normal
# priority. A job built with `niced` yields the CPU to the foreground
# stage; once the foreground only waits for it, it must not yield to a
# neighbour instead: with two CPU-bound loops at nice 0 beside a run, the
# niced sanitizer trees got about 1% of the machine and still built half
# an hour after the plain stage had ended (issue 28 item 5). A process
# started after its parent was reniced inherits the new priority. (Only
# root may lower a niceness; elsewhere this changes nothing.)
bg_unnice() {
  local pids=${bg_pids[$1]:-} next p
  while [ -n "$pids" ]; do
    # shellcheck disable=SC2086
    renice -n 0 -p $pids >/dev/null 2>&1 || true
    next=""
    for p in $pids; do
      next="$next $({ pgrep -P "$p" || true; } | tr '\n' ' ')"
    done
    pids=$(echo $next)
  done
}
bg_wait() {
  local name=$1 rc
  bg_unnice "$name"
  bg_done "$name"
  rc=$(cat "$work/$name.rc" 2>/dev/null) || rc="no status (the job was killed)"
  unset -v 'bg_pids[$name]'
  cat "$work/$name.log"
  if [ "$rc" != 0 ]; then
    echo "FAIL: $name (exit $rc)" >&2
    exit 1
  fi
}

cleanup() {
  local rc=$? name
  if [ "$rc" = 0 ]; then stage_end; else stage_end "FAILED($rc)"; fi
  stage "stop servers"
  # A fixture still starting in the background (the run failed before
  # it was waited for) finishes starting first, so that the stop below
  # finds all it started.
  for name in "${!bg_pids[@]}"; do
    echo "waiting for \"$name\" to finish before stopping it"
    bg_done "$name"
  done
  if [ -n "$galera" ]; then
    scripts/galera.sh stop "$galera" || true
    echo "Galera cluster stopped"
  fi
  if [ -n "$pgrepl" ]; then
    scripts/pgrepl.sh stop "$pgrepl" || true
  fi
  if [ -n "$poolers" ]; then
    scripts/poolers.sh stop "$poolers" || true
    echo "poolers stopped"
  fi
  if [ -n "$hostile" ]; then   # issue 26's hostile-session servers
    scripts/hostile.sh stop "$hostile" || true
  fi
  if [ -n "$tls" ]; then     # issue 14's TLS servers (see "TLS servers")
    scripts/tls.sh stop "$tls" || true
  fi
  if [ -n "$srv_own" ]; then
    scripts/servers.sh stop "$srv_own" || true
  fi
  if [ -n "$srv" ]; then
    scripts/servers.sh stop "$srv" || true
    echo "servers stopped"
  fi
  stage_end
  stages_table
  if [ -n "$cpu_summary" ]; then
    echo "== CPU of the ctest stages"
    printf '%s' "$cpu_summary"
  fi
  rm -rf "$work" "$stages_tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------------
# The databases
# ------------------------------------------------------------------

# The mysql driver is built only when its source is there.
cmake_driver_args=()
have_mysql=1
if [ ! -f drivers/mysql/mysql.c ]; then
  have_mysql=0
  cmake_driver_args+=(-DSQLLOCK_WITH_MYSQL=OFF)
  echo "WARNING: drivers/mysql/mysql.c does not exist: the mysql driver is not built or tested" >&2
fi

# test_restart crashes the servers in SQLLOCK_TEST_SERVERS_DIR, and
# test_failover and test_galera the replicated ones: only ever the ones
# started below, never servers that someone else may be using.
unset SQLLOCK_TEST_SERVERS_DIR SQLLOCK_TEST_SERVERS_SCRIPT \
      SQLLOCK_TEST_OWN_SERVERS_DIR \
      SQLLOCK_TEST_POOLERS_DIR SQLLOCK_TEST_POOLERS_SCRIPT \
      SQLLOCK_TEST_POOLER_URLS \
      SQLLOCK_TEST_PGREPL_DIR SQLLOCK_TEST_PGREPL_SCRIPT \
      SQLLOCK_TEST_GALERA_DIR SQLLOCK_TEST_GALERA_SCRIPT
if [ -n "${SQLLOCK_TEST_URLS:-}" ]; then
  echo "== testing the URLs in SQLLOCK_TEST_URLS (no servers started)"
elif [ -n "${SQLLOCK_TEST_PG_URL:-}" ] || [ -n "${SQLLOCK_TEST_MYSQL_URL:-}" ]; then
  echo "== testing your own servers (SQLLOCK_TEST_PG_URL / SQLLOCK_TEST_MYSQL_URL; none started)"
  SQLLOCK_TEST_URLS="sqlite://$work/locks.db ${SQLLOCK_TEST_PG_URL:-}"
  if [ "$have_mysql" = 1 ]; then
    SQLLOCK_TEST_URLS="$SQLLOCK_TEST_URLS ${SQLLOCK_TEST_MYSQL_URL:-}"
  fi
else
  stage "start PostgreSQL and MariaDB"
  echo "== starting PostgreSQL and MariaDB in $work/srv"
  pg_port=$(pick_port SQLLOCK_PG_PORT)
  my_port=$(pick_port SQLLOCK_MY_PORT)
  while [ "$my_port" = "$pg_port" ]; do my_port=$(pick_port SQLLOCK_MY_PORT); done
  srv="$work/srv"
  SQLLOCK_PG_PORT=$pg_port SQLLOCK_MY_PORT=$my_port scripts/servers.sh start "$srv"
  # shellcheck disable=SC1091
  . "$srv/env"
  export SQLLOCK_TEST_PG_URL SQLLOCK_TEST_MYSQL_URL SQLLOCK_TEST_PG_ADMIN \
         SQLLOCK_TEST_MYSQL_ADMIN SQLLOCK_TEST_SERVERS_DIR
  export SQLLOCK_TEST_SERVERS_SCRIPT="$root/scripts/servers.sh"
  SQLLOCK_TEST_URLS="sqlite://$work/locks.db $SQLLOCK_TEST_PG_URL"
  # Issue 14: PgBouncer (transaction and session mode) and pgpool-II (raw
  # and streaming-replication mode) in front of that PostgreSQL, for
  # test_pooler and the pooled_* runs of the contract and exclusion
  # suites (tests/pooled.sh).
  stage "start poolers"
  echo "== starting PgBouncer and pgpool-II in $work/poolers"
  poolers="$work/poolers"
  scripts/poolers.sh start "$poolers" "$srv"
  export SQLLOCK_TEST_POOLERS_DIR="$poolers"
  export SQLLOCK_TEST_POOLERS_SCRIPT="$root/scripts/poolers.sh"
  if [ "$have_mysql" = 1 ]; then
    SQLLOCK_TEST_URLS="$SQLLOCK_TEST_URLS $SQLLOCK_TEST_MYSQL_URL"
  fi
  # Issue 8's replicated fixtures. test_failover builds its primary and
  # standby itself, in $pgrepl, once per scenario (sync, async): it kills
  # the primary each time. The Galera cluster starts once here; test_galera
  # kills a node and starts it again.
  # They start in the background, while the trees build (bg_wait below).
  if [ "$have_mysql" = 1 ]; then
    echo "== starting a 3-node MariaDB Galera cluster in $work/galera (in the background)"
    galera="$work/galera"
    bg "start Galera" scripts/galera.sh start "$galera"
    export SQLLOCK_TEST_GALERA_DIR="$galera"
    export SQLLOCK_TEST_GALERA_SCRIPT="$root/scripts/galera.sh"
  fi
  # The tests that crash and restart their server (test_restart,
  # test_runfault's C3) do it to a PostgreSQL and a MariaDB of their own
  # (tests/own_servers.sh reads their URLs from $srv_own/env), so that
  # every other test can run meanwhile.
  echo "== starting a PostgreSQL and a MariaDB for the restart tests in $work/srv-own (in the background)"
  srv_own="$work/srv-own"
  own_pg_port=$(pick_port SQLLOCK_OWN_PG_PORT_UNSET)
  own_my_port=$(pick_port SQLLOCK_OWN_MY_PORT_UNSET)
  while [ "$own_my_port" = "$own_pg_port" ]; do own_my_port=$(pick_port SQLLOCK_OWN_MY_PORT_UNSET); done
  bg "start the restart tests' servers" env SQLLOCK_PG_PORT="$own_pg_port" \
    SQLLOCK_MY_PORT="$own_my_port" scripts/servers.sh start "$srv_own"
  export SQLLOCK_TEST_OWN_SERVERS_DIR="$srv_own"
  pgrepl="$work/pgrepl"
  SQLLOCK_PGREPL_PORT1=$(pick_port SQLLOCK_PGREPL_PORT1)
  if [ -n "${SQLLOCK_PGREPL_PORT2:-}" ]; then
    SQLLOCK_PGREPL_PORT2=$(pick_port SQLLOCK_PGREPL_PORT2)
  else
    SQLLOCK_PGREPL_PORT2=$SQLLOCK_PGREPL_PORT1
    while [ "$SQLLOCK_PGREPL_PORT2" = "$SQLLOCK_PGREPL_PORT1" ]; do
      SQLLOCK_PGREPL_PORT2=$(pick_port SQLLOCK_PGREPL_PORT_UNSET)
    done
  fi
  export SQLLOCK_PGREPL_PORT1 SQLLOCK_PGREPL_PORT2
  export SQLLOCK_TEST_PGREPL_DIR="$pgrepl"
  export SQLLOCK_TEST_PGREPL_SCRIPT="$root/scripts/pgrepl.sh"
fi
export SQLLOCK_TEST_URLS

# ------------------------------------------------------------------
# TLS servers (issue 14): test_tls and test_autocommit
# ------------------------------------------------------------------
# scripts/tls.sh makes a test CA and starts a PostgreSQL and a MariaDB
# with TLS (own data, ports and configuration, beside the main servers;
# the MariaDB with autocommit off, for test_autocommit) once for every
# stage below, in $work/tls, and cleanup() stops them. Only with the
# servers started here: with your own (SQLLOCK_TEST_*_URL, or
# SQLLOCK_TEST_URLS) the TLS server tests skip, and fail under CI.
# SQLLOCK_TLS_PG_PORT and SQLLOCK_TLS_MY_PORT choose their ports (default:
# free ones at random).
unset SQLLOCK_TEST_TLS_DIR
ensure_packages openssl
if [ -n "$srv" ]; then
  echo "== starting PostgreSQL and MariaDB with TLS in $work/tls (in the background)"
  tls="$work/tls"
  bg "start TLS servers" scripts/tls.sh start "$tls"
  export SQLLOCK_TEST_TLS_DIR="$tls"
fi

# ------------------------------------------------------------------
# Hostile-session servers (issue 26, DESIGN D5): a PostgreSQL and a
# MariaDB whose session defaults are the worst a user could set
# (scripts/hostile.sh: repeatable read and serializable, a search_path
# that shadows pg_catalog's functions, odd sql_mode, time zone and
# character set, autocommit off, short timeouts). The *_hostile entries
# of the plain build (the "hostile ctest" stage, beside the TSan one)
# run the contract, rw, kinds, sem, fair, leader, many, guard, rowlock,
# optimistic, borrow and session units on them
# (tests/hostile_session.sh); the sanitizer stages leave them out (label
# hostile): the code paths are the plain entries', and their time is
# the budget's. Only with the servers started here, as the TLS servers.
# ------------------------------------------------------------------
unset SQLLOCK_TEST_HOSTILE_DIR
if [ -n "$srv" ]; then
  echo "== starting the hostile-session PostgreSQL and MariaDB in $work/hostile (in the background)"
  hostile="$work/hostile"
  bg "start hostile-session servers" scripts/hostile.sh start "$hostile"
  export SQLLOCK_TEST_HOSTILE_DIR="$hostile"
fi
# ------------------------------------------------------------------

driver_of() {
  case "$1" in
    sqlite:*) echo sqlite ;;
    postgres:*|postgresql:*) echo postgres ;;
    mysql:*|mariadb:*) echo mysql ;;
    *) echo unknown ;;
  esac
}
with_urls=""
for u in $SQLLOCK_TEST_URLS; do with_urls="$with_urls $(driver_of "$u")"; done
if [ -z "${SQLLOCK_TEST_REQUIRE:-}" ]; then
  SQLLOCK_TEST_REQUIRE=$(echo $with_urls | tr ' ' '\n' | sort -u | paste -sd, -)
fi
if is_ci; then
  SQLLOCK_TEST_REQUIRE="$SQLLOCK_TEST_REQUIRE,sqlite,postgres,mysql"
fi
SQLLOCK_TEST_REQUIRE=$(echo "$SQLLOCK_TEST_REQUIRE" | tr ', ' '\n\n' | grep -v '^$' | sort -u | paste -sd, -)
export SQLLOCK_TEST_REQUIRE
echo "required drivers: $SQLLOCK_TEST_REQUIRE"
for d in ${SQLLOCK_TEST_REQUIRE//,/ }; do
  case " $with_urls " in
    *" $d "*) ;;
    *) echo "FAIL: driver $d is required (SQLLOCK_TEST_REQUIRE${CI:+, CI=$CI}) but has no URL to test" >&2; exit 1 ;;
  esac
done

# check_report FILE LABEL DIR [ctest selection args...]: every ctest
# entry of that selection in the tree DIR tested each of its required
# drivers. An entry's drivers are its SQLLOCK_TEST_DRIVER, else its
# driver labels (test_restart: postgres and mysql); each test binary
# writes "ENTRY DRIVER" into FILE (SQLLOCK_TEST_REPORT, tests/harness)
# once that driver's group passed with no case skipped, ENTRY being the
# entry's SQLLOCK_TEST_UNIT. An entry that passed without reporting one
# of its required drivers fails the run; one that ctest shows as skipped
# (exit 77: a driver without a URL, a case that could not run here) is a
# warning, and under CI a failure (there a skip already fails the test).
# Prints which drivers were tested.
entries_jq='
.tests[] | (.properties // []) as $p
| ([$p[] | select(.name == "ENVIRONMENT") | .value[]]) as $env
| ([$p[] | select(.name == "LABELS") | .value[]]) as $labels
| ([$env[] | select(startswith("SQLLOCK_TEST_UNIT="))
   | sub("^SQLLOCK_TEST_UNIT="; "")] | first // "") as $unit
| ([$env[] | select(startswith("SQLLOCK_TEST_DRIVER="))
   | sub("^SQLLOCK_TEST_DRIVER="; "")] | first // "") as $drv
| [.name, $unit,
   (if $drv != "" then $drv
    else [$labels[] | select(. == "sqlite" or . == "postgres" or . == "mysql")]
         | join(",") end)]
| @tsv'
check_report() {
  local file=$1 label=$2 dir=$3 name unit drivers d bad=0 n=0 skipped tested entries
  shift 3
  skipped=$(awk '/\*\*\*Skipped/ { for (i = 1; i < NF; i++) if ($i ~ /^#[0-9]+:$/) print $(i + 1) }' \
              "$dir/ctest-$label.log" 2>/dev/null | sort -u)
  entries=$( (cd "$dir" && ctest --show-only=json-v1 "$@") | jq -r "$entries_jq") || {
    echo "FAIL ($label): cannot list the ctest entries (ctest --show-only=json-v1 | jq)" >&2
    exit 1
  }
  while IFS=$'\t' read -r name unit drivers; do
    for d in ${drivers//,/ }; do
      case ",$SQLLOCK_TEST_REQUIRE," in *",$d,"*) ;; *) continue ;; esac
      n=$((n + 1))
      grep -qxF "$unit $d" "$file" 2>/dev/null && continue
      if grep -qxF "$name" <<<"$skipped" && ! is_ci; then
        echo "WARNING ($label): $name was skipped, so $d was not tested by it"
      else
        echo "FAIL ($label): $name did not test $d (no \"$unit $d\" in its report)" >&2
        bad=1
      fi
    done
  done <<<"$entries"
  if [ "$n" = 0 ]; then
    echo "FAIL ($label): no entry of this run has a required driver: nothing was checked" >&2
    bad=1
  fi
  [ "$bad" = 0 ] || exit 1
  tested=$(awk '{ print $2 }' "$file" 2>/dev/null | sort -u | paste -sd' ' -)
  echo "drivers tested ($label): ${tested:-none}; $n entry-driver pairs checked"
  last_tested=$tested
}

build() {   # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cmake_driver_args[@]}" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs" >/dev/null
}

# Parallel ctest needs every entry in a database of its own
# (SQLLOCK_TEST_DB_PER_UNIT, tests/harness/test_util.h): always with the
# servers started here, where the test user may create databases; with your own
# servers only when you ask for it (the user then needs that right too).
if [ -n "$srv" ]; then
  per_unit=1
else
  per_unit=${SQLLOCK_TEST_DB_PER_UNIT:-0}
fi
# Most tests wait on the databases and on their own timers, so ctest runs
# 3 per core in the plain and ASan builds; ThreadSanitizer's and
# valgrind's use more CPU, so fewer run at once there (2 per core): a
# test that waits for a deadline must get the CPU it would get alone, or
# it fails for want of it. (Valgrind's ran 1.5 per core until issue 19.
# A run at 3 per core, with other work on the machine, took 505 s there
# against 480 at 2 per core: its tests used 1.14 cores, and the load
# average reached 4 per core, which scales every timer by 4 more.) The
# table "CPU of the ctest stages" at the end of a run shows how much of
# the machine each stage used.
if [ "$per_unit" != 0 ]; then
  ctest_jobs=${SQLLOCK_TEST_JOBS:-$((3 * jobs))}
else
  ctest_jobs=1
fi
tsan_jobs=$(( ctest_jobs * 2 / 3 )); [ "$tsan_jobs" -ge 1 ] || tsan_jobs=1
vg_jobs=$(( ctest_jobs * 2 / 3 )); [ "$vg_jobs" -ge 1 ] || vg_jobs=1
echo "ctest: $ctest_jobs tests at once ($tsan_jobs under TSan, $vg_jobs under valgrind)$([ "$per_unit" != 0 ] && echo ", each in databases of its own")"

# The fuzz stage (libFuzzer + ASan + UBSan): each target for
# SQLLOCK_FUZZ_SECONDS of wall clock, one after the other. It needs no
# database and one core, so it runs in the background beside the plain
# ctest stage, whose entries mostly wait on the databases and their own
# timers (a time-bound fuzz run only tries fewer inputs when it gets less
# CPU); its result is waited for at the end.
run_fuzz() {
  local t fuzz_secs fuzz_corpus fuzz_log fuzz_limit
  local -a fuzz_regress
  echo "== fuzzing (libFuzzer + ASan + UBSan): URL parser and redaction, CLI arguments, durations"
  fuzz_secs=${SQLLOCK_FUZZ_SECONDS:-30}
  for t in url cli duration; do
    # New inputs go to a copy of the corpus, never into the tree; a
    # crash leaves its input in build/fuzz/crash-<target>-*.
    fuzz_corpus="$work/fuzz-corpus-$t"
    rm -rf "$fuzz_corpus"; mkdir -p "$fuzz_corpus"
    cp tests/fuzz/corpus/$t/* "$fuzz_corpus/"
    fuzz_log="build/fuzz/fuzz_$t.log"
    # regress/<target> exists only once a bug was found there.
    fuzz_regress=()
    if [ -d "tests/fuzz/regress/$t" ]; then fuzz_regress=("tests/fuzz/regress/$t"); fi
    if [ "$fuzz_secs" -gt 0 ]; then fuzz_limit=-max_total_time=$fuzz_secs; else fuzz_limit=-runs=0; fi
    if ! build/fuzz/tests/fuzz/fuzz_$t "$fuzz_limit" \
         -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
         -artifact_prefix="build/fuzz/crash-$t-" \
         "$fuzz_corpus" "${fuzz_regress[@]}" >"$fuzz_log" 2>&1; then
      tail -n 60 "$fuzz_log"
      echo "FAIL: fuzz_$t found a crash or a broken property (input in build/fuzz/crash-$t-*)" >&2
      return 1
    fi
    echo "fuzz_$t: $(awk '/stat::number_of_executed_units/ { print $2 }' "$fuzz_log") inputs in ${fuzz_secs} s, no crash ($(ls "$fuzz_corpus" | wc -l) in its corpus copy)"
  done
}

# What each ctest stage did with the CPU, printed after the stage table:
# the CPU seconds its tests used (user + system, the databases not
# included), as cores on average over its wall time, and how busy the
# whole machine was (the databases included). A stage whose tests use
# well under the cores it has waits on timers, and can run more at once.
cpu_summary=""
cpu_jiffies() {   # busy and total jiffies of the machine, from /proc/stat
  awk '/^cpu / { print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9; exit }' \
    /proc/stat 2>/dev/null || echo "0 0"
}
# cpu_note LABEL JOBS START_MS CPU0: one line for LABEL's ctest run.
cpu_note() {
  local line
  line=$(awk -v label="$1" -v njobs="$2" -v w="$(( $(date +%s%3N) - $3 ))" \
             -v c0="$4" -v c1="$(cpu_jiffies)" -v cores="$jobs" '
    NR == 2 { split($1, a, /[ms]/); split($2, b, /[ms]/)
              cpu = a[1] * 60 + a[2] + b[1] * 60 + b[2]; w /= 1000
              split(c0, x, " "); split(c1, y, " ")
              busy = y[2] > x[2] ? 100 * (y[1] - x[1]) / (y[2] - x[2]) : 0
              printf "  %-6s %3d at once  %6.0f s wall  %6.0f s CPU of the tests (%.2f of %d cores)  machine %3.0f%% busy\n",
                     label, njobs, w, cpu, (w > 0 ? cpu / w : 0), cores, busy }' \
        "$work/times-$label" 2>/dev/null) || return 0
  cpu_summary+="$line"$'\n'
}

# run_ctest DIR LABEL JOBS [ctest args...]: ctest in DIR, JOBS at once
# (LABEL also names the build's databases: LABEL_<unit>_sqllock_test),
# then the driver check of every entry that ran (check_report). The output is kept in
# DIR/ctest-LABEL.log, and the slowest entries are shown.
run_ctest() {
  local dir=$1 label=$2 njobs=$3 rc=0 t0 cpu0
  shift 3
  export SQLLOCK_TEST_REPORT="$work/report-$label"
  rm -f "$SQLLOCK_TEST_REPORT"
  if [ "$per_unit" != 0 ]; then
    export SQLLOCK_TEST_DB_PER_UNIT=$label
  else
    unset SQLLOCK_TEST_DB_PER_UNIT
  fi
  t0=$(date +%s%3N)
  cpu0=$(cpu_jiffies)
  # The subshell's `times` is the CPU of ctest and all it waited for
  # (the tests and their children; not the servers).
  (cd "$dir" && { ctest --output-on-failure --no-tests=error -j"$njobs" "$@" ||
                  rc=$?; times > "$work/times-$label"; exit "$rc"; }) \
    2>&1 | tee "$dir/ctest-$label.log" || rc=$?
  unset SQLLOCK_TEST_DB_PER_UNIT
  cpu_note "$label" "$njobs" "$t0" "$cpu0"
  # (sed, not head: head's early exit can kill sort with SIGPIPE between
  # two writes, and under pipefail that ended a run: "FAILED(141)".)
  echo "slowest entries ($label, s):"
  awk '/ Test +#[0-9]+: / { for (i = 1; i < NF; i++) if ($i ~ /^#[0-9]+:$/) n = $(i + 1);
                            printf "  %8s  %s\n", $(NF - 1), n }' "$dir/ctest-$label.log" |
    sort -rn | sed -n '1,8p'
  [ "$rc" = 0 ] || exit "$rc"
  check_report "$SQLLOCK_TEST_REPORT" "$label" "$dir" "$@"
}

# ------------------------------------------------------------------
# The builds (while the fixtures above start), then the tests
# ------------------------------------------------------------------
# The plain tree also holds a valgrind/<entry> for every entry
# (SQLLOCK_TEST_VALGRIND): the valgrind stage runs those.
stage "build plain"
build build/test -DSQLLOCK_TEST_VALGRIND=ON
if [ "${#bg_pids[@]}" -gt 0 ]; then
  stage "wait for the fixtures"
  for name in "${!bg_pids[@]}"; do bg_wait "$name"; done
fi

# The sanitizer trees and the fuzz targets build in the background,
# at the lowest CPU priority, while the plain tests run: those mostly
# wait on the databases and their own timers (the stage CPU table), so
# the builds take the idle CPU and the tests keep what they would get
# without them. The ASan stage waits for its trees (bg_wait).
# One compiler at a time: the load average counts niced processes too,
# and the tests scale their waits by it (tests/harness/tu_env.c).
niced() { renice -n 19 -p "$BASHPID" >/dev/null; "$@"; }
build_sanitizers() {
  local jobs=1
  build build/asan -DSQLLOCK_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Debug
  echo "asan tree built at $(( $(date +%s) - start )) s"
  build build/tsan -DSQLLOCK_SANITIZE=thread -DCMAKE_BUILD_TYPE=Debug
  echo "tsan tree built at $(( $(date +%s) - start )) s"
}
build_and_run_fuzz() {
  local jobs=1
  cmake -S . -B build/fuzz -DCMAKE_C_COMPILER=clang -DSQLLOCK_FUZZ=ON \
    -DSQLLOCK_BUILD_TESTS=OFF -DSQLLOCK_BUILD_TOOLS=OFF \
    -DSQLLOCK_BUILD_EXAMPLES=OFF -DSQLLOCK_BUILD_BENCH=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "${cmake_driver_args[@]}" >/dev/null
  cmake --build build/fuzz -j"$jobs" --target fuzz_url fuzz_cli fuzz_duration >/dev/null
  echo "fuzz targets built at $(( $(date +%s) - start )) s"
  run_fuzz
}
if [ "${SQLLOCK_TEST_QUICK:-0}" != 1 ]; then
  bg "build asan, tsan" niced build_sanitizers
  bg fuzz niced build_and_run_fuzz
fi
# The Go binding's -race test binaries and the Go interop worker (target
# sqllock_go_interop, not in `all`): compiled while the plain tests run,
# for the go and interop stages below.
bg "build go" niced cmake --build build/test --target sqllock_go_interop
# The previous version's tool, for the upgrade-in-place stage: the last
# commit before the schema's users of issue 19 (SQLLOCK_UPGRADE_FROM),
# built from this clone's history.
upgrade_from=${SQLLOCK_UPGRADE_FROM:-f6f7f58}
build_previous() {
  local prev="$work/previous"
  rm -rf "$prev"; mkdir -p "$prev"
  git archive "$upgrade_from" | tar -x -C "$prev"
  cmake -S "$prev" -B "$prev/build" -DCMAKE_BUILD_TYPE=Release \
    -DSQLLOCK_BUILD_TESTS=OFF -DSQLLOCK_BUILD_EXAMPLES=OFF \
    -DSQLLOCK_BUILD_BENCH=OFF "${cmake_driver_args[@]}" >/dev/null
  cmake --build "$prev/build" --target sqllock_cli >/dev/null
  echo "previous version $upgrade_from built: $prev/build/tools/sqllock"
}
upgrade_check=0
if [ "${SQLLOCK_TEST_QUICK:-0}" = 1 ]; then
  :
elif command -v git >/dev/null &&
     git cat-file -e "$upgrade_from^{commit}" 2>/dev/null; then
  upgrade_check=1
  bg previous niced build_previous
elif is_ci; then
  echo "FAIL: the upgrade stage needs commit $upgrade_from (SQLLOCK_UPGRADE_FROM) in this clone's history" >&2
  exit 1
else
  echo "WARNING: commit $upgrade_from is not in this clone: the upgrade-in-place stage does not run" >&2
fi
stage "plain ctest"
run_ctest build/test plain "$ctest_jobs" -LE 'valgrind|hostile|ha|^python$|^go$|^node$|^interop$'
# The high-availability entries (label ha: test_patroni, test_galnet,
# issue 30) start clusters of their own and mostly wait on them: they run
# in the background beside the ASan stage (about 170 and 210 s each on a
# loaded machine; in the plain stage they made it 110 s longer), and in
# a quick run here.
ha_jobs=2
if [ "${SQLLOCK_TEST_QUICK:-0}" = 1 ]; then
  stage "ha ctest"
  run_ctest build/test ha "$ha_jobs" -L ha
fi
# The hostile-session entries (label hostile: the plain build on the
# servers of scripts/hostile.sh) run in the background beside the TSan
# stage, whose tests use about a third of the machine and wait on their
# timers (docs/testing.md, the stage CPU table); a quick run has no TSan
# stage and runs them here.
hostile_jobs=$(( jobs * 3 / 2 )); [ "$hostile_jobs" -ge 1 ] || hostile_jobs=1
if [ "${SQLLOCK_TEST_QUICK:-0}" = 1 ]; then
  stage "hostile ctest"
  run_ctest build/test hostile "$hostile_jobs" -L hostile
fi
# The bindings, each a stage of its own: the Python suite (pytest), the
# Go one (go test -race), the Node.js one (node --test), and the
# interoperability test of every language on the same rows (issue 32).
# They wait on the databases and their timers: beside the TSan stage, as
# the hostile entries, and here in a quick run. (The Python suite was in
# the plain stage, where its 230 s of entries held 3 of its 6 slots.)
run_bindings() {
  local how=$1
  $how "python ctest" run_ctest build/test python 2 -L '^python$'
  $how "go ctest" run_ctest build/test go 2 -L '^go$'
  $how "node ctest" run_ctest build/test node 2 -L '^node$'
  $how "interop ctest" run_ctest build/test interop 1 -L '^interop$'
}
fg_stage() { local name=$1; shift; stage "$name"; "$@"; }
if [ "${SQLLOCK_TEST_QUICK:-0}" = 1 ]; then
  bg_wait "build go"
  run_bindings fg_stage
fi

# The checks that were stages here -- the order flow example, least
# privilege (S2, C5), password leaks and credentials (C4) -- are ctest
# entries of tests/checks (label check), run by the plain ctest above.

if [ "$upgrade_check" = 1 ]; then
  bg_wait previous
  stage "upgrade in place"
  echo "== upgrade in place: a database of version $upgrade_from upgraded while its clients hold leases"
  # shellcheck disable=SC2086
  tests/upgrade.sh "$work/previous/build/tools/sqllock" build/test/tools/sqllock \
    "$work/upgrade" $SQLLOCK_TEST_URLS
fi

stage "package consumers"
echo "== install, then build a consumer with find_package(sqllock) and pkg-config"
pkgdir="$work/pkg"
mkdir -p "$pkgdir"
cmake --install build/test --prefix "$pkgdir/prefix" >/dev/null
cmake -S tests/package -B "$pkgdir/build" -DCMAKE_PREFIX_PATH="$pkgdir/prefix" >/dev/null
cmake --build "$pkgdir/build" >/dev/null
LD_LIBRARY_PATH="$pkgdir/prefix/lib" "$pkgdir/build/consumer_shared" "sqlite://$pkgdir/a.db" >/dev/null
"$pkgdir/build/consumer_static" "sqlite://$pkgdir/a.db" >/dev/null
export PKG_CONFIG_PATH="$pkgdir/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc examples/lease.c $(pkg-config --cflags --libs sqllock) -o "$pkgdir/consumer_pc"
LD_LIBRARY_PATH="$pkgdir/prefix/lib" "$pkgdir/consumer_pc" "sqlite://$pkgdir/a.db" >/dev/null
unset PKG_CONFIG_PATH
echo "package: CMake (shared, static) and pkg-config consumers built and ran"

# The project's packages (issue 29 items 3, 4): the Debian packages and
# the wheel built as the README says, the wheel installed offline into a
# venv of each CPython found, the .debs installed on this machine under
# CI (root), checked as a user would, and removed (tests/packages.sh).
# They compile the project once more (about 40 s): in the background at
# the lowest priority beside the ASan stage, whose tests mostly wait
# (the machine was 73% busy there), where they ran between the plain and
# the ASan stages; in a quick run, here.
run_packages() {
  scripts/packages.sh "$work/dist" || return 1
  tests/packages.sh "$work/dist"
}
if [ "${SQLLOCK_TEST_QUICK:-0}" = 1 ]; then
  stage "packages"
  run_packages
fi

if [ "${SQLLOCK_TEST_QUICK:-0}" != 1 ]; then
  # Every test under AddressSanitizer + UndefinedBehaviorSanitizer (with
  # LeakSanitizer) but the hostile-session entries and the pooled_* ones
  # (label pooled: the same binaries as the test_<unit>_postgres entries,
  # through PgBouncer; test_pooler runs the pooler paths here).
  stage "wait for the sanitizer trees"
  bg_wait "build asan, tsan"
  bg "ha ctest" run_ctest build/test ha "$ha_jobs" -L ha
  bg packages niced run_packages
  stage "asan ctest"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest build/asan asan "$ctest_jobs" -LE 'hostile|pooled|check|ha|noasan'
  bg_wait "ha ctest"
  bg_wait packages

  # ThreadSanitizer finds races between threads, so it runs the entries
  # in which more than one thread runs (label threads, tests/CMakeLists.txt
  # says how they were found); in the others every process is
  # single-threaded and TSan has nothing to compare. The tool's units run
  # on one driver each (label notsan on the others: their threads are the
  # runner's, the same whatever the driver).
  bg "hostile ctest" run_ctest build/test hostile "$hostile_jobs" -L hostile
  bg_wait "build go"
  run_bindings bg
  stage "tsan ctest"
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    run_ctest build/tsan tsan "$tsan_jobs" -L threads -LE 'hostile|pooled|notsan|^go$|^node$|^interop$'
  bg_wait "hostile ctest"
  bg_wait "python ctest"
  bg_wait "go ctest"
  bg_wait "node ctest"
  bg_wait "interop ctest"

  # valgrind's memcheck finds what ASan cannot (reads of uninitialised
  # memory; leaks with the -O2 build's own allocations): every test binary
  # of the plain build, through its valgrind/<entry> (tests/valgrind.sh).
  stage "valgrind ctest"
  run_ctest build/test vg "$vg_jobs" -L valgrind

  bg_wait fuzz
fi

stage_end
echo "drivers tested: $last_tested"
echo "== all tests passed in $(( $(date +%s) - start )) s"
