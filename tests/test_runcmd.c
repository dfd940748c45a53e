/*
 * test_runcmd.c -- `sqllock run` as a supervisor, with real processes on
 * every database URL in SQLLOCK_TEST_URLS: the built tool runs a shell
 * command while the test, another process, competes for the lock, steals
 * it, stops the tool, or sends it signals.
 *
 *   - renewal keeps a lock for many ttls (DESIGN L7), and nobody else gets
 *     it meanwhile (L1); the command's exit code is passed through;
 *   - a lease lost while the command runs (a pause past the ttl, L6, or a
 *     takeover) stops the command with --signal, then SIGKILL after
 *     --kill-after, and the tool exits 76 without touching the new
 *     owner's row (L3);
 *   - --skip and --wait (L9);
 *   - SIGTERM, SIGINT and SIGHUP to the tool reach the command, and the
 *     lock is released afterwards (L3: the release names the owner);
 *   - usage errors exit 64 (E2) and lock nothing;
 *   - --leader (M4): the command runs only while elected, a loss stops
 *     it (76), SIGTERM and its own end hand the leadership over.
 *
 * The tool is started in a process group of its own, as cron starts a
 * job, so that it behaves the same whether or not the tests run under a
 * terminal. The commands write their shell's pid to a file once they run:
 * the test waits for that file instead of sleeping a guessed time.
 *
 * SQLLOCK_CLI_PATH is the built tool, passed in by tests/CMakeLists.txt.
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

#ifndef SQLLOCK_CLI_PATH
#error "SQLLOCK_CLI_PATH must name the built sqllock tool"
#endif

/* The short ttl of the renewal and loss cases: 600 ms times the slowdown
 * factor of the tool (tool_slowdown()), as text for --ttl (set in
 * setup). A renewer starved of the CPU for a whole ttl loses its lease
 * rightly; the test is about what follows from the ttl, not about the
 * machine keeping up with 600 ms. */
static int64_t g_ttl_ms = 600;
static char g_ttl[32] = "600ms";

/* The slowdown factor of the `sqllock` processes the test runs, whose
 * renewer has to keep up with the ttl: tu_slowdown() (the sanitizers,
 * the load) without valgrind's share. valgrind does not follow a program
 * the test executes (no --trace-children; tests/valgrind.sh sets
 * SQLLOCK_TEST_UNDER_VALGRIND), so there the tool runs at full speed, on
 * a machine as loaded as the test's, while the test only looks; under
 * ASan or TSan the tool is instrumented like the test. */
static int64_t tool_slowdown(void)
{
    const char *vg = getenv("SQLLOCK_TEST_UNDER_VALGRIND");
    int64_t f = tu_slowdown();

    if (vg != NULL && *vg != '\0')
        f /= tu_slowdown_tool();
    return f < 1 ? 1 : f;
}

/* The URL the current group runs on. */
static const char *g_url;

/* Tries `l` every 10 ms until it is granted (a lease in the way has
 * expired by the server's clock) or `ms` have passed; returns the last
 * try's status. */
static int acquire_when_expired(sqllock_lease *l, int64_t ms)
{
    int64_t end = tu_now_ms() + ms;
    int rc;

    while ((rc = sqllock_lease_try_acquire(l)) == SQLLOCK_BUSY &&
           tu_now_ms() < end)
        tu_sleep_ms(10);
    return rc;
}

/* N1: the row of `name` is the kind marker with `owner`. */
static void expect_marker(tt_fixture *f, const char *name, const char *owner)
{
    tu_row r;

    tt_row_of(f, name, &r);
    if (strcmp(r.owner, owner) != 0)
        fail_msg("lock '%s': owner %s, want the kind marker %s", name,
                 r.owner, owner);
}

static int setup(void **state)
{
    tt_fixture *f = tt_setup(SQLLOCK_CLI_PATH, g_url, "runcmd");

    if (f == NULL)
        return -1;
    g_ttl_ms = 600 * tool_slowdown();
    snprintf(g_ttl, sizeof g_ttl, "%lldms", (long long)g_ttl_ms);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    tt_teardown(*state);
    return 0;
}

/* L7 (and L1): a job running 5x its ttl (600 ms, times the tool's
 * slowdown factor) keeps the lock under renewal. The test process tries
 * to take it every 50 ms the whole time and never does; the row keeps
 * its owner and token (renewed, never re-acquired) and its expiry moves
 * forward. The job's exit code comes back, and the row is gone
 * afterwards. A runner starved for a whole ttl (a CPU hog beside the
 * tests) loses the lock and must say so: exit 76, the command stopped
 * (DESIGN L6, X2); the case then says that L7 was not shown. */
