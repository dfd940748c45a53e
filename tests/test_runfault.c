/*
 * test_runfault.c -- `sqllock run` under faults (issue 15), with real
 * processes on every database URL in SQLLOCK_TEST_URLS:
 *
 *   - X1: the runner SIGKILLed before the grant, while its command runs
 *     with children, grandchildren, an orphan and a child in a session of
 *     its own, while what the command left behind is being stopped, and
 *     at random moments: nothing of the job is left, within a bound the
 *     test measures and prints; the guard SIGKILLed alone: the same, and
 *     the runner says so; a command that leaves processes running when
 *     it exits: they are stopped before the lock is given up;
 *   - X2, X3: a runner stopped past its ttl while its command runs on and
 *     exits 0 exits 76 (and the guard told the command at the deadline);
 *     a release that finds the lease taken over exits 76;
 *   - X4: --hold-at-least: two "hosts" 0.3 s apart run a 1 s job once,
 *     the name stays held for the window after the runner has exited, and
 *     a --wait gets it when the window ends;
 *   - the busy message names the holder and the time left, never the
 *     owner id; --quiet prints nothing when busy (run and acquire) but
 *     still prints errors; --verbose prints the events in order;
 *   - C3: the database restarted while the job runs: the run exits with
 *     the command's code and the lock is free at once after it, not after
 *     the ttl (needs the servers scripts/servers.sh started, named by
 *     SQLLOCK_TEST_SERVERS_DIR and SQLLOCK_TEST_SERVERS_SCRIPT; skipped
 *     without them).
 *
 * The job's processes are found by their environment: every process the
 * command starts inherits SQLLOCK_NAME, which names a lock unique to the
 * test, and neither the runner nor its guard has it. The test makes
 * itself a child subreaper, so that a guard whose runner was killed is
 * re-parented to it and reaped here.
 *
 * SQLLOCK_CLI_PATH is the built tool, passed in by tests/CMakeLists.txt.
 *
 * The cases are in tests/runfault/, by group (killed.c, exits.c, hold.c,
 * messages.c), with what they share in runfault/common.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <sys/prctl.h>

#include "test_util.h"
#include "test_run.h"
#include "test_spawn.h"
#include "tu_tool.h"
#include "runfault/runfault.h"

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runfault_X1_runner_killed_while_command_runs),
        cmocka_unit_test(test_runfault_X1_runner_killed_before_grant),
        cmocka_unit_test(test_runfault_X1_runner_killed_after_command),
        cmocka_unit_test(test_runfault_X1_runner_killed_at_random),
        cmocka_unit_test(test_runfault_X1_guard_killed),
        cmocka_unit_test(test_runfault_X1_leftovers_stopped_before_release),
        cmocka_unit_test(test_runfault_X2_X3_paused_runner_exits_76),
        cmocka_unit_test(test_runfault_X2_release_finds_takeover_exits_76),
        cmocka_unit_test(test_runfault_X4_hold_at_least_runs_once),
        cmocka_unit_test(test_runfault_busy_message_and_quiet),
        cmocka_unit_test(test_runfault_verbose_events_in_order),
        cmocka_unit_test(test_runfault_C3_database_restart_mid_job),
        cmocka_unit_test(test_runfault_C3_outage_of_2s),
        cmocka_unit_test(test_runfault_C3_outage_of_10s),
        cmocka_unit_test(test_runfault_C3_library_release_through_outage),
    };
    int rc;

    /* A guard whose runner was killed comes here, to be reaped. */
    prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    tu_not_on("sqlite", "test_runfault_C3_*",
              "an embedded database has no server to restart");
    rc = TU_RUN_PER_URL("runfault", &g_url, tests, rf_setup, rf_teardown);
    printf("runfault: the slowest end of a job after its runner's death: "
           "%lld ms (bound %d ms)\n", (long long)g_worst_ms, GONE_MS);
    return rc;
}
