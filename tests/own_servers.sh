#!/bin/sh
# tests/own_servers.sh TEST [ARGS...] -- runs a test that crashes and
# restarts its database server (test_restart; test_runfault's C3) on
# servers of its own: the PostgreSQL and MariaDB that scripts/servers.sh
# started in $SQLLOCK_TEST_OWN_SERVERS_DIR, which scripts/test.sh starts
# for these tests alone, so that the other tests, on the servers of
# SQLLOCK_TEST_URLS, can run meanwhile. From that directory's env file:
#   SQLLOCK_TEST_SERVERS_DIR          that directory (what the test
#                                     restarts, with
#                                     SQLLOCK_TEST_SERVERS_SCRIPT)
#   SQLLOCK_TEST_PG_URL, SQLLOCK_TEST_MYSQL_URL
#                                     their URLs
#   SQLLOCK_TEST_URLS                 the same list with its postgres and
#                                     mysql URLs replaced by those
# Without that directory the environment is kept (the servers of
# SQLLOCK_TEST_SERVERS_DIR are restarted: run these tests alone then).
# Either way SQLLOCK_TEST_DB_PER_UNIT is turned off: the tests find the
# server to restart by comparing their URL with SQLLOCK_TEST_PG_URL and
# SQLLOCK_TEST_MYSQL_URL; ctest runs one of them at a time per server
# (RESOURCE_LOCK own_postgres, own_mysql; tests/CMakeLists.txt).
own=${SQLLOCK_TEST_OWN_SERVERS_DIR:-}
if [ -n "$own" ] && [ -f "$own/env" ]; then
  pg=$(sed -n "s/^SQLLOCK_TEST_PG_URL='\(.*\)'$/\1/p" "$own/env")
  my=$(sed -n "s/^SQLLOCK_TEST_MYSQL_URL='\(.*\)'$/\1/p" "$own/env")
  urls=""
  for u in ${SQLLOCK_TEST_URLS:-}; do
    case "$u" in
      postgres:*|postgresql:*) u=$pg ;;
      mysql:*|mariadb:*) u=$my ;;
    esac
    urls="$urls${urls:+ }$u"
  done
  export SQLLOCK_TEST_SERVERS_DIR="$own"
  export SQLLOCK_TEST_PG_URL="$pg"
  export SQLLOCK_TEST_MYSQL_URL="$my"
  export SQLLOCK_TEST_URLS="$urls"
fi
unset SQLLOCK_TEST_DB_PER_UNIT
exec "$@"