static void test_runcmd_L7_renewal_keeps_lock_for_5x_ttl(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "long");
    char started[4300], done[4300], script[9000];
    sqllock_lease *mine;
    tu_row r0, r;
    int64_t t0, last_expiry = 0;
    int tries = 0, code, rc;
    tt_job *j;

    tt_fpath(f, started, sizeof started, "started");
    tt_fpath(f, done, sizeof done, "done");
    snprintf(script, sizeof script,
             "echo $$ > '%s'; sleep %.3f; echo done > '%s'; exit 3", started,
             5 * g_ttl_ms / 1000.0, done);
    TT_START(f, j, "run", name, "--ttl", g_ttl, "--", "sh", "-c", script);
    tt_wait_started(f, j, started);
    t0 = tu_now_ms();
    tt_row_of(f, name, &r0);
    mine = tt_lease_for(f, name, 5000);
    while ((code = tu_wait_for(j->pid, 0)) < 0) {
        rc = sqllock_lease_try_acquire(mine);
        if (rc == SQLLOCK_OK && tt_file_exists(done)) {
            /* The job is over and the tool has just released the lock
             * (that the release found it still ours is checked below). */
            EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK,
                      "release");
            break;
        }
        if (rc == SQLLOCK_OK) {
            /* Taken while the job ran: no renewal got through for a whole
             * ttl. On a loaded machine that is a starved runner, and the
             * library doing right only if the runner was told: it stops
             * the command and exits 76 (DESIGN L6, X2). A runner that
             * carries on (the job's 3) is an overlap, and fails. */
            int64_t at = tu_now_ms() - t0;

            code = tt_finish(f, j, tu_scaled_ms(30000));
            if (code != 76 || !tu_contains_ci(f->err, "lost"))
                fail_msg("taken %lld ms into a %lld ms job with a %lld ms "
                         "ttl, while the runner went on: exit %d, want 76 "
                         "saying the lock was lost; stderr: %s",
                         (long long)at, (long long)(5 * g_ttl_ms),
                         (long long)g_ttl_ms, code, f->err);
            EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK,
                      "release");
            printf("    L7 not shown on this machine's load: the runner "
                   "was starved past its %lld ms ttl (taken %lld ms into "
                   "the job) and said so, exit 76 (L6, X2): %s",
                   (long long)g_ttl_ms, (long long)at, f->err);
            return;
        }
        if (rc != SQLLOCK_BUSY)
            fail_msg("try %d, %lld ms into a %lld ms job with a %lld ms "
                     "ttl: got %s, want BUSY (%s)", tries + 1,
                     (long long)(tu_now_ms() - t0),
                     (long long)(5 * g_ttl_ms), (long long)g_ttl_ms,
                     sqllock_errname(rc), sqllock_errmsg(f->db));
        tries++;
        EXPECT_RC(f->db, tu_find(f->db, name, &r), SQLLOCK_OK, "list");
        if (r.found == 1) {
            assert_string_equal(r.owner, r0.owner);
            assert_int_equal(r.token, r0.token);
            last_expiry = r.expires_at_ms;
        } else if (!tt_file_exists(done)) {
            fail_msg("the row vanished while the job ran");
        }
        tu_sleep_ms(50);
    }
    if (code < 0)
        code = tt_finish(f, j, 15000);
    else
        tt_collect(f, j);
    if (code != 3)
        fail_msg("sqllock run: exit %d, want the job's 3; stderr: %s", code,
                 f->err);
    /* Its release found the lease still its own: no warning. */
    if (tu_contains_ci(f->err, "lost"))
        fail_msg("sqllock run warned: %s", f->err);
    /* The job really ran about 5 ttls, under competition all along. */
    assert_true(tu_now_ms() - t0 >= 5 * g_ttl_ms - 500);
    assert_true(tries >= 20);
    if (last_expiry <= r0.expires_at_ms + 5 * g_ttl_ms / 3)
        fail_msg("the lease's expiry moved from %lld only to %lld: not "
                 "renewed", (long long)r0.expires_at_ms,
                 (long long)last_expiry);
    tt_expect_no_row(f, name);
    EXPECT_RC(f->db, sqllock_lease_try_acquire(mine), SQLLOCK_OK,
              "acquire after the job");
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");
}

/* L6/L7 and L3: the tool is stopped (SIGSTOP) past its ttl and another
 * owner takes the expired lease; when the tool runs again, its lease is
 * lost: the command gets --signal USR1 (its trap records it and exits 0)
 * and the tool exits 76 -- not the command's 0 -- leaving the new owner's
 * row alone. */
static void test_runcmd_L6_L7_lost_after_pause_sends_signal(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "pause");
    char started[4300], got[4300], script[9000], buf[64];
    sqllock_lease *mine;
    pid_t cmd;
    tu_row r;
    int code;
    tt_job *j;

    tt_fpath(f, started, sizeof started, "started");
    tt_fpath(f, got, sizeof got, "got");
    snprintf(script, sizeof script,
             "trap 'echo USR1 > \"%s\"; exit 0' USR1; echo $$ > '%s'; "
             "while :; do sleep 0.1; done", got, started);
    TT_START(f, j, "run", name, "--ttl", g_ttl, "--signal", "USR1",
             "--kill-after", "10s", "--", "sh", "-c", script);
    cmd = tt_wait_started(f, j, started);
    /* Not in the foreground of a terminal: the command leads a process
     * group of its own. */
    assert_int_equal(getpgid(cmd), cmd);
    assert_int_equal(kill(j->pid, SIGSTOP), 0);
    /* Taken as soon as the server's clock has the paused tool's lease
     * expired: tried every 10 ms, for its ttl and a generous 5 s (times
     * the slowdown factor) more. */
    mine = tt_lease_for(f, name, 30000);
    EXPECT_RC(f->db, acquire_when_expired(mine, g_ttl_ms +
                                                    tu_scaled_ms(5000)),
              SQLLOCK_OK, "acquire the paused tool's expired lease");
    assert_int_equal(kill(j->pid, SIGCONT), 0);
    code = tt_finish(f, j, 15000);
    if (code != 76)
        fail_msg("sqllock run: exit %d, want 76; stderr: %s", code, f->err);
    assert_true(tu_contains_ci(f->err, "lost"));
    assert_true(tu_read_file(got, buf, sizeof buf) > 0);
    assert_string_equal(buf, "USR1\n");
    tt_row_of(f, name, &r);
    assert_string_equal(r.owner, sqllock_lease_owner(mine));
    assert_int_equal(r.token, sqllock_lease_token(mine));
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK,
              "release the new owner's lease");
}

/* Commands for steal(): one that ignores SIGTERM, with a `sleep 30`
 * child that ignores it too; and one that ends on SIGTERM but leaves such
 * a child behind. Each writes the child's pid, then its own. */
#define STUBBORN "trap '' TERM; sleep 30 & echo $! > '%s'; echo $$ > '%s'; wait"
#define LEAVES_CHILD "trap '' TERM; sleep 30 & echo $! > '%s'; " \
                     "trap 'exit 0' TERM; echo $$ > '%s'; wait"

/* Starts `command` (STUBBORN or LEAVES_CHILD) under `run --ttl 600ms`
 * (not scaled: a slow renewer only delays what is checked here, and the
 * bounds below must stay well under the default 10 s grace)
 * with --kill-after `kill_after` (NULL: the default), steals the lease
 * from under it (row deleted, then taken by `mine`), and returns the
 * tool's exit code; *ms gets the time from the theft (its start) to the
 * tool's end and *sleeper the pid of the command's `sleep 30`. */
static int steal(tt_fixture *f, const char *name, const char *command,
                 const char *kill_after, sqllock_lease *mine, int64_t *ms,
                 pid_t *sleeper)
{
    char started[4300], spid[4300], script[9000], buf[64];
    int64_t t;
    int code;
    tt_job *j;

    tt_fpath(f, started, sizeof started, "started");
    tt_fpath(f, spid, sizeof spid, "sleeper");
    snprintf(script, sizeof script, command, spid, started);
    if (kill_after != NULL)
        TT_START(f, j, "run", name, "--ttl", "600ms", "--kill-after",
                 kill_after, "--", "sh", "-c", script);
    else
        TT_START(f, j, "run", name, "--ttl", "600ms", "--", "sh", "-c",
                 script);
    tt_wait_started(f, j, started);
    assert_true(tu_read_file(spid, buf, sizeof buf) > 0);
    *sleeper = (pid_t)strtol(buf, NULL, 10);
    assert_true(*sleeper > 0);
    /* The loss cannot be noticed before the row is deleted. */
    t = tu_now_ms();
    tt_delete_row(f, name);
    EXPECT_RC(f->db, sqllock_lease_try_acquire(mine), SQLLOCK_OK,
              "take the deleted lease");
    code = tt_finish(f, j, 25000);
    *ms = tu_now_ms() - t;
    return code;
}

