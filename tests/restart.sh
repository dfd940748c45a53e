#!/bin/sh
# tests/restart.sh TEST [ARGS...] -- runs test_restart on the servers it
# crashes and restarts: those that scripts/servers.sh started in
# $SQLLOCK_TEST_SERVERS_DIR, whose URLs it reads from that directory's env
# file (SQLLOCK_TEST_PG_URL, SQLLOCK_TEST_MYSQL_URL). scripts/test.sh
# gives test_restart servers of its own there, so that the other tests,
# on the servers of SQLLOCK_TEST_URLS, can run meanwhile. Without that
# directory the environment is left as it is (test_restart skips, and
# fails under CI=true). ctest runs it as test_restart
# (tests/CMakeLists.txt).
env_file=${SQLLOCK_TEST_SERVERS_DIR:+$SQLLOCK_TEST_SERVERS_DIR/env}
if [ -n "$env_file" ] && [ -f "$env_file" ]; then
  for v in SQLLOCK_TEST_PG_URL SQLLOCK_TEST_MYSQL_URL; do
    val=$(sed -n "s/^$v='\(.*\)'$/\1/p" "$env_file")
    if [ -n "$val" ]; then
      export "$v=$val"
    fi
  done
fi
exec "$@"
