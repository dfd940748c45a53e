/*
 * thread.c -- test_reaper: the reaper thread: it reaps on its
 * own and counts errors (P1), stops promptly and in a loop (P3), bad
 * input (E2).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "test_util.h"
#include "test_run.h"
#include "reaper.h"

/* ------------------------------------------------------------------ */
/* The thread                                                          */
/* ------------------------------------------------------------------ */

/* P1: the thread reaps on its own, a pass at once and then every
 * interval, and counts what it did. */
void test_reaper_P1_thread_reaps(void **state)
{
    fixture *f = *state;
    sqllock_reaper *rp;
    sqllock_reaper_stats st;
    char name[300], prefix[100];
    int64_t give_up;
    snap s;
    int i;

    snprintf(prefix, sizeof prefix, "reap-%ld-thread-", (long)getpid());
    for (i = 0; i < 5; i++) {
        rp_name_of(name, sizeof name, "thread", "row", i);
        rp_leave_expiring(f->db, name);
    }
    rp_wait_expired_for(f->db, name, 5);
    rp = rp_start_reaper(g_url, 20, 0, 2);
    give_up = tu_now_ms() + 20000;
    for (;;) {
        rp_snap_take(f->db, &s);
        i = rp_count_prefix(&s, prefix);
        rp_snap_free(&s);
        if (i == 0)
            break;
        if (tu_now_ms() > give_up)
            fail_msg("P1: %d expired rows were still there after 20 s of a "
                     "reaper thread", i);
        tu_sleep_ms(10);
    }
    rp_wait_passes(rp, 2, 20000, &st);
    rp_stop_reaper(rp);
    if (st.reaped < 5)
        fail_msg("the reaper counted %lld rows; it deleted at least 5",
                 (long long)st.reaped);
    assert_int_equal(st.errors, 0);
    assert_int_equal(st.last_status, SQLLOCK_OK);
    assert_string_equal(st.last_error, "");
}

/* P1/E1: a failing pass is counted, with its status and message, and the
 * thread keeps going: once the tables exist, passes succeed. */
void test_reaper_P1_errors_counted_not_fatal(void **state)
{
    fixture *f = *state;
    sqllock_reaper *rp;
    sqllock_reaper_stats st;
    sqllock_db *db = NULL;
    char *dir, url[4400], why[1000];
    int64_t give_up, errors;

    dir = tu_mkdtemp();
    assert_non_null(dir);
    if (!tu_empty_target(f->db, g_url, dir, url, sizeof url, why,
                         sizeof why)) {
        tu_rmdir(dir);
        free(dir);
        tu_cannot_run("P1_errors_counted_not_fatal on %s: %s", f->driver,
                      why);
    }
    rp = rp_start_reaper(url, 5, 0, 10);
    rp_wait_passes(rp, 2, 20000, &st);
    if (st.errors != st.passes || st.last_status != SQLLOCK_ENOSCHEMA)
        fail_msg("without tables: %lld passes, %lld errors, last %s: %s",
                 (long long)st.passes, (long long)st.errors,
                 sqllock_errname(st.last_status), st.last_error);
    if (!tu_contains_ci(st.last_error, "init"))
        fail_msg("the reaper's last error does not say what to do: %s",
                 st.last_error);
    ASSERT_RC(sqllock_open(url, NULL, &db), SQLLOCK_OK, db);
    ASSERT_RC(sqllock_init(db), SQLLOCK_OK, db);
    sqllock_close(db);
    give_up = tu_now_ms() + 20000;
    do {
        if (tu_now_ms() > give_up)
            fail_msg("the reaper never recovered after the tables were "
                     "made: last %s: %s", sqllock_errname(st.last_status),
                     st.last_error);
        tu_sleep_ms(5);
        rp_stats_get(rp, &st);
    } while (st.last_status != SQLLOCK_OK);
    errors = st.errors;
    assert_string_equal(st.last_error, "");
    rp_wait_passes(rp, st.passes + 2, 20000, &st);
    assert_int_equal(st.errors, errors);
    rp_stop_reaper(rp);
    ASSERT_RC(tu_empty_target_reset(f->db), SQLLOCK_OK, f->db);
    tu_rmdir(dir);
    free(dir);
}

/* P3: with a 60 s interval, stop wakes the sleeping thread at once and
 * joins it: far below the interval. */