/* L7 and L3: the lease is taken over while the command runs, and the
 * command ignores SIGTERM: it gets SIGKILL --kill-after later (its whole
 * process group, so its `sleep 30` child dies too), and the tool exits
 * 76 leaving the new owner's row alone. --kill-after 0 kills at once
 * instead of after the default 10 s. A child left behind by a command
 * that did stop is killed with it: nothing of the job runs on once the
 * lock is someone else's. */
static void test_runcmd_L7_lost_to_takeover_then_kill_after(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "steal");
    sqllock_lease *mine = tt_lease_for(f, name, 30000);
    const char *term, *killed;
    pid_t sleeper;
    int64_t ms;
    tu_row r;
    int code;

    code = steal(f, name, STUBBORN, "800ms", mine, &ms, &sleeper);
    if (code != 76)
        fail_msg("sqllock run: exit %d, want 76; stderr: %s", code, f->err);
    /* SIGTERM first, SIGKILL after the grace, not before. */
    term = strstr(f->err, "SIGTERM");
    killed = strstr(f->err, "SIGKILL");
    if (term == NULL || killed == NULL || killed < term)
        fail_msg("stderr names no SIGTERM then SIGKILL: %s", f->err);
    if (ms < 800 || ms > 10000)
        fail_msg("the tool ended %lld ms after the theft; want at least the "
                 "800 ms grace, and far less than the command's 30 s",
                 (long long)ms);
    if (!tt_pid_gone_within(sleeper, 3000))
        fail_msg("the command's child %lld still runs after the lease was "
                 "lost", (long long)sleeper);
    tt_row_of(f, name, &r);
    assert_string_equal(r.owner, sqllock_lease_owner(mine));
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");

    code = steal(f, name, STUBBORN, "0", mine, &ms, &sleeper);
    if (code != 76)
        fail_msg("--kill-after 0: exit %d, want 76; stderr: %s", code,
                 f->err);
    if (ms >= 5000)
        fail_msg("--kill-after 0: the tool ended %lld ms after the theft",
                 (long long)ms);
    assert_true(tt_pid_gone_within(sleeper, 3000));
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");

    /* The command ends on SIGTERM but leaves a child that ignores it:
     * that child gets SIGKILL as soon as the command is gone, not after
     * the default 10 s grace. */
    code = steal(f, name, LEAVES_CHILD, NULL, mine, &ms, &sleeper);
    if (code != 76)
        fail_msg("a command that left a child: exit %d, want 76; stderr: %s",
                 code, f->err);
    assert_true(ms < 5000);
    if (!tt_pid_gone_within(sleeper, 3000))
        fail_msg("the child %lld the command left still runs after the "
                 "lease was lost", (long long)sleeper);
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");
}

/* L9: on a held lock, --skip (and the default) exits 75, or --busy-exit,
 * without running the command; on a free one the command runs. */
static void test_runcmd_L9_skip_does_not_run(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "skip");
    sqllock_lease *mine = tt_lease_for(f, name, 30000);
    char file[4300];
    int64_t t;
    tu_row r;

    tt_fpath(f, file, sizeof file, "touched");
    EXPECT_RC(f->db, sqllock_lease_try_acquire(mine), SQLLOCK_OK, "hold");
    t = tu_now_ms();
    TT_EXPECT_EXIT(f, 75, "run", name, "--ttl", "5s", "--skip", "--", "touch",
                   file);
    /* At once: one try, no waiting (a start and one statement). */
    if (tu_now_ms() - t >= 3000)
        fail_msg("--skip took %lld ms", (long long)(tu_now_ms() - t));
    assert_false(tt_file_exists(file));
    TT_EXPECT_EXIT(f, 0, "run", name, "--ttl", "5s", "--skip", "--busy-exit",
                   "0", "--", "touch", file);
    assert_false(tt_file_exists(file));
    TT_EXPECT_EXIT(f, 75, "run", name, "--ttl", "5s", "--", "touch", file);
    assert_false(tt_file_exists(file));
    tt_row_of(f, name, &r);
    assert_string_equal(r.owner, sqllock_lease_owner(mine));
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");
    TT_EXPECT_EXIT(f, 0, "run", name, "--ttl", "5s", "--skip", "--", "touch",
                   file);
    assert_true(tt_file_exists(file));
    tt_expect_no_row(f, name);
}

/* L9: --wait 5s waits for a holder that releases after about 1 s, and
 * only then runs the command. */
static void test_runcmd_L9_wait_runs_after_release(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "wait");
    sqllock_lease *mine = tt_lease_for(f, name, 30000);
    char file[4300], script[9000];
    int64_t t;
    int code;
    tt_job *j;

    tt_fpath(f, file, sizeof file, "ran");
    snprintf(script, sizeof script, "echo ran > '%s'", file);
    EXPECT_RC(f->db, sqllock_lease_try_acquire(mine), SQLLOCK_OK, "hold");
    TT_START(f, j, "run", name, "--ttl", "5s", "--wait", "5s", "--", "sh",
             "-c", script);
    tu_sleep_ms(1000);
    assert_false(tt_file_exists(file));
    code = tu_wait_for(j->pid, 0);
    if (code >= 0) {
        tt_collect(f, j);
        fail_msg("sqllock run --wait 5s ended (exit %d) while the lock was "
                 "held; stderr: %s", code, f->err);
    }
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");
    t = tu_now_ms();
    code = tt_finish(f, j, 15000);
    if (code != 0)
        fail_msg("sqllock run --wait 5s: exit %d, want 0; stderr: %s", code,
                 f->err);
    assert_true(tt_file_exists(file));
    if (tu_now_ms() - t > 3000)
        fail_msg("the wait ended %lld ms after the release",
                 (long long)(tu_now_ms() - t));
    tt_expect_no_row(f, name);
}

/* L9: a --wait that runs out exits 75 (or --busy-exit) without running
 * the command, at the end of the wait. */
