/*
 * commands.c -- test_cli: init, acquire, release and run with their exit
 * codes, the token `run` hands its command, usage errors and durations
 * (DESIGN L1, L3, L4, L5, E2).
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
#include "cli.h"

/* S1: init succeeds, and again (idempotent). */
void test_cli_init(void **state)
{
    fixture *f = *state;
    EXPECT_EXIT(f, 0, "init");
    EXPECT_EXIT(f, 0, "init");
}

/* L1/L3/L4: acquire prints owner and token; a second acquire is busy (75);
 * release with the printed owner and token is 0, again 76 (lost). */
void test_cli_acquire_busy_release(void **state)
{
    fixture *f = *state;
    char owner[SQLLOCK_OWNER_LEN + 1], owner2[SQLLOCK_OWNER_LEN + 1];
    char tok[32];
    int64_t token, token2;

    cl_acquire(f, cl_U(f, "a"), "60s", owner, &token);
    EXPECT_EXIT(f, 75, "acquire", cl_U(f, "a"), "--ttl", "60s");
    EXPECT_EXIT(f, 75, "acquire", cl_U(f, "a"), "--ttl", "60s", "--wait",
                "300ms");
    snprintf(tok, sizeof tok, "%lld", (long long)token);
    /* A wrong owner cannot release it (L3): it is held by another owner
     * (75), not lost (issue 27). */
    EXPECT_EXIT(f, 75, "release", cl_U(f, "a"), "--owner",
                "0123456789abcdef0123456789abcdef", "--token", tok);
    EXPECT_EXIT(f, 75, "acquire", cl_U(f, "a"), "--ttl", "60s");
    EXPECT_EXIT(f, 0, "release", cl_U(f, "a"), "--owner", owner, "--token",
                tok);
    EXPECT_EXIT(f, 76, "release", cl_U(f, "a"), "--owner", owner, "--token",
                tok);
    /* Free again, with a larger token (L5). */
    cl_acquire(f, cl_U(f, "a"), "60s", owner2, &token2);
    assert_true(token2 > token);
    assert_string_not_equal(owner, owner2);
    snprintf(tok, sizeof tok, "%lld", (long long)token2);
    EXPECT_EXIT(f, 0, "release", cl_U(f, "a"), "--owner", owner2, "--token",
                tok);
}

/* L1: `run` does not start the command while the lock is held elsewhere. */
void test_cli_run_busy_does_not_run(void **state)
{
    fixture *f = *state;
    char owner[SQLLOCK_OWNER_LEN + 1], tok[32], file[4300];
    int64_t token;

    snprintf(file, sizeof file, "%s/touched", f->dir);
    cl_acquire(f, cl_U(f, "run-busy"), "60s", owner, &token);
    EXPECT_EXIT(f, 75, "run", cl_U(f, "run-busy"), "--ttl", "5s", "--",
                "touch", file);
    assert_false(tt_file_exists(file));
    snprintf(tok, sizeof tok, "%lld", (long long)token);
    EXPECT_EXIT(f, 0, "release", cl_U(f, "run-busy"), "--owner", owner,
                "--token", tok);
    /* Free now: the command runs, and the lock is released after it. */
    EXPECT_EXIT(f, 0, "run", cl_U(f, "run-busy"), "--ttl", "5s", "--", "touch",
                file);
    assert_true(tt_file_exists(file));
    cl_acquire(f, cl_U(f, "run-busy"), "60s", owner, &token);
    snprintf(tok, sizeof tok, "%lld", (long long)token);
    EXPECT_EXIT(f, 0, "release", cl_U(f, "run-busy"), "--owner", owner,
                "--token", tok);
}

/* run passes the command's exit status through; 127 when not found. */
void test_cli_run_exit_codes(void **state)
{
    fixture *f = *state;

    EXPECT_EXIT(f, 7, "run", cl_U(f, "run-exit"), "--ttl", "5s", "--", "sh",
                "-c", "exit 7");
    EXPECT_EXIT(f, 0, "run", cl_U(f, "run-exit"), "--ttl", "5s", "--", "true");
    EXPECT_EXIT(f, 127, "run", cl_U(f, "run-exit"), "--ttl", "5s", "--",
                "/nonexistent/sqllock-no-such-command");
    EXPECT_EXIT(f, 127, "run", cl_U(f, "run-exit"), "--ttl", "5s", "--",
                "sqllock-no-such-command-on-path");
    /* The lock was released every time: it is free now. */
    EXPECT_EXIT(f, 0, "run", cl_U(f, "run-exit"), "--ttl", "5s", "--", "true");
}

