/*
 * test_restart.c -- database server crashes and restarts (DESIGN L10, L5,
 * and reconnecting after a lost connection, E1), and clients that keep
 * working across them (issue 7, fault 3: L1, L5, L7, L9, P1, P3).
 *
 * L10: only a commit that grants or extends a lease must be durable. A
 * lease granted before a crash is still there after it; a release that
 * committed asynchronously may be forgotten, but a later grant's durable
 * commit flushes the log past it, so a crash can never admit two owners.
 * L5: tokens issued after a restart are greater than every token before.
 *
 * This test crashes servers, so it runs only on servers it may crash: the
 * ones scripts/servers.sh started in $SQLLOCK_TEST_SERVERS_DIR, restarted
 * with `$SQLLOCK_TEST_SERVERS_SCRIPT restart-pg DIR immediate` (PostgreSQL
 * stopped with `pg_ctl stop -m immediate`: no checkpoint, recovery from
 * the WAL) and `restart-my DIR` (mariadbd killed with SIGKILL), or
 * gracefully with `restart-pg DIR fast` (`pg_ctl stop -m fast`) and
 * `restart-my DIR graceful` (SIGTERM, mariadbd's normal shutdown). Their
 * URLs are $SQLLOCK_TEST_PG_URL and $SQLLOCK_TEST_MYSQL_URL. scripts/test.sh
 * exports all four when it starts its own servers; without them the test
 * skips, saying so (and fails under CI). The servers are left
 * running.
 *
 * The cases are in tests/restart/, by group (crash.c: L10 and L5 across a
 * crash; clients.c and clients_run.c: clients across restarts), with what
 * they share in restart/common.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "restart/restart.h"

int main(void)
{
    const struct CMUnitTest pg_tests[] = {
        cmocka_unit_test(test_restart_L10_granted_lease_survives_crash),
        cmocka_unit_test(test_restart_L10_async_release_never_two_holders),
        cmocka_unit_test(test_restart_L5_tokens_increase_across_restart),
        cmocka_unit_test(test_restart_L5_L10_fast_mode_beside_durable),
        cmocka_unit_test(test_restart_E1_L1_L5_L7_P1_clients_across_restart),
        cmocka_unit_test(test_restart_E1_L1_L5_L10_clients_across_crash),
    };
    const struct CMUnitTest my_tests[] = {
        cmocka_unit_test(test_restart_L10_granted_lease_survives_crash),
        cmocka_unit_test(test_restart_L5_tokens_increase_across_restart),
        cmocka_unit_test(test_restart_E1_L1_L5_L7_P1_clients_across_restart),
        cmocka_unit_test(test_restart_E1_L1_L5_L10_clients_across_crash),
    };
    server pg = { "postgres", NULL, "restart-pg", "immediate", "fast" };
    server my = { "mysql", NULL, "restart-my", "", "graceful" };
    int rc = 0;

    g_dir = getenv("SQLLOCK_TEST_SERVERS_DIR");
    g_script = getenv("SQLLOCK_TEST_SERVERS_SCRIPT");
    pg.url = getenv("SQLLOCK_TEST_PG_URL");
    my.url = getenv("SQLLOCK_TEST_MYSQL_URL");
    if (g_dir == NULL || *g_dir == '\0' || g_script == NULL ||
        *g_script == '\0' || strchr(g_dir, '\'') || strchr(g_script, '\''))
        return tu_unit_cannot_run("restart", "SQLLOCK_TEST_SERVERS_DIR and "
                                  "SQLLOCK_TEST_SERVERS_SCRIPT name no servers "
                                  "this test may crash (scripts/test.sh sets "
                                  "them when it starts its own)");
    /* Each driver runs, or says why not: a driver that did not run is
     * never a pass (it was: 0 when neither ran). */
    if (pg.url != NULL && *pg.url != '\0' &&
        sqllock_driver_find("postgres") != NULL) {
        g_srv = &pg;
        rc = tu_status_merge(rc, tu_unit_result("restart", "postgres",
                 cmocka_run_group_tests_name("restart [postgres]", pg_tests,
                                             group_setup, NULL)));
    } else {
        rc = tu_status_merge(rc, tu_unit_cannot_run("restart", "no postgres "
                 "server to restart (SQLLOCK_TEST_PG_URL, and the postgres "
                 "driver built)"));
    }
    if (my.url != NULL && *my.url != '\0' &&
        sqllock_driver_find("mysql") != NULL) {
        g_srv = &my;
        rc = tu_status_merge(rc, tu_unit_result("restart", "mysql",
                 cmocka_run_group_tests_name("restart [mysql]", my_tests,
                                             group_setup, NULL)));
    } else {
        rc = tu_status_merge(rc, tu_unit_cannot_run("restart", "no mysql "
                 "server to restart (SQLLOCK_TEST_MYSQL_URL, and the mysql "
                 "driver built)"));
    }
    return rc;
}