static void test_runcmd_L9_wait_times_out(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "timeout");
    sqllock_lease *mine = tt_lease_for(f, name, 30000);
    char file[4300];
    int64_t t;

    tt_fpath(f, file, sizeof file, "touched");
    EXPECT_RC(f->db, sqllock_lease_try_acquire(mine), SQLLOCK_OK, "hold");
    t = tu_now_ms();
    TT_EXPECT_EXIT(f, 75, "run", name, "--ttl", "5s", "--wait", "700ms", "--",
                   "touch", file);
    /* At the deadline: not before it, and not long after. */
    t = tu_now_ms() - t;
    if (t < 700 || t >= 3000)
        fail_msg("--wait 700ms gave up after %lld ms", (long long)t);
    assert_false(tt_file_exists(file));
    TT_EXPECT_EXIT(f, 9, "run", name, "--ttl", "5s", "--wait", "300ms",
                   "--busy-exit", "9", "--", "touch", file);
    assert_false(tt_file_exists(file));
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");
}

/* The live queue rows of fair waiters on `name` (M3). */
typedef struct fair_q {
    char prefix[300];
    int live;
} fair_q;

static int fair_row(void *ctx, const sqllock_lease_info *in)
{
    fair_q *q = ctx;

    if (strncmp(in->name, q->prefix, strlen(q->prefix)) == 0 &&
        in->remaining_ms > 0)
        q->live++;
    return 0;
}

static void await_fair_queue(tt_fixture *f, const char *name, int n)
{
    int64_t end = tu_now_ms() + tu_scaled_ms(TT_START_MS);
    fair_q q;

    for (;;) {
        snprintf(q.prefix, sizeof q.prefix, "%s\x1fq", name);
        q.live = 0;
        EXPECT_RC(f->db, sqllock_list(f->db, fair_row, &q), SQLLOCK_OK,
                  "list");
        if (q.live == n)
            return;
        if (tu_now_ms() > end)
            fail_msg("%d fair waiters queued on '%s', want %d", q.live, name,
                     n);
        tu_sleep_ms(10);
    }
}

/* M3: `run --fair`: two runs queued behind a holder run in the order
 * they started waiting; meanwhile a --fair --skip run finds the lock busy
 * (75), and --fair with --also is a usage error (64). */
static void test_runcmd_M3_fair_runs_in_order(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "fair");
    sqllock_lease *mine = tt_lease_for(f, name, 30000);
    char file[4300], sa[9000], sb[9000], got[64];
    tt_job *a, *b;
    int code;

    tt_fpath(f, file, sizeof file, "order");
    snprintf(sa, sizeof sa, "echo A >> '%s'; sleep 0.2", file);
    snprintf(sb, sizeof sb, "echo B >> '%s'", file);
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "5s", "--fair", "--also",
                   "other", "--", "true");
    assert_true(tu_contains_ci(f->err, "--fair"));
    EXPECT_RC(f->db, sqllock_lease_try_acquire(mine), SQLLOCK_OK, "hold");
    TT_START(f, a, "run", name, "--ttl", "10s", "--fair", "--wait", "60s",
             "--", "sh", "-c", sa);
    await_fair_queue(f, name, 1);
    TT_START(f, b, "run", name, "--ttl", "10s", "--fair", "--wait", "60s",
             "--", "sh", "-c", sb);
    await_fair_queue(f, name, 2);
    TT_EXPECT_EXIT(f, 75, "run", name, "--ttl", "5s", "--fair", "--skip", "--",
                   "true");
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");
    code = tt_finish(f, a, 30000);
    if (code != 0)
        fail_msg("run --fair A: exit %d; stderr: %s", code, f->err);
    code = tt_finish(f, b, 30000);
    if (code != 0)
        fail_msg("run --fair B: exit %d; stderr: %s", code, f->err);
    tu_read_file(file, got, sizeof got);
    assert_string_equal(got, "A\nB\n");
    tt_expect_no_row(f, name);
    await_fair_queue(f, name, 0);
}

/* SIGTERM, SIGINT and SIGHUP to the tool reach the command (its trap
 * writes which one came); the tool exits with the command's status and
 * the lock is released afterwards (L3: the row is gone). A command that
 * dies of the signal gives 128 + N, as a shell reports it. */
static void test_runcmd_L3_signals_forwarded_then_released(void **state)
{
    tt_fixture *f = *state;
    static const struct {
        int sig;
        const char *name;
        int code;
    } cases[] = {
        { SIGTERM, "TERM", 143 }, { SIGINT, "INT", 130 },
        { SIGHUP, "HUP", 129 },
    };
    char started[4300], got[4300], script[9000], want[16], buf[64];
    const char *name = tt_name(f, "sig");
    size_t i;
    int code;
    tt_job *j;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tt_fpath(f, started, sizeof started, "started");
        tt_fpath(f, got, sizeof got, "got");
        snprintf(script, sizeof script,
                 "trap 'echo %s > \"%s\"; exit %d' %s; echo $$ > '%s'; "
                 "while :; do sleep 0.1; done", cases[i].name, got,
                 cases[i].code, cases[i].name, started);
        TT_START(f, j, "run", name, "--ttl", "2s", "--", "sh", "-c", script);
        tt_wait_started(f, j, started);
        assert_int_equal(kill(j->pid, cases[i].sig), 0);
        code = tt_finish(f, j, 15000);
        if (code != cases[i].code)
            fail_msg("SIG%s: exit %d, want %d; stderr: %s", cases[i].name,
                     code, cases[i].code, f->err);
        snprintf(want, sizeof want, "%s\n", cases[i].name);
        tu_read_file(got, buf, sizeof buf);
        assert_string_equal(buf, want);
        tt_expect_no_row(f, name);
    }

    /* No trap: the command dies of the signal; the tool says 128 + 15. */
    tt_fpath(f, started, sizeof started, "started");
    snprintf(script, sizeof script, "echo $$ > '%s'; exec sleep 30",
             started);
    TT_START(f, j, "run", name, "--ttl", "2s", "--", "sh", "-c", script);
    tt_wait_started(f, j, started);
    assert_int_equal(kill(j->pid, SIGTERM), 0);
    code = tt_finish(f, j, 15000);
    if (code != 128 + SIGTERM)
        fail_msg("exit %d, want %d; stderr: %s", code, 128 + SIGTERM,
                 f->err);
    tt_expect_no_row(f, name);
}

/* M4 through `run --leader`: the command starts only once the runner is
 * elected (the test holds the leadership first, through the same row,
 * sqllock_leader_lease_new()); the release wakes the runner, whose
 * command sees NAME and the term; a takeover stops the command and the
 * runner exits 76. Then two runners: SIGTERM to the leader stops its
 * command and hands over -- the other's command starts sooner than a
 * ttl, so not by expiry -- and a command that ends by itself hands over
 * too: the tool exits with its code and the row is gone. --leader with
 * --also is a usage error. */