/* L5: run gives the command SQLLOCK_TOKEN (and the owner and name). */
void test_cli_run_passes_token(void **state)
{
    fixture *f = *state;
    char file[4300], script[4600], buf[256], owner[SQLLOCK_OWNER_LEN + 1];
    char tok[32];
    int64_t token, seen;
    char *end;

    cl_acquire(f, cl_U(f, "token-before"), "60s", owner, &token);
    snprintf(tok, sizeof tok, "%lld", (long long)token);
    EXPECT_EXIT(f, 0, "release", cl_U(f, "token-before"), "--owner", owner,
                "--token", tok);
    snprintf(file, sizeof file, "%s/token.txt", f->dir);
    snprintf(script, sizeof script,
             "printf '%%s\\n%%s\\n%%s\\n' \"$SQLLOCK_TOKEN\" "
             "\"$SQLLOCK_OWNER\" \"$SQLLOCK_NAME\" > '%s'", file);
    EXPECT_EXIT(f, 0, "run", cl_U(f, "token"), "--ttl", "5s", "--", "sh", "-c",
                script);
    assert_true(tu_read_file(file, buf, sizeof buf) > 0);
    seen = strtoll(buf, &end, 10);
    if (*end != '\n' || seen <= token)
        fail_msg("the command saw SQLLOCK_TOKEN \"%s\"; want a number above "
                 "%lld", buf, (long long)token);
    assert_true(tu_is_owner_id(strtok(end + 1, "\n")));
    assert_string_equal(strtok(NULL, "\n"), cl_U(f, "token"));
}

/* E2: usage errors are 64, and so is an unknown scheme (issue 27: a URL
 * the caller must fix, like a bad option). */
void test_cli_usage_errors(void **state)
{
    fixture *f = *state;
    const char *const nosuch[] = { "nosuch://x", NULL };

    EXPECT_EXIT(f, 64, "acquire", cl_U(f, "bad"), "--ttl", "5parsecs");
    EXPECT_EXIT(f, 64, "acquire", cl_U(f, "bad"), "--ttl", "9999999999999d");
    EXPECT_EXIT(f, 64, "acquire", cl_U(f, "bad"), "--ttl", "0");
    EXPECT_EXIT(f, 64, "acquire", cl_U(f, "bad"), "--ttl", "-5s");
    EXPECT_EXIT(f, 64, "acquire", cl_U(f, "bad"));
    EXPECT_EXIT(f, 64, "acquire", "", "--ttl", "5s");
    EXPECT_EXIT(f, 64, "run", cl_U(f, "bad"), "--ttl", "5parsecs", "--",
                "true");
    EXPECT_EXIT(f, 64, "nosuchcommand");
    EXPECT_EXIT(f, 64, "acquire", cl_U(f, "bad"), "--ttl", "5s",
                "--no-such-opt");
    EXPECT_EXIT(f, 64, "release", cl_U(f, "bad"), "--owner", "xyz", "--token",
                "1");
    EXPECT_EXIT(f, 64, "release", cl_U(f, "bad"), "--owner",
                "0123456789abcdef0123456789abcdef", "--token", "abc");
    /* The message goes to stderr and names the problem. */
    EXPECT_EXIT(f, 64, "acquire", cl_U(f, "bad"), "--ttl", "5parsecs");
    assert_true(tu_contains_ci(f->err, "5parsecs") ||
                tu_contains_ci(f->err, "duration") ||
                tu_contains_ci(f->err, "ttl"));
    {
        /* An unknown scheme in --db. */
        const char *const args[] = { "list", NULL };
        int rc = cl_run_with_url(f, nosuch[0], args);

        if (rc != 64)
            fail_msg("sqllock --db nosuch://x list: exit %d, want 64\n"
                     "stdout: %s\nstderr: %s", rc, f->out, f->err);
        assert_true(tu_contains_ci(f->err, "nosuch"));
    }
    /* Nothing was left behind by the failed commands. */
    EXPECT_EXIT(f, 0, "run", cl_U(f, "bad"), "--ttl", "5s", "--", "true");
}

/* Durations in every option that takes one: compound and fractional
 * forms are read as sqllock.h says (acquire prints the ttl it used), and
 * a refused one names the option, the text and what is wrong. */
