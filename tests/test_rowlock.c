/*
 * test_rowlock.c -- row locks inside a database transaction (DESIGN
 * R1-R5, E1-E4): the three lock modes and their timing, the sorted lock
 * order that keeps two clients from deadlocking each other, deadlocks the
 * database reports through rows the application locked itself, the order
 * flow and the stock decrement of R4 under real contention from many
 * processes, a SKIP LOCKED work queue, rollback on free, a connection
 * killed under a transaction, and bad input.
 *
 * Runs once per URL in SQLLOCK_TEST_URLS (space-separated), or on a fresh
 * temporary SQLite file; SQLLOCK_TEST_REQUIRE as in test_conformance.
 * Lock names and the application tables carry the pid, so runs on a
 * shared server do not meet. The tables are created by the group setup
 * and dropped by its teardown, which also removes this run's lock rows.
 *
 * The statements the test runs itself go through sqllock__exec_sql() on
 * the handle of the transaction, so they run inside it (R4). Forked
 * children never use cmocka: they report through an exit status and a
 * shared page, and the parent checks.
 *
 * The cases are in tests/rowlock/, by group (modes.c, contention.c,
 * faults.c, pipeline.c), with what they share in rowlock/common.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "rowlock/rowlock.h"

/* ------------------------------------------------------------------ */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rowlock_R1_modes),
        cmocka_unit_test(test_rowlock_R2_duplicates_locked_once),
        cmocka_unit_test(test_rowlock_R2_sorted_order_no_deadlock),
        cmocka_unit_test(test_rowlock_R3_deadlock_own_sql),
        cmocka_unit_test(test_rowlock_R3_deadlock_reported_by_lock_rows),
        cmocka_unit_test(test_rowlock_R4_order_paid_once),
        cmocka_unit_test(test_rowlock_R4_stock_for_update),
        cmocka_unit_test(test_rowlock_R1_skip_locked_queue),
        cmocka_unit_test(test_rowlock_R4_commit_reports_what_happened),
        cmocka_unit_test(test_rowlock_R6_free_without_commit_rolls_back),
        cmocka_unit_test(test_rowlock_R3_killed_connection),
        cmocka_unit_test(test_rowlock_E2_bad_input),
        cmocka_unit_test(test_rowlock_R1_first_lock_carries_begin),
        cmocka_unit_test(test_rowlock_R7_failed_first_lock_keeps_connection),
        cmocka_unit_test(test_rowlock_R4_native_first_is_inside),
        cmocka_unit_test(test_rowlock_R4_commit_exec_commits_with_write),
        cmocka_unit_test(test_rowlock_R7_commit_exec_failure_rolls_back),
    };
    tu_not_on("sqlite", "test_rowlock_R3_deadlock_*",
              "SQLite has no row locks, a transaction takes the whole "
              "database (R5), so no two transactions can cross");
    tu_not_on("sqlite", "test_rowlock_R3_killed_connection",
              "an embedded database has no server connection to kill");
    return TU_RUN_PER_URL("rowlock", &g_url, tests, group_setup,
                          group_teardown);
}
