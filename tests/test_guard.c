/*
 * test_guard.c -- guarding the application's own writes (DESIGN G1,
 * issue 17 item 2): a write the application makes on its own connection,
 * in its own transaction, through its database's own client library
 * (libpq, the MySQL C API, sqlite3), that commits only if the lease
 * (name, token) is still held when it commits; and the library's
 * guarded update, sqllock_table_guarded_update().
 *
 * The guard's text in every placeholder style and its bad input
 * (guard/sql.c); held and refused writes at every isolation level, expiry
 * judged at the time of the check, a takeover that waits for the guarded
 * commit, sessions in other time zones (guard/native.c); a holder paused
 * with SIGSTOP past its ttl while another takes the lease and writes,
 * and the guarded write racing a takeover at commit time, round after
 * round, between two processes (guard/race.c; SQLLOCK_GUARD_ROUNDS, 200
 * by default, 20 under valgrind); the guarded update's statuses, inside
 * a row-lock transaction, and a write delayed past the lease's expiry
 * while the lease is granted again (guard/update.c).
 *
 * Runs once per URL in SQLLOCK_TEST_URLS, or on a fresh temporary SQLite
 * file; SQLLOCK_TEST_REQUIRE as in test_conformance. Forked children
 * never use cmocka: they report through shared memory and their exit
 * status.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "guard/guard.h"

const char *g_url;

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_guard_G1_text_per_style,
                                  guard_teardown),
        cmocka_unit_test_teardown(test_guard_G1_E2_bad_input,
                                  guard_teardown),
        cmocka_unit_test_teardown(test_guard_G1_native_held_and_refused,
                                  guard_teardown),
        cmocka_unit_test_teardown(test_guard_G1_native_expired_at_check,
                                  guard_teardown),
        cmocka_unit_test_teardown(test_guard_G1_native_takeover_waits_for_commit,
                                  guard_teardown),
        cmocka_unit_test_teardown(test_guard_G1_native_session_time_zone,
                                  guard_teardown),
        cmocka_unit_test_teardown(test_guard_G1_update_statuses,
                                  guard_teardown),
        cmocka_unit_test_teardown(test_guard_G1_update_in_txn,
                                  guard_teardown),
        cmocka_unit_test_teardown(test_guard_G1_L5_update_same_values_ok,
                                  guard_teardown),
        cmocka_unit_test_teardown(test_guard_G1_update_delayed_past_expiry,
                                  guard_teardown),
        cmocka_unit_test_teardown(test_guard_G1_paused_holder_refused,
                                  guard_teardown),
        cmocka_unit_test_teardown(test_guard_G1_commit_race,
                                  guard_teardown),
    };

    tu_not_on("sqlite", "test_guard_G1_native_session_time_zone",
              "SQLite has no session time zone: its clock is a number of "
              "milliseconds");
    return TU_RUN_PER_URL("guard", &g_url, tests, guard_group_setup, NULL);
}