static void test_runcmd_M4_leader(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "leader");
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    char started[4300], started2[4300], got[4300], env[4300], stop[4300];
    char script[14000], script2[9000], buf[600], want[400], row[300];
    sqllock_lease *mine = NULL;
    int64_t t;
    long tok;
    int code, i;
    tt_job *j, *j2;

    TT_EXPECT_EXIT(f, 64, "run", name, "--leader", "--also", "x", "--ttl",
                   "2s", "--", "true");
    lo.ttl_ms = 30000;
    EXPECT_RC(f->db, sqllock_leader_lease_new(f->db, name, &lo, &mine),
              SQLLOCK_OK, "leader_lease_new");
    for (i = 0; i < 4 && f->leases[i] != NULL; i++)
        ;
    assert_true(i < 4);
    f->leases[i] = mine;
    snprintf(row, sizeof row, "%s", sqllock_lease_name(mine));
    EXPECT_RC(f->db, sqllock_lease_try_acquire(mine), SQLLOCK_OK,
              "take the leadership first");

    tt_fpath(f, started, sizeof started, "started");
    tt_fpath(f, got, sizeof got, "got");
    tt_fpath(f, env, sizeof env, "env");
    snprintf(script, sizeof script,
             "trap 'echo TERM > \"%s\"; exit 0' TERM; "
             "echo \"$SQLLOCK_NAME $SQLLOCK_TOKEN\" > '%s'; echo $$ > '%s'; "
             "while :; do sleep 0.1; done", got, env, started);
    TT_START(f, j, "run", name, "--leader", "--ttl", g_ttl, "--", "sh", "-c",
             script);
    /* Not elected: the command does not run. */
    tu_sleep_ms(3 * g_ttl_ms);
    if (tt_file_exists(started) || tu_wait_for(j->pid, 0) >= 0)
        fail_msg("run --leader started the command (or ended) while "
                 "another candidate led");
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK,
              "hand the leadership over");
    tt_wait_started(f, j, started);
    assert_true(tu_read_file(env, buf, sizeof buf) > 0);
    snprintf(want, sizeof want, "%s ", name);
    if (strncmp(buf, want, strlen(want)) != 0)
        fail_msg("the command saw '%s', want NAME and the term", buf);
    tok = strtol(buf + strlen(want), NULL, 10);
    assert_true(tok > 0);
    /* Lost: the row deleted and taken; the command is stopped, exit 76. */
    tt_delete_row(f, row);
    EXPECT_RC(f->db, sqllock_lease_try_acquire(mine), SQLLOCK_OK,
              "take the leadership over");
    assert_true(sqllock_lease_token(mine) > tok);
    code = tt_finish(f, j, 15000);
    if (code != 76)
        fail_msg("run --leader after a loss: exit %d, want 76; stderr: %s",
                 code, f->err);
    /* The messages say what was lost: the leadership, not a lock. */
    snprintf(want, sizeof want, "the leadership of '%s' lost", name);
    if (strstr(f->err, want) == NULL)
        fail_msg("the loss message does not name the leadership: %s",
                 f->err);
    assert_true(tu_read_file(got, buf, sizeof buf) > 0);
    assert_string_equal(buf, "TERM\n");
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");

    /* Hand-over on SIGTERM, to a runner that waits. */
    tt_fpath(f, started, sizeof started, "started");
    tt_fpath(f, got, sizeof got, "got");
    tt_fpath(f, env, sizeof env, "env");
    snprintf(script, sizeof script,
             "trap 'echo TERM > \"%s\"; exit 0' TERM; "
             "echo \"$SQLLOCK_NAME $SQLLOCK_TOKEN\" > '%s'; echo $$ > '%s'; "
             "while :; do sleep 0.1; done", got, env, started);
    TT_START(f, j, "run", name, "--leader", "--ttl", "30s", "--", "sh", "-c",
             script);
    tt_wait_started(f, j, started);
    tt_fpath(f, started2, sizeof started2, "started");
    tt_fpath(f, stop, sizeof stop, "stop");
    snprintf(script2, sizeof script2,
             "echo $$ > '%s'; while [ ! -e '%s' ]; do sleep 0.05; done; "
             "exit 5", started2, stop);
    TT_START(f, j2, "run", name, "--leader", "--ttl", "30s", "--", "sh", "-c",
             script2);
    tu_sleep_ms(g_ttl_ms);
    assert_false(tt_file_exists(started2));
    t = tu_now_ms();
    assert_int_equal(kill(j->pid, SIGTERM), 0);
    tt_wait_started(f, j2, started2);
    t = tu_now_ms() - t;
    printf("# run --leader: the next runner's command started %lld ms "
           "after SIGTERM to the leader\n", (long long)t);
    code = tt_finish(f, j, 15000);
    if (code != 0)
        fail_msg("the leader stopped by SIGTERM: exit %d, want its "
                 "command's 0; stderr: %s", code, f->err);
    assert_true(tu_read_file(got, buf, sizeof buf) > 0);
    assert_string_equal(buf, "TERM\n");
    /* Handed over by the release, not by the expiry of the 30 s ttl. */
    if (t >= tu_scaled_ms(10000))
        fail_msg("the hand-over took %lld ms (ttl 30 s)", (long long)t);
    /* The command ends by itself: its code, and the row is released. */
    {
        FILE *fp = fopen(stop, "w");

        assert_non_null(fp);
        fclose(fp);
    }
    code = tt_finish(f, j2, 15000);
    if (code != 5)
        fail_msg("run --leader whose command exited 5: exit %d; stderr: %s",
                 code, f->err);
    tt_expect_no_row(f, row);
}

/* L12 through `run --also`: with one of the names held, nothing is taken
 * and the command does not run; with all free, the command runs holding
 * every name, and sees them in SQLLOCK_NAMES (NAME first, one per line)
 * with their tokens in SQLLOCK_TOKENS; all are released after it. A name
 * given twice, and --also with --hold-at-least, are usage errors. Then
 * a run with --also outlives its ttl (every lease is renewed), and a row
 * of an --also name deleted behind the runner's back is found by its
 * renewal: the lease is lost, the command stopped, exit 76. */