void test_cli_durations(void **state)
{
    static const struct {
        const char *text;
        const char *ms;
    } good[] = {
        { "1m30s", "90000" }, { "1.5s", "1500" }, { "0.25s", "250" },
        { "1.5m", "90000" }, { "2d12h", "216000000" }, { "1h30m", "5400000" },
        { "500ms", "500" }, { "30", "30000" }, { "1s500ms", "1500" },
    };
    static const struct {
        const char *text;
        const char *why;
    } bad[] = {
        { "30m1h", "largest first" }, { "1m1m", "largest first" },
        { "1.5h30m", "last number" }, { "1.5ms", "milliseconds" },
        { "1m30", "stand alone" }, { "1.5", "unit" },
        { "106751991167d7h12m55.808s", "longer" }, { "1w", "unknown unit" },
    };
    fixture *f = *state;
    char owner[SQLLOCK_OWNER_LEN + 1], tok[32], ms[32];
    int64_t token;
    size_t i;

    for (i = 0; i < sizeof good / sizeof good[0]; i++) {
        cl_acquire(f, cl_U(f, "dur"), good[i].text, owner, &token);
        if (!tu_get_var(f->out, "SQLLOCK_TTL_MS", ms, sizeof ms) ||
            strcmp(ms, good[i].ms) != 0)
            fail_msg("acquire --ttl %s printed SQLLOCK_TTL_MS=%s, want %s",
                     good[i].text, ms, good[i].ms);
        snprintf(tok, sizeof tok, "%lld", (long long)token);
        EXPECT_EXIT(f, 0, "release", cl_U(f, "dur"), "--owner", owner,
                    "--token", tok);
    }
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        EXPECT_EXIT(f, 64, "acquire", cl_U(f, "dur"), "--ttl", bad[i].text);
        if (strstr(f->err, "--ttl") == NULL ||
            strstr(f->err, bad[i].text) == NULL ||
            strstr(f->err, bad[i].why) == NULL)
            fail_msg("acquire --ttl %s: stderr \"%s\" should name --ttl, "
                     "the text and \"%s\"", bad[i].text, f->err, bad[i].why);
        EXPECT_EXIT(f, 64, "run", cl_U(f, "dur"), "--ttl", "10s",
                    "--kill-after", bad[i].text, "--", "true");
        assert_non_null(strstr(f->err, "--kill-after"));
    }
    /* The other options that take a duration. */
    EXPECT_EXIT(f, 0, "acquire", cl_U(f, "dur-wait"), "--ttl", "1m30s",
                "--wait", "0.25s");
    assert_true(tu_get_var(f->out, "SQLLOCK_OWNER", owner, sizeof owner));
    assert_true(tu_get_var(f->out, "SQLLOCK_TOKEN", tok, sizeof tok));
    EXPECT_EXIT(f, 75, "acquire", cl_U(f, "dur-wait"), "--ttl", "1m30s",
                "--wait", "0.3s");
    EXPECT_EXIT(f, 0, "release", cl_U(f, "dur-wait"), "--owner", owner,
                "--token", tok);
    EXPECT_EXIT(f, 0, "run", cl_U(f, "dur-run"), "--ttl", "1m30s",
                "--kill-after", "1.5s", "--renew-every", "0.5m", "--",
                "true");
    EXPECT_EXIT(f, 0, "reap", "--older-than", "1h30m");
    EXPECT_EXIT(f, 64, "reap", "--older-than", "1h30");
    assert_non_null(strstr(f->err, "--older-than"));
}

/* Issue 27 item 6: `release NAME --owner X --token T` that finds NAME
 * held live by someone else says so, with exit 75 (the lock is busy),
 * and leaves it held: with the holder's own token but another owner, or
 * with a token the holder's grant is not later than. A release whose
 * lease was taken over by a later grant was lost (76, L4), and says who
 * holds the name now; so is one whose row is gone. */