void test_reaper_P3_stop_promptly(void **state)
{
    sqllock_reaper *rp = rp_start_reaper(g_url, 60000, 0, 1000);
    sqllock_reaper_stats st;
    int64_t t0, took;
    (void)state;

    rp_wait_passes(rp, 1, 20000, &st);
    tu_sleep_ms(50);                /* asleep in its wait now */
    t0 = tu_now_ms();
    rp_stop_reaper(rp);
    took = tu_now_ms() - t0;
    if (took > 1000)
        fail_msg("P3 broken: stop took %lld ms with a 60000 ms interval",
                 (long long)took);
    assert_int_equal(st.passes, 1);
    assert_int_equal(st.errors, 0);
}

/* P3/E4: start and stop 1000 times, stopping at once or after the first
 * pass: no hang, no leak, no failed pass. Under valgrind (tests/valgrind.sh
 * sets SQLLOCK_TEST_UNDER_VALGRIND) 100 times: there each PostgreSQL
 * connection's SCRAM handshake alone takes about 0.4 s, and 1000 made this
 * one entry 445 s of the valgrind stage's 594. What valgrind adds here (a
 * leak or an uninitialised read per start/stop) shows on every round, and
 * 100 still covers each kind of round (a pass awaited, a short sleep, an
 * immediate stop; both intervals; batch sizes 1-7); the races that need
 * the 1000 rounds run in the plain, ASan and TSan builds. */
void test_reaper_P3_start_stop_loop(void **state)
{
    sqllock_reaper_stats st;
    const char *vg = getenv("SQLLOCK_TEST_UNDER_VALGRIND");
    int i, rounds;
    (void)state;

    /* Each round connects (a reaper has a connection of its own): 1000
     * rounds in the plain build; 250 under the sanitizers, whose
     * connects cost 4 times as much (TSan still sees a start and a stop
     * race in every round); 25 under valgrind, which looks for leaks and
     * uninitialised reads, the same in every round. */
    if (vg != NULL && *vg != '\0')
        rounds = 25;
    else if (tu_slowdown_tool() > 1)
        rounds = 250;
    else
        rounds = 1000;

    for (i = 0; i < rounds; i++) {
        sqllock_reaper *rp = rp_start_reaper(g_url, i % 2 ? 60000 : 1, 0,
                                             1 + i % 7);
        if (i % 25 == 0) {
            rp_wait_passes(rp, 1, 20000, &st);
            if (st.errors != 0)
                fail_msg("pass failed in loop %d: %s: %s", i,
                         sqllock_errname(st.last_status), st.last_error);
        } else if (i % 3 == 0) {
            tu_sleep_us(200);
        }
        rp_stop_reaper(rp);
    }
    printf("reaper started and stopped %d times\n", i);
}

