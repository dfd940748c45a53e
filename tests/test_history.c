/*
 * test_history.c -- the history checker (harness/tu_history.h, issue 30
 * item 3) judged on histories that break each of its rules, and on
 * histories recorded from real clients of every driver: a holder that
 * follows L6 (stops at its local deadline) is clean, one that acts past
 * it without being told breaks H1, and the checker says so.
 *
 * The crafted cases need no database; they run in each driver's entry,
 * before the cases on the driver's URL.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "tu_fixture.h"
#include "tu_history.h"

static const char *g_url;

/* Checks the history `text` (its lines, times in µs); the result. */
static tu_hist_result judge(const char *text, int want)
{
    char *dir = tu_mkdtemp(), path[1100];
    tu_hist_result r;
    FILE *f;
    int got;

    snprintf(path, sizeof path, "%s/h.txt", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    got = tu_hist_check(path, stdout, &r);
    tu_rmdir(dir);
    free(dir);
    if (got != want)
        fail_msg("the checker found %d violations, want %d, in:\n%s", got,
                 want, text);
    return r;
}

/* A grant, a section, a release, by `c` of `token` in [t, t + 300 ms]. */
#define HOLD(c, seq, t, token)                                               \
    #t "000 " c " " #seq " I acquire n 0 10000\n"                             \
    #t "100 " c " " #seq " C ok " #token "\n"                                 \
    #t "200 " c " 0 S n " #token " x\n"                                       \
    #t "250 " c " 0 E n " #token "\n"                                         \
    #t "260 " c " 1" #seq " I release n " #token " 0\n"                       \
    #t "300 " c " 1" #seq " C ok " #token "\n"

static void test_history_clean_histories_pass(void **state)
{
    tu_hist_result r;
    (void)state;

    /* Two holders one after the other; a try that failed between. */
    r = judge(HOLD("a", 1, 1000, 5)
              "1050000 b 1 I acquire n 0 10000\n"
              "1051000 b 1 C fail 0\n"
              HOLD("b", 2, 2000, 9), 0);
    assert_int_equal(r.grants, 2);
    assert_int_equal(r.sections, 2);
    /* Empty. */
    judge("", 0);
}

static void test_history_H1_overlap_not_told(void **state)
{
    tu_hist_result r;
    (void)state;

    /* a's section runs on into b's: neither was told. */
    r = judge("1000 a 1 I acquire n 0 1000\n"
              "2000 a 1 C ok 1\n"
              "3000 a 0 S n 1 x\n"
              "2000000 b 2 I acquire n 0 1000\n"
              "2001000 b 2 C ok 2\n"
              "2002000 b 0 S n 2 x\n"
              "2003000 a 0 E n 1\n"
              "2004000 b 0 E n 2\n", 1);
    assert_int_equal(r.broken[TU_H1], 1);
    /* The same with a told of its loss before b's section: clean (L6). */
    judge("1000 a 1 I acquire n 0 1000\n"
          "2000 a 1 C ok 1\n"
          "3000 a 0 S n 1 x\n"
          "1000000 a 0 N n 1\n"
          "2000000 b 2 I acquire n 0 1000\n"
          "2001000 b 2 C ok 2\n"
          "2002000 b 0 S n 2 x\n"
          "2003000 a 0 E n 1\n"
          "2004000 b 0 E n 2\n", 0);
    /* Told by a renewal that came back lost: clean too. */
    judge("1000 a 1 I acquire n 0 1000\n"
          "2000 a 1 C ok 1\n"
          "3000 a 0 S n 1 x\n"
          "1000000 a 3 I renew n 1 1000\n"
          "1001000 a 3 C lost 1\n"
          "2000000 b 2 I acquire n 0 1000\n"
          "2001000 b 2 C ok 2\n"
          "2002000 b 0 S n 2 x\n"
          "2003000 a 0 E n 1\n"
          "2004000 b 0 E n 2\n", 0);
    /* A section ended at a time before it began (its local deadline had
     * passed by the grant) is empty; a second E of a section that ended
     * does not empty a later one. */
    judge("1000 a 1 I acquire n 0 1000\n"
          "2000 a 1 C ok 1\n"
          "1500 a 0 E n 1\n"
          "3000 a 0 S n 1 x\n"
          "4000 b 0 S n 2 x\n"
          "5000 b 0 E n 2\n", 0);
    r = judge("3000 a 0 S n 1 x\n"
              "3500 a 0 E n 1\n"
              "3600 a 0 E n 1\n"
              "4000 a 0 S n 1 x\n"
              "4100 b 0 S n 2 x\n"
              "5000 b 0 E n 2\n", 1);
    assert_int_equal(r.broken[TU_H1], 1);
    /* A killed holder whose section nobody closed holds to the end. */
    r = judge("1000 a 1 I acquire n 0 1000\n"
              "2000 a 1 C ok 1\n"
              "3000 a 0 S n 1 x\n"
              "2000000 b 2 I acquire n 0 1000\n"
              "2001000 b 2 C ok 2\n"
              "2002000 b 0 S n 2 x\n", 1);
    assert_int_equal(r.broken[TU_H1], 1);
}

static void test_history_H1_M1_M2_capacity_and_shared(void **state)
{
    (void)state;
    /* Shared holds overlap; a shared and an exclusive do not. */
    judge("1000 a 1 I share n 0 10000\n"
          "2000 a 1 C ok 1\n"
          "3000 a 0 S n 1 s\n"
          "4000 b 2 I share n 0 10000\n"
          "5000 b 2 C ok 2\n"
          "6000 b 0 S n 2 s\n"
          "7000 a 0 E n 1\n"
          "8000 b 0 E n 2\n", 0);
    judge("1000 a 1 I share n 0 10000\n"
          "2000 a 1 C ok 1\n"
          "3000 a 0 S n 1 s\n"
          "6000 b 0 S n 2 x\n"
          "7000 a 0 E n 1\n"
          "8000 b 0 E n 2\n", 1);
    /* Two permits: two holds at once pass, three do not. */
    judge("0 - 0 K n 2\n"
          "3000 a 0 S n 1 x\n"
          "4000 b 0 S n 2 x\n"
          "7000 a 0 E n 1\n"
          "8000 b 0 E n 2\n", 0);
    judge("0 - 0 K n 2\n"
          "3000 a 0 S n 1 x\n"
          "4000 b 0 S n 2 x\n"
          "5000 c 0 S n 3 x\n"
          "7000 a 0 E n 1\n"
          "8000 b 0 E n 2\n"
          "9000 c 0 E n 3\n", 1);
}

static void test_history_H2_L5_token_order(void **state)
{
    tu_hist_result r;
    (void)state;

    /* b asked after a's grant came back, and got a smaller token; its
     * release then looks like one of a superseded token (H4 too). */
    r = judge(HOLD("a", 1, 1000, 7) HOLD("b", 2, 2000, 6), 2);
    assert_int_equal(r.broken[TU_H2], 1);
    assert_int_equal(r.broken[TU_H4], 1);
    /* Concurrent acquires may come back in either order (ttls of 1 ms:
     * b's had run out before a's grant, H3). */
    judge("1000 a 1 I acquire n 0 1\n"
          "1000 b 2 I acquire n 0 1\n"
          "5000 a 1 C ok 7\n"
          "6000 b 2 C ok 6\n", 0);
    /* One token granted twice. */
    r = judge("1000 a 1 I acquire n 0 1\n"
              "1000 b 2 I acquire n 0 1\n"
              "5000 a 1 C ok 7\n"
              "6000 b 2 C ok 7\n", 1);
    assert_int_equal(r.broken[TU_H2], 1);
    /* The holder acquiring its own name again counts up (L8). */
    judge("1000 a 1 I acquire n 0 100\n"
          "2000 a 1 C ok 7\n"
          "3000 a 2 I acquire n 0 100\n"
          "4000 a 2 C ok 7\n", 0);
}

static void test_history_H3_L10_acknowledged_not_forgotten(void **state)
{
    tu_hist_result r;
    (void)state;

    /* a's grant (ttl 1 s) forgotten: b granted at 0.5 s. */
    r = judge("0 a 1 I acquire n 0 1000\n"
              "1000 a 1 C ok 1\n"
              "400000 b 2 I acquire n 0 1000\n"
              "500000 b 2 C ok 2\n", 1);
    assert_int_equal(r.broken[TU_H3], 1);
    /* a invoked its release first; an operator forced it; or the ttl ran
     * out: clean. */
    judge("0 a 1 I acquire n 0 1000\n"
          "1000 a 1 C ok 1\n"
          "300000 a 3 I release n 1 0\n"
          "400000 b 2 I acquire n 0 1000\n"
          "500000 b 2 C ok 2\n", 0);
    judge("0 a 1 I acquire n 0 1000\n"
          "1000 a 1 C ok 1\n"
          "300000 op 3 I force n 0 0\n"
          "400000 b 2 I acquire n 0 1000\n"
          "500000 b 2 C ok 2\n", 0);
    judge("0 a 1 I acquire n 0 1000\n"
          "1000 a 1 C ok 1\n"
          "900000 b 2 I acquire n 0 1000\n"
          "1000000 b 2 C ok 2\n", 0);
    /* Forgotten with its token: the same token granted again (H2 twice:
     * out of order, and granted twice). */
    r = judge("0 a 1 I acquire n 0 1000\n"
              "1000 a 1 C ok 1\n"
              "400000 b 2 I acquire n 0 1000\n"
              "500000 b 2 C ok 1\n", 3);
    assert_int_equal(r.broken[TU_H3], 1);
    assert_int_equal(r.broken[TU_H2], 2);
    /* An acknowledged renewal extends what may not be forgotten. */
    r = judge("0 a 1 I acquire n 0 1000\n"
              "1000 a 1 C ok 1\n"
              "800000 a 3 I renew n 1 1000\n"
              "801000 a 3 C ok 1\n"
              "1400000 b 2 I acquire n 0 1000\n"
              "1500000 b 2 C ok 2\n", 1);
    assert_int_equal(r.broken[TU_H3], 1);
    /* An undecided renewal does not. */
    judge("0 a 1 I acquire n 0 1000\n"
          "1000 a 1 C ok 1\n"
          "800000 a 3 I renew n 1 1000\n"
          "801000 a 3 C info 1\n"
          "1400000 b 2 I acquire n 0 1000\n"
          "1500000 b 2 C ok 2\n", 0);
}

static void test_history_H4_L4_lost_is_reported(void **state)
{
    tu_hist_result r;
    (void)state;

    /* a's release and renewal after b's grant came back ok. */
    r = judge("0 a 1 I acquire n 0 1000\n"
              "1000 a 1 C ok 1\n"
              "1900000 b 2 I acquire n 0 1000\n"
              "2000000 b 2 C ok 2\n"
              "2100000 a 3 I renew n 1 1000\n"
              "2101000 a 3 C ok 1\n"
              "2200000 a 4 I release n 1 0\n"
              "2201000 a 4 C ok 1\n", 2);
    assert_int_equal(r.broken[TU_H4], 2);
    judge("0 a 1 I acquire n 0 1000\n"
          "1000 a 1 C ok 1\n"
          "1900000 b 2 I acquire n 0 1000\n"
          "2000000 b 2 C ok 2\n"
          "2200000 a 4 I release n 1 0\n"
          "2201000 a 4 C lost 1\n", 0);
}

static void test_history_H5_G1_writes_of_a_live_hold(void **state)
{
    tu_hist_result r;
    (void)state;

    /* Accepted after a newer grant. */
    r = judge("0 a 1 I acquire n 0 1000\n"
              "1000 a 1 C ok 1\n"
              "1900000 b 2 I acquire n 0 1000\n"
              "2000000 b 2 C ok 2\n"
              "2100000 a 3 I write n 1 0\n"
              "2101000 a 3 C ok 1\n", 1);
    assert_int_equal(r.broken[TU_H5], 1);
    /* ... refused then: clean. */
    judge("0 a 1 I acquire n 0 1000\n"
          "1000 a 1 C ok 1\n"
          "1900000 b 2 I acquire n 0 1000\n"
          "2000000 b 2 C ok 2\n"
          "2100000 a 3 I write n 1 0\n"
          "2101000 a 3 C fail 1\n", 0);
    /* Accepted after its own release, and after its expiry. */
    r = judge("0 a 1 I acquire n 0 1000\n"
              "1000 a 1 C ok 1\n"
              "10000 a 2 I release n 1 0\n"
              "11000 a 2 C ok 1\n"
              "20000 a 3 I write n 1 0\n"
              "21000 a 3 C ok 1\n", 1);
    assert_int_equal(r.broken[TU_H5], 1);
    r = judge("0 a 1 I acquire n 0 1000\n"
              "1000 a 1 C ok 1\n"
              "1500000 a 3 I write n 1 0\n"
              "1501000 a 3 C ok 1\n", 1);
    assert_int_equal(r.broken[TU_H5], 1);
    /* A renewal that may have run, or a watchdog, keeps it possible. */
    judge("0 a 1 I acquire n 0 1000\n"
          "1000 a 1 C ok 1\n"
          "900000 a 2 I renew n 1 1000\n"
          "1500000 a 3 I write n 1 0\n"
          "1501000 a 3 C ok 1\n", 0);
    judge("0 a 1 I acquire n 0 1000\n"
          "1000 a 1 C ok 1\n"
          "2000 a 0 W n 1\n"
          "1500000 a 3 I write n 1 0\n"
          "1501000 a 3 C ok 1\n", 0);
}

static void test_history_H6_final_value(void **state)
{
    tu_hist_result r;
    const char *writes = "0 a 1 I acquire n 0 10000\n"
                         "1000 a 1 C ok 1\n"
                         "2000 a 2 I write n 1 0\n"
                         "3000 a 2 C ok 1\n"
                         "4000 a 3 I write n 1 0\n"
                         "5000 a 3 C ok 1\n"
                         "6000 a 4 I write n 1 0\n"
                         "7000 a 4 C info 1\n";
    char text[1024];
    (void)state;

    snprintf(text, sizeof text, "%s9000 - 0 F n 1\n", writes);
    r = judge(text, 1);                     /* one acknowledged forgotten */
    assert_int_equal(r.broken[TU_H6], 1);
    snprintf(text, sizeof text, "%s9000 - 0 F n 4\n", writes);
    judge(text, 1);                         /* more than could have run */
    snprintf(text, sizeof text, "%s9000 - 0 F n 2\n", writes);
    judge(text, 0);
    snprintf(text, sizeof text, "%s9000 - 0 F n 3\n", writes);
    judge(text, 0);
}

static void test_history_malformed_is_an_error(void **state)
{
    (void)state;
    judge("1000 a 1 I acquire n 0\n", -1);
    judge("1000 a 1 X acquire n 0 1\n", -1);
    judge("1000 a 1 I grab n 0 1\n", -1);
    judge("1000 a 1 C ok 1\n", -1);          /* no invocation */
    judge("1000 a 1 I acquire n 0 1\n1100 a 1 C maybe 1\n", -1);
    judge("3000 a 0 S n 1 q\n", -1);
    {
        tu_hist_result r;

        assert_int_equal(tu_hist_check("/nonexistent/h.txt", NULL, &r), -1);
    }
}

/* The recorder's own lines, with names that need escaping, read back. */
static void test_history_recorder_round_trip(void **state)
{
    char *dir = tu_mkdtemp(), path[1100];
    tu_hist *h;
    tu_hist_result r;
    int64_t s1, s2;
    (void)state;

    snprintf(path, sizeof path, "%s/h.txt", dir);
    h = tu_hist_open(path);
    assert_non_null(h);
    s1 = tu_hist_invoke(h, "p 1", "acquire", "a name%with blanks", 0, 500);
    tu_hist_complete(h, "p 1", s1, "ok", 3);
    tu_hist_section(h, "p 1", "a name%with blanks", 3, 0);
    tu_hist_section_end(h, "p 1", "a name%with blanks", 3);
    s2 = tu_hist_invoke(h, "p 1", "release", "a name%with blanks", 3, 0);
    tu_hist_complete(h, "p 1", s2, tu_hist_outcome(SQLLOCK_OK), 3);
    assert_true(s2 != s1);
    tu_hist_close(h);
    assert_int_equal(tu_hist_check(path, stdout, &r), 0);
    assert_int_equal(r.grants, 1);
    assert_int_equal(r.sections, 1);
    assert_string_equal(tu_hist_outcome(SQLLOCK_LOST), "lost");
    assert_string_equal(tu_hist_outcome(SQLLOCK_ECONNECT), "info");
    assert_string_equal(tu_hist_outcome(SQLLOCK_BUSY), "fail");
    tu_rmdir(dir);
    free(dir);
}

/* ------------------------------------------------------------------ */
/* Recorded from real clients                                          */
/* ------------------------------------------------------------------ */

/*
 * L6 on the database under test, judged by the checker: a holds a lease
 * of a short ttl and does not renew it; b waits for it. When a follows
 * L6 -- it stops acting as the holder once sqllock_lease_remaining_ms()
 * says its local deadline has passed, and records that it was told --
 * the history is clean. When a acts on regardless (a starved holder that
 * ignores what it was told, or a library that did not tell it), the
 * checker finds the overlap (H1): it would fail a fault test whose
 * holder did that.
 */
static void run_holder(int obey, int want)
{
    char *dir = tu_mkdtemp(), path[1100], name[96];
    sqllock_db *da = tu_open_or_fail(g_url), *db = tu_open_or_fail(g_url);
    sqllock_lease_options o = SQLLOCK_LEASE_OPTIONS_INIT;
    sqllock_lease *a = NULL, *b = NULL;
    int64_t ttl = tu_scaled_ms(600), seq, ta, tb;
    tu_hist *h;
    tu_hist_result r;
    int rc;

    snprintf(path, sizeof path, "%s/h.txt", dir);
    snprintf(name, sizeof name, "history-l6-%ld-%d", (long)getpid(), obey);
    h = tu_hist_open(path);
    assert_non_null(h);
    o.ttl_ms = ttl;
    o.backoff_min_ms = 5;
    o.backoff_max_ms = 20;
    EXPECT_RC(da, sqllock_lease_new(da, name, &o, &a), SQLLOCK_OK, "new a");
    EXPECT_RC(db, sqllock_lease_new(db, name, &o, &b), SQLLOCK_OK, "new b");

    seq = tu_hist_invoke(h, "a", "acquire", name, 0, ttl);
    rc = sqllock_lease_try_acquire(a);
    ta = sqllock_lease_token(a);
    tu_hist_complete(h, "a", seq, tu_hist_outcome(rc), ta);
    EXPECT_RC(da, rc, SQLLOCK_OK, "a acquires");
    tu_hist_section(h, "a", name, ta, 0);

    /* a's view: its local deadline (sent + ttl - margin) passes while
     * the server still holds the row for it (the margin is ttl/10). */
    while (sqllock_lease_remaining_ms(a) > 0)
        tu_sleep_ms(2);
    if (obey)
        /* What a careful holder does: it stops acting as the holder
         * (recorded before b's acquire is even invoked). */
        tu_hist_told_lost(h, "a", name, ta);
    seq = tu_hist_invoke(h, "b", "acquire", name, 0, ttl);
    rc = sqllock_lease_acquire(b, 20 * ttl);
    tb = sqllock_lease_token(b);
    tu_hist_complete(h, "b", seq, tu_hist_outcome(rc), tb);
    EXPECT_RC(db, rc, SQLLOCK_OK, "b waits the ttl out");
    tu_hist_section(h, "b", name, tb, 0);
    tu_hist_section_end(h, "b", name, tb);
    tu_hist_section_end(h, "a", name, ta);
    seq = tu_hist_invoke(h, "b", "release", name, tb, 0);
    rc = sqllock_lease_release(b);
    tu_hist_complete(h, "b", seq, tu_hist_outcome(rc), tb);
    EXPECT_RC(db, rc, SQLLOCK_OK, "b releases");
    seq = tu_hist_invoke(h, "a", "release", name, ta, 0);
    rc = sqllock_lease_release(a);
    tu_hist_complete(h, "a", seq, tu_hist_outcome(rc), ta);
    EXPECT_RC(da, rc, SQLLOCK_LOST, "a's release after the takeover (L4)");
    tu_hist_close(h);

    assert_true(tb > ta);
    rc = tu_hist_check(path, stdout, &r);
    if (rc != want)
        fail_msg("the checker found %d violations in the history of a "
                 "holder that %s L6, want %d", rc,
                 obey ? "follows" : "ignores", want);
    if (!obey)
        assert_int_equal(r.broken[TU_H1], 1);
    sqllock_lease_free(a);
    sqllock_lease_free(b);
    sqllock_close(da);
    sqllock_close(db);
    tu_rmdir(dir);
    free(dir);
}

static void test_history_L6_holder_told_is_clean(void **state)
{
    (void)state;
    run_holder(1, 0);
}

static void test_history_L6_holder_acting_on_breaks_H1(void **state)
{
    (void)state;
    run_holder(0, 1);
}

int main(void)
{
    const struct CMUnitTest crafted[] = {
        cmocka_unit_test(test_history_clean_histories_pass),
        cmocka_unit_test(test_history_H1_overlap_not_told),
        cmocka_unit_test(test_history_H1_M1_M2_capacity_and_shared),
        cmocka_unit_test(test_history_H2_L5_token_order),
        cmocka_unit_test(test_history_H3_L10_acknowledged_not_forgotten),
        cmocka_unit_test(test_history_H4_L4_lost_is_reported),
        cmocka_unit_test(test_history_H5_G1_writes_of_a_live_hold),
        cmocka_unit_test(test_history_H6_final_value),
        cmocka_unit_test(test_history_malformed_is_an_error),
        cmocka_unit_test(test_history_recorder_round_trip),
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_history_L6_holder_told_is_clean),
        cmocka_unit_test(test_history_L6_holder_acting_on_breaks_H1),
    };
    int rc = cmocka_run_group_tests_name("history checker", crafted, NULL,
                                         NULL);

    return tu_status_merge(rc != 0, TU_RUN_PER_URL("history", &g_url, tests,
                                                   tu_group_schema, NULL));
}
