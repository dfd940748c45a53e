/*
 * test_failover.c -- a PostgreSQL primary with a streaming standby, and a
 * failover while clients hold, wait and count (issue 8: DESIGN L1, L5, L6,
 * L10 across a promotion; E1 bounded calls).
 *
 * The pair is made by scripts/pgrepl.sh (its path in
 * $SQLLOCK_TEST_PGREPL_SCRIPT) in $SQLLOCK_TEST_PGREPL_DIR, afresh for
 * every scenario (`stop`, then `start DIR sync|async`). The clients use the
 * multi-host URL with target_session_attrs=read-write, through
 * sqllock_open(), so that after the failover they find the new primary by
 * themselves. Without the two variables the test says SKIPPED and exits
 * 77 (ctest: skipped; 1 under CI).
 *
 *   a. sync standby, 8 processes on 3 names through a failover: every
 *      lease acknowledged before the kill and not released is on the new
 *      primary with its owner and token (L10 with a synchronous standby);
 *      no two holders' intervals overlap and the counters end exact (L1,
 *      L6); tokens after the failover are above every token before (L5);
 *      every call is bounded and every client resumes (E1).
 *   b. a stalled synchronous standby: an acquire or a renewal whose
 *      commit waits for the standby must not report SQLLOCK_OK unless the
 *      standby has it. PostgreSQL answers a canceled wait (pg_cancel_backend,
 *      or any cancel request) with only a WARNING and success: that must
 *      still be a failure. Then a failover shows why: the row is not there.
 *   c. the hazard of an asynchronous standby, demonstrated: a lease the
 *      primary acknowledged is gone after a failover and a second owner
 *      gets it while the first still believes it holds. This test PASSES
 *      when the hazard is reproduced; it documents why sqllock needs a
 *      synchronous standby for failover safety.
 *   d. a stalled synchronous standby under a row-lock transaction's
 *      commit, sent by sqllock_txn_commit() or pipelined by
 *      sqllock_txn_commit_exec(): a canceled wait is SQLLOCK_ECANCELED, a
 *      terminated one SQLLOCK_ECONNECT, never SQLLOCK_OK (C2; issue 26).
 *
 * The cases are in tests/failover/, by scenario (sync.c: a; stall.c: b;
 * async.c: c; txn.c: d), with what they share in failover/common.c.
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
#include "failover/failover.h"

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            test_failover_sync_L1_L5_L6_L10_E1_clients_through_failover),
        cmocka_unit_test(
            test_failover_sync_L6_L10_stalled_standby_no_false_success),
        cmocka_unit_test(test_failover_async_hazard_demonstrated),
        cmocka_unit_test(
            test_failover_sync_C2_txn_commit_wait_ended_no_false_success),
    };
    const char *dir = getenv("SQLLOCK_TEST_PGREPL_DIR");
    const char *script = getenv("SQLLOCK_TEST_PGREPL_SCRIPT");
    int failed;

    if (dir == NULL || *dir == '\0' || script == NULL || *script == '\0' ||
        strchr(dir, '\'') || strchr(script, '\'') ||
        strlen(dir) >= sizeof g_dir || strlen(script) >= sizeof g_script ||
        sqllock_driver_find("postgres") == NULL)
        return tu_unit_cannot_run("failover", "SQLLOCK_TEST_PGREPL_DIR and "
                                  "SQLLOCK_TEST_PGREPL_SCRIPT "
                                  "(scripts/pgrepl.sh) must name a directory "
                                  "for a throwaway PostgreSQL primary and "
                                  "standby, and the postgres driver must be "
                                  "built");
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    snprintf(g_script, sizeof g_script, "%s", script);
    g_slow = tu_slowdown();
    tu_case_filters();            /* SQLLOCK_TEST_CASES picks cases */
    failed = cmocka_run_group_tests_name("failover [postgres primary + "
                                         "standby]", tests, NULL,
                                         group_teardown);
    return tu_unit_result("failover", "postgres", failed);
}
