/*
 * test_galera.c -- sqllock on a 3-node MariaDB Galera cluster (issue 8).
 *
 * A Galera cluster replicates every commit to all nodes before it is
 * acknowledged (certification: a transaction that wrote a row another
 * node's transaction, ordered first, also wrote, is rolled back at its
 * commit with error 1213, which the driver reports as SQLLOCK_EDEADLOCK).
 * Row locks, on the other hand, are local to a node.
 *
 *   a. L1, L5 across nodes: processes on all three nodes contend for a few
 *      names with sqllock_lease_acquire() (waiting) and
 *      sqllock_lease_try_acquire(), each running a read-sleep-write of a
 *      counter in shared memory under the lease and logging its hold.
 *      Counters exact, no two holds of a name overlap, tokens increase in
 *      grant order; certification failures are counted (the nodes'
 *      wsrep_local_cert_failures) and every status each call returned is
 *      checked and printed.
 *   b. E1, L1: a node is killed (SIGKILL) while clients hold leases
 *      through it; clients use a multi-host URL with the victim first (or
 *      a survivor first), hear SQLLOCK_ECONNECT, reconnect to a survivor
 *      on the next call. Leases granted before the kill are on the
 *      survivors with their owner and token, no lease is granted twice,
 *      the time clients need to resume is measured; the node rejoins and
 *      sees the rows.
 *   c. R1 on Galera: SELECT ... FOR UPDATE on the same row succeeds on two
 *      nodes at once (node-local locks); when both update and commit,
 *      exactly one commit succeeds and the other reports
 *      SQLLOCK_EDEADLOCK, so no update is lost. On one node the second
 *      locker waits and gets SQLLOCK_ELOCKED as usual.
 *   d. O1 across nodes: sqllock_record_update() and get + cas increments
 *      from all three nodes; no update is lost (a certification failure
 *      comes back as SQLLOCK_EDEADLOCK, which is retried).
 *   e. P1, P2: a reaper on every node at once over the same expired rows:
 *      all deleted, none left.
 *
 * The cluster is the one scripts/galera.sh started in
 * $SQLLOCK_TEST_GALERA_DIR; $SQLLOCK_TEST_GALERA_SCRIPT is that script,
 * which the test runs to kill and restart a node. The URLs come from
 * DIR/env (or the environment: SQLLOCK_TEST_GALERA_URL1..3,
 * SQLLOCK_TEST_GALERA_URLS). Without DIR and SCRIPT the test prints
 * SKIPPED and exits 0.
 *
 * Forked children are made before the parent opens any sqllock handle of
 * the test, and the parent keeps its state in static storage and shared
 * memory, so that a child inherits no heap block it would not free.
 *
 * The cases are in tests/galera/, by group (leases.c: a, b; rows.c: c;
 * records.c: d; reaper.c: e), with what they share in galera/common.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "galera/galera.h"

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_galera_a_L1_L5_exclusion_across_nodes),
        cmocka_unit_test_teardown(
            test_galera_b_E1_L1_node_killed_while_holding, b_teardown),
        cmocka_unit_test(test_galera_c_R1_row_locks_are_node_local),
        cmocka_unit_test(test_galera_d_O1_record_updates_across_nodes),
        cmocka_unit_test(test_galera_e_P1_P2_reapers_on_every_node),
    };
    const char *dir = getenv("SQLLOCK_TEST_GALERA_DIR");
    const char *scr = getenv("SQLLOCK_TEST_GALERA_SCRIPT");
    int failed;

    if (dir == NULL || *dir == '\0' || scr == NULL || *scr == '\0' ||
        strchr(dir, '\'') || strchr(scr, '\''))
        return tu_unit_cannot_run("galera", "SQLLOCK_TEST_GALERA_DIR and "
                                  "SQLLOCK_TEST_GALERA_SCRIPT name no cluster "
                                  "(scripts/galera.sh start DIR makes one)");
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    snprintf(g_script, sizeof g_script, "%s", scr);
    if (gl_load_urls() != 0) {
        printf("galera: FAILED: no node URLs in the environment or in "
               "%s/env\n", g_dir);
        return 1;
    }
    if (sqllock_driver_find("mysql") == NULL) {
        printf("galera: FAILED: this build has no mysql driver\n");
        return 1;
    }
    g_slow = tu_slowdown();
    g_a_ms = 6000;
    g_start_ms = tu_now_ms();
    {
        char path[1200], ms[32];
        snprintf(path, sizeof path, "%s/start_ms", g_dir);
        if (tu_read_file(path, ms, sizeof ms) > 0)
            printf("galera: the cluster (scripts/galera.sh start) took %lld "
                   "ms to start\n", atoll(ms));
    }
    failed = cmocka_run_group_tests_name("galera [mysql]", tests,
                                         group_setup, NULL);
    printf("galera: %lld ms in all\n", (long long)(tu_now_ms() - g_start_ms));
    return tu_unit_result("galera", "mysql", failed);
}
