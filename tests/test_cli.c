/*
 * test_cli.c -- the `sqllock` command-line tool, run as a separate process
 * with --db on every database URL in SQLLOCK_TEST_URLS (or a temporary
 * SQLite file when that is unset): exit codes, the printed owner and
 * token, `run` holding the lock around a command, `reap` (DESIGN L1, L3,
 * L4, L5, P4, E2), durations, and, without --db, the refusal of a
 * command that names no database, --local, -V and -h; issue 27: release
 * of another owner's lock, durations too long, run's default ttl, a
 * command's --help, malformed URLs, read-only SQLite opens, connect
 * messages and name checks. Lock names carry the pid, so runs on a
 * shared server do not meet.
 *
 * SQLLOCK_CLI_PATH is the built tool, passed in by tests/CMakeLists.txt,
 * and SQLLOCK_CLI_SQLITE_ONLY_PATH a copy of it built with the SQLite
 * driver alone (when SQLite is built).
 *
 * The cases are in tests/cli/, by group (commands.c, tool.c, admin.c),
 * with what they share in cli/common.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "tu_tool.h"
#include "cli/cli.h"

/* ------------------------------------------------------------------ */

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cli_init),
        cmocka_unit_test(test_cli_acquire_busy_release),
        cmocka_unit_test(test_cli_run_busy_does_not_run),
        cmocka_unit_test(test_cli_run_exit_codes),
        cmocka_unit_test(test_cli_run_passes_token),
        cmocka_unit_test(test_cli_usage_errors),
        cmocka_unit_test(test_cli_durations),
        cmocka_unit_test(test_cli_no_database_refused),
        cmocka_unit_test(test_cli_version_and_help),
        cmocka_unit_test(test_cli_list_json),
        cmocka_unit_test(test_cli_reap),
        cmocka_unit_test(test_cli_show),
        cmocka_unit_test(test_cli_release_force),
        cmocka_unit_test(test_cli_force_release_of_a_permit),
        cmocka_unit_test(test_cli_C5_force_audit_names_role_and_outlives_runs),
        cmocka_unit_test(test_cli_history_bounded),
        cmocka_unit_test(test_cli_history_of_runs),
        cmocka_unit_test(test_cli_demo_on_database),
        cmocka_unit_test(test_cli_demo_touches_only_its_tables),
        cmocka_unit_test(test_cli_release_held_by_another),
        cmocka_unit_test(test_cli_duration_too_long),
        cmocka_unit_test(test_cli_run_default_ttl),
        cmocka_unit_test(test_cli_command_help),
        cmocka_unit_test(test_cli_malformed_url_is_usage),
        cmocka_unit_test(test_cli_read_commands_do_not_create),
        cmocka_unit_test(test_cli_connect_failure_messages),
        cmocka_unit_test(test_cli_names_checked_as_acquire),
#ifdef SQLLOCK_CLI_SQLITE_ONLY_PATH
        cmocka_unit_test(test_cli_driver_not_built_says_how),
#endif
    };
    return TU_RUN_PER_URL("cli", &g_url, tests, cl_setup, cl_teardown);
}