/* E2: bad input gets a status and a message that says what was wrong. */
void test_reaper_E2_bad_input(void **state)
{
    fixture *f = *state;
    sqllock_reaper_options o = SQLLOCK_REAPER_OPTIONS_INIT;
    sqllock_reaper_stats st;
    sqllock_reaper *rp = (sqllock_reaper *)&o;   /* must be set to NULL */
    sqllock_txn *txn = NULL;
    char why[300], bad_url[600];
    int64_t deleted = 7;
    int rc;

#define START_FAILS(url, opts, want, word)                                     \
    do {                                                                       \
        rp = (sqllock_reaper *)&o;                                             \
        why[0] = 'x';                                                          \
        why[1] = '\0';                                                         \
        rc = sqllock_reaper_start((url), (opts), &rp, why, sizeof why);        \
        if (rc != (want))                                                      \
            fail_msg("reaper_start(%s) = %s, want %s (%s)", #url,              \
                     sqllock_errname(rc), sqllock_errname(want), why);         \
        assert_null(rp);                                                       \
        if (!tu_contains_ci(why, (word)))                                      \
            fail_msg("reaper_start(%s): message \"%s\" does not mention "      \
                     "\"%s\"", #url, why, (word));                             \
    } while (0)

    START_FAILS(NULL, NULL, SQLLOCK_EINVAL, "NULL");
    START_FAILS("", NULL, SQLLOCK_EURL, "URL");
    START_FAILS("no url at all", NULL, SQLLOCK_EURL, "URL");
    START_FAILS("nosuch://host/db", NULL, SQLLOCK_ESCHEME, "nosuch");
    o.interval_ms = -1;
    START_FAILS(g_url, &o, SQLLOCK_EINVAL, "interval");
    o.interval_ms = 0;
    o.grace_ms = -5;
    START_FAILS(g_url, &o, SQLLOCK_EINVAL, "grace");
    o.grace_ms = 0;
    o.batch = -1;
    START_FAILS(g_url, &o, SQLLOCK_EINVAL, "batch");
    o.batch = 1000001;
    START_FAILS(g_url, &o, SQLLOCK_EINVAL, "batch");
    o.batch = 0;

    /* A database that cannot be reached is reported by start itself,
     * without the password. */
    if (strcmp(f->driver, "sqlite") == 0)
        snprintf(bad_url, sizeof bad_url,
                 "sqlite:///nonexistent-sqllock-dir/x/y.db");
    else
        snprintf(bad_url, sizeof bad_url,
                 "%s://someone:Secret-Pw@127.0.0.1:1/db",
                 strcmp(f->driver, "mysql") == 0 ? "mysql" : "postgres");
    rp = (sqllock_reaper *)&o;
    rc = sqllock_reaper_start(bad_url, NULL, &rp, why, sizeof why);
    if (rc != SQLLOCK_ECONNECT)
        fail_msg("reaper_start(unreachable) = %s, want SQLLOCK_ECONNECT (%s)",
                 sqllock_errname(rc), why);
    assert_null(rp);
    assert_true(why[0] != '\0');
    if (strstr(why, "Secret-Pw") != NULL)
        fail_msg("the message shows the password: %s", why);
    /* A NULL or short message buffer is fine. */
    assert_int_equal(sqllock_reaper_start(NULL, NULL, &rp, NULL, 0),
                     SQLLOCK_EINVAL);
    assert_int_equal(sqllock_reaper_start("nosuch://x", NULL, &rp, why, 4),
                     SQLLOCK_ESCHEME);
    assert_true(strlen(why) <= 3);
    assert_int_equal(sqllock_reaper_start(g_url, NULL, NULL, why, sizeof why),
                     SQLLOCK_EINVAL);

    /* Stats and stop. */
    memset(&st, 0x5a, sizeof st);
    assert_int_equal(sqllock_reaper_stats_get(NULL, &st), SQLLOCK_EINVAL);
    assert_int_equal(st.passes, 0);
    rp = rp_start_reaper(g_url, 60000, 0, 0);
    assert_int_equal(sqllock_reaper_stats_get(rp, NULL), SQLLOCK_EINVAL);
    rp_stop_reaper(rp);
    sqllock_reaper_stop(NULL);

    /* One pass. */
    assert_int_equal(sqllock_reap(NULL, 0, 1000, &deleted), SQLLOCK_EINVAL);
    assert_int_equal(deleted, 0);
    ASSERT_RC(sqllock_reap(f->db, -1, 1000, &deleted), SQLLOCK_EINVAL, f->db);
    expect_msg_any(f->db, "reap(grace -1)", "grace");
    ASSERT_RC(sqllock_reap(f->db, INT64_MAX, 1000, NULL), SQLLOCK_EINVAL,
              f->db);
    ASSERT_RC(sqllock_reap(f->db, 0, 0, NULL), SQLLOCK_EINVAL, f->db);
    expect_msg_any(f->db, "reap(batch 0)", "batch");
    ASSERT_RC(sqllock_reap(f->db, 0, -3, NULL), SQLLOCK_EINVAL, f->db);
    ASSERT_RC(sqllock_reap(f->db, 0, 1000001, NULL), SQLLOCK_EINVAL, f->db);
    expect_msg_any(f->db, "reap(batch 1000001)", "batch");
    /* Not inside the application's transaction on the same handle. */
    ASSERT_RC(sqllock_txn_begin(f->db, NULL, &txn), SQLLOCK_OK, f->db);
    ASSERT_RC(sqllock_reap(f->db, 0, 1000, NULL), SQLLOCK_EMISUSE, f->db);
    expect_msg_any(f->db, "reap in a transaction", "transaction");
    sqllock_txn_free(txn);
    ASSERT_RC(sqllock_reap(f->db, 0, 1000, &deleted), SQLLOCK_OK, f->db);
#undef START_FAILS
}
