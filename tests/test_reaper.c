/*
 * test_reaper.c -- the reaper (DESIGN P1-P4, with L4, L5 and E2): one pass
 * with sqllock_reap(), the reaper thread, and many reapers at once next to
 * processes that acquire, renew, release and abandon short leases.
 *
 * Runs once per URL in SQLLOCK_TEST_URLS (space-separated), or on a fresh
 * temporary SQLite file; SQLLOCK_TEST_REQUIRE as in test_conformance.
 * Lock names carry the pid. A reaper deletes every expired row in the
 * table, not only this test's, so counts are checked against what the
 * table held before and after: exact when nothing else uses the database
 * (ctest runs one test at a time), and still true when something does.
 *
 * The cases are in tests/reaper/, by group (pass.c, thread.c, stress.c),
 * with what they share in reaper/common.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "reaper/reaper.h"

/* ------------------------------------------------------------------ */

/* Every test stops a reaper it left running when a check failed. */
#define T(test) cmocka_unit_test_teardown(test, rp_stop_leftover)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_reaper_E2_bad_input),
        T(test_reaper_P1_deletes_only_expired),
        T(test_reaper_P1_grace),
        T(test_reaper_P1_batches),
        T(test_reaper_P1_renewed_not_reaped),
        T(test_reaper_P1_renewals_beside_thread),
        T(test_reaper_L4_reaped_lease_is_lost),
        T(test_reaper_L5_tokens_after_reap),
        T(test_reaper_P1_thread_reaps),
        T(test_reaper_P1_errors_counted_not_fatal),
        T(test_reaper_P3_stop_promptly),
        T(test_reaper_P3_start_stop_loop),
        T(test_reaper_P2_many_reapers_beside_users),
    };
    return TU_RUN_PER_URL("reaper", &g_url, tests, rp_group_setup,
                          rp_group_teardown);
}