static void test_runcmd_L12_also(void **state)
{
    tt_fixture *f = *state;
    const char *a = tt_name(f, "also-a"), *b = tt_name(f, "also-b");
    const char *c = tt_name(f, "also-c");
    sqllock_lease *mine = tt_lease_for(f, b, 30000);
    char file[4300], pidf[4300], script[9000], buf[4300], want[2000];
    int code;
    tt_job *j;

    tt_fpath(f, file, sizeof file, "env");
    snprintf(script, sizeof script, "printf '%%s|%%s|%%s|%%s' "
             "\"$SQLLOCK_NAME\" \"$SQLLOCK_TOKEN\" \"$SQLLOCK_NAMES\" "
             "\"$SQLLOCK_TOKENS\" > '%s'", file);
    EXPECT_RC(f->db, sqllock_lease_try_acquire(mine), SQLLOCK_OK, "hold b");
    TT_EXPECT_EXIT(f, 75, "run", a, "--also", c, "--also", b, "--ttl", "5s",
                   "--", "sh", "-c", script);
    assert_true(tu_contains_ci(f->err, b));
    assert_false(tt_file_exists(file));
    tt_expect_no_row(f, a);
    tt_expect_no_row(f, c);
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release b");
    TT_EXPECT_EXIT(f, 64, "run", a, "--also", c, "--also=", "--ttl", "5s",
                   "--", "true");
    TT_EXPECT_EXIT(f, 0, "run", a, "--also", c, "--also", b, "--ttl", "5s",
                   "--", "sh", "-c", script);
    assert_true(tu_read_file(file, buf, sizeof buf) > 0);
    snprintf(want, sizeof want, "%s|", a);
    assert_true(strncmp(buf, want, strlen(want)) == 0);
    snprintf(want, sizeof want, "|%s\n%s\n%s|", a, c, b);
    if (strstr(buf, want) == NULL)
        fail_msg("SQLLOCK_NAMES not as expected: %s", buf);
    {
        /* three positive tokens, NAME's first and equal to SQLLOCK_TOKEN */
        const char *p = strrchr(buf, '|') + 1;
        long long t1 = 0, t2 = 0, t3 = 0, t0 = strtoll(strchr(buf, '|') + 1,
                                                       NULL, 10);
        assert_int_equal(sscanf(p, "%lld %lld %lld", &t1, &t2, &t3), 3);
        assert_true(t1 > 0 && t2 > 0 && t3 > 0 && t1 == t0);
        assert_true(t1 != t2 && t2 != t3 && t1 != t3);
    }
    tt_expect_no_row(f, a);
    tt_expect_no_row(f, b);
    tt_expect_no_row(f, c);
    TT_EXPECT_EXIT(f, 64, "run", a, "--also", a, "--ttl", "5s", "--", "true");
    assert_true(tu_contains_ci(f->err, "twice"));
    TT_EXPECT_EXIT(f, 64, "run", a, "--also", b, "--ttl", "5s",
                   "--hold-at-least", "1s", "--", "true");
    TT_EXPECT_EXIT(f, 64, "run", a, "--also", "--ttl", "5s", "--", "true");

    /* A lost --also name stops the command. */
    tt_fpath(f, pidf, sizeof pidf, "pid");
    snprintf(script, sizeof script, "echo $$ > '%s'; exec sleep 30", pidf);
    TT_START(f, j, "run", a, "--also", b, "--ttl", "2s", "--kill-after", "0",
             "--", "sh", "-c", script);
    tt_wait_started(f, j, pidf);
    /* Past the ttl, both names are still held: each is renewed. */
    tu_sleep_ms(3000);
    code = tu_wait_for(j->pid, 0);
    if (code >= 0) {
        tt_collect(f, j);
        fail_msg("run --also ended (exit %d) within 1.5 ttl: a lease was not "
                 "renewed; stderr: %s", code, f->err);
    }
    tt_delete_row(f, b);
    code = tt_finish(f, j, 15000);
    if (code != 76)
        fail_msg("a lost --also name: exit %d, want 76; stderr: %s", code,
                 f->err);
    snprintf(want, sizeof want, "lock '%s' lost", b);
    if (strstr(f->err, want) == NULL)
        fail_msg("the message does not name the lost --also lock: %s",
                 f->err);
    tt_expect_no_row(f, a);
}

/* M1: `run NAME --permits N` runs CMD holding one permit of semaphore
 * NAME -- one the test does not hold -- with SQLLOCK_NAME, SQLLOCK_PERMIT
 * and the permit's SQLLOCK_TOKEN, and releases it after; with all N
 * permits held it runs nothing and exits 75; bad --permits is 64. */
static void test_runcmd_M1_permits(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "sem");
    sqllock_lease_options lo = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_sem *mine = NULL, *mine2 = NULL;
    char file[4300], script[9000], buf[4300], want[600];
    long long permit = -1, token = 0;
    int live = -1;
    const char *p;

    lo.ttl_ms = 30000;
    EXPECT_RC(f->db, sqllock_sem_new(f->db, name, 2, &lo, &mine), SQLLOCK_OK,
              "sem new");
    EXPECT_RC(f->db, sqllock_sem_new(f->db, name, 2, &lo, &mine2), SQLLOCK_OK,
              "sem new");
    EXPECT_RC(f->db, sqllock_sem_try_acquire(mine), SQLLOCK_OK, "hold one");
    tt_fpath(f, file, sizeof file, "env");
    snprintf(script, sizeof script, "printf '%%s|%%s|%%s' \"$SQLLOCK_NAME\" "
             "\"$SQLLOCK_PERMIT\" \"$SQLLOCK_TOKEN\" > '%s'", file);
    TT_EXPECT_EXIT(f, 0, "run", name, "--permits", "2", "--ttl", "5s", "--",
                   "sh", "-c", script);
    assert_true(tu_read_file(file, buf, sizeof buf) > 0);
    snprintf(want, sizeof want, "%s|", name);
    if (strncmp(buf, want, strlen(want)) != 0)
        fail_msg("SQLLOCK_NAME not the semaphore's: %s", buf);
    p = buf + strlen(want);
    assert_int_equal(sscanf(p, "%lld|%lld", &permit, &token), 2);
    assert_true(permit == 1 - sqllock_sem_permit(mine));
    assert_true(token > sqllock_lease_token(sqllock_sem_lease(mine)));
    /* Released after CMD. */
    EXPECT_RC(f->db, sqllock_sem_count(f->db, name, &live), SQLLOCK_OK,
              "count");
    assert_int_equal(live, 1);
    /* All permits held: CMD does not run. */
    EXPECT_RC(f->db, sqllock_sem_try_acquire(mine2), SQLLOCK_OK, "hold two");
    tt_fpath(f, file, sizeof file, "touched");
    TT_EXPECT_EXIT(f, 75, "run", name, "--permits", "2", "--ttl", "5s", "--",
                   "touch", file);
    assert_true(tu_contains_ci(f->err, "semaphore"));
    assert_false(tt_file_exists(file));
    /* A larger N takes the permit above them (at most max(N) live). */
    TT_EXPECT_EXIT(f, 0, "run", name, "--permits", "3", "--ttl", "5s", "--",
                   "touch", file);
    assert_true(tt_file_exists(file));
    TT_EXPECT_EXIT(f, 64, "run", name, "--permits", "0", "--ttl", "5s", "--",
                   "true");
    TT_EXPECT_EXIT(f, 64, "run", name, "--permits", "1001", "--ttl", "5s",
                   "--", "true");
    TT_EXPECT_EXIT(f, 64, "run", name, "--permits", "two", "--ttl", "5s", "--",
                   "true");
    TT_EXPECT_EXIT(f, 64, "run", name, "--permits", "2", "--also", "x",
                   "--ttl", "5s", "--", "true");
    TT_EXPECT_EXIT(f, 64, "run", name, "--permits", "2", "--hold-at-least",
                   "1s", "--ttl", "5s", "--", "true");
    EXPECT_RC(f->db, sqllock_sem_release(mine), SQLLOCK_OK, "release");
    EXPECT_RC(f->db, sqllock_sem_release(mine2), SQLLOCK_OK, "release");
    sqllock_sem_free(mine);
    sqllock_sem_free(mine2);
}

