/*
 * hold.c -- test_runfault: --hold-at-least (X4).
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
/* X4: --hold-at-least                                                  */
/* ------------------------------------------------------------------ */

/* Waits up to `ms` until `path` holds `lines` lines; returns the lines. */
static int wait_lines(const char *path, int lines, int64_t ms)
{
    int64_t end = tu_now_ms() + ms;
    char buf[256];
    int n;

    for (;;) {
        const char *p;

        tu_read_file(path, buf, sizeof buf);
        for (n = 0, p = buf; (p = strchr(p, '\n')) != NULL; p++)
            n++;
        if (n >= lines || tu_now_ms() >= end)
            return n;
        tu_sleep_ms(5);
    }
}

/* Two "hosts" started 0.3 s apart with --hold-at-least 3s --skip and a
 * 1 s job: the job runs once. The winner's runner exits when its job
 * ends, leaving the name held until 3 s after the grant (longer than its
 * 2 s ttl): a third host skips it then, and a fourth with --wait gets it
 * when the window ends, not before. A window shorter than the ttl ends
 * on time too (MySQL's renewal cannot shorten an expiry: there the
 * runner waits for the window's end and releases). */
void test_runfault_X4_hold_at_least_runs_once(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "hold");
    char runs[4300], sa[9000], sb[9000], sw[9000], buf[256];
    sqllock_lease *mine;
    int64_t t_job, t_end, t_w;
    int ca, cb;
    tu_row r;
    tt_job *a, *b;

    tt_fpath(f, runs, sizeof runs, "runs");
    snprintf(sa, sizeof sa, "echo A >> '%s'; sleep 1", runs);
    snprintf(sb, sizeof sb, "echo B >> '%s'; sleep 1", runs);
    snprintf(sw, sizeof sw, "echo W >> '%s'", runs);
    TT_START(f, a, "run", name, "--ttl", "2s", "--hold-at-least", "3s",
             "--skip", "--quiet", "--", "sh", "-c", sa);
    tu_sleep_ms(300);
    TT_START(f, b, "run", name, "--ttl", "2s", "--hold-at-least", "3s",
             "--skip", "--quiet", "--", "sh", "-c", sb);
    assert_int_equal(wait_lines(runs, 1, TT_START_MS), 1);
    t_job = tu_now_ms();
    ca = tt_finish(f, a, 15000);
    cb = tt_finish(f, b, 15000);
    t_end = tu_now_ms();
    if (!((ca == 0 && cb == 75) || (ca == 75 && cb == 0)))
        fail_msg("exits %d and %d; want 0 for one host and 75 for the "
                 "other", ca, cb);
    /* The winner did not wait out the window. */
    if (t_end - t_job > 2500)
        fail_msg("the runners ended %lld ms after the job started",
                 (long long)(t_end - t_job));
    tt_row_of(f, name, &r);
    if (r.remaining_ms <= 0 || r.remaining_ms > 3000)
        fail_msg("the name is held for %lld ms more after the job; want "
                 "the rest of the 3 s window", (long long)r.remaining_ms);
    TT_EXPECT_EXIT(f, 75, "run", name, "--ttl", "5s", "--skip", "--quiet",
                   "--", "sh", "-c", sw);
    TT_EXPECT_EXIT(f, 0, "run", name, "--ttl", "5s", "--wait", "10s", "--",
                   "sh", "-c", sw);
    t_w = tu_now_ms();
    tu_read_file(runs, buf, sizeof buf);
    if (strcmp(buf, "A\nW\n") != 0 && strcmp(buf, "B\nW\n") != 0)
        fail_msg("the jobs that ran: \"%s\"; want one of A and B, then W",
                 buf);
    if (t_w - t_job < 2500)
        fail_msg("the waiting host ran its job %lld ms after the first; "
                 "want the 3 s window", (long long)(t_w - t_job));
    /* W had no --hold-at-least: it released. */
    tt_expect_no_row(f, name);
    printf("    X4: one job of two hosts; the next ran %lld ms after it\n",
           (long long)(t_w - t_job));

    /* A 1 s window with a 10 s ttl: free after the window, not the ttl. */
    t_job = tu_now_ms();
    TT_EXPECT_EXIT(f, 0, "run", name, "--ttl", "10s", "--hold-at-least", "1s",
                   "--", "true");
    mine = tt_lease_for(f, name, 5000);
    EXPECT_RC(f->db, sqllock_lease_acquire(mine, 8000), SQLLOCK_OK,
              "acquire after the window");
    t_w = tu_now_ms() - t_job;
    if (t_w < 1000 || t_w > 4000)
        fail_msg("a 1 s window (ttl 10 s) was free %lld ms after the run "
                 "started", (long long)t_w);
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");
}
