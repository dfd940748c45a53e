/*
 * messages.c -- test_runfault: the busy message, --quiet and
 * --verbose.
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
/* Quiet and informative                                                */
/* ------------------------------------------------------------------ */

/* The busy message names the holder, the token and the time left, never
 * the owner id; --quiet prints nothing for a busy lock (run and acquire,
 * also after a --wait) but still prints errors; --quiet and --verbose
 * are a usage error together. */
void test_runfault_busy_message_and_quiet(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "busy");
    sqllock_lease *mine = tt_lease_with(f, name, 30000, "cron@web3 nightly");
    char file[4300], tok[64];

    tt_fpath(f, file, sizeof file, "touched");
    EXPECT_RC(f->db, sqllock_lease_try_acquire(mine), SQLLOCK_OK, "hold");
    snprintf(tok, sizeof tok, "token %lld",
             (long long)sqllock_lease_token(mine));
    TT_EXPECT_EXIT(f, 75, "run", name, "--ttl", "5s", "--", "touch", file);
    if (strstr(f->err, "holder 'cron@web3 nightly'") == NULL
        || strstr(f->err, tok) == NULL || strstr(f->err, "s left") == NULL)
        fail_msg("the busy message names no holder, token and time left: "
                 "%s", f->err);
    if (strstr(f->err, sqllock_lease_owner(mine)) != NULL)
        fail_msg("the busy message shows the owner id: %s", f->err);
    TT_EXPECT_EXIT(f, 75, "run", name, "--ttl", "5s", "--quiet", "--", "touch",
                   file);
    assert_string_equal(f->err, "");
    assert_string_equal(f->out, "");
    TT_EXPECT_EXIT(f, 0, "run", name, "--ttl", "5s", "--busy-exit", "0",
                   "--quiet", "--", "touch", file);
    assert_string_equal(f->err, "");
    TT_EXPECT_EXIT(f, 75, "run", name, "--ttl", "5s", "--wait", "300ms",
                   "--quiet", "--", "touch", file);
    assert_string_equal(f->err, "");
    TT_EXPECT_EXIT(f, 75, "acquire", name, "--ttl", "5s", "--quiet");
    assert_string_equal(f->err, "");
    assert_string_equal(f->out, "");
    TT_EXPECT_EXIT(f, 75, "acquire", name, "--ttl", "5s");
    assert_true(tu_contains_ci(f->err, "held"));
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "5s", "--quiet", "--verbose",
                   "--", "touch", file);
    assert_false(tt_file_exists(file));
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");
    /* Errors are not quieted. */
    TT_EXPECT_EXIT(f, 127, "run", name, "--ttl", "5s", "--quiet", "--",
                   "/nonexistent/sqllock-no-such-command");
    assert_true(tu_contains_ci(f->err, "cannot execute"));
    TT_EXPECT_EXIT(f, 64, "run", name, "--ttl", "5s", "--hold-at-least",
                   "soon", "--", "true");
    tt_expect_no_row(f, name);
}

/* Fails unless the lines of `err` that contain the `n` texts come in
 * that order, each with "sqllock: <date>T<time> run: " first. */
static void expect_events(const char *err, const char *const *texts, int n)
{
    const char *at = err;
    int i;

    for (i = 0; i < n; i++) {
        const char *hit = strstr(at, texts[i]), *line;
        int y, mo, d, h, mi, s, ms;

        if (hit == NULL)
            fail_msg("no event \"%s\" after event %d in: %s", texts[i], i,
                     err);
        for (line = hit; line > err && line[-1] != '\n'; line--)
            ;
        if (sscanf(line, "sqllock: %4d-%2d-%2dT%2d:%2d:%2d.%3d", &y, &mo,
                   &d, &h, &mi, &s, &ms) != 7)
            fail_msg("the line of \"%s\" has no time: %.80s", texts[i],
                     line);
        at = hit;
    }
}

/* --verbose: one line per event with the time, in order: acquired (with
 * the token the command got), started, exited, released; and for a lease
 * taken over, the loss between the start and the end. */
void test_runfault_verbose_events_in_order(void **state)
{
    tt_fixture *f = *state;
    const char *name = tt_name(f, "verbose");
    char tokfile[4300], started[4300], script[9000], buf[64], acq[400];
    sqllock_lease *mine;
    int code;
    tt_job *j;

    tt_fpath(f, tokfile, sizeof tokfile, "token");
    snprintf(script, sizeof script,
             "echo \"$SQLLOCK_TOKEN\" > '%s'; exit 3", tokfile);
    TT_EXPECT_EXIT(f, 3, "run", name, "--ttl", "5s", "--verbose", "--", "sh",
                   "-c", script);
    tu_read_file(tokfile, buf, sizeof buf);
    buf[strcspn(buf, "\n")] = '\0';
    snprintf(acq, sizeof acq, "acquired lock '%s': token %s", name, buf);
    {
        const char *const ev[] = { acq, "started the command",
                                   "exited with status 3",
                                   "released lock" };
        expect_events(f->err, ev, 4);
    }

    tt_fpath(f, started, sizeof started, "started");
    snprintf(script, sizeof script, "echo $$ > '%s'; exec sleep 30",
             started);
    TT_START(f, j, "run", name, "--ttl", "600ms", "--kill-after", "0",
             "--verbose", "--", "sh", "-c", script);
    tt_wait_started(f, j, started);
    tt_delete_row(f, name);
    mine = tt_lease_for(f, name, 30000);
    EXPECT_RC(f->db, sqllock_lease_try_acquire(mine), SQLLOCK_OK, "take");
    code = tt_finish(f, j, 15000);
    if (code != 76)
        fail_msg("exit %d, want 76; stderr: %s", code, f->err);
    {
        const char *const ev[] = { "acquired lock", "started the command",
                                   "lost", "was killed by SIGTERM" };
        expect_events(f->err, ev, 4);
    }
    EXPECT_RC(f->db, sqllock_lease_release(mine), SQLLOCK_OK, "release");
}