/* E2: bad run options exit 64, run nothing and lock nothing; the good
 * spellings of the same options work. */
static void test_runcmd_E2_usage_errors(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "usage");
    char file[4300];

    tt_fpath(f, file, sizeof file, "touched");
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "5s", "--skip", "--wait", "1s",
                   "--", "touch", file);
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "5s", "--wait", "1s", "--skip",
                   "--", "touch", file);
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "5s", "--signal", "NOPE", "--",
                   "touch", file);
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "5s", "--signal", "0", "--",
                   "touch", file);
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "5s", "--signal", "999", "--",
                   "touch", file);
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "5s", "--signal", "-15", "--",
                   "touch", file);
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "5s", "--signal", "SIG15",
                   "--", "touch", file);
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "5s", "--kill-after",
                   "5parsecs", "--", "touch", file);
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "5s", "--kill-after", "-1s",
                   "--", "touch", file);
    /* The renewal interval must be shorter than ttl - ttl/10. */
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "1s", "--renew-every", "1s",
                   "--", "touch", file);
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "1s", "--renew-every", "2s",
                   "--", "touch", file);
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "1s", "--renew-every", "900ms",
                   "--", "touch", file);
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "1s", "--renew-every", "0",
                   "--", "touch", file);
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "1s", "--renew-every", "soon",
                   "--", "touch", file);
    assert_true(tu_contains_ci(f->err, "renew-every"));
    assert_false(tt_file_exists(file));
    tt_expect_no_row(f, name);

    /* Accepted spellings. */
    TT_EXPECT_EXIT(f, 0, "run", name, "--ttl", "1s", "--renew-every", "899ms",
                   "--", "true");
    TT_EXPECT_EXIT(f, 0, "run", name, "--ttl", "5s", "--signal", "SIGUSR1",
                   "--kill-after", "0", "--", "true");
    TT_EXPECT_EXIT(f, 0, "run", name, "--ttl", "5s", "--signal", "usr2", "--",
                   "true");
    TT_EXPECT_EXIT(f, 0, "run", name, "--ttl", "5s", "--signal=9", "--wait",
                   "1s", "--", "touch", file);
    assert_true(tt_file_exists(file));
    tt_expect_no_row(f, name);
}

/* Counts the rows of NAME's shared/exclusive lock (NAME 0x1f ...). */
typedef struct rw_rows {
    const char *base;
    int n;
} rw_rows;

static int count_rw_rows(void *ctx, const sqllock_lease_info *info)
{
    rw_rows *r = ctx;
    size_t n = strlen(r->base);

    if (strncmp(info->name, r->base, n) == 0 && info->name[n] == '\x1f')
        r->n++;
    return 0;
}

/*
 * M2 through the tool: a --shared run goes in beside a shared hold of
 * the test's and gets NAME and its own token; an --exclusive run is busy
 * (75) while the test's reader holds, a --shared run busy while the
 * test's writer holds; a plain run on NAME is refused (78, N1: NAME is a
 * shared/exclusive lock); --shared with --exclusive is a usage error;
 * every hold is released (no row of the pair left, only NAME's kind
 * marker).
 */
static void test_runcmd_M2_shared_and_exclusive(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "rw");
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_rw *r = NULL, *w = NULL;
    char file[4300], script[9000], buf[512], want[200];
    rw_rows rows = { name, 0 };

    o.ttl_ms = 30000;
    EXPECT_RC(f->db, sqllock_rw_new(f->db, name, 1, &o, &r), SQLLOCK_OK, "r");
    EXPECT_RC(f->db, sqllock_rw_new(f->db, name, 0, &o, &w), SQLLOCK_OK, "w");
    EXPECT_RC(f->db, sqllock_rw_try_acquire(r), SQLLOCK_OK, "reader");
    tt_fpath(f, file, sizeof file, "env");
    snprintf(script, sizeof script,
             "echo \"$SQLLOCK_NAME $SQLLOCK_TOKEN\" > '%s'", file);
    TT_EXPECT_EXIT(f, 0, "run", name, "--shared", "--ttl", "5s", "--", "sh",
                   "-c", script);
    tu_read_file(file, buf, sizeof buf);
    snprintf(want, sizeof want, "%s ", name);
    assert_true(strncmp(buf, want, strlen(want)) == 0);
    assert_true(atoll(buf + strlen(want)) > 0);
    TT_EXPECT_EXIT(f, 75, "run", name, "--exclusive", "--ttl", "5s", "--",
                   "true");
    assert_true(tu_contains_ci(f->err, "readers"));
    EXPECT_RC(f->db, sqllock_rw_release(r), SQLLOCK_OK, "reader release");
    EXPECT_RC(f->db, sqllock_rw_try_acquire(w), SQLLOCK_OK, "writer");
    TT_EXPECT_EXIT(f, 75, "run", name, "--shared", "--ttl", "5s", "--",
                   "true");
    TT_EXPECT_EXIT(f, 78, "run", name, "--ttl", "5s", "--", "true");
    assert_true(tu_contains_ci(f->err, "shared/exclusive"));
    EXPECT_RC(f->db, sqllock_rw_release(w), SQLLOCK_OK, "writer release");
    tt_fpath(f, file, sizeof file, "excl");
    TT_EXPECT_EXIT(f, 0, "run", name, "--exclusive", "--ttl", "5s", "--wait",
                   "5s", "--", "touch", file);
    assert_true(tt_file_exists(file));
    TT_EXPECT_EXIT(f, 64, "run", name, "--shared", "--exclusive", "--ttl",
                   "5s", "--", "true");
    EXPECT_RC(f->db, sqllock_list(f->db, count_rw_rows, &rows), SQLLOCK_OK,
              "list");
    assert_int_equal(rows.n, 0);
    expect_marker(f, name, SQLLOCK_KIND_OWNER_RW);
    sqllock_rw_free(r);
    sqllock_rw_free(w);
}

