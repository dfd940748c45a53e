/*
 * killed.c -- test_runfault: the runner or its guard
 * SIGKILLed: nothing of the job outlives the hold (X1).
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
#include "runfault.h"

/* ------------------------------------------------------------------ */
/* X1: the command never outlives its runner's hold                    */
/* ------------------------------------------------------------------ */

/* SIGKILL of the runner while its command runs with children,
 * grandchildren, an orphan and a child in a session of its own: all of
 * them and the guard are gone within GONE_MS. The lock is not released
 * (nobody could), so it stays held until it expires. */
void test_runfault_X1_runner_killed_while_command_runs(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "kill-run");
    char started[4300], script[9000];
    pid_t guard;
    int64_t ms;
    tu_row r;
    tt_job *j;

    tt_fpath(f, started, sizeof started, "started");
    snprintf(script, sizeof script, TREE, started);
    TT_START(f, j, "run", name, "--ttl", "2s", "--", "sh", "-c", script);
    tt_wait_started(f, j, started);
    rf_wait_tree(name);
    guard = rf_wait_guard(j->pid);
    assert_true(guard > 0);
    assert_int_equal(kill(j->pid, SIGKILL), 0);
    ms = rf_gone(name, guard, tu_now_ms(), "SIGKILL while the command ran");
    assert_int_equal(tt_finish(f, j, 5000), 1000 + SIGKILL);
    printf("    X1: %d processes of the job and the guard gone %lld ms "
           "after the runner's SIGKILL\n", TREE_PROCS, (long long)ms);
    tt_row_of(f, name, &r);
}

/* SIGKILL of the runner while it waits for a busy lock: the guard exits
 * with it, and the command never runs. */
void test_runfault_X1_runner_killed_before_grant(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "kill-wait");
    sqllock_lease *mine = tt_lease_for(f, name, 30000);
    char ran[4300], script[9000];
    pid_t guard;
    tt_job *j;

    tt_fpath(f, ran, sizeof ran, "ran");
    snprintf(script, sizeof script, "touch '%s'", ran);
    EXPECT_RC(f->db, sqllock_lease_try_acquire(mine), SQLLOCK_OK, "hold");
    TT_START(f, j, "run", name, "--ttl", "2s", "--wait", "20s", "--verbose",
             "--", "sh", "-c", script);
    rf_wait_stderr(f, j, "waiting up to");
    guard = rf_wait_guard(j->pid);
    assert_true(guard > 0);
    assert_int_equal(kill(j->pid, SIGKILL), 0);
    rf_gone(name, guard, tu_now_ms(), "SIGKILL while waiting for the lock");
    assert_int_equal(tt_finish(f, j, 5000), 1000 + SIGKILL);
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");
    tu_sleep_ms(100);
    assert_false(tt_file_exists(ran));
}

/* SIGKILL of the runner after its command has ended, while what the
 * command left running (a child that ignores SIGTERM) waits out
 * --kill-after: the guard kills it at once. */
void test_runfault_X1_runner_killed_after_command(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "kill-left");
    char started[4300], script[9000];
    pid_t guard;
    int64_t ms;
    tt_job *j;

    tt_fpath(f, started, sizeof started, "started");
    snprintf(script, sizeof script,
             "trap '' TERM; sleep 300 & echo $$ > '%s'; exit 0", started);
    TT_START(f, j, "run", name, "--ttl", "2s", "--kill-after", "30s", "--",
             "sh", "-c", script);
    tt_wait_started(f, j, started);
    rf_wait_stderr(f, j, "left 1 process running");
    /* The leftover, seen in /proc: waited for, not sampled once (at load
     * 4 one look found none -- most likely the subshell of `sleep &`
     * still in its exec, when its environment reads empty). */
    {
        int64_t end = tu_now_ms() + TT_START_MS;
        int n;

        while ((n = rf_job_procs(name, 0, 0)) != 1) {
            if (tu_now_ms() >= end)
                fail_msg("the command left %d processes of the job running, "
                         "not 1", n);
            tu_sleep_ms(5);
        }
    }
    guard = rf_wait_guard(j->pid);
    assert_true(guard > 0);
    assert_int_equal(kill(j->pid, SIGKILL), 0);
    ms = rf_gone(name, guard, tu_now_ms(), "SIGKILL while leftovers stopped");
    assert_int_equal(tt_finish(f, j, 5000), 1000 + SIGKILL);
    printf("    X1: the command's leftover gone %lld ms after the runner's "
           "SIGKILL\n", (long long)ms);
}

