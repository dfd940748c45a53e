/*
 * test_optimistic.c -- optimistic versioned updates (DESIGN O1-O3, E1,
 * E2, E4): versioned records in the library's own table, the retry helper
 * under real contention from many processes, compare-and-set and
 * conditional updates on an application table, and bad input that must
 * get a specific status and a message and change nothing.
 *
 * Runs once per URL in SQLLOCK_TEST_URLS (space-separated), or on a fresh
 * temporary SQLite file; SQLLOCK_TEST_REQUIRE as in test_conformance.
 * Record keys and the application tables carry the pid, so runs on a
 * shared server do not meet. The application tables are created by the
 * group setup and dropped by its teardown.
 *
 * The cases are in tests/optimistic/, by group (records.c, table.c, badinput.c), with what they share in
 * optimistic/common.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "optimistic/optimistic.h"

/* ------------------------------------------------------------------ */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_optimistic_O1_get_missing_notfound),
        cmocka_unit_test(test_optimistic_O1_create_conflict),
        cmocka_unit_test(test_optimistic_O1_binary_and_empty_values),
        cmocka_unit_test(test_optimistic_O1_cas_versions),
        cmocka_unit_test(test_optimistic_O1_delete_versions),
        cmocka_unit_test(test_optimistic_O1_value_max),
        cmocka_unit_test(test_optimistic_O1_free_null),
        cmocka_unit_test(test_optimistic_O1_bad_keys),
        cmocka_unit_test(test_optimistic_O1_list_by_prefix),
        cmocka_unit_test(test_optimistic_O1_version_overflow),
        cmocka_unit_test(test_optimistic_O2_counter_processes),
        cmocka_unit_test(test_optimistic_O2_fn_status_writes_nothing),
        cmocka_unit_test(test_optimistic_O2_one_attempt_conflicts),
        cmocka_unit_test(test_optimistic_O3_table_cas_basic),
        cmocka_unit_test(test_optimistic_O3_L5_fenced_same_values_ok),
        cmocka_unit_test(test_optimistic_O3_statement_shapes),
        cmocka_unit_test(test_optimistic_O3_cas_stock_processes),
        cmocka_unit_test(test_optimistic_O3_update_stock_processes),
        cmocka_unit_test(test_optimistic_O3_bad_identifiers),
        cmocka_unit_test(test_optimistic_O3_bad_arguments),
        cmocka_unit_test(test_optimistic_O3_missing_table_column),
        cmocka_unit_test(test_optimistic_O3_version_overflow),
        cmocka_unit_test(test_optimistic_O3_wrong_types),
    };
    return TU_RUN_PER_URL("optimistic", &g_url, tests, group_setup, group_teardown);
}