/*
 * N1 through the tool, both orders: `sqllock run NAME` while `sqllock run
 * NAME --shared` runs exits 78, at once even with --wait, saying NAME is
 * a shared/exclusive lock -- and stays refused once the shared run is
 * over; `run NAME2 --shared` (and --exclusive, --permits, --leader)
 * while `run NAME2` runs exits 78 saying NAME2 is held as a plain lease,
 * and none of them runs its command. `list` shows the marker as "NAME
 * [kind: shared/exclusive lock]" with LEFT "never", `show` says what
 * NAME is, and `release NAME --force --force` refuses it (78) and leaves
 * it.
 */
static void test_runcmd_N1_one_name_one_kind(void **state)
{
    tt_fixture *f = *state;
    const char *a = tt_name(f, "kind-a"), *b = tt_name(f, "kind-b");
    char started[4300], ran[4300], script[9000], want[400];
    int64_t t0;
    int code;
    tt_job *j;

    /* A shared run, then a plain one. */
    tt_fpath(f, started, sizeof started, "started");
    tt_fpath(f, ran, sizeof ran, "ran");
    snprintf(script, sizeof script, "echo $$ > '%s'; exec sleep 30", started);
    TT_START(f, j, "run", a, "--shared", "--ttl", "5s", "--", "sh", "-c",
             script);
    tt_wait_started(f, j, started);
    t0 = tu_now_ms();
    TT_EXPECT_EXIT(f, 78, "run", a, "--ttl", "5s", "--wait", "20s", "--",
                   "touch", ran);
    if (tu_now_ms() - t0 > tu_scaled_ms(10000))
        fail_msg("run exited 78 only after %lld ms", (long long)(tu_now_ms()
                                                                 - t0));
    if (!tu_contains_ci(f->err, "shared/exclusive"))
        fail_msg("the message does not name the kind: %s", f->err);
    assert_false(tt_file_exists(ran));
    TT_EXPECT_EXIT(f, 78, "acquire", a, "--ttl", "5s");
    assert_int_equal(kill(j->pid, SIGTERM), 0);
    code = tt_finish(f, j, 15000);
    if (code != 128 + SIGTERM)
        fail_msg("the shared run: exit %d; stderr: %s", code, f->err);
    TT_EXPECT_EXIT(f, 78, "run", a, "--ttl", "5s", "--", "touch", ran);
    assert_false(tt_file_exists(ran));
    TT_EXPECT_EXIT(f, 0, "run", a, "--exclusive", "--ttl", "5s", "--", "true");

    /* What the operator sees. */
    TT_EXPECT_EXIT(f, 0, "list");
    snprintf(want, sizeof want, "%s [kind: shared/exclusive lock]", a);
    if (strstr(f->out, want) == NULL)
        fail_msg("list does not show '%s': %s", want, f->out);
    assert_non_null(strstr(strstr(f->out, want), "never"));
    TT_EXPECT_EXIT(f, 0, "show", a);
    assert_true(tu_contains_ci(f->out, "shared/exclusive"));
    TT_EXPECT_EXIT(f, 0, "show", a, "--json");
    assert_non_null(strstr(f->out, "\"kind\": \"shared/exclusive lock\""));
    TT_EXPECT_EXIT(f, 78, "release", a, "--force", "--force");
    assert_true(tu_contains_ci(f->err, "never freed"));
    expect_marker(f, a, SQLLOCK_KIND_OWNER_RW);

    /* A plain run, then the other kinds. */
    tt_fpath(f, started, sizeof started, "started");
    snprintf(script, sizeof script, "echo $$ > '%s'; exec sleep 30", started);
    TT_START(f, j, "run", b, "--ttl", "5s", "--", "sh", "-c", script);
    tt_wait_started(f, j, started);
    TT_EXPECT_EXIT(f, 78, "run", b, "--shared", "--ttl", "5s", "--wait", "20s",
                   "--", "touch", ran);
    if (!tu_contains_ci(f->err, "plain lease"))
        fail_msg("the message does not name the plain lease: %s", f->err);
    TT_EXPECT_EXIT(f, 78, "run", b, "--exclusive", "--ttl", "5s", "--",
                   "touch", ran);
    TT_EXPECT_EXIT(f, 78, "run", b, "--permits", "2", "--ttl", "5s", "--",
                   "touch", ran);
    TT_EXPECT_EXIT(f, 78, "run", b, "--leader", "--skip", "--ttl", "5s", "--",
                   "touch", ran);
    assert_false(tt_file_exists(ran));
    assert_int_equal(kill(j->pid, SIGTERM), 0);
    code = tt_finish(f, j, 15000);
    if (code != 128 + SIGTERM)
        fail_msg("the plain run: exit %d; stderr: %s", code, f->err);
    tt_expect_no_row(f, b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runcmd_L7_renewal_keeps_lock_for_5x_ttl),
        cmocka_unit_test(test_runcmd_L6_L7_lost_after_pause_sends_signal),
        cmocka_unit_test(test_runcmd_L7_lost_to_takeover_then_kill_after),
        cmocka_unit_test(test_runcmd_L9_skip_does_not_run),
        cmocka_unit_test(test_runcmd_L9_wait_runs_after_release),
        cmocka_unit_test(test_runcmd_L9_wait_times_out),
        cmocka_unit_test(test_runcmd_L3_signals_forwarded_then_released),
        cmocka_unit_test(test_runcmd_E2_usage_errors),
        cmocka_unit_test(test_runcmd_L12_also),
        cmocka_unit_test(test_runcmd_M2_shared_and_exclusive),
        cmocka_unit_test(test_runcmd_N1_one_name_one_kind),
        cmocka_unit_test(test_runcmd_M4_leader),
        cmocka_unit_test(test_runcmd_M3_fair_runs_in_order),
        cmocka_unit_test(test_runcmd_M1_permits),
    };
    return TU_RUN_PER_URL("runcmd", &g_url, tests, setup, teardown);
}