/* SIGKILL of the runner at random moments from its start: before the
 * grant, while the command starts its processes, while they run. Never
 * does anything of the job survive it. The delays are printed, so that
 * a failure can be replayed. */
void test_runfault_X1_runner_killed_at_random(void **state)
{
    tt_fixture *f = *state;
    unsigned seed = (unsigned)getpid() ^ (unsigned)tu_now_ms();
    char started[4300], script[9000], delays[256] = "";
    int64_t worst = 0, ms;
    int i, ran = 0;

    for (i = 0; i < 6; i++) {
        const char *name = tt_name(f, "kill-random");
        int delay = (int)(rand_r(&seed) % 400);
        char name_i[300];
        pid_t guard;
        tt_job *j;

        snprintf(name_i, sizeof name_i, "%s-%d", name, i);
        tt_fpath(f, started, sizeof started, "started");
        snprintf(script, sizeof script, TREE, started);
        TT_START(f, j, "run", name_i, "--ttl", "2s", "--", "sh", "-c", script);
        tu_sleep_ms(delay);
        guard = rf_find_guard(j->pid);
        assert_int_equal(kill(j->pid, SIGKILL), 0);
        ms = rf_gone(name_i, guard, tu_now_ms(), "SIGKILL at a random moment");
        if (ms > worst)
            worst = ms;
        ran += tt_file_exists(started);
        tt_finish(f, j, 5000);
        snprintf(delays + strlen(delays), sizeof delays - strlen(delays),
                 "%s%d", i ? "," : "", delay);
    }
    printf("    X1: runner killed %s ms after its start (the command had "
           "started %d times): all gone, the slowest after %lld ms\n",
           delays, ran, (long long)worst);
}

/* SIGKILL of the guard alone: the command dies with it
 * (PR_SET_PDEATHSIG), what it started comes to the runner (a child
 * subreaper too), which kills it, releases the lock and exits 69 saying
 * why. */
void test_runfault_X1_guard_killed(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "kill-guard");
    char started[4300], script[9000];
    int64_t t0;
    pid_t guard;
    int code;
    tt_job *j;

    tt_fpath(f, started, sizeof started, "started");
    snprintf(script, sizeof script, TREE, started);
    TT_START(f, j, "run", name, "--ttl", "2s", "--", "sh", "-c", script);
    tt_wait_started(f, j, started);
    rf_wait_tree(name);
    guard = rf_wait_guard(j->pid);
    assert_true(guard > 0);
    assert_int_equal(kill(guard, SIGKILL), 0);
    t0 = tu_now_ms();
    code = tt_finish(f, j, 10000);
    if (code != 69 || !tu_contains_ci(f->err, "guard"))
        fail_msg("the guard killed: exit %d, want 69 and a message about "
                 "the guard; stderr: %s", code, f->err);
    rf_gone(name, 0, t0, "SIGKILL of the guard");
    tt_expect_no_row(f, name);
}

/* What a command leaves running when it exits -- a child in its group,
 * and one in a session of its own -- is stopped (SIGTERM) before the
 * lock is given up; the exit code is the command's. */
void test_runfault_X1_leftovers_stopped_before_release(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "leftover");
    char started[4300], script[9000];
    int64_t t0;
    int code;
    tt_job *j;

    tt_fpath(f, started, sizeof started, "started");
    snprintf(script, sizeof script,
             "sleep 300 & setsid sleep 300 & echo $$ > '%s'; exit 4",
             started);
    t0 = tu_now_ms();
    TT_START(f, j, "run", name, "--ttl", "2s", "--", "sh", "-c", script);
    code = tt_finish(f, j, 15000);
    if (code != 4)
        fail_msg("exit %d, want the command's 4; stderr: %s", code, f->err);
    if (!tu_contains_ci(f->err, "left 2 processes running"))
        fail_msg("stderr does not name the 2 processes left: %s", f->err);
    if (tu_now_ms() - t0 > 8000)
        fail_msg("took %lld ms", (long long)(tu_now_ms() - t0));
    assert_int_equal(rf_job_procs(name, 0, 0), 0);
    tt_expect_no_row(f, name);
}