void test_cli_release_held_by_another(void **state)
{
    fixture *f = *state;
    const char *name = cl_U(f, "rel-other");
    char owner[SQLLOCK_OWNER_LEN + 1], owner2[SQLLOCK_OWNER_LEN + 1];
    char tok[32], tok_next[32], tok2[32];
    int64_t token, token2;

    cl_acquire(f, name, "60s", owner, &token);
    snprintf(tok, sizeof tok, "%lld", (long long)token);
    snprintf(tok_next, sizeof tok_next, "%lld", (long long)token + 1);
    EXPECT_EXIT(f, 75, "release", name, "--owner",
                "0123456789abcdef0123456789abcdef", "--token", tok);
    EXPECT_CONTAINS_ERR(f, "held by another owner");
    EXPECT_CONTAINS_ERR(f, "nothing was released");
    if (strstr(f->err, "lost") != NULL)
        fail_msg("a live lock of another owner was called lost: %s", f->err);
    EXPECT_EXIT(f, 75, "release", name, "--owner", owner, "--token",
                tok_next);
    EXPECT_CONTAINS_ERR(f, "held by another owner");
    /* Untouched: still held, by the same token. */
    EXPECT_EXIT(f, 0, "show", name);
    EXPECT_CONTAINS(f, "state:    held");
    EXPECT_CONTAINS(f, owner);
    EXPECT_EXIT(f, 0, "release", name, "--owner", owner, "--token", tok);
    /* Gone: lost. */
    EXPECT_EXIT(f, 76, "release", name, "--owner", owner, "--token", tok);
    EXPECT_CONTAINS_ERR(f, "lost");
    /* Expired and taken over by a later grant: lost too, naming the
     * holder now, whose lease stays. */
    cl_acquire(f, name, "1ms", owner, &token);
    tu_sleep_ms(100);
    cl_acquire(f, name, "60s", owner2, &token2);
    snprintf(tok, sizeof tok, "%lld", (long long)token);
    snprintf(tok2, sizeof tok2, "%lld", (long long)token2);
    EXPECT_EXIT(f, 76, "release", name, "--owner", owner, "--token", tok);
    EXPECT_CONTAINS_ERR(f, "had already been lost");
    EXPECT_CONTAINS_ERR(f, tok2);
    EXPECT_EXIT(f, 0, "release", name, "--owner", owner2, "--token", tok2);
}

/* Issue 27 item 6: every duration option refuses a duration longer than
 * 100 years (36500d) with a usage error naming the option -- above all
 * --hold-at-least, whose 99999999999h overflowed the runner's deadline
 * and released at once -- and nothing runs. */
void test_cli_duration_too_long(void **state)
{
    static const char *const opts[] = {
        "--hold-at-least", "--kill-after", "--renew-every", "--wait",
        "--ttl",
    };
    fixture *f = *state;
    char file[4300];
    size_t i;

    snprintf(file, sizeof file, "%s/long-ran", f->dir);
    for (i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        EXPECT_EXIT(f, 64, "run", cl_U(f, "long"), "--ttl", "10s", opts[i],
                    "99999999999h", "--", "touch", file);
        if (strstr(f->err, opts[i]) == NULL ||
            strstr(f->err, "99999999999h") == NULL ||
            strstr(f->err, "36500d") == NULL)
            fail_msg("run %s 99999999999h: stderr \"%s\" should name the "
                     "option, the text and the limit", opts[i], f->err);
        assert_false(tt_file_exists(file));
    }
    EXPECT_EXIT(f, 64, "acquire", cl_U(f, "long"), "--ttl", "36500d1ms");
    EXPECT_CONTAINS_ERR(f, "36500d");
    EXPECT_EXIT(f, 64, "acquire", cl_U(f, "long"), "--ttl", "5s", "--wait",
                "99999999999h");
    EXPECT_EXIT(f, 64, "reap", "--older-than", "99999999999h");
    EXPECT_CONTAINS_ERR(f, "--older-than");
    /* The limit itself is taken. */
    EXPECT_EXIT(f, 0, "reap", "--older-than", "36500d");
}

/* Issue 27 item 5: `run` without --ttl takes the default ttl (60s),
 * renewed by its watchdog; acquire, which nothing renews, still needs
 * --ttl. */
void test_cli_run_default_ttl(void **state)
{
    fixture *f = *state;
    char file[4300], script[4600], buf[64];

    snprintf(file, sizeof file, "%s/default-ttl", f->dir);
    snprintf(script, sizeof script, "printf '%%s\\n' \"$SQLLOCK_TOKEN\" > "
             "'%s'", file);
    EXPECT_EXIT(f, 0, "run", cl_U(f, "default-ttl"), "--", "sh", "-c",
                script);
    assert_true(tu_read_file(file, buf, sizeof buf) > 0);
    assert_true(buf[0] >= '1' && buf[0] <= '9');
    EXPECT_EXIT(f, 0, "run", cl_U(f, "default-ttl"), "--verbose", "--",
                "true");
    EXPECT_CONTAINS_ERR(f, "ttl 1m00s, renewed every 20.0s");
    EXPECT_EXIT(f, 64, "acquire", cl_U(f, "default-ttl"));
    EXPECT_CONTAINS_ERR(f, "--ttl is required");
    /* Without --ttl needed, an option left without its value must not
     * take the next option for it: no lock named "--ttl" is held while
     * "5s" runs. */
    EXPECT_EXIT(f, 64, "run", cl_U(f, "default-ttl"), "--also", "--ttl",
                "5s", "--", "true");
    EXPECT_CONTAINS_ERR(f, "'--also' needs a value");
}
